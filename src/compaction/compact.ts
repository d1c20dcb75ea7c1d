import { memoryFile } from '../budget/components.js';
import { DEFAULT_KEEP_RECENT_TOKENS } from '../defaults.js';
import { conversationEntries } from '../model/branch.js';
import type { CompactionMarker, Entry, Message, Session, ToolResultPart } from '../model/types.js';
import { stableId } from '../model/ids.js';
import { MemoryResultStore } from './memory-result-store.js';
import type { ResultStore } from './result-store.js';
import type { ExactTokenizer } from '../tokens/exact.js';
import { followEntries, modelAt, trackerFor } from '../tokens/replay.js';
import { createRedactor, redactMarker, type Redactor } from '../redact/redact.js';
import { checkInvariants, introducedViolations, type Violation } from './invariants.js';
import { redactingStore, redactingSummarizer } from './redaction.js';
import { clearToolResults } from './strategies/clear-tool-results.js';
import { compress, headTail } from './strategies/head-tail.js';
import { offloadResults } from './strategies/offload.js';
import {
  DEFAULT_STRATEGY_OPTIONS,
  outputText,
  resultText,
  STRATEGY_NAMES,
  StrategySkipped,
  withResults,
  type Strategy,
  type StrategyContext,
  type StrategyName,
  type StrategyOptions,
} from './strategies/strategy.js';
import { agentSummary, summarizeSpan, summaryMessage, summaryRoom, summaryText } from './strategies/summarize.js';
import { truncateOldest } from './strategies/truncate.js';
import { stubInputs } from './strategies/stub-inputs.js';
import { dropThinking, thinkingNeededFrom } from './strategies/drop-thinking.js';
import { cutLastStep, type CutLastStepContext } from './last-step.js';
import { ExtractiveSummarizer, parseSummary } from './summarizers/extractive.js';
import type { Summarizer } from './summarizers/summarizer.js';
import { isHumanUser, isRequest, unitsOf } from './turns.js';
import {
  activeView,
  isSummaryItem,
  type AbridgeMarker,
  type EntryEdit,
  type SummaryItem,
  type ViewItem,
} from '../model/view.js';
import type { TokenCounter } from '../tokens/counter.js';

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

export { DEFAULT_KEEP_RECENT_TOKENS };

export interface CompactOptions {
  /** Tokens (as the provider counts them) the context must get down to. */
  target: number;
  /**
   * Which strategies, cheapest first (default: all, in STRATEGY_NAMES order): names of the built-in ones, or strategy
   * values — your own implementation of a step (a summarizer span policy, a clearing rule) passed in as an object.
   */
  strategies?: readonly (StrategyName | Strategy)[];
  summarizer?: Summarizer;
  /** Where cleared and offloaded results go (default: a new in-memory store). */
  store?: ResultStore;
  /**
   * The recent tail kept verbatim, in provider tokens (default: 20,000 or a quarter of the target's conversation
   * share, whichever is smaller). Whole units from the end, never fewer than `keepLastSteps` agent steps.
   */
  keepRecentTokens?: number;
  /** Agent steps at the end always in the verbatim tail (default 1). */
  keepLastSteps?: number;
  /**
   * When the target cannot be reached with that tail protected, protect less (halving the tail, down to this many
   * steps) rather than miss it. Default 0 when the system messages, the first request and the latest instruction fit
   * the target beside a note of the archive (the last step may then give way, last of all and only to reach the
   * target: its ended turn's thinking dropped, its longest answer or result cut to first and last lines; and when
   * even that is over, archived like older work), else 1 (giving it up could not reach the target). Set it equal to
   * `keepLastSteps` to never relax the count.
   */
  minKeepLastSteps?: number;
  /**
   * Never refuse what can shrink (default true): when the target cannot be reached with the last step, the thinking
   * of a tool-use loop under way, another agent's summary and the first request kept whole, they give way in that
   * order — archived like older work, into the summary, which quotes them as far as the room allows (the whole stays
   * in the session). The system messages, project memory and the latest instruction never give way: a target below
   * them is refused (`reachedTarget` false, what stays named). False keeps them all whole and refuses instead. Not
   * with `minKeepLastSteps` set, which keeps that many steps whatever happens.
   */
  shrinkProtected?: boolean;
  /** What the person asked the summary to keep or focus on (passed to the summarizer). */
  instructions?: string;
  /**
   * When the chain archived something, give back the newest cleared or shortened messages their whole content while
   * the context still fits (default true): the recent work stays verbatim as far as the target allows.
   */
  restoreRecent?: boolean;
  options?: { [K in keyof StrategyOptions]?: Partial<StrategyOptions[K]> };
  /** Run even when the context is already under the target. */
  force?: boolean;
  /** Tokens of the system prompt and tools the transcript does not hold (default: per agent). */
  prefixTokens?: number;
  exact?: ExactTokenizer;
  now?: () => Date;
  /**
   * Secret redaction (src/redact) of everything compaction sends out or adds: text put in the store, the summarizer's
   * input and output, the marker's summary and edits. Default: the built-in detector; pass `noRedaction` to turn it off.
   */
  redact?: Redactor;
  /** Called as each strategy starts, with its name: a long compaction can show where it is (the CLI's status line). */
  onStrategy?: (name: StrategyName) => void;
}

/** Something that had to stay verbatim, and its size in provider tokens. */
export interface ProtectedPart {
  what: string;
  tokens: number;
}

