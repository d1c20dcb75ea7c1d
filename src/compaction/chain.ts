/**
 * Carrying out one round of a compaction plan: the strategies cheapest first (each checked against the invariants and
 * undone if it breaks one or does not help), the summary squeezed into the room left, the newest shortened results
 * given back their content, and — when the round lets it — the last step cut short.
 */
import { AbridgeError } from '../errors.js';
import type { Message } from '../model/types.js';
import { isSummaryItem, type ViewItem } from '../model/view.js';
import { markerOf } from './marker.js';
import { giveWay, squeezeSummary } from './give-way.js';
import { filesBack } from './in-play.js';
import { checkInvariants, introducedViolations } from './invariants.js';
import type { CompactOptions, CompactionResult } from './options.js';
import type { CompactionPlan, PlannedRound } from './plan.js';
import type { ResultStore } from './result-store.js';
import { restoreNewest } from './restore.js';
import { clearToolResults } from './strategies/clear-tool-results.js';
import { dropThinking } from './strategies/drop-thinking.js';
import { headTail } from './strategies/head-tail.js';
import { offloadResults } from './strategies/offload.js';
import {
  STRATEGY_NAMES,
  StrategySkipped,
  type Strategy,
  type StrategyContext,
  type StrategyName,
} from './strategies/strategy.js';
import { stubInputs } from './strategies/stub-inputs.js';
import { summarizeSpan } from './strategies/summarize.js';
import { truncateOldest } from './strategies/truncate.js';
import type { Summarizer } from './summarizers/summarizer.js';

/** The built-in strategies by name (internal, frozen): callers pass their own as values in `strategies`. */
export const STRATEGIES: Readonly<Record<StrategyName, Strategy>> = Object.freeze({
  'clear-tool-results': clearToolResults,
  offload: offloadResults,
  'head-tail': headTail,
  'stub-inputs': stubInputs,
  'drop-thinking': dropThinking,
  summarize: summarizeSpan,
  truncate: truncateOldest,
});

/** What a round made: the view, what ran, what was skipped, what the summarizer said. */
export interface RoundOutcome {
  view: ViewItem[];
  run: CompactionResult['strategiesRun'];
  skipped: CompactionResult['skipped'];
  notes: string[];
}

/** What every round of one compaction shares. */
export interface ChainEnv {
  plan: CompactionPlan;
  options: CompactOptions;
  store: ResultStore;
  summarizer: Summarizer;
  /** What each entry showed before this compaction (an earlier compaction's edit included). */
  before: ReadonlyMap<number, ViewItem>;
  /** An entry's own message (entries are numbered by their place in the session). */
  raw(entry: number): Message | undefined;
  /** The primary request's text. */
  task?: string;
  sessionId?: string;
  /** Provider tokens of a view of `counted` counted tokens. */
  tokensOf(counted: number): number;
  /** Whether a view reaches the target as the result will say it (in provider tokens, rounded). */
  reached(view: readonly ViewItem[]): boolean;
}

