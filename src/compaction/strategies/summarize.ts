import type { CompactionMarker, Message } from '../../model/types.js';
import { isSummary, unitsOf, type Unit } from '../turns.js';
import { isSummaryItem, type SummaryItem, type ViewItem } from '../../model/view.js';
import type { SummaryRequest } from '../summarizers/summarizer.js';
import { changeable, StrategySkipped, type Strategy, type StrategyContext } from './strategy.js';

/** What a summary carries of each person's message, at most (the extractive summary quotes ~4,000 characters). */
const USER_MESSAGE_TOKENS = 1000;

/** A unit may be archived when every message in it may change (summaries of earlier compactions may). */
export function archivable(view: readonly ViewItem[], u: Unit, ctx: StrategyContext): boolean {
  if (u.kind === 'system') return false;
  for (let i = u.start; i < u.end; i++) {
    const item = view[i]!;
    if (item.entry === undefined ? !isSummaryItem(item) : !changeable(item, ctx)) return false;
  }
  return true;
}

/**
 * Summarizes the oldest archivable units: from the oldest one forward, just as far as the context needs to fit, then
 * on to the end of that turn when that costs little more. An earlier summary (abridge's or the agent's own) in the way
 * is folded into the new one, never dropped: a second compaction summarizes the first summary plus what followed.
 */
export const summarizeSpan: Strategy = {
  name: 'summarize',
  async apply(view, ctx) {
    const units = unitsOf(view);
    const tokens = units.map((u) => sumTokens(view, u, ctx));
    // What a unit was before this compaction's cheap edits: the summary is sized to what it replaces.
    const originalTokens = units.map((u, k) => {
      let n = 0;
      for (let i = u.start; i < u.end; i++) {
        const it = view[i]!;
        const original = it.entry !== undefined ? ctx.originals?.get(it.entry) : undefined;
        n += original ? ctx.counter.message(original) : ctx.counter.message(it.message);
      }
      return Math.max(n, tokens[k]!);
    });
    const ok = units.map((u) => archivable(view, u, ctx));
    const total = ctx.size(view);
    // Runs of consecutive archivable units, oldest first. abridge's own earlier summary must be in the span, so when
    // there is one only its run is a candidate.
    const runs: { s: number; e: number }[] = [];
    for (let k = 0; k < units.length; k++) {
      if (!ok[k]) continue;
      const s = k;
      while (k + 1 < units.length && ok[k + 1]) k++;
      runs.push({ s, e: k });
    }
    // With a summary of ours in view, its own run comes first (the span must take it in); any other run may be folded
    // into it after that (its entries are then archived under the one summary, which stays where it is).
    const own = units.findIndex((u) => u.kind === 'summary' && ownSummary(view[u.start]!));
    const candidates = (own === -1 ? runs.map((r) => ({ ...r, merge: false })) : [...runs.filter((r) => r.s <= own && own <= r.e).map((r) => ({ ...r, merge: false })), ...runs.filter((r) => !(r.s <= own && own <= r.e)).map((r) => ({ ...r, merge: true }))]);
    // What a summary carries whole besides its share of the rest: earlier summaries and what people wrote.
    const carriedOf = units.map((u, k) => (u.kind === 'summary' ? tokens[k]! : u.kind === 'user' ? Math.min(tokens[k]!, USER_MESSAGE_TOKENS) : 0));
    // The least a summary can be: a note of what was archived (the extractive summary's last resort).
    const floor = Math.min(ctx.options.summarize.minSummaryTokens, 100);
    let best: { s: number; e: number; freed: number; budget: number; merge: boolean } | undefined;
    for (const run of candidates) {
      const merge = run.merge;
      let span = merge ? tokens[own]! : 0;
      let replaced = span;
      let carried = merge ? tokens[own]! : 0;
      let found: typeof best;
      let fits = false;
      for (let e = run.s; e <= run.e; e++) {
        span += tokens[e]!;
        replaced += originalTokens[e]!;
        carried += carriedOf[e]!;
        if (!merge && own !== -1 && e < own) continue;
        // Sized to what it replaces, but never more than the room the rest of the view leaves.
        const room = ctx.target - (total - span);
        const wanted = Math.min(summaryBudget(replaced - carried, carried, ctx), Math.max(floor, span - 1));
        if (wanted <= room) {
          found = { s: run.s, e, freed: span - wanted, budget: wanted, merge };
          fits = true;
          break;
        }
        // Not enough yet: were the span to end here, the summary would get only the room the rest leaves.
        const budget = Math.min(wanted, Math.max(floor, room));
        if (!found || span - budget > found.freed) found = { s: run.s, e, freed: span - budget, budget, merge };
      }
      if (!found || found.freed <= 0) continue;
      // End at a turn boundary (before the next person's message) when that archives at most a quarter more.
      if (fits) {
        let e = found.e;
        let extra = 0;
        while (e + 1 <= run.e && units[e + 1]!.kind === 'step') {
          extra += tokens[e + 1]!;
          e++;
        }
        const spanTokens = tokens.slice(found.s, found.e + 1).reduce((a, b) => a + b, 0);
        // Only up to a person's message inside the run: never on into the recent work the run ends at.
        if (e !== found.e && e + 1 <= run.e && units[e + 1]!.kind === 'user' && extra <= spanTokens / 4) {
          const before = merge ? tokens[own]! : 0;
          const c = before + carriedOf.slice(found.s, e + 1).reduce((a, b) => a + b, 0);
          const room = ctx.target - (total - before - spanTokens - extra);
          const replaced = before + originalTokens.slice(found.s, e + 1).reduce((a, b) => a + b, 0);
          const budget = Math.min(summaryBudget(replaced - c, c, ctx), Math.max(floor, room));
          found = { s: found.s, e, freed: before + spanTokens + extra - budget, budget, merge };
        }
        best = found;
        break;
      }
      if (!best || found.freed > best.freed) best = found;
    }
    if (!best) throw new StrategySkipped('no old span whose summary would be smaller than it');
    const first = units[best.s]!;
    const last = units[best.e]!;
    const span = view.slice(first.start, last.end);
    if (best.merge) {
      // The earlier summary takes in a span elsewhere: it keeps its place and range; the span's entries are archived
      // under it (the compaction record lists them as hidden).
      const at = units[own]!.start;
      const previous = view[at] as SummaryItem;
      const text = await ctx.summarizer.summarize(summaryInput([previous, ...span], ctx, best.budget));
      if (!text.trim()) throw new StrategySkipped(`the ${ctx.summarizer.name} summarizer returned nothing`);
      const item: SummaryItem = { message: summaryMessage(text), covers: previous.covers };
      const out = view.map((it, i) => (i === at ? item : it));
      return [...out.slice(0, first.start), ...out.slice(last.end)];
    }
    const text = await ctx.summarizer.summarize(summaryInput(span, ctx, best.budget));
    if (!text.trim()) throw new StrategySkipped(`the ${ctx.summarizer.name} summarizer returned nothing`);
    const item: SummaryItem = { message: summaryMessage(text), covers: coverage(span) };
    return [...view.slice(0, first.start), item, ...view.slice(last.end)];
  },
};