export interface CompactionResult {
  /**
   * Tokens of the context before and after, as the provider will count them. Every figure is of the view itself:
   * never below an estimate of its messages (a learned prefix cannot pull it under), never negative.
   */
  beforeTokens: number;
  afterTokens: number;
  beforeMessages: number;
  afterMessages: number;
  strategiesRun: { name: StrategyName; beforeTokens: number; afterTokens: number }[];
  skipped: { name: StrategyName; reason: string }[];
  /** Whether `afterTokens` ≤ target. */
  reachedTarget: boolean;
  /** Agent steps at the end kept verbatim (fewer than asked when that was needed to reach the target). */
  keptLastSteps: number;
  /** Provider tokens of the recent tail kept verbatim (protected). */
  keptRecentTokens: number;
  /**
   * What must reach the model verbatim however small the target — the prefix, system messages, the first request,
   * the latest instruction, the last step — with its size. When their sum (`protectedTokens`) is over the target, no
   * compaction can reach it.
   */
  protectedParts: ProtectedPart[];
  protectedTokens: number;
  /**
   * What had to stay verbatim and gave way to reach the target (`shrinkProtected`): the thinking of the step under way,
   * another agent's summary, the first request, the latest instruction — each archived into the summary, which quotes
   * it as far as the room allows. Empty when everything protected stayed.
   */
  gaveWay: string[];
  /** Invariant violations the compaction introduced (always empty: a strategy that would introduce one is undone). */
  violations: Violation[];
  /**
   * What the summarizer said of how the summary was made: a fallback to the extractive summary and why, messages an
   * LLM request had to leave out to fit its window (by entry).
   */
  summaryNotes: string[];
  /** The marker entry appended to the session, when anything changed. */
  entry?: Entry;
  marker?: AbridgeMarker;
}

/** One run of the chain: the view it made, what ran, what was skipped, what the summarizer said. */
interface Plan {
  view: ViewItem[];
  run: CompactionResult['strategiesRun'];
  skipped: CompactionResult['skipped'];
  notes: string[];
}

interface Protection {
  entries: Map<number, Message>;
  /** Entries the cheap strategies leave alone: the protected ones and the recent window. */
  window: Set<number>;
  steps: number;
  tailCounted: number;
  /** The parts that stay verbatim at the least (counted tokens), for the report. */
  parts: { what: string; counted: number; entries?: number[] }[];
}

/**
 * Compacts what the model sees until it fits `target` tokens. The recent tail (in tokens), the first request and the
 * latest instruction stay verbatim; the oldest work goes first — cleared, offloaded, stubbed, then summarized from the
 * oldest unit forward into a hand-off summary, and as a last resort archived without a summary — and the newest
 * shortened results get their content back while it fits. Nothing is deleted: a compaction marker is appended to the
 * session (summary, archived range, edits, tokens before/after), and `activeView(session)` shows the result. Every step
 * is checked against the invariants and undone if it breaks one; a failing strategy or summarizer is skipped and
 * reported.
 */