/** Carries out one round of the plan. */
export async function runRound(env: ChainEnv, round: PlannedRound): Promise<RoundOutcome> {
  const { plan, options, store, summarizer, tokensOf } = env;
  const { view: view0, counter, targetCounted: target, lastStep } = plan;
  const { protection } = round;
  const size = (view: readonly ViewItem[]) => view.reduce((n, it) => n + counter.message(it.message), 0);
  const originals = new Map([...env.before].map(([entry, v]) => [entry, v.message]));
  let notes: string[] = [];
  const ctx: StrategyContext = {
    counter,
    target,
    size,
    // (The last step while it is cut short rather than archived, and the latest instruction, cut short in place when
    // it gives way: not archived by the strategies.)
    protectedEntries: new Set([
      ...protection.entries.keys(),
      ...(round.steps === 0 && !round.archiveLast ? lastStep : []),
      ...(round.relax >= 4 ? plan.latest : []),
    ]),
    store,
    summarizer,
    options: plan.options,
    originals,
    report: (note) => notes.push(note),
    room: round.room,
    summaryRoom: round.summaryRoom,
    ...(env.task ? { task: env.task } : {}),
    ...(env.sessionId ? { sessionId: env.sessionId } : {}),
    ...(round.relax >= 2 ? { archiveAgentSummaries: true } : {}),
    ...(options.instructions ? { instructions: options.instructions } : {}),
  };
  const baseline = checkInvariants(view0, { protectedEntries: protection.entries });
  // Cheap edits (clearing, offloading, stubbing) are for old work: when the chain can archive, the recent window
  // stays whole (archiving the oldest units makes the room instead); a chain of cheap edits alone may use it all.
  const given = new Map(
    (options.strategies ?? []).filter((x): x is Strategy => typeof x !== 'string').map((x) => [x.name, x]),
  );
  const names = (options.strategies ?? STRATEGY_NAMES).map((x) => (typeof x === 'string' ? x : x.name));
  const archives = names.includes('summarize') || names.includes('truncate');
  const cheapCtx: StrategyContext = {
    ...ctx,
    protectedEntries: archives ? protection.window : new Set(protection.entries.keys()),
  };
  const runChain = async (chain: readonly StrategyName[]): Promise<RoundOutcome> => {
    notes = [];
    const out: RoundOutcome = { view: view0, run: [], skipped: [], notes };
    let summaryPasses = 0;
    for (let at = 0; at < chain.length; at++) {
      const name = chain[at]!;
      if (size(out.view) <= target) break;
      const before = size(out.view);
      let next: ViewItem[];
      options.onStrategy?.(name);
      try {
        next = await (given.get(name) ?? STRATEGIES[name]).apply(
          out.view,
          name === 'summarize' || name === 'truncate' ? ctx : cheapCtx,
        );
      } catch (err) {
        // A store that cannot take the results (a full disk, a dead database) is not this strategy's failure: going on
        // without it would report success while what the strategy stored before failing stays behind, unreferenced.
        if (err instanceof AbridgeError && err.code === 'STORE_ERROR') throw err;
        out.skipped.push({
          name,
          reason: `${err instanceof StrategySkipped ? err.reason : `failed: ${err instanceof Error ? err.message : String(err)}`}`,
        });
        continue;
      }
      if (size(next) >= before) {
        out.skipped.push({ name, reason: 'undone: it would not make the context smaller' });
        continue;
      }
      const broken = introducedViolations(baseline, checkInvariants(next, { protectedEntries: protection.entries }));
      if (broken.length > 0) {
        out.skipped.push({ name, reason: `undone: it would break an invariant (${broken[0]!.message})` });
        continue;
      }
      out.view = next;
      const last = out.run[out.run.length - 1];
      if (last?.name === name) last.afterTokens = tokensOf(size(out.view));
      else out.run.push({ name, beforeTokens: tokensOf(before), afterTokens: tokensOf(size(out.view)) });
      // Passes until the target is met: a summary that came out larger than planned takes in the next oldest units.
      if (name === 'summarize' && ++summaryPasses < 4) at--;
    }
    // Still over with a summary of ours in view: squeeze that summary into the room left, down to a note if need be —
    // below a hand-off's least size only when that reaches the target: short of it, a one-line note would lose the
    // archived work for nothing (the caller gets the nearest view that still hands the work off).
    if (size(out.view) > target) {
      const tried = notes.slice();
      const squeezed = await squeezeSummary(out.view, target, size, counter, tried);
      if (env.reached(squeezed)) {
        out.view = squeezed;
        notes.splice(0, notes.length, ...tried);
      } else {
        const summary = out.view.find((it) => isSummaryItem(it) && markerOf(it.message)?.source === 'abridge');
        const over = summary ? counter.message(summary.message) - plan.options.summarize.minSummaryTokens : 0;
        if (over > 0) out.view = await squeezeSummary(out.view, size(out.view) - over, size, counter, notes);
      }
    }
    // What the cheap edits took beyond the target goes back to the newest results, whole or in part: in a chain that
    // may archive, clearing is a means to the target, and a batch of cleared results breaks the prompt cache once
    // however many of them stay cleared, so the room left is better spent on the recent work verbatim than empty.
    // Clearing asked for alone (or to clear at least so much) is Anthropic's context editing: its batch stays.
    const archived = out.run.some((r) => r.name === 'summarize' || r.name === 'truncate');
    const restoreAll = archived || (archives && plan.options.clearing.clearAtLeast === 0);
    if (
      options.restoreRecent !== false &&
      out.run.length > 0 &&
      (restoreAll || out.run.some((r) => r.name === 'offload' || r.name === 'head-tail'))
    ) {
      out.view = restoreNewest(
        out.view,
        { items: env.before, raw: env.raw },
        target,
        size,
        counter,
        protection.entries,
        restoreAll ? undefined : new Set(['offloaded', 'compressed']),
      );
      // The last step's figure is of the view as it is handed back.
      out.run[out.run.length - 1]!.afterTokens = tokensOf(size(out.view));
    }
    // What room is still left goes to the files the archived work leaves in play (in-play.ts).
    if (out.run.some((r) => r.name === 'summarize')) {
      out.view = filesBack(out.view, { before: view0, raw: env.raw, target, size, counter });
      out.run[out.run.length - 1]!.afterTokens = tokensOf(size(out.view));
    }
    return out;
  };
  let outcome = await runChain(names);
  // Recent work verbatim before cheapest first: when the cheap edits had to cut into the recent window, try archiving
  // the oldest work instead, and keep whichever leaves the longer verbatim recent stretch (the cheaper on a tie).
  const archiveOnly = names.filter((n) => n === 'drop-thinking' || n === 'summarize' || n === 'truncate');
  if (
    archives &&
    archiveOnly.length < names.length &&
    size(outcome.view) <= target &&
    verbatimSuffix(plan, outcome.view) < windowTokens(plan, protection.window)
  ) {
    const alternative = await runChain(archiveOnly);
    if (size(alternative.view) <= target && verbatimSuffix(plan, alternative.view) > verbatimSuffix(plan, outcome.view))
      outcome = alternative;
  }
  // The last step's turn to give way (everything older archived, still over): cut short in place, sharing the room
  // with the summary.
  if (round.steps === 0 && !round.archiveLast && !env.reached(outcome.view)) {
    const entries = new Set(lastStep.filter((e) => !protection.entries.has(e)));
    if (entries.size > 0)
      outcome.view = await giveWay(outcome.view, {
        counter,
        target,
        size,
        entries,
        store,
        original: env.raw,
        notes: outcome.notes,
        ...(env.sessionId ? { sessionId: env.sessionId } : {}),
      });
    // The last step's figure is of the view as it is handed back (the notes say what gave way).
    const lastRun = outcome.run[outcome.run.length - 1];
    if (lastRun) lastRun.afterTokens = tokensOf(size(outcome.view));
  }
  // Last of all, the latest instruction: cut short in place (never archived: it is what the next step answers), sharing
  // the room with the summary like the last step.
  if (round.relax >= 4 && !env.reached(outcome.view)) {
    outcome.view = await giveWay(outcome.view, {
      counter,
      target,
      size,
      entries: new Set(plan.latest),
      store,
      original: env.raw,
      notes: outcome.notes,
      person: true,
      ...(env.sessionId ? { sessionId: env.sessionId } : {}),
    });
    const lastRun = outcome.run[outcome.run.length - 1];
    if (lastRun) lastRun.afterTokens = tokensOf(size(outcome.view));
  }
  if (round.archiveLast) {
    const shown = new Set(outcome.view.map((it) => it.entry));
    const gone = lastStep.filter((e) => !protection.entries.has(e) && !shown.has(e));
    if (gone.length > 0)
      outcome.notes.push(
        `the last step (${gone.length === 1 ? `entry ${gone[0]}` : `entries ${gone[0]}–${gone[gone.length - 1]}`}) was archived to fit the budget: cut short, it did not fit`,
      );
  }
  return outcome;
}

/** Counted tokens of the longest stretch at the end of a view that is exactly as it was. */
function verbatimSuffix(plan: CompactionPlan, v: readonly ViewItem[]): number {
  const view0 = plan.view;
  let n = 0;
  for (let i = v.length - 1, j = view0.length - 1; i >= 0 && j >= 0 && v[i]!.message === view0[j]!.message; i--, j--)
    n += plan.counter.message(v[i]!.message);
  return n;
}

/** Counted tokens of the stretch at the end of the view the cheap strategies were to leave alone. */
function windowTokens(plan: CompactionPlan, window: ReadonlySet<number>): number {
  const view0 = plan.view;
  let n = 0;
  for (let j = view0.length - 1; j >= 0 && view0[j]!.entry !== undefined && window.has(view0[j]!.entry!); j--)
    n += plan.counter.message(view0[j]!.message);
  return n;
}
