import type { CompactionMarker, Message } from '../../model/types.js';
import { isRequest, isSummary, unitsOf, type Unit } from '../turns.js';
import { isSummaryItem, type SummaryItem, type ViewItem } from '../../model/view.js';
import type { SummaryRequest } from '../summarizers/summarizer.js';
import { offloadResults } from './offload.js';
import {
  changeable,
  storedAs,
  StrategySkipped,
  type Strategy,
  type StrategyContext,
  type StrategyOptions,
} from './strategy.js';

/** What a summary carries of each person's message, at most (the extractive summary quotes ~4,000 characters). */
const USER_MESSAGE_TOKENS = 1000;

/** The least a summary is planned at: room for a few lines of what was archived. */
const SUMMARY_FLOOR = 100;

/** Room left beside a summary below which it is not asked again for a larger one. */
const SLACK_MIN = 60;

/** A unit may be archived when every message in it may change (abridge's earlier summary may; another agent's may not). */
export function archivable(view: readonly ViewItem[], u: Unit, ctx: StrategyContext): boolean {
  if (u.kind === 'system') return false;
  for (let i = u.start; i < u.end; i++) {
    const item = view[i]!;
    // Another agent's summary is the only record of what it replaced: it stays as it is (protected, counted as such).
    if (agentSummary(item.message) && !ctx.archiveAgentSummaries) return false;
    if (item.entry === undefined ? !isSummaryItem(item) : !changeable(item, ctx)) return false;
  }
  return true;
}

/**
 * Summarizes the oldest archivable units, wherever they are: from the oldest one forward, just as far as the context
 * needs to fit, then on to the end of that turn when that costs little more. abridge's earlier summary is folded into
 * the new one, never dropped (a second compaction summarizes the first summary plus what followed); another agent's
 * summary is not archivable and stays as it is.
 */
