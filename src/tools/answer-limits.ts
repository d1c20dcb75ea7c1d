import * as D from '../defaults.js';
import { AbridgeError } from '../errors.js';
import { estimateTokens } from '../tokens/estimate.js';

/**
 * How big one tool answer may get (read_result, the memory tool's view, tool_search): the defaults live here, and each
 * tool takes its own `limits` to override them. An answer that would be bigger shows what fits, whole lines first,
 * and a header saying how to read on.
 */
export interface AnswerLimits {
  /** UTF-8 bytes of one answer (default 32 KB). */
  maxBytes: number;
  /** Estimated tokens of one answer (default 8,000). */
  maxTokens: number;
  /** A line longer than this many characters is shown in pieces, each on its own line (default 2,000). */
  maxLineChars: number;
}

export const DEFAULT_ANSWER_LIMITS: Readonly<AnswerLimits> = D.DEFAULT_ANSWER_LIMITS;

/** Longest input string a tool quotes back in an error: longer ones are shown as a short prefix and their length. */
export const MAX_QUOTED_CHARS = 40;

/** `limits` over the defaults, validated (AbridgeError INVALID_CONFIG naming the key). */
export function answerLimits(limits: Partial<AnswerLimits> = {}): AnswerLimits {
  const out = { ...DEFAULT_ANSWER_LIMITS, ...limits };
  for (const key of ['maxBytes', 'maxTokens', 'maxLineChars'] as const) {
    const v = out[key];
    if (!Number.isSafeInteger(v) || v < 64)
      throw new AbridgeError('INVALID_CONFIG', `Invalid limits.${key} ${String(v)}: expected an integer ≥ 64.`);
  }
  return out;
}

const fmt = (x: number) => x.toLocaleString('en-US');

/** A string as an error may quote it: JSON-quoted, at most MAX_QUOTED_CHARS characters, then its length. */
export function quoteInput(v: string): string {
  const chars = [...v];
  if (chars.length <= MAX_QUOTED_CHARS) return JSON.stringify(v);
  return `${JSON.stringify(chars.slice(0, MAX_QUOTED_CHARS).join(''))}… (${fmt(v.length)} characters)`;
}

/** What a cap says it is, for headers: "32,768 bytes / 8,000 tokens". */
export function describeLimits(l: AnswerLimits): string {
  return `${fmt(l.maxBytes)} bytes / ${fmt(l.maxTokens)} tokens`;
}

export interface TakenLines {
  /** The text to show: whole lines (long ones in pieces), terminators kept. */
  text: string;
  /** How many of the given lines are shown whole. */
  whole: number;
  /** The first line not shown whole was cut (it alone does not fit): how many of its characters are shown. */
  cutChars?: number;
  /** Lines shown in pieces because they were longer than maxLineChars. */
  split: number;
}

/** Cuts `line` (terminator included) into pieces of at most `max` characters, never inside a surrogate pair. */
export function splitLine(line: string, max: number): string[] {
  const body = line.endsWith('\n') ? line.slice(0, -1) : line;
  const end = line.length > body.length ? '\n' : '';
  if (body.length <= max) return [line];
  const pieces: string[] = [];
  let at = 0;
  while (at < body.length) {
    let to = Math.min(body.length, at + max);
    const c = body.charCodeAt(to - 1);
    if (to < body.length && c >= 0xd800 && c <= 0xdbff) to--;
    pieces.push(body.slice(at, to));
    at = to;
  }
  return pieces.map((p, i) => (i < pieces.length - 1 ? `${p}\n` : `${p}${end}`));
}

/**
 * Takes lines from the start of `lines` while the answer stays within the limits (`used` bytes and tokens are already
 * spent on the header). Lines longer than maxLineChars are shown in pieces. At least something is always shown: a
 * first line that alone does not fit is cut to what does.
 */
export function takeLines(lines: readonly string[], limits: AnswerLimits, used = { bytes: 0, tokens: 0 }): TakenLines {
  let bytes = used.bytes;
  let tokens = used.tokens;
  let text = '';
  let split = 0;
  for (let i = 0; i < lines.length; i++) {
    const pieces = splitLine(lines[i]!, limits.maxLineChars);
    const shown = pieces.join('');
    const b = Buffer.byteLength(shown, 'utf8');
    const t = estimateTokens(shown);
    if (bytes + b > limits.maxBytes || tokens + t > limits.maxTokens) {
      if (i > 0) return { text, whole: i, split };
      // Not even the first line fits: as many of its pieces, then characters, as do.
      let cut = '';
      let chars = 0;
      for (const p of pieces) {
        const pb = Buffer.byteLength(p, 'utf8');
        const pt = estimateTokens(p);
        if (bytes + pb > limits.maxBytes || tokens + pt > limits.maxTokens) {
          const room = Math.max(0, Math.min(limits.maxBytes - bytes, (limits.maxTokens - tokens) * 3));
          let part = p.slice(0, Math.floor(room / 4));
          const c = part.charCodeAt(part.length - 1);
          if (c >= 0xd800 && c <= 0xdbff) part = part.slice(0, -1);
          cut += part;
          chars += part.length;
          break;
        }
        cut += p;
        chars += p.endsWith('\n') ? p.length - 1 : p.length;
        bytes += pb;
        tokens += pt;
      }
      return {
        text: cut.endsWith('\n') ? cut : `${cut}\n`,
        whole: 0,
        cutChars: chars,
        split: pieces.length > 1 ? 1 : 0,
      };
    }
    bytes += b;
    tokens += t;
    text += shown;
    if (pieces.length > 1) split++;
  }
  return { text, whole: lines.length, split };
}

/** Whether `text` fits one answer as it is: within the bytes and tokens, and no line longer than maxLineChars. */
export function fitsAnswer(text: string, limits: AnswerLimits): boolean {
  if (Buffer.byteLength(text, 'utf8') > limits.maxBytes || estimateTokens(text) > limits.maxTokens) return false;
  return text.split('\n').every((l) => l.length <= limits.maxLineChars);
}

/** The lines of `text`, each with its `\n` (a last line without one stays without). */
export function linesWithEnds(text: string): string[] {
  if (text === '') return [];
  const out = text.split(/(?<=\n)/);
  return out;
}