export async function compact(session: Session, options: CompactOptions): Promise<CompactionResult> {
  const branch = conversationEntries(session);
  const tracker = trackerFor(session, branch, {
    ...(options.exact ? { exact: options.exact } : {}),
    ...(options.prefixTokens !== undefined ? { prefixTokens: options.prefixTokens } : {}),
  });
  followEntries(branch, tracker);
  const prediction = tracker.predict(modelAt(session, branch));
  const counter = tracker.counter;

  const view0 = activeView(session);
  const size = (view: readonly ViewItem[]) => view.reduce((n, it) => n + counter.message(it.message), 0);
  const counted0 = size(view0);
  // One count: the size before is what `inspect` and the ContextManager give this session at this point.
  const beforeTokens = prediction.predicted;
  const { fixed, ratio } = splitPrompt(beforeTokens, prediction, counted0);
  const tokensOf = (counted: number) => Math.max(0, Math.round(fixed + ratio * counted));
  const target = (options.target - fixed) / ratio;
  const result: CompactionResult = {
    beforeTokens,
    afterTokens: beforeTokens,
    beforeMessages: view0.length,
    afterMessages: view0.length,
    strategiesRun: [],
    skipped: [],
    reachedTarget: beforeTokens <= options.target,
    keptLastSteps: 0,
    keptRecentTokens: 0,
    protectedParts: [],
    protectedTokens: 0,
    gaveWay: [],
    violations: [],
    summaryNotes: [],
  };
  const report = (p: Protection, note: 'archived' | 'needed' | 'none' = 'none') => {
    result.keptLastSteps = p.steps;
    result.keptRecentTokens = Math.round(ratio * p.tailCounted);
    // Archiving leaves at the least a note saying so (the model must know that earlier work exists); when nothing could
    // be archived because that note would not fit beside what stays, the note is part of what made the target
    // unreachable, and is named.
    const noteParts =
      note === 'none'
        ? []
        : [
            {
              what:
                note === 'archived'
                  ? 'the note of what was archived, at its shortest'
                  : 'the note archiving anything needs, at its shortest',
              counted: counter.message(summaryMessage(shortNote(1))),
            },
          ];
    result.protectedParts = [
      { what: 'system prompt and tools (not in the transcript)', tokens: Math.round(fixed) },
      ...[...p.parts, ...noteParts].map((x) => ({ what: x.what, tokens: Math.round(ratio * x.counted) })),
    ].filter((x) => x.tokens > 0);
    result.protectedTokens = result.protectedParts.reduce((n, x) => n + x.tokens, 0);
  };
  if (result.reachedTarget && !options.force) {
    report(protect(view0, { steps: options.keepLastSteps ?? 1, tailCounted: 0, counter }));
    return result;
  }

  const opts = mergeOptions(options.options);
  const task = view0.find((v) => isRequest(v.message))?.message ?? view0.find((v) => isHumanUser(v.message))?.message;
  const redact = options.redact ?? createRedactor();
  // Results put during the chain are made durable together, before the marker that refers to them exists.
  const batch = options.store?.batch?.();
  const store = redactingStore(batch?.store ?? options.store ?? new MemoryResultStore(), redact);
  const summarizer = redactingSummarizer(options.summarizer ?? new ExtractiveSummarizer(), redact);
  // What each entry showed before this compaction (an earlier compaction's edit included), and its message.
  const before = new Map(view0.filter((v) => v.entry !== undefined && !isSummaryItem(v)).map((v) => [v.entry!, v]));
  const originals = new Map([...before].map(([entry, v]) => [entry, v.message]));
  // What an entry itself holds (entries are numbered by their place in the session).
  const rawOf = (entry: number) => session.entries[entry]?.message;
  const keep = options.keepLastSteps ?? 1;
  const canRelax = options.shrinkProtected !== false && options.minKeepLastSteps === undefined;
  const head = protect(view0, { steps: 0, tailCounted: 0, counter });
  let headCounted = [...head.entries.values()].reduce((n, m) => n + counter.message(m), 0);
  // Giving up the last step helps only when what stays whatever happens (system messages, the first request, the latest
  // instruction) fits beside the shortest note of an archive; otherwise it would be archived for nothing.
  const headFits = headCounted + counter.message(summaryMessage(shortNote(1))) <= target;
  const minKeep = Math.min(keep, options.minKeepLastSteps ?? (headFits || canRelax ? 0 : 1));
  // When the last step gives way (no step protected, after keepLastSteps asked for some), it is cut short first, and
  // archived only if that is still over (its answer, however short, is what the model continues from).
  // (Its own entries: the last step unit's, whatever else protects them.)
  const lastUnit = unitsOf(view0).findLast((u) => u.kind === 'step');
  const lastStep =
    keep > 0 && lastUnit
      ? view0
          .slice(lastUnit.start, lastUnit.end)
          .map((v) => v.entry)
          .filter((e): e is number => e !== undefined)
      : [];
  // Reached as the result will say it (in provider tokens, rounded), not a fraction of a token short of it.
  const reached = (v: readonly ViewItem[]) => tokensOf(size(v)) <= options.target;
  // The room (counted) the target leaves beside what stays whatever happens (system messages, project memory, the first
  // request, the latest instruction), and the conversation besides that. The tail's default is a quarter of the room;
  // the summary's share of it is sized beside the tail (summaryRoom).
  let roomCounted = Math.max(0, target - headCounted);
  let conversationCounted = Math.max(0, counted0 - headCounted);
  const recent = options.keepRecentTokens ?? Math.min(DEFAULT_KEEP_RECENT_TOKENS, (ratio * roomCounted) / 4);
  let tail = Math.max(0, recent / ratio);
  let view = view0;
  let protection = protect(view0, { steps: keep, tailCounted: tail, counter });
  let best:
    | { view: ViewItem[]; run: CompactionResult['strategiesRun']; protection: Protection; notes: string[] }
    | undefined;
  // Protect the tail; if the target is still out of reach, protect half as much and run the whole chain again from the
  // start (so cheap strategies still come first), down to the last `minKeepLastSteps` steps alone.
  let notes: string[] = [];
  // Counted tokens of the longest stretch at the end of a view that is exactly as it was.
  const verbatimSuffix = (v: readonly ViewItem[]) => {
    let n = 0;
    for (let i = v.length - 1, j = view0.length - 1; i >= 0 && j >= 0 && v[i]!.message === view0[j]!.message; i--, j--)
      n += counter.message(v[i]!.message);
    return n;
  };
  const windowTokens = (p: Protection) => {
    let n = 0;
    for (let j = view0.length - 1; j >= 0 && view0[j]!.entry !== undefined && p.window.has(view0[j]!.entry!); j--)
      n += counter.message(view0[j]!.message);
    return n;
  };
  // Last of all, when cutting the last step short did not reach the target either: archive it like any older unit.
  let archiveLast = false;
  // Beyond that, what must stay gives way in turn (shrinkProtected): 1 the thinking step of a loop under way, 2 another
  // agent's summary, 3 the first request. The latest instruction never does: it is what the next step answers.
  let relax = 0;
  for (let k = keep; ; ) {
    notes = [];
    if (relax > 0) {
      const headNow = protect(view0, { steps: 0, tailCounted: 0, counter, relax });
      headCounted = [...headNow.entries.values()].reduce((n, m) => n + counter.message(m), 0);
      roomCounted = Math.max(0, target - headCounted);
      conversationCounted = Math.max(0, counted0 - headCounted);
    }
    // With the last step archived nothing recent stays beside the summary: it may take the whole room.
    const summaryCounted = archiveLast
      ? roomCounted
      : summaryRoom({ room: roomCounted, conversation: conversationCounted, tail }, opts.summarize);
    protection = protect(view0, {
      steps: k,
      tailCounted: tail,
      windowCounted: headCounted + roomCounted - summaryCounted,
      counter,
      relax,
    });
    view = view0;
    result.strategiesRun = [];
    const ctx: StrategyContext = {
      counter,
      target,
      size,
      protectedEntries: new Set([...protection.entries.keys(), ...(k === 0 && !archiveLast ? lastStep : [])]),
      store,
      summarizer,
      options: opts,
      originals,
      report: (note) => notes.push(note),
      room: roomCounted,
      summaryRoom: summaryCounted,
      ...(task ? { task: textOf(task) } : {}),
      ...(session.info.id ? { sessionId: session.info.id } : {}),
      ...(relax >= 2 ? { archiveAgentSummaries: true } : {}),
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
    const runChain = async (chain: readonly StrategyName[]): Promise<Plan> => {
      notes = [];
      const plan: Plan = { view: view0, run: [], skipped: [], notes };
      let summaryPasses = 0;
      for (let at = 0; at < chain.length; at++) {
        const name = chain[at]!;
        if (size(plan.view) <= target) break;
        const before = size(plan.view);
        let next: ViewItem[];
        options.onStrategy?.(name);
        try {
          next = await (given.get(name) ?? STRATEGIES[name]).apply(
            plan.view,
            name === 'summarize' || name === 'truncate' ? ctx : cheapCtx,
          );
        } catch (err) {
          plan.skipped.push({
            name,
            reason: `${err instanceof StrategySkipped ? err.reason : `failed: ${err instanceof Error ? err.message : String(err)}`}`,
          });
          continue;
        }
        if (size(next) >= before) {
          plan.skipped.push({ name, reason: 'undone: it would not make the context smaller' });
          continue;
        }
        const broken = introducedViolations(baseline, checkInvariants(next, { protectedEntries: protection.entries }));
        if (broken.length > 0) {
          plan.skipped.push({ name, reason: `undone: it would break an invariant (${broken[0]!.message})` });
          continue;
        }
        plan.view = next;
        const last = plan.run[plan.run.length - 1];
        if (last?.name === name) last.afterTokens = tokensOf(size(plan.view));
        else plan.run.push({ name, beforeTokens: tokensOf(before), afterTokens: tokensOf(size(plan.view)) });
        // Passes until the target is met: a summary that came out larger than planned takes in the next oldest units.
        if (name === 'summarize' && ++summaryPasses < 4) at--;
      }
      // Still over with a summary of ours in view: squeeze that summary into the room left, down to a note if need be.
      if (size(plan.view) > target) plan.view = await squeezeSummary(plan.view, target, size, counter, notes);
      // What the cheap edits took beyond the target goes back to the newest results, whole or in part: in a chain that
      // may archive, clearing is a means to the target, and a batch of cleared results breaks the prompt cache once
      // however many of them stay cleared, so the room left is better spent on the recent work verbatim than empty.
      // Clearing asked for alone (or to clear at least so much) is Anthropic's context editing: its batch stays.
      const archived = plan.run.some((r) => r.name === 'summarize' || r.name === 'truncate');
      const restoreAll = archived || (archives && opts.clearing.clearAtLeast === 0);
      if (
        options.restoreRecent !== false &&
        plan.run.length > 0 &&
        (restoreAll || plan.run.some((r) => r.name === 'offload' || r.name === 'head-tail'))
      ) {
        plan.view = restoreNewest(
          plan.view,
          { items: before, raw: rawOf },
          target,
          size,
          counter,
          protection.entries,
          restoreAll ? undefined : new Set(['offloaded', 'compressed']),
        );
        // The last step's figure is of the view as it is handed back.
        plan.run[plan.run.length - 1]!.afterTokens = tokensOf(size(plan.view));
      }
      return plan;
    };
    let plan = await runChain(names);
    // Recent work verbatim before cheapest first: when the cheap edits had to cut into the recent window, try archiving
    // the oldest work instead, and keep whichever leaves the longer verbatim recent stretch (the cheaper on a tie).
    const archiveOnly = names.filter((n) => n === 'drop-thinking' || n === 'summarize' || n === 'truncate');
    if (
      archives &&
      archiveOnly.length < names.length &&
      size(plan.view) <= target &&
      verbatimSuffix(plan.view) < windowTokens(protection)
    ) {
      const alternative = await runChain(archiveOnly);
      if (size(alternative.view) <= target && verbatimSuffix(alternative.view) > verbatimSuffix(plan.view))
        plan = alternative;
    }
    // The last step's turn to give way (everything older archived, still over): cut short in place, sharing the room
    // with the summary.
    if (k === 0 && !archiveLast && !reached(plan.view)) {
      const entries = new Set(lastStep.filter((e) => !protection.entries.has(e)));
      if (entries.size > 0)
        plan.view = await giveWay(plan.view, {
          counter,
          target,
          size,
          entries,
          store,
          original: rawOf,
          notes: plan.notes,
          ...(session.info.id ? { sessionId: session.info.id } : {}),
        });
      // The last step's figure is of the view as it is handed back (the notes say what gave way).
      const lastRun = plan.run[plan.run.length - 1];
      if (lastRun) lastRun.afterTokens = tokensOf(size(plan.view));
    }
    if (archiveLast) {
      const shown = new Set(plan.view.map((it) => it.entry));
      const gone = lastStep.filter((e) => !protection.entries.has(e) && !shown.has(e));
      if (gone.length > 0)
        plan.notes.push(
          `the last step (${gone.length === 1 ? `entry ${gone[0]}` : `entries ${gone[0]}–${gone[gone.length - 1]}`}) was archived to fit the budget: cut short, it did not fit`,
        );
    }
    view = plan.view;
    result.strategiesRun = plan.run;
    result.skipped.push(...plan.skipped);
    notes = plan.notes;
    // The last step gives way only for a view that reaches the target: short of it, it stays as an earlier round left it.
    // (Nor does what must stay: a relaxed round counts only if it reaches the target.)
    const gaveWay = (k === 0 && keep > 0 && !reached(view)) || (relax > 0 && !reached(view));
    if (!best || (!gaveWay && size(view) < size(best.view)))
      best = { view, run: result.strategiesRun, protection, notes };
    if (reached(view)) break;
    if (k === 0 && keep > 0 && !archiveLast && tail <= 0) {
      archiveLast = true;
      continue;
    }
    if (k === 0 && tail <= 0 && canRelax && relax < 3) {
      archiveLast = true;
      relax++;
      continue;
    }
    if (k <= minKeep && tail <= 0) break;
    const fewer = Math.max(minKeep, Math.min(k - 1, Math.floor(k / 2)));
    // The last step gives way last of all: only after a round that protected it alone, with no tail beside it.
    k = fewer < 1 && (k > 1 || (k === 1 && tail > 0)) ? 1 : fewer;
    tail = Math.min(tail, protection.tailCounted) < 800 ? 0 : Math.min(tail, protection.tailCounted) / 4;
  }
  // Unless the last round reached the target, keep the round that got furthest.
  if (best && !reached(view)) {
    view = best.view;
    result.strategiesRun = best.run;
    protection = best.protection;
    notes = best.notes;
  }
  result.summaryNotes = notes;
  report(
    protection,
    view.some((v) => isSummaryItem(v) && markerOf(v.message)?.source === 'abridge')
      ? 'archived'
      : !reached(view) && !headFits
        ? 'needed'
        : 'none',
  );
  // Report a strategy as skipped only if it never ran, once, with its last reason.
  const ran = new Set(result.strategiesRun.map((r) => r.name));
  const lastReason = new Map<StrategyName, string>();
  for (const s of result.skipped) if (!ran.has(s.name)) lastReason.set(s.name, s.reason);
  result.skipped = [...lastReason].map(([name, reason]) => ({ name, reason }));
  await batch?.commit();
  if (view === view0) return result;

  // What was protected and is not in view any more gave way (never silently: the result names it).
  const inView = new Set(view.map((v) => v.entry).filter((e): e is number => e !== undefined));
  result.gaveWay = head.parts
    .filter((p) => p.entries !== undefined && p.entries.length > 0 && p.entries.every((e) => !inView.has(e)))
    .map((p) => p.what);
  if (result.gaveWay.length > 0)
    notes.push(
      `to reach the target, these gave way (archived, quoted in the summary as far as it holds): ${result.gaveWay.join('; ')}`,
    );
  result.summaryNotes = notes;
  const after = size(view);
  result.afterTokens = Math.min(beforeTokens, tokensOf(after));
  result.afterMessages = view.length;
  result.reachedTarget = result.afterTokens <= options.target;
  const { entry, marker } = appendMarker(session, branch, view, result, options.now ?? (() => new Date()), redact);
  result.entry = entry;
  result.marker = marker;
  // What the session now shows must be exactly what the chain produced, and as sound; the figures are of what it shows.
  const shown = activeView(session);
  const shownTokens = tokensOf(size(shown));
  if (shownTokens !== result.afterTokens || shown.length !== result.afterMessages) {
    result.afterTokens = shownTokens;
    result.afterMessages = shown.length;
    result.reachedTarget = shownTokens <= options.target;
    marker.tokensAfter = shownTokens;
  }
  result.violations = introducedViolations(
    checkInvariants(view0, { protectedEntries: protection.entries }),
    checkInvariants(shown, { protectedEntries: protection.entries }),
  );
  return result;
}

/**
 * The last step gives way: when it and abridge's summary do not both fit the room the rest leaves, the last step keeps
 * half of that room at the least (or what the summary leaves, if more), the summary is squeezed into the rest, and the
 * last step is cut further only if the summary could not give enough (another agent's summary is carried whole).
 */
async function giveWay(
  view: ViewItem[],
  o: Omit<CutLastStepContext, 'report'> & { notes: string[] },
): Promise<ViewItem[]> {
  const ctx: CutLastStepContext = { ...o, report: (note) => o.notes.push(note) };
  const total = o.size(view);
  const summary = view.find((it) => isSummaryItem(it) && markerOf(it.message)?.source === 'abridge');
  const s = summary ? o.counter.message(summary.message) : 0;
  const l = view.reduce(
    (n, it) => n + (it.entry !== undefined && o.entries.has(it.entry) ? o.counter.message(it.message) : 0),
    0,
  );
  const room = o.target - (total - s - l);
  const keep = Math.min(l, Math.max(room / 2, room - s));
  const first = await cutLastStep(view, { ...ctx, target: total - (l - keep) });
  if (o.size(first) <= o.target) return first;
  // Further only if that reaches the target: the summary down to a note, the last step's long parts to their
  // references alone.
  const notes = o.notes.slice();
  let out = await squeezeSummary(first, o.target, o.size, o.counter, notes, true);
  if (o.size(out) > o.target) out = await cutLastStep(out, { ...ctx, keepAtLeast: 0, report: (n) => notes.push(n) });
  if (o.size(out) > o.target) return first;
  o.notes.splice(0, o.notes.length, ...notes);
  return out;
}

/**
 * The last squeeze (exported for its tests): abridge's own extractive summary in the view, rewritten to fit the room the
 * rest leaves (strictly, down to a note of what was archived with the people's words that fit). Any other summary is
 * left as it is.
 */
export async function squeezeSummary(
  view: ViewItem[],
  target: number,
  size: (v: readonly ViewItem[]) => number,
  counter: TokenCounter,
  notes: string[],
  evenIfOver = false,
): Promise<ViewItem[]> {
  const at = view.findIndex((it) => isSummaryItem(it) && markerOf(it.message)?.source === 'abridge');
  if (at === -1) return view;
  const item = view[at] as SummaryItem;
  const text = summaryText(item.message);
  if (!parseSummary(text)) return view;
  const room = Math.floor(target - (size(view) - counter.message(item.message)));
  // Without room, a note (what the caller asks for when more is cut after it), or nothing.
  if (room < 1 && !evenIfOver) return view;
  // The room is for the summary's message; its text gets that less the message's own cost (and less again, by what
  // the text came out over, should a rendering count more than its estimate).
  let ask = room - counter.message(summaryMessage(''));
  let squeezed = '';
  for (let attempt = 0; attempt < 3 && ask >= 1; attempt++) {
    squeezed = await new ExtractiveSummarizer().summarize({
      messages: [],
      previousSummary: text,
      maxTokens: ask,
      counter,
      strict: true,
    });
    const over = counter.message(summaryMessage(squeezed)) - room;
    if (over <= 0) break;
    ask -= over;
  }
  // Not even the shortest summary fits: a one-line note of how many messages were archived.
  if (!squeezed.trim() || counter.message(summaryMessage(squeezed)) > room)
    squeezed = shortNote(parseSummary(text)?.archivedMessages ?? 0);
  const out = view.map((it, i) =>
    i === at ? ({ message: summaryMessage(squeezed), covers: item.covers } as SummaryItem) : it,
  );
  if (size(out) >= size(view)) return view;
  notes.push(`the summary was cut to ${counter.text(squeezed).toLocaleString('en-US')} tokens to fit the budget`);
  return out;
}

/** The shortest record of an archived span: how many messages, and that nothing was deleted. */
export function shortNote(messages: number): string {
  return `[${messages} earlier messages archived; the full history is kept.]`;
}

/**
 * Gives the newest edited messages back their original content while the view still fits: what the cheap strategies
 * took from recent work (they act in batches) returns, newest first, so the recent tail is verbatim as far as the
 * target allows.
 */
function restoreNewest(
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

/**
 * Compacts now, whatever the fill: to `target` tokens when given, else to half of the current size (what an agent's
 * `compact_context` tool asks for).
 */
export async function forceCompact(
  session: Session,
  options: Omit<CompactOptions, 'target' | 'force'> & { target?: number } = {},
): Promise<CompactionResult> {
  if (options.target !== undefined) return compact(session, { ...options, target: options.target, force: true });
  const probe = await compact(session, { ...options, target: Number.MAX_SAFE_INTEGER, strategies: [] });
  return compact(session, { ...options, target: Math.floor(probe.beforeTokens / 2), force: true });
}

/**
 * Entries the model must see verbatim: leading system messages, project memory, another agent's summary, the first
 * message a person wrote and the primary request, the latest instruction, the recent tail (whole units from the end
 * within `tailCounted` tokens, never fewer than `steps` agent steps), and the step of the latest thinking.
 */
function protect(
  view: readonly ViewItem[],
  o: {
    steps: number;
    tailCounted: number;
    windowCounted?: number;
    counter: { message(m: Message): number };
    /** What gives way (see CompactOptions.shrinkProtected): 1 the thinking step, 2 agents' summaries, 3 the first request. */
    relax?: number;
  },
): Protection {
  const relax = o.relax ?? 0;
  const entries = new Map<number, Message>();
  const parts: Protection['parts'] = [];
  const add = (it: ViewItem | undefined, what?: string) => {
    if (it?.entry === undefined || isSummaryItem(it) || entries.has(it.entry)) return 0;
    entries.set(it.entry, it.message);
    const n = o.counter.message(it.message);
    if (what) parts.push({ what: `${what} (entry ${it.entry})`, counted: n, entries: [it.entry] });
    return n;
  };
  for (const it of view) {
    if (it.message.role !== 'system') break;
    add(it, 'system message');
  }
  // Project memory a harness recorded as a message (Codex's AGENTS.md block) is a standing instruction like the system
  // prompt: the newest copy of each file stays (an agent that injects it again after compacting has older copies).
  const memory = new Map<string, ViewItem>();
  for (const it of view) {
    const file = memoryFile(it.message);
    if (file !== undefined) memory.set(file, it);
  }
  for (const it of memory.values()) add(it, 'project memory');
  // Another agent's summary stays whole: nothing else records what it replaced (until it must give way: then it is
  // quoted in abridge's summary as far as the room allows, and kept whole in the session).
  for (const it of view) {
    if (!agentSummary(it.message) || relax >= 2) continue;
    const n = o.counter.message(it.message);
    if (it.entry !== undefined && !entries.has(it.entry)) entries.set(it.entry, it.message);
    parts.push({
      what: `the agent's own summary of earlier work${it.entry !== undefined ? ` (entry ${it.entry})` : ''}`,
      counted: n,
      ...(it.entry !== undefined ? { entries: [it.entry] } : {}),
    });
  }
  if (relax < 3) {
    add(
      view.find((v) => isHumanUser(v.message)),
      'first user message',
    );
    add(
      view.find((v) => isRequest(v.message)),
      'primary request',
    );
  }
  {
    add(
      [...view].reverse().find((v) => isRequest(v.message)),
      'latest instruction',
    );
    add(
      [...view].reverse().find((v) => isHumanUser(v.message)),
      'latest user message',
    );
  }
  const units = unitsOf(view);
  let steps = 0;
  let tail = 0;
  let minimal = 0;
  // The tail is a stretch at the very end: once a unit does not fit, nothing older joins it but the last steps asked
  // for (a protected stretch further back would be archived after the newer, unprotected work, not before it).
  let ended = false;
  for (let j = units.length - 1; j >= 0; j--) {
    const u = units[j]!;
    let n = 0;
    for (let i = u.start; i < u.end; i++) n += o.counter.message(view[i]!.message);
    if (u.kind === 'system') break;
    if (u.kind === 'summary') {
      // The newest thing in view (an earlier compaction archived the trailing harness messages): the work before it is
      // still the latest, and the tail goes on.
      if (tail === 0 && steps === 0 && j === units.length - 1) continue;
      // Otherwise the tail ends at a summary, but the last steps asked for are still found behind it (an earlier
      // compaction may have archived what came after them).
      if (steps >= o.steps) break;
      ended = true;
      continue;
    }
    const needed = u.kind === 'step' && steps < o.steps;
    if (!needed && (ended || tail + n > o.tailCounted)) {
      // Past the tail's tokens: stop, unless the last steps asked for are still to come (a large message after them
      // must not cost them their protection).
      if (steps >= o.steps) break;
      ended = true;
      continue;
    }
    for (let i = u.start; i < u.end; i++) {
      const added = add(view[i]);
      if (needed) minimal += added;
    }
    tail += n;
    if (u.kind === 'step') steps++;
  }
  // The recent window cheap edits leave alone: whole units from the end within `windowCounted` of what the protected
  // messages leave (it may still be archived, oldest first, if nothing else makes room).
  const window = new Set<number>(entries.keys());
  let room = (o.windowCounted ?? 0) - [...entries.values()].reduce((n, m) => n + o.counter.message(m), 0) + tail;
  for (let j = units.length - 1; j >= 0; j--) {
    const u = units[j]!;
    if (u.kind === 'summary' || u.kind === 'system') break;
    let n = 0;
    for (let i = u.start; i < u.end; i++) n += o.counter.message(view[i]!.message);
    if (n > room) break;
    room -= n;
    for (let i = u.start; i < u.end; i++) if (view[i]!.entry !== undefined) window.add(view[i]!.entry!);
  }
  if (minimal > 0)
    parts.push({ what: `the last ${steps === 1 ? 'step' : `${Math.min(steps, o.steps)} steps`}`, counted: minimal });
  // The latest assistant thinking of a tool-use loop under way stays as it was (providers verify the signed thinking of
  // that loop), with its whole step. A turn that ended with the assistant's answer has no loop under way: its thinking
  // becomes an earlier turn's with the next message, which providers do not need (Anthropic strips it).
  const from = thinkingNeededFrom(view);
  const stepUnits = units.filter((u) => u.kind === 'step' && u.start > from && relax < 1);
  for (let j = stepUnits.length - 1; j >= 0; j--) {
    const u = stepUnits[j]!;
    if (view[u.start]!.message.parts.some((p) => p.type === 'thinking')) {
      let n = 0;
      const at: number[] = [];
      for (let i = u.start; i < u.end; i++) {
        const added = add(view[i]);
        if (added > 0) at.push(view[i]!.entry!);
        n += added;
      }
      if (n > 0) parts.push({ what: 'the step of the latest thinking', counted: n, entries: at });
      break;
    }
  }
  return { entries, window, steps, tailCounted: tail, parts };
}

/**
 * What of a prompt compaction can change: `fixed` provider tokens (the session's prefix: system prompt and tools the
 * transcript does not hold) and `ratio` provider tokens per counted token of the messages — so that a view of `c`
 * counted tokens comes to fixed + ratio × c, and the view as it is to exactly `predicted`. What the bill shows beyond
 * the prefix and the counted messages (a ratio a little off over a long context, the reasoning a Codex turn carries) is
 * the messages' (within a factor of two of the learned ratio); a bill below the messages' count (a harness that
 * sends less than it records) scales them down.
 */
export function splitPrompt(
  predicted: number,
  p: { ratio: number; prefix: number },
  counted: number,
): { fixed: number; ratio: number } {
  if (counted <= 0) return { fixed: Math.max(0, predicted), ratio: p.ratio };
  const fixed0 = Math.max(0, Math.min(predicted, p.prefix));
  const ratio = Math.min(2 * p.ratio, Math.max(p.ratio / 2, (predicted - fixed0) / counted));
  const fixed = predicted - ratio * counted;
  return fixed >= 0 ? { fixed, ratio } : { fixed: 0, ratio: predicted / counted };
}

function mergeOptions(o: CompactOptions['options']): StrategyOptions {
  const d = DEFAULT_STRATEGY_OPTIONS;
  return {
    clearing: { ...d.clearing, ...o?.clearing },
    offload: { ...d.offload, ...o?.offload },
    headTail: { ...d.headTail, ...o?.headTail },
    stubInputs: { ...d.stubInputs, ...o?.stubInputs },
    summarize: { ...d.summarize, ...o?.summarize },
  };
}

function markerOf(m: Message): CompactionMarker | undefined {
  const p = m.parts.find((x) => x.type === 'compaction');
  return p?.type === 'compaction' ? p.marker : undefined;
}

function textOf(m: Message): string {
  return m.parts.map((p) => (p.type === 'text' ? p.text : '')).join('\n');
}

/** Records the compaction: a marker entry after the last entry of the branch, linked into the tree when it is one. */
function appendMarker(
  session: Session,
  branch: readonly Entry[],
  view: readonly ViewItem[],
  result: CompactionResult,
  now: () => Date,
  redact: Redactor,
): { entry: Entry; marker: AbridgeMarker } {
  // The summary this marker stands for: one made by this chain, or abridge's earlier one carried over unchanged.
  // Another agent's summary still in view stays an ordinary message of its own entry.
  const summary = view.find((v) => isSummaryItem(v) && markerOf(v.message)?.source === 'abridge');
  const visible = new Set(view.map((v) => v.entry).filter((e): e is number => e !== undefined));
  // Another agent's summary still in view is the message of its own marker entry.
  for (const v of view) {
    const m = isSummaryItem(v) ? markerOf(v.message) : undefined;
    const carrier = m && m.source !== 'abridge' ? branch.find((e) => e.compaction === m) : undefined;
    if (carrier) visible.add(carrier.index);
  }
  let covered = summary?.covers;
  // An earlier marker entry whose summary was folded into ours holds that summary's message: the archived range takes
  // it in when nothing visible lies between (otherwise the old summary would show again beside the new one).
  if (covered) {
    const shown = new Set(view.map((v) => v.message));
    for (const e of branch) {
      if (e.index <= covered.toEntry || !e.compaction || !e.message || shown.has(e.message)) continue;
      const to: number = covered.toEntry;
      if (branch.some((x) => x.index > to && x.index < e.index && visible.has(x.index))) break;
      covered = { fromEntry: covered.fromEntry, toEntry: e.index };
    }
    // An entry still in view inside that range — another agent's summary kept whole, which the branch records after
    // the entries it kept — ends the range: what comes after it is hidden instead.
    const from: number = covered.fromEntry;
    const inside = branch.find((x) => x.index > from && x.index <= covered!.toEntry && visible.has(x.index));
    if (inside) covered = { fromEntry: from, toEntry: inside.index - 1 };
  }
  // Entries neither visible nor under this summary were hidden by an earlier compaction: they stay hidden.
  const hidden: { fromEntry: number; toEntry: number }[] = [];
  let previous: number | undefined;
  for (const e of branch) {
    if (!e.message) continue;
    const hide = !visible.has(e.index) && !(covered && e.index >= covered.fromEntry && e.index <= covered.toEntry);
    if (hide) {
      const lastRange = hidden[hidden.length - 1];
      if (lastRange && lastRange.toEntry === previous) lastRange.toEntry = e.index;
      else hidden.push({ fromEntry: e.index, toEntry: e.index });
    }
    previous = e.index;
  }
  const edits: EntryEdit[] = view
    .filter((v) => v.entry !== undefined && v.edit !== undefined)
    .map((v) => ({ entry: v.entry!, message: v.message, how: v.edit! }));
  const number = session.entries.filter((e) => e.compaction).length + 1;
  const draftMarker: AbridgeMarker = {
    number,
    summary: summary ? summaryText(summary.message) : '',
    source: 'abridge',
    tokensBefore: result.beforeTokens,
    tokensAfter: result.afterTokens,
    strategies: result.strategiesRun.map((s) => s.name),
  };
  if (covered) draftMarker.archived = covered;
  if (edits.length > 0) draftMarker.edits = edits;
  if (hidden.length > 0) draftMarker.hidden = hidden;
  const firstKept = view.find((v) => v.entry !== undefined && (!covered || v.entry > covered.toEntry))?.entry;
  if (firstKept !== undefined) draftMarker.firstKeptEntry = firstKept;
  // Everything this record adds (the summary, the rewritten messages of edits: head/tail, previews) is redacted; the
  // entries it refers to stay as they were.
  const marker = redactMarker(draftMarker, redact);

  const last = branch[branch.length - 1];
  const draft: Omit<Entry, 'index'> = {
    kind: 'compaction',
    sourceType: 'abridge',
    compaction: marker,
    timestamp: now().getTime(),
  };
  // A new message for the marker: the summary item's message may be an earlier entry's, which must not change.
  if (summary) draft.message = { role: 'user', parts: [{ type: 'compaction', marker }], synthetic: true };
  if (last?.id !== undefined && last.parentId !== undefined) {
    draft.id = stableId(`abridge-compaction:${session.info.id ?? ''}:${session.entries.length}`, 8);
    draft.parentId = last.id;
    if (last.sidechain) draft.sidechain = true;
  }
  const entry = { ...draft, index: session.entries.length } as Entry;
  session.entries.push(entry);
  return { entry, marker };
}
