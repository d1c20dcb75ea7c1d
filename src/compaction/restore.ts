import type { Message, ToolResultPart } from '../model/types.js';
import type { ViewItem } from '../model/view.js';
import type { TokenCounter } from '../tokens/counter.js';
import { compress } from './strategies/head-tail.js';
import { outputText, resultText, withResults } from './strategies/strategy.js';

/**
 * Gives the newest edited messages back their original content while the view still fits: what the cheap strategies
 * took from recent work (they act in batches) returns, newest first, so the recent tail is verbatim as far as the
 * target allows.
 */
export function restoreNewest(
  view: ViewItem[],
  originals: { items: ReadonlyMap<number, ViewItem>; raw: (entry: number) => Message | undefined },
  target: number,
  size: (v: readonly ViewItem[]) => number,
  counter: TokenCounter,
  protectedEntries: ReadonlyMap<number, Message>,
  only?: ReadonlySet<string>,
): ViewItem[] {
  let total = size(view);
  if (total > target) return view;
  const out = view.slice();
  // An item this compaction edited that may get its content back.
  const givable = (it: ViewItem): it is ViewItem & { entry: number; edit: string } =>
    it.edit !== undefined && it.entry !== undefined && !protectedEntries.has(it.entry) && (!only || only.has(it.edit));
  // Whole messages back, newest first; with `untilMiss`, up to the first that does not fit (it gets part of its text
  // below before anything older is given back).
  const restoreWhole = (untilMiss: boolean) => {
    for (let i = out.length - 1; i >= 0; i--) {
      const it = out[i]!;
      if (!givable(it)) continue;
      // Back to what it showed before this compaction — an earlier compaction's edit stays an edit.
      const was = originals.items.get(it.entry);
      if (!was || was.message === it.message) continue;
      const grow = counter.message(was.message) - counter.message(it.message);
      if (grow <= 0) continue;
      if (total + grow > target) {
        if (untilMiss) return;
        continue;
      }
      out[i] = was;
      total += grow;
    }
  };
  restoreWhole(true);
  // The newest results still shortened get back as much of their text as the room left holds: first and last lines,
  // with a pointer to the whole (what a command printed last is the recent work a model continues from).
  for (let i = out.length - 1; i >= 0 && target - total >= PARTIAL_MIN; i--) {
    const it = out[i]!;
    if (!givable(it)) continue;
    const original = originals.raw(it.entry);
    const parts = it.message.parts;
    if (!original) continue;
    // The largest excerpt of `text` that fits the room left (lines are counted one by one: the excerpt as a whole may
    // come out a little larger, so aim lower until it fits).
    const giveBack = (text: string, ref: string, what: 'result' | 'message', shown: (excerpt: string) => Message) => {
      const size = counter.message(it.message);
      let keep = target - total + size - PARTIAL_MIN / 2;
      while (keep >= PARTIAL_MIN / 2) {
        const message = shown(compress(text, Math.floor(keep), ref, { counter }, what));
        const grow = counter.message(message) - size;
        if (grow <= 0) return;
        const over = total + grow - target;
        if (over <= 0) {
          out[i] = { entry: it.entry, message, edit: 'compressed' };
          total += grow;
          return;
        }
        // Aim lower by what it came out over, and by a twentieth at least (a few tries reach a fit).
        keep = Math.min(keep * 0.95, keep - over - 8);
      }
    };
    // A person's command output cut short: its first and last lines back, the same way.
    const output = it.edit === 'compressed' ? outputText(original) : undefined;
    if (output !== undefined) {
      const ref = REF.exec(outputText(it.message) ?? '')?.[1];
      if (ref) giveBack(output, ref, 'message', (text) => ({ ...it.message, parts: [{ type: 'text', text }] }));
      continue;
    }
    if (it.message.role !== 'tool' || parts.filter((p) => p.type === 'tool-result').length !== 1) continue;
    const now = parts.find((p): p is ToolResultPart => p.type === 'tool-result')!;
    const was = original.parts.find((p): p is ToolResultPart => p.type === 'tool-result' && p.callId === now.callId);
    const ref = REF.exec(resultText(now))?.[1];
    if (!was || !ref) continue;
    giveBack(resultText(was), ref, 'result', (text) =>
      withResults(it.message, (p) => (p.callId === now.callId ? { ...p, content: [{ type: 'text', text }] } : p)),
    );
  }
  // What room is left goes to older messages that fit whole.
  restoreWhole(false);
  return out;
}

/** Room (counted tokens) below which a shortened result is not given part of its text back. */
const PARTIAL_MIN = 160;
const REF = /read_result \{"ref_id": "([^"]+)"/;
