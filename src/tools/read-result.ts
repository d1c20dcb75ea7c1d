import { z } from 'zod';
import { AbridgeError } from '../errors.js';
import {
  formatSlice,
  MAX_READ_LIMIT,
  REF_ID_SHAPE,
  sliceHeader,
  type ResultSlice,
  type ResultStore,
} from '../compaction/result-store.js';
import { estimateTokens } from '../tokens/estimate.js';
import {
  answerLimits,
  describeLimits,
  linesWithEnds,
  quoteInput,
  splitLine,
  takeLines,
  type AnswerLimits,
} from './answer-limits.js';
import { defineTool, type AgentTool } from './tool.js';

export interface ReadResultToolOptions {
  /** Caps on one answer (default DEFAULT_ANSWER_LIMITS: 32 KB, 8,000 tokens, lines split past 2,000 characters). */
  limits?: Partial<AnswerLimits>;
}

export const readResultInput = z.object({
  ref_id: z
    .string()
    .describe(
      'The ref_id of a stored result, exactly as given where the result was cleared or offloaded (e.g. "r_0123456789abcdef").',
    ),
  offset: z
    .number()
    .int()
    .min(0)
    .optional()
    .describe(
      'The 0-based line to start reading at (default 0). The header of each slice says the offset to read next.',
    ),
  limit: z
    .number()
    .int()
    .min(1)
    .max(MAX_READ_LIMIT)
    .optional()
    .describe(`How many lines to read (default 200, at most ${MAX_READ_LIMIT}).`),
});

export type ReadResultInput = z.infer<typeof readResultInput>;

/**
 * `read_result`: reads a stored tool result (one cleared or offloaded from the context) a slice of lines at a time.
 * Answers the slice as `formatSlice` shows it: a header naming the lines and the offset to read next, then the text.
 * An unknown or malformed ref is answered as "Error: …" naming the ref.
 */
export function readResultTool(store: ResultStore, options: ReadResultToolOptions = {}): AgentTool<ReadResultInput> {
  const limits = answerLimits(options.limits);
  return defineTool({
    name: 'read_result',
    description:
      'Read a tool result that was cleared or offloaded from the context, by its ref_id, a slice of lines at a time. ' +
      'The answer starts with a header like "[ref r_… · lines 0–199 of 1,234 · next: offset 200]"; call again with that offset to read on. ' +
      `Lines are 0-based; limit defaults to 200 (at most ${MAX_READ_LIMIT}). One answer holds at most ${describeLimits(limits)}: a longer slice stops early and its header gives the offset to read on.`,
    input: readResultInput,
    async run({ ref_id, offset, limit }) {
      // Refused before anything echoes it: a ref is 18 characters, an oversized one is quoted as a short prefix.
      if (ref_id.length > 64)
        throw new AbridgeError('INVALID_INPUT', `Invalid ref_id ${quoteInput(ref_id)}: expected ${REF_ID_SHAPE}.`);
      const range: { offset?: number; limit?: number } = {};
      if (offset !== undefined) range.offset = offset;
      if (limit !== undefined) range.limit = limit;
      return capSlice(await store.read(ref_id, range), limits);
    },
  });
}

/**
 * A slice as the model sees it, within the caps: the lines that fit (long lines in pieces), and a header whose next
 * offset is where the shown lines stop, with a note saying the answer was capped.
 */
export function capSlice(slice: ResultSlice, limits: AnswerLimits): string {
  const whole = formatSlice(slice);
  const lines = linesWithEnds(slice.text);
  const fits = Buffer.byteLength(whole, 'utf8') <= limits.maxBytes && estimateTokens(whole) <= limits.maxTokens;
  if (fits && lines.every((l) => splitLine(l, limits.maxLineChars).length === 1)) return whole;
  const headerRoom = { bytes: 400, tokens: 120 };
  const taken = takeLines(lines, limits, headerRoom);
  const shown = Math.max(taken.whole, taken.cutChars !== undefined ? 1 : 0);
  const next = slice.offset + shown;
  const header = sliceHeader({ ...slice, limit: shown, nextOffset: next < slice.totalLines ? next : null });
  const notes: string[] = [];
  if (taken.whole < lines.length)
    notes.push(
      `answer capped at ${describeLimits(limits)}: ${shown.toLocaleString('en-US')} of the ${lines.length.toLocaleString('en-US')} lines asked for are shown${next < slice.totalLines ? `; read on with offset ${next.toLocaleString('en-US')}` : ''}`,
    );
  if (taken.cutChars !== undefined) {
    const total = lines[0]!.length;
    notes.push(
      `line ${slice.offset.toLocaleString('en-US')} is ${total.toLocaleString('en-US')} characters long: only its first ${taken.cutChars.toLocaleString('en-US')} fit in one answer, the rest is not shown`,
    );
  }
  if (taken.split > 0)
    notes.push(
      `lines over ${limits.maxLineChars.toLocaleString('en-US')} characters are shown in pieces, each piece on a line of its own`,
    );
  return `${header}\n[${notes.join('; ')}]\n${taken.text}`;
}
