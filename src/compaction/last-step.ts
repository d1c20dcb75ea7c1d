import type { Message, Part } from '../model/types.js';
import type { ViewItem } from '../model/view.js';
import type { ResultStore } from './result-store.js';
import { withoutThinking } from './strategies/drop-thinking.js';
import { compress } from './strategies/head-tail.js';
import { resultText, storedAs } from './strategies/strategy.js';
import { toolLoopUnderWay } from './turns.js';
import type { TokenCounter } from '../tokens/counter.js';

/** Tokens a part cut short keeps at the least (its first and last lines): below that, a reference alone says little. */
const KEEP_MIN = 60;
/** About what a part reduced to its reference costs. */
const REF_ONLY_TOKENS = 24;

export interface CutLastStepContext {
  counter: TokenCounter;
  /** Counted tokens the view must get down to. */
  target: number;
  size(view: readonly ViewItem[]): number;
  /** Entries of the last step that may be cut (not those that must stay verbatim whatever happens). */
  entries: ReadonlySet<number>;
  store: ResultStore;
  sessionId?: string;
  report(note: string): void;
  /** An entry's own message, before any edit: what a part already cut short is cut from again, and stored. */
  original?(entry: number): Message | undefined;
  /**
   * Tokens a part cut short keeps at the least (its first and last lines); 0 lets a part become its reference alone.
   * Default 60: below that a few lines say little.
   */
  keepAtLeast?: number;
  /**
   * The entries are a person's message (the latest instruction, last of all): its text may be cut too, and the notes
   * name it so. Default: the last agent step (its answers and results).
   */
  person?: boolean;
}

/**
 * The last resort when everything older is archived and the view is still over: the last step is cut short in place
 * (and archived like older work only when even that does not fit: see compact).
 * Thinking goes first when no tool-use loop is under way (no provider reads an earlier turn's thinking, and the next
 * request starts a new turn); then the largest texts and results keep their first and last lines, just
 * enough cut that the view fits, the whole text stored behind a reference the model can read back.
 */
export async function cutLastStep(view: readonly ViewItem[], ctx: CutLastStepContext): Promise<ViewItem[]> {
  const out = view.slice();
  const cuttable = (i: number) => out[i]!.entry !== undefined && ctx.entries.has(out[i]!.entry!);
  // No tool-use loop under way: the next request starts a turn, and the thinking of this one goes first.
  if (!toolLoopUnderWay(out)) {
    let dropped = 0;
    for (let i = 0; i < out.length && ctx.size(out) > ctx.target; i++) {
      const message = cuttable(i) ? withoutThinking(out[i]!.message) : undefined;
      if (!message) continue;
      out[i] = edited(out[i]!, message);
      dropped++;
    }
    if (dropped > 0)
      ctx.report('the thinking of the last turn was dropped to fit the budget (providers do not read it again)');
  }
  // The long parts, largest first: an assistant's text, or a tool result not already replaced by a reference.
  const parts: { i: number; p: number; tokens: number }[] = [];
  out.forEach((it, i) => {
    if (!cuttable(i) || (it.edit !== undefined && it.edit !== 'compressed')) return;
    it.message.parts.forEach((part, p) => {
      const text = textOfPart(it.message, part, ctx.person);
      if (text !== undefined) parts.push({ i, p, tokens: ctx.counter.text(text) });
    });
  });
  parts.sort((a, b) => b.tokens - a.tokens);
  const least = ctx.keepAtLeast ?? KEEP_MIN;
  for (const { i, p, tokens } of parts) {
    const over = ctx.size(out) - ctx.target;
    if (over <= 0) break;
    if (tokens <= least * 2 + REF_ONLY_TOKENS) break;
    const it = out[i]!;
    const part = it.message.parts[p]!;
    const text =
      (it.edit ? originalText(it.message, p, ctx.original?.(it.entry!), ctx.person) : undefined) ??
      textOfPart(it.message, part, ctx.person)!;
    const stored = await ctx.store.put(
      text,
      storedAs(ctx, it.entry, part.type === 'tool-result' ? { tool: part.toolName, callId: part.callId } : undefined),
    );
    const what = part.type === 'tool-result' ? 'result' : 'message';
    // The marker costs some tokens of its own: aim at the room the part may keep less a margin, then lower by what the
    // excerpt came out over, until it fits; below the least worth keeping, the reference alone.
    const overBy = (m: Message) =>
      ctx.size(out) - ctx.counter.message(it.message) + ctx.counter.message(m) - ctx.target;
    const reference = replacePart(
      it.message,
      p,
      `[${what === 'result' ? 'Result' : 'Message'} of ${text.split('\n').length} lines stored: read_result {"ref_id": "${stored.refId}"}]`,
    );
    let message = reference;
    for (let keep = Math.max(least, tokens - over - 50), tries = 0; keep >= Math.max(least, 1) && tries < 8; tries++) {
      const next = replacePart(it.message, p, compress(text, keep, stored.refId, ctx, what));
      const excess = overBy(next);
      if (excess <= 0) {
        message = next;
        break;
      }
      keep = Math.min(Math.floor(keep * 0.9), Math.floor(keep - excess));
    }
    if (ctx.counter.message(message) >= ctx.counter.message(it.message)) continue;
    out[i] = edited(it, message);
    ctx.report(
      ctx.person
        ? `the latest instruction (entry ${it.entry}) was cut to its first and last lines to fit the budget; the whole message is stored`
        : `the last step's ${what === 'result' ? 'tool result' : 'answer'} (entry ${it.entry}) was cut to its first and last lines to fit the budget; the whole ${what} is stored`,
    );
  }
  return out;
}

function edited(it: ViewItem, message: Message): ViewItem {
  return { entry: it.entry, message, edit: it.edit ?? 'compressed' } as ViewItem;
}

/**
 * The whole text of a part already cut short, from the entry's own message: a tool result by its call, an assistant's
 * text by its place among the message's texts (thinking dropped before it does not move it among those).
 */
function originalText(m: Message, at: number, original: Message | undefined, person?: boolean): string | undefined {
  const part = m.parts[at]!;
  if (!original) return undefined;
  if (part.type === 'tool-result') {
    const was = original.parts.find((x) => x.type === 'tool-result' && x.callId === part.callId);
    return was ? textOfPart(original, was) : undefined;
  }
  const k = m.parts.slice(0, at).filter((x) => x.type === part.type).length;
  const was = original.parts.filter((x) => x.type === part.type)[k];
  return was ? textOfPart(original, was, person) : undefined;
}

/** The text a part could be cut to: an assistant's text, a tool result's, or (a `person`'s message) its text. */
function textOfPart(m: Message, part: Part, person?: boolean): string | undefined {
  if (m.role === 'assistant' && part.type === 'text') return part.text;
  if (person && m.role === 'user' && part.type === 'text') return part.text;
  if (m.role === 'tool' && part.type === 'tool-result') return resultText(part);
  return undefined;
}

function replacePart(m: Message, at: number, text: string): Message {
  return {
    ...m,
    parts: m.parts.map((part, p) => {
      if (p !== at) return part;
      if (part.type === 'tool-result') return { ...part, content: [{ type: 'text', text }] };
      return { ...part, text } as Part;
    }),
  };
}
