import type { ViewItem } from '../../model/view.js';
import {
  changeable,
  ERROR_LINE,
  outputText,
  resultText,
  storedAs,
  StrategySkipped,
  withResults,
  type Strategy,
  type StrategyContext,
} from './strategy.js';

/**
 * Keeps the first and last lines of large results (where commands print what they do and how they ended) and marks
 * what was elided in between. The whole result is stored, so the marker can point to it.
 */
export const headTail: Strategy = {
  name: 'head-tail',
  async apply(view, ctx) {
    const { thresholdTokens, keepTokens } = ctx.options.headTail;
    const out = view.slice();
    let changed = 0;
    for (let i = 0; i < out.length; i++) {
      const item = out[i]!;
      if (item.edit === 'cleared' || item.edit === 'offloaded' || !changeable(item, ctx)) continue;
      // Output a person ran through the agent: the same first and last lines, the whole text stored.
      const output = item.edit === undefined ? outputText(item.message) : undefined;
      if (output !== undefined) {
        if (ctx.counter.text(output) <= thresholdTokens) continue;
        const stored = await ctx.store.put(output, storedAs(ctx, item.entry));
        out[i] = {
          entry: item.entry,
          message: {
            ...item.message,
            parts: [{ type: 'text', text: compress(output, keepTokens, stored.refId, ctx, 'message') }],
          },
          edit: 'compressed',
        } as ViewItem;
        changed++;
        if (ctx.size(out) <= ctx.target) break;
        continue;
      }
      if (item.message.role !== 'tool') continue;
      const targets = new Map<string, string>();
      for (const p of item.message.parts) {
        if (p.type !== 'tool-result') continue;
        const text = resultText(p);
        if (ctx.counter.text(text) <= thresholdTokens) continue;
        const stored = await ctx.store.put(text, storedAs(ctx, item.entry, { tool: p.toolName, callId: p.callId }));
        targets.set(p.callId, compress(text, keepTokens, stored.refId, ctx));
      }
      if (targets.size === 0) continue;
      out[i] = {
        entry: item.entry,
        message: withResults(item.message, (p) =>
          targets.has(p.callId) ? { ...p, content: [{ type: 'text', text: targets.get(p.callId)! }] } : p,
        ),
        edit: 'compressed',
      } as ViewItem;
      changed++;
      if (ctx.size(out) <= ctx.target) break;
    }
    if (changed === 0)
      throw new StrategySkipped(`no changeable tool result or command output over ${thresholdTokens} tokens`);
    return out;
  },
};

/**
 * First and last lines within about `keepTokens`, with a marker naming the elided lines. A long line the first lines
 * stop at does not cost the room: the last lines take what the first left, and the first elided line shows as much of
 * its opening as still fits.
 */
export function compress(
  text: string,
  keepTokens: number,
  refId: string,
  ctx: Pick<StrategyContext, 'counter'>,
  what: 'result' | 'message' = 'result',
): string {
  const lines = text.split('\n');
  const cost = (line: string) => ctx.counter.text(line) + 1;
  // Error lines the elision would hide are the evidence later steps need (as a cleared result's placeholder keeps
  // them): up to a few, within an eighth of the room, listed after the marker. Room is set aside for them first; what
  // is left of it goes back to the last lines.
  const candidates = errorLines(lines, EVIDENCE_LINES, keepTokens / 8, cost);
  const label = (at: readonly { at: number }[]) => `[error lines among them: ${at.map((l) => l.at + 1).join(', ')}]`;
  let used = candidates.length > 0 ? candidates.reduce((n, l) => n + cost(l.text), cost(label(candidates))) : 0;
  let head = 0;
  while (head < lines.length && used + cost(lines[head]!) <= keepTokens / 2) used += cost(lines[head++]!);
  let tail = 0;
  while (tail < lines.length - head && used + cost(lines[lines.length - 1 - tail]!) <= keepTokens)
    used += cost(lines[lines.length - 1 - tail++]!);
  const evidence = candidates.filter((l) => l.at >= head && l.at < lines.length - tail);
  used -= candidates.filter((l) => !evidence.includes(l)).reduce((n, l) => n + cost(l.text), 0);
  // A single huge line (minified output): cut by characters instead.
  if (head === 0 && tail === 0) {
    const chars = Math.max(200, keepTokens * 2);
    return `${text.slice(0, chars)}\n[… ${(text.length - 2 * chars).toLocaleString('en-US')} characters elided; the whole ${what}: read_result {"ref_id": "${refId}"} …]\n${text.slice(-chars)}`;
  }
  const elided = lines.length - head - tail;
  let elidedChars = lines.slice(head, lines.length - tail).join('\n').length;
  // What the whole lines left (less the marker's own cost) goes to the opening of the first elided line.
  const left = keepTokens - used - MARKER_TOKENS;
  let part = '';
  if (elided > 0 && left >= PART_MIN_TOKENS) {
    const line = lines[head]!;
    part = line.slice(0, Math.floor((left * line.length) / Math.max(1, ctx.counter.text(line))));
    elidedChars -= part.length;
  }
  const range = `lines ${head + 1}–${head + elided} of ${lines.length} elided`;
  const count = `${elided.toLocaleString('en-US')} ${elided === 1 ? 'line' : 'lines'}, ${elidedChars.toLocaleString('en-US')} characters`;
  const detail = part ? `line ${head + 1} in part; ${count}` : count;
  return [
    ...lines.slice(0, head),
    ...(part ? [part] : []),
    `[… ${range} (${detail}); the whole ${what}: read_result {"ref_id": "${refId}", "offset": ${head}} …]`,
    ...(evidence.length > 0 ? [label(evidence), ...evidence.map((l) => l.text)] : []),
    ...lines.slice(lines.length - tail),
  ].join('\n');
}

/** Error lines a shortened text keeps from what it elides, at most. */
const EVIDENCE_LINES = 3;

/** The first `max` lines that read as errors, each at most 300 characters, within `room` tokens. */
function errorLines(
  lines: readonly string[],
  max: number,
  room: number,
  cost: (line: string) => number,
): { at: number; text: string }[] {
  const out: { at: number; text: string }[] = [];
  let used = 0;
  for (let at = 0; at < lines.length && out.length < max; at++) {
    const l = lines[at]!;
    if (l.trim().length < 4 || !ERROR_LINE.test(l)) continue;
    const text = l.length > 300 ? `${l.slice(0, 300)}…` : l;
    if (used + cost(text) > room) break;
    used += cost(text);
    out.push({ at, text });
  }
  return out;
}

/** About what the elision marker costs, kept free when the room left goes to part of a line. */
const MARKER_TOKENS = 40;
/** Less room than this left beside the whole lines is not worth part of a line. */
const PART_MIN_TOKENS = 20;
