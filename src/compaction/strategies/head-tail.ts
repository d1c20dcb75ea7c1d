import type { ViewItem } from '../../model/view.js';
import {
  changeable,
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

/** First and last lines within about `keepTokens`, with a marker naming the elided lines. */
export function compress(
  text: string,
  keepTokens: number,
  refId: string,
  ctx: Pick<StrategyContext, 'counter'>,
  what: 'result' | 'message' = 'result',
): string {
  const lines = text.split('\n');
  const half = keepTokens / 2;
  let head = 0;
  let used = 0;
  while (head < lines.length && used + ctx.counter.text(lines[head]!) + 1 <= half)
    used += ctx.counter.text(lines[head++]!) + 1;
  let tail = 0;
  used = 0;
  while (tail < lines.length - head && used + ctx.counter.text(lines[lines.length - 1 - tail]!) + 1 <= half)
    used += ctx.counter.text(lines[lines.length - 1 - tail++]!) + 1;
  // A single huge line (minified output): cut by characters instead.
  if (head === 0 && tail === 0) {
    const chars = Math.max(200, keepTokens * 2);
    return `${text.slice(0, chars)}\n[… ${(text.length - 2 * chars).toLocaleString('en-US')} characters elided; the whole ${what}: read_result {"ref_id": "${refId}"} …]\n${text.slice(-chars)}`;
  }
  const elided = lines.length - head - tail;
  const elidedChars = lines.slice(head, lines.length - tail).join('\n').length;
  return [
    ...lines.slice(0, head),
    `[… lines ${head + 1}–${head + elided} of ${lines.length} elided (${elided.toLocaleString('en-US')} lines, ${elidedChars.toLocaleString('en-US')} characters); the whole ${what}: read_result {"ref_id": "${refId}", "offset": ${head}} …]`,
    ...lines.slice(lines.length - tail),
  ].join('\n');
}
