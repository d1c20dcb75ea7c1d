import type { CompactionMarker, Message } from '../../model/types.js';
import { isSummary, scoreUnit, unitsOf, type Unit } from '../turns.js';
import { isSummaryItem, type SummaryItem, type ViewItem } from '../../model/view.js';
import { changeable, StrategySkipped, type Strategy, type StrategyContext } from './strategy.js';


/** A unit may be archived when every message in it may change (summaries of earlier compactions may). */
function archivable(view: readonly ViewItem[], u: Unit, ctx: StrategyContext): boolean {
  if (u.kind === 'system') return false;
  for (let i = u.start; i < u.end; i++) {
    const item = view[i]!;
    if (item.entry === undefined ? !isSummaryItem(item) : !changeable(item, ctx)) return false;
  }
  return true;
}

/**
 * Summarizes the lowest-value span of old units: among the spans of archivable units that free enough tokens, the one
 * whose units score lowest on average (older first on ties). A span always takes in an earlier summary, so that a
 * second compaction summarizes the first summary plus what followed.
 */
export const summarizeSpan: Strategy = {
  name: 'summarize',
  async apply(view, ctx) {
    const units = unitsOf(view);
    const tokens = units.map((u) => sumTokens(view, u, ctx));
    const scores = units.map((u, k) => scoreUnit(view, u, k, units.length));
    const ok = units.map((u) => archivable(view, u, ctx));
    // abridge's own earlier summary must be part of the new span (a second compaction summarizes the first plus what
    // followed); another agent's summary may be, but need not.
    const summaryUnit = units.findIndex((u) => u.kind === 'summary' && ownSummary(view[u.start]!));
    const need = ctx.size(view) - ctx.target;
    const budget = summaryBudget(ctx);
    let best: { s: number; e: number; score: number; freed: number } | undefined;
    for (let s = 0; s < units.length; s++) {
      if (!ok[s]) continue;
      if (summaryUnit !== -1 && s > summaryUnit) break;
      let sum = 0;
      let score = 0;
      for (let e = s; e < units.length && ok[e]; e++) {
        sum += tokens[e]!;
        score += scores[e]!;
        if (summaryUnit !== -1 && e < summaryUnit) continue;
        const freed = sum - budget;
        const mean = score / (e - s + 1);
        const enough = freed >= need;
        const better =
          !best ||
          (enough && best.freed < need) ||
          (enough === best.freed >= need && (enough ? mean < best.score - 1e-9 : freed > best.freed));
        if (better) best = { s, e, score: mean, freed };
        if (enough) break; // longer spans from this start only cost more value
      }
    }
    if (!best || best.freed <= 0) throw new StrategySkipped('no old span whose summary would be smaller than it');
    const first = units[best.s]!;
    const last = units[best.e]!;
    const span = view.slice(first.start, last.end);
    const previous = span.find((it) => isSummary(it.message));
    const previousText = previous ? summaryText(previous.message) : undefined;
    const text = await ctx.summarizer.summarize({
      messages: span.map((it) => it.message),
      ...(previousText ? { previousSummary: previousText } : {}),
      ...(ctx.task ? { task: ctx.task } : {}),
      maxTokens: budget,
      counter: ctx.counter,
    });
    if (!text.trim()) throw new StrategySkipped(`the ${ctx.summarizer.name} summarizer returned nothing`);
    const covers = coverage(span);
    const item: SummaryItem = { message: summaryMessage(text), covers };
    return [...view.slice(0, first.start), item, ...view.slice(last.end)];
  },
};

function sumTokens(view: readonly ViewItem[], u: Unit, ctx: StrategyContext): number {
  let n = 0;
  for (let i = u.start; i < u.end; i++) n += ctx.counter.message(view[i]!.message);
  return n;
}

/** The summary may take a fifth of the target, within [300, maxSummaryTokens]: evidence lists need room. */
function summaryBudget(ctx: StrategyContext): number {
  return Math.max(300, Math.min(ctx.options.summarize.maxSummaryTokens, Math.floor(ctx.target * 0.2)));
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
