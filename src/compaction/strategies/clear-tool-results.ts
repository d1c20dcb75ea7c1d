import type { ToolResultPart } from '../../model/types.js';
import type { ViewItem } from '../../model/view.js';
import { givingWayOrder, inPlay, laterNote } from '../in-play.js';
import {
  changeable,
  errorEvidence,
  resultText,
  storedAs,
  StrategySkipped,
  withResults,
  type Strategy,
  type StrategyContext,
} from './strategy.js';

/**
 * Clears the results of old tool uses, oldest first, keeping the last `keep` tool uses whole — Anthropic's context
 * editing (`clear_tool_uses`) semantics: `clear_at_least`, `exclude_tools`, `clear_tool_inputs`; every eligible result
 * in one batch unless `untilTarget`. The result is stored first, so the placeholder can say how to get it back.
 */
export const clearToolResults: Strategy = {
  name: 'clear-tool-results',
  async apply(view, ctx) {
    const o = ctx.options.clearing;
    const exclude = new Set(o.excludeTools);
    // Positions of tool results, newest last; the last `keep` of them stay.
    const positions: number[] = [];
    view.forEach((item, i) => {
      if (item.message.role === 'tool' && item.message.parts.some((p) => p.type === 'tool-result')) positions.push(i);
    });
    const keepFrom = positions.length - o.keep;
    // What is no longer in play goes first (a read a later read superseded, a result a later change made stale), then
    // turn by turn from the oldest, a file's latest read after the other results of its turn (in-play.ts).
    const original = (it: ViewItem) => (it.entry !== undefined ? ctx.originals?.get(it.entry) : undefined);
    const play = inPlay(view, original);
    const place = new Map(givingWayOrder(view, original, play).map((i, k) => [i, k]));
    const candidates = positions
      .filter((i, k) => k < keepFrom && changeable(view[i]!, ctx) && view[i]!.edit === undefined)
      .sort((a, b) => place.get(a)! - place.get(b)!);
    const out = view.slice();
    let size = ctx.size(view);
    let cleared = 0;
    const clearedCalls = new Set<string>();
    for (const i of candidates) {
      // By default every eligible result goes in one pass: the first one cleared breaks the provider's cached prefix
      // anyway, so clearing the rest costs no more now and postpones the next compaction (fewer cache rewrites).
      if (o.untilTarget && size <= ctx.target && cleared >= o.clearAtLeast) break;
      const item = out[i]!;
      const before = ctx.counter.message(item.message);
      // A placeholder costs ~40 tokens: clearing a smaller result would grow the context.
      if (before < 80) continue;
      const message = withResults(item.message, (p) =>
        exclude.has(p.toolName ?? '') ? p : placeholder(p, clearedCalls),
      );
      if (message.parts.every((p, k) => p === item.message.parts[k])) continue;
      const stored = await Promise.all(
        item.message.parts
          .filter((p): p is ToolResultPart => p.type === 'tool-result' && clearedCalls.has(p.callId))
          .map((p) => ctx.store.put(resultText(p), storedAs(ctx, item.entry, { tool: p.toolName, callId: p.callId }))),
      );
      const refs = new Map(stored.map((s) => [s.callId ?? '', s.refId]));
      const originals = new Map(
        item.message.parts.filter((p): p is ToolResultPart => p.type === 'tool-result').map((p) => [p.callId, p]),
      );
      const final = withResults(message, (p) =>
        refs.has(p.callId)
          ? {
              ...p,
              content: [
                {
                  type: 'text',
                  text: placeholderText(
                    p.toolName,
                    before,
                    refs.get(p.callId)!,
                    errorEvidence(originals.get(p.callId)!),
                    laterNote(play.results.get(p.callId)),
                  ),
                },
              ],
            }
          : p,
      );
      out[i] = { entry: item.entry, message: final, edit: 'cleared' } as ViewItem;
      const after = ctx.counter.message(final);
      cleared += before - after;
      size -= before - after;
    }
    if (cleared === 0)
      throw new StrategySkipped(
        candidates.length === 0 ? `no tool results older than the last ${o.keep} tool uses` : 'nothing clearable',
      );
    if (cleared < o.clearAtLeast)
      throw new StrategySkipped(`could clear only ${cleared} tokens, less than clear_at_least (${o.clearAtLeast})`);
    if (o.clearToolInputs) clearInputs(out, clearedCalls, ctx);
    return out;
  },
};

function placeholder(p: ToolResultPart, cleared: Set<string>): ToolResultPart {
  cleared.add(p.callId);
  return { ...p, content: [{ type: 'text', text: '' }] };
}

/**
 * The placeholder of a cleared result; an error keeps its status and first error lines (the evidence later steps need),
 * and a result no longer in play says which later call has the file's current text or changed it.
 */
function placeholderText(tool: string | undefined, tokens: number, refId: string, errors: string, later = ''): string {
  const evidence = errors ? ` ${errors}\n` : ' ';
  const note = later ? `${later} ` : '';
  return `[tool result cleared to save context: ${tool ?? 'tool'} output of ~${tokens} tokens.${evidence}${note}Read it back with read_result {"ref_id": "${refId}"} if it is needed again.]`;
}

/** Replaces the arguments of cleared calls with an empty object (their results are gone; the inputs can go too). */
function clearInputs(view: ViewItem[], calls: Set<string>, ctx: StrategyContext): void {
  view.forEach((item, i) => {
    if (item.message.role !== 'assistant' || !changeable(item, ctx)) return;
    if (!item.message.parts.some((p) => p.type === 'tool-call' && calls.has(p.id))) return;
    view[i] = {
      entry: item.entry,
      message: {
        ...item.message,
        parts: item.message.parts.map((p) => (p.type === 'tool-call' && calls.has(p.id) ? { ...p, arguments: {} } : p)),
      },
      edit: 'cleared',
    } as ViewItem;
  });
}
