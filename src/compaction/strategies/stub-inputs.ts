import { argumentsText, PATH_KEYS } from '../../model/parts.js';
import type { ToolCallPart } from '../../model/types.js';
import type { ViewItem } from '../../model/view.js';
import { changeable, storedAs, StrategySkipped, type Strategy } from './strategy.js';

/** Bytes of a call's input, once per part (every round of a compaction asks again). */
const inputBytes = new WeakMap<ToolCallPart, number>();
function bytesOf(p: ToolCallPart): number {
  let n = inputBytes.get(p);
  if (n === undefined) {
    n = Buffer.byteLength(argumentsText(p.arguments));
    inputBytes.set(p, n);
  }
  return n;
}

/**
 * Replaces large old tool-call inputs (a file written whole through a `write` call, a long patch) with what the agent
 * needs to know of them: the path, the size, the first line, and a `read_result` reference to the whole input. The
 * call keeps its id and name, so its result still answers it.
 */
export const stubInputs: Strategy = {
  name: 'stub-inputs',
  async apply(view, ctx) {
    const { thresholdBytes } = ctx.options.stubInputs;
    const out = view.slice();
    let stubbed = 0;
    for (let i = 0; i < out.length; i++) {
      const item = out[i]!;
      if (item.message.role !== 'assistant' || !changeable(item, ctx)) continue;
      if (!item.message.parts.some((p) => p.type === 'tool-call' && bytesOf(p) > thresholdBytes)) continue;
      const parts = [];
      for (const p of item.message.parts) {
        if (p.type !== 'tool-call' || bytesOf(p) <= thresholdBytes) {
          parts.push(p);
          continue;
        }
        const text = argumentsText(p.arguments);
        const stored = await ctx.store.put(text, storedAs(ctx, item.entry, { tool: p.name, callId: p.id }));
        parts.push({ ...p, arguments: stub(p, text, stored.refId) } satisfies ToolCallPart);
        stubbed++;
      }
      out[i] = { entry: item.entry, message: { ...item.message, parts }, edit: item.edit ?? 'compressed' } as ViewItem;
      if (ctx.size(out) <= ctx.target) break;
    }
    if (stubbed === 0) throw new StrategySkipped(`no changeable tool-call input over ${thresholdBytes} bytes`);
    return out;
  },
};

/** The small scalar arguments kept as they were (path, command, flags), the large ones replaced by a note. */
function stub(p: ToolCallPart, text: string, refId: string): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const args =
    p.arguments && typeof p.arguments === 'object' && !Array.isArray(p.arguments)
      ? (p.arguments as Record<string, unknown>)
      : undefined;
  if (args) {
    for (const [k, v] of Object.entries(args)) {
      if (PATH_KEYS.includes(k) || (typeof v !== 'object' && String(v).length <= 200)) out[k] = v;
    }
  }
  const bytes = Buffer.byteLength(text);
  const lines = text.split('\n').length;
  out._abridged = `input of ${bytes.toLocaleString('en-US')} bytes (${lines.toLocaleString('en-US')} lines) elided to save context; the whole input: read_result {"ref_id": "${refId}"}`;
  return out;
}