/**
 * What the summarizer reads for a span: the messages as they were before this compaction edited them (a cleared
 * result's evidence still counts), without earlier summaries, whose text goes in `previousSummary`. The one place
 * where archived conversation becomes summarizer input.
 */
export function summaryInput(span: readonly ViewItem[], ctx: StrategyContext, maxTokens: number): SummaryRequest {
  const messages: Message[] = [];
  const entries: (number | undefined)[] = [];
  const previous: string[] = [];
  for (const it of span) {
    if (isSummary(it.message)) {
      const t = summaryText(it.message).trim();
      if (t) previous.push(t);
      continue;
    }
    messages.push((it.entry !== undefined ? ctx.originals?.get(it.entry) : undefined) ?? it.message);
    entries.push(it.entry);
  }
  return {
    messages,
    entries,
    ...(ctx.report ? { report: ctx.report } : {}),
    ...(previous.length > 0 ? { previousSummary: previous.join('\n\n') } : {}),
    ...(ctx.task ? { task: ctx.task } : {}),
    maxTokens,
    counter: ctx.counter,
  };
}

function sumTokens(view: readonly ViewItem[], u: Unit, ctx: StrategyContext): number {
  let n = 0;
  for (let i = u.start; i < u.end; i++) n += ctx.counter.message(view[i]!.message);
  return n;
}

/**
 * A summary is sized to what it replaces — `ratio` of the archived tokens, within [minSummaryTokens, the cap] — plus
 * the earlier summaries it carries forward whole. The cap is `maxSummaryTokens` and a share of the target, so that
 * the summary never crowds out the recent work it sits beside.
 */
export function summaryBudget(archived: number, carried: number, ctx: Pick<StrategyContext, 'options' | 'target'>): number {
  const o = ctx.options.summarize;
  const cap = Math.max(o.minSummaryTokens, Math.min(o.maxSummaryTokens, Math.floor(ctx.target * o.maxTargetShare)));
  return carried + Math.min(cap, Math.max(o.minSummaryTokens, Math.ceil(archived * o.ratio)));
}

function ownSummary(item: ViewItem): boolean {
  const p = item.message.parts.find((x) => x.type === 'compaction');
  return p?.type === 'compaction' && p.marker.source === 'abridge';
}

export function summaryText(m: Message): string {
  const p = m.parts.find((x) => x.type === 'compaction');
  return p?.type === 'compaction' ? p.marker.summary : m.parts.map((x) => (x.type === 'text' ? x.text : '')).join('\n');
}

/** The entries a span stands for, including what an earlier summary in it covered. */
export function coverage(span: readonly ViewItem[]): { fromEntry: number; toEntry: number } {
  let from = Number.POSITIVE_INFINITY;
  let to = -1;
  for (const it of span) {
    if (isSummaryItem(it)) {
      from = Math.min(from, it.covers.fromEntry);
      to = Math.max(to, it.covers.toEntry);
    } else if (it.entry !== undefined) {
      from = Math.min(from, it.entry);
      to = Math.max(to, it.entry);
    }
  }
  return { fromEntry: from, toEntry: to };
}

/** A user message holding a provisional marker; the chain fills in the marker when it records the compaction. */
export function summaryMessage(text: string): Message {
  const marker: CompactionMarker = { number: 0, summary: text, source: 'abridge' };
  return { role: 'user', parts: [{ type: 'compaction', marker }], synthetic: true };
}