export const summarizeSpan: Strategy = {
  name: 'summarize',
  async apply(view, ctx) {
    const units = unitsOf(view);
    const tokens = units.map((u) => sumTokens(view, u, ctx));
    // What a unit was before this compaction's cheap edits (the summary is sized to what it replaces), and how much of
    // the difference can come back in part: restoreNewest cuts a result (or a person's command output) to its first
    // and last lines, while a stubbed input or dropped thinking comes back whole or not at all.
    const originalTokens: number[] = [];
    const partialTokens: number[] = [];
    units.forEach((u, k) => {
      let n = 0;
      let partial = 0;
      for (let i = u.start; i < u.end; i++) {
        const it = view[i]!;
        const original = it.entry !== undefined ? ctx.originals?.get(it.entry) : undefined;
        const now = ctx.counter.message(it.message);
        n += original ? ctx.counter.message(original) : now;
        if (original && it.message.role !== 'assistant') partial += Math.max(0, ctx.counter.message(original) - now);
      }
      originalTokens.push(Math.max(n, tokens[k]!));
      partialTokens.push(partial);
    });
    const ok = units.map((u) => archivable(view, u, ctx));
    const total = ctx.size(view);
    // What a summary carries whole besides its share of the rest: earlier summaries and what people wrote.
    const carriedOf = units.map((u, k) =>
      u.kind === 'summary' ? tokens[k]! : u.kind === 'user' ? Math.min(tokens[k]!, USER_MESSAGE_TOKENS) : 0,
    );
    // The least a summary can be: a note of what was archived (the extractive summary's last resort).
    const floor = Math.min(ctx.options.summarize.minSummaryTokens, SUMMARY_FLOOR);
    // Oldest first, wherever the archivable units are (a protected unit in between stays where it is). abridge's own
    // earlier summary goes first whatever its place: the new summary replaces it, so it must be folded in.
    const own = units.findIndex((u) => u.kind === 'summary' && ownSummary(view[u.start]!));
    const order = units.map((_, k) => k).filter((k) => ok[k] && k !== own);
    if (own !== -1 && ok[own]) order.unshift(own);
    // Running sums over `order`: the first n units' tokens now, before this compaction's edits, and carried whole.
    const spanSum = [0];
    const replacedSum = [0];
    const carriedSum = [0];
    for (const k of order) {
      spanSum.push(spanSum[spanSum.length - 1]! + tokens[k]!);
      replacedSum.push(replacedSum[replacedSum.length - 1]! + originalTokens[k]!);
      carriedSum.push(carriedSum[carriedSum.length - 1]! + carriedOf[k]!);
    }
    const sized = (n: number) => {
      const span = spanSum[n]!;
      const replaced = replacedSum[n]!;
      const carried = carriedSum[n]!;
      const room = ctx.target - (total - span);
      // Sized to what it replaces, but never more than the room the rest of the view leaves.
      const wanted = Math.min(summaryBudget(replaced - carried, carried, ctx), Math.max(floor, span - 1));
      return { n, span, room, wanted, fits: wanted <= room, budget: Math.min(wanted, Math.max(floor, room)) };
    };
    // The fewest oldest units whose summary makes the view fit; failing that, the span that frees the most.
    let best: ReturnType<typeof sized> | undefined;
    for (let n = 1; n <= order.length; n++) {
      const s = sized(n);
      if (s.fits) {
        best = s;
        break;
      }
      if (!best || s.span - s.budget > best.span - best.budget) best = s;
    }
    if (!best || best.span - best.budget <= 0)
      throw new StrategySkipped('no old span whose summary would be smaller than it');
    // No span fits a summary of the planned size beside what must stay: every span from the first that reaches the
    // target frees the same, its summary taking what the rest leaves. The fewest units keep the most work verbatim, but
    // a summary starved to a few lines loses the commands and errors of all it replaces; it is given at least its
    // floor share of the room (`minRoomShare`, what it keeps under the heaviest compaction) where archiving more allows.
    if (!best.fits) {
      const most = best.span - best.budget;
      const enough = (ctx.room ?? ctx.target) * ctx.options.summarize.minRoomShare;
      for (let n = best.n; n <= order.length && best.budget < Math.min(best.wanted, enough); n++) {
        const s = sized(n);
        if (s.span - s.budget >= most - 0.5 && s.budget > best.budget) best = s;
      }
    }
    // End at a turn boundary — before the next person's message — when the rest of that turn costs at most a quarter
    // more and a tenth of the room, and still fits (`fits` says whether a span of n units does): under heavy compaction
    // a quarter of what is archived can be all the recent work the room holds.
    const extension = (ctx.room ?? ctx.target) / 10;
    const toTurnEnd = (n: number, fits: (n: number) => boolean) => {
      let m = n;
      while (m < order.length && units[order[m]!]!.kind === 'step' && order[m] === order[m - 1]! + 1) m++;
      if (m > n && m < order.length && units[order[m]!]!.kind === 'user' && order[m] === order[m - 1]! + 1) {
        const more = sized(m).span - sized(n).span;
        if (fits(m) && more <= sized(n).span / 4 && more <= extension) return m;
      }
      return n;
    };
    if (best.fits) best = sized(toTurnEnd(best.n, (m) => sized(m).fits));
    // Budgets are of the summary's message; the summarizer is asked for its text, the message's own cost aside.
    const overhead = ctx.counter.message(summaryMessage(''));
    const stored = new Map<string, Promise<string>>();
    const referenced = (text: string): Promise<string> => {
      let out = stored.get(text);
      if (!out) {
        out = ctx.store
          .put(text, storedAs(ctx, undefined))
          .then((s) => `(The agent's own summary, whole: read_result {"ref_id": "${s.refId}"})\n${text}`);
        stored.set(text, out);
      }
      return out;
    };
    const summarizeFirst = async (n: number, maxTokens: number) => {
      const positions = [...order.slice(0, n)].sort((a, b) => a - b);
      const items = positions.flatMap((k) => view.slice(units[k]!.start, units[k]!.end));
      // Whether a person's request newer than every archived one stays in view (then the newest archived request is
      // not what the next step answers).
      const taken = new Set(positions);
      const lastTaken = positions[positions.length - 1] ?? -1;
      const laterRequestKept = units.some(
        (u, k) => k > lastTaken && !taken.has(k) && u.kind === 'user' && isRequest(view[u.start]!.message),
      );
      const input = summaryInput(items, ctx, Math.max(1, maxTokens - overhead));
      // Another agent's summary archived as a last resort is quoted as far as the room allows: its whole text is
      // stored, and the quote begins with the reference that reads it back.
      if (input.otherSummaries) input.otherSummaries = await Promise.all(input.otherSummaries.map(referenced));
      const text = await ctx.summarizer.summarize({ ...input, laterRequestKept });
      if (!text.trim()) throw new StrategySkipped(`the ${ctx.summarizer.name} summarizer returned nothing`);
      return { n, text, tokens: ctx.counter.message(summaryMessage(text)) };
    };
    let made = await summarizeFirst(best.n, best.fits ? best.wanted : best.budget);
    // Recent work verbatim comes before older work verbatim. The span was chosen for a summary of the planned size, on
    // the view as the cheap strategies left it; with a local summarizer (asked again at no cost) it is re-chosen to give
    // back the most of what those edits took from the newest units, newest first (restoreNewest does it after the chain),
    // archiving no more than that needs: a summary that came out smaller than planned leaves room for fewer archived
    // units, and archiving more makes room for a newer result to stand whole rather than older work.
    if (best.fits && ctx.summarizer.local) {
      const estimate = (n: number) =>
        n <= made.n
          ? made.tokens
          : Math.min(sized(n).wanted, Math.ceil((made.tokens * sized(n).span) / Math.max(1, sized(made.n).span)));
      const position = new Map(order.map((k, i) => [k, i]));
      // Tokens given back, newest first, if the first n units are archived, as restoreNewest gives them: whole units
      // while they fit; from the first that does not, what can come back in part (results cut to their first and last
      // lines, not dropped) for it and every older unit, as far as the room goes; -1 when the view would not fit.
      const regained = (n: number) => {
        let room = ctx.target - (total - sized(n).span) - estimate(n);
        if (room < 0) return -1;
        let got = 0;
        let missed = false;
        for (let k = units.length - 1; k >= 0 && room > 0; k--) {
          if ((position.get(k) ?? Number.POSITIVE_INFINITY) < n) break;
          const grow = originalTokens[k]! - tokens[k]!;
          if (grow <= 0) continue;
          const take = !missed && grow <= room ? grow : Math.min(room, partialTokens[k]!);
          if (take < grow) missed = true;
          room -= take;
          got += take;
        }
        return got;
      };
      let chosen = made.n;
      let most = regained(made.n);
      for (let n = 1; n <= order.length; n++) {
        const r = regained(n);
        if (r > most || (r === most && r >= 0 && n < chosen)) [chosen, most] = [n, r];
      }
      chosen = toTurnEnd(chosen, (m) => regained(m) >= most);
      if (chosen !== made.n) {
        const other = await summarizeFirst(chosen, Math.max(sized(chosen).budget, estimate(chosen)));
        if (ctx.target - (total - sized(chosen).span) >= other.tokens) made = other;
      }
    }
    // The newest archived unit, when archiving it whole is what made the view fit but it would stand beside the summary
    // with its results offloaded (a reference each): it stays so, and restoreNewest gives its results back as far as
    // the room holds — the end of the work is kept in part rather than summarized.
    let slimmed: { k: number; items: ViewItem[] } | undefined;
    if (best.fits && ctx.summarizer.local && made.n > 1) {
      const k = order[made.n - 1]!;
      const u = units[k]!;
      const items = view.slice(u.start, u.end);
      if (
        u.kind === 'step' &&
        order.slice(0, made.n).every((j) => j <= k) &&
        items.some((it) => it.message.role === 'tool')
      ) {
        const slim = await offloadResults
          .apply(items, {
            ...ctx,
            target: -1,
            options: { ...ctx.options, offload: { thresholdBytes: 0, previewChars: 0 } },
          })
          .catch((err: unknown) => {
            if (err instanceof StrategySkipped) return items;
            throw err;
          });
        const slimTokens = slim.reduce((n, it) => n + ctx.counter.message(it.message), 0);
        const roomLeft = ctx.target - (total - sized(made.n).span) - made.tokens;
        if (slimTokens < tokens[k]! && slimTokens <= roomLeft) {
          const fewer = await summarizeFirst(made.n - 1, sized(made.n - 1).wanted);
          if (ctx.target - (total - sized(made.n - 1).span - tokens[k]! + slimTokens) >= fewer.tokens) {
            made = fewer;
            slimmed = { k, items: slim };
          }
        }
      }
    }
    // Archiving whole units frees more than the plan needs; what the view leaves of the target once the summary is in,
    // and no shortened unit beside it could take back (restoreNewest gives those the room first), goes to the summary,
    // up to its size by what it replaces: the room is the caller's to fill, and an empty stretch of it serves no one.
    if (best.fits && ctx.summarizer.local && !slimmed) {
      const span = sized(made.n);
      const archived = new Set(order.slice(0, made.n));
      const givable = units.reduce((n, _, k) => n + (archived.has(k) ? 0 : originalTokens[k]! - tokens[k]!), 0);
      const slack = span.room - made.tokens - givable;
      const grown = Math.floor(
        Math.min(
          made.tokens + slack,
          summaryBudget(replacedSum[made.n]! - carriedSum[made.n]!, carriedSum[made.n]!, {
            ...ctx,
            summaryRoom: Number.POSITIVE_INFINITY,
          }),
        ),
      );
      if (grown - made.tokens >= SLACK_MIN) {
        const larger = await summarizeFirst(made.n, grown);
        if (larger.tokens > made.tokens && larger.tokens <= span.room - givable) made = larger;
      }
    }
    const { text } = made;
    const taken = new Set(order.slice(0, made.n));
    const positions = [...taken].sort((a, b) => a - b);
    // The summary stands where the oldest archived unit was and covers the run of archived units from there; archived
    // units after a protected one are hidden (the compaction record lists them).
    const first = positions[0]!;
    let runEnd = first;
    while (taken.has(runEnd + 1)) runEnd++;
    const item: SummaryItem = {
      message: summaryMessage(text),
      covers: coverage(view.slice(units[first]!.start, units[runEnd]!.end)),
    };
    const out: ViewItem[] = [];
    units.forEach((u, k) => {
      if (k === first) out.push(item);
      else if (k === slimmed?.k) out.push(...slimmed.items);
      else if (!taken.has(k)) out.push(...view.slice(u.start, u.end));
    });
    return out;
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
  const others: string[] = [];
  for (const it of span) {
    if (isSummary(it.message)) {
      const t = summaryText(it.message).trim();
      if (t) (agentSummary(it.message) ? others : previous).push(t);
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
    ...(others.length > 0 ? { otherSummaries: others } : {}),
    ...(ctx.task ? { task: ctx.task } : {}),
    ...(ctx.instructions ? { instructions: ctx.instructions } : {}),
    maxTokens,
    counter: ctx.counter,
    // Within its budget even if that costs detail: a summary over it would archive recent work to make room for itself.
    strict: true,
  };
}

function sumTokens(view: readonly ViewItem[], u: Unit, ctx: StrategyContext): number {
  let n = 0;
  for (let i = u.start; i < u.end; i++) n += ctx.counter.message(view[i]!.message);
  return n;
}

/**
 * A summary is sized to what it replaces — `ratio` of the archived tokens, within [minSummaryTokens,
 * maxSummaryTokens] — plus the earlier summaries and people's words it carries forward. All of it stays within a share
 * of the room beside what must stay: under heavy compaction an inventory of old work must not crowd out the recent work
 * verbatim (the extractive summary then quotes the opening of each person's message rather than all of it).
 */
export function summaryBudget(
  archived: number,
  carried: number,
  ctx: Pick<StrategyContext, 'options' | 'target' | 'room' | 'summaryRoom'>,
): number {
  const o = ctx.options.summarize;
  const own = Math.min(o.maxSummaryTokens, Math.max(o.minSummaryTokens, Math.ceil(archived * o.ratio)));
  const share = ctx.summaryRoom ?? (ctx.room ?? ctx.target) * o.maxRoomShare;
  return Math.min(carried + own, Math.max(SUMMARY_FLOOR, Math.floor(share)));
}

/**
 * The counted tokens a summary may take (the people's words it carries included) of the `room` the target leaves
 * beside what must stay: at most `maxRoomShare` of it, so that recent work keeps the rest. Under heavy compaction the
 * summary also gives way to the newest `recentShare` of the `conversation` (and to a larger protected `tail`), down to
 * `minRoomShare` of the room: when the room holds little more than the recent work, that work verbatim is what an
 * agent continues from, and an inventory of the old work would push it out.
 */
export function summaryRoom(
  at: { room: number; conversation: number; tail: number },
  o: Pick<StrategyOptions['summarize'], 'maxRoomShare' | 'minRoomShare' | 'recentShare'>,
): number {
  const recent = Math.max(at.tail, at.conversation * o.recentShare);
  return Math.max(0, at.room * o.minRoomShare, Math.min(at.room * o.maxRoomShare, at.room - recent));
}

/** A summary another agent wrote (pi's compaction, Claude Code's compact summary, Codex's compacted history). */
export function agentSummary(m: Message): boolean {
  return m.parts.some((p) => p.type === 'compaction' && p.marker.source !== 'abridge');
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
