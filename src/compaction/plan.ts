/**
 * A compaction as a value: its sizes (the one count, split into what it can and cannot change), what must stay, and the
 * rounds it will try — each with what it protects, the recent window the cheap strategies leave alone, and the room of
 * the summary — decided from the view alone, before anything runs. `compact` carries the rounds out in order until one
 * reaches the target (chain.ts); the overflow error and a preview read the same value.
 */
import { windowsOf } from '../budget/windows.js';
import { DEFAULT_KEEP_RECENT_TOKENS } from '../defaults.js';
import { AbridgeError } from '../errors.js';
import { conversationEntries } from '../model/branch.js';
import type { Entry, Session } from '../model/types.js';
import { activeView, type ViewItem } from '../model/view.js';
import type { TokenCounter } from '../tokens/counter.js';
import { followEntries, modelAt, trackerFor } from '../tokens/replay.js';
import { shortNote } from './give-way.js';
import { latest, pinnedTest, protect, type Protection } from './must-stay.js';
import type { CompactOptions, ProtectedPart } from './options.js';
import { DEFAULT_STRATEGY_OPTIONS, type StrategyOptions } from './strategies/strategy.js';
import { summaryMessage, summaryRoom } from './strategies/summarize.js';
import { unitsOf } from './turns.js';

/** One round: how much is protected, and the rooms that follow from it. */
export interface PlannedRound {
  /** Agent steps at the end kept verbatim (0: the last step may be cut short). */
  steps: number;
  /** Counted tokens of the recent tail asked for. */
  tailCounted: number;
  /** The last step is archived like older work (everything else gave way first). */
  archiveLast: boolean;
  /**
   * What must stay gives way, in order: 1 the thinking step of a loop under way, 2 agents' summaries, 3 the first
   * request, 4 the latest instruction — cut in place to its first and last lines with its whole text behind a
   * reference, never archived (it is what the next step answers).
   */
  relax: number;
  protection: Protection;
  /** Counted tokens the target leaves beside what stays whatever happens (at this round's relax level). */
  room: number;
  /** Counted tokens the summary may take. */
  summaryRoom: number;
}

export interface CompactionPlan {
  /** The view as it is, and how it is counted. */
  view: ViewItem[];
  counter: TokenCounter;
  /** Provider tokens of the context now: what `inspect` says of it (the one count). */
  before: number;
  /** Provider tokens no compaction changes (the session's prefix), and provider tokens per counted token of the rest. */
  fixed: number;
  ratio: number;
  /** Counted tokens of the view now, and of the target. */
  counted: number;
  targetCounted: number;
  /** Whether the view is already within the target. */
  within: boolean;
  options: StrategyOptions;
  /** Agent steps kept verbatim at first, and at the least. */
  keep: number;
  minKeep: number;
  /** What stays whatever happens before anything gives way: system messages, memory, summaries, requests. */
  head: Protection;
  /** Whether that fits the target beside the shortest note of an archive. */
  headFits: boolean;
  /** The entries of the last agent step (what gives way last, cut short first). */
  lastStep: number[];
  /** The entries of the latest instruction (and latest person's message): cut in place, never archived. */
  latest: number[];
  /** The rounds, from the most protected to the least: `compact` stops at the first that reaches the target. */
  rounds: PlannedRound[];
}

/** The counter and branch a plan is made with (the one tracker every count of the session uses). */
export interface Measured {
  branch: Entry[];
  view: ViewItem[];
  counter: TokenCounter;
  before: number;
  fixed: number;
  ratio: number;
}

/** Measures a session as every count of it does (tokens/replay.ts), and splits the size into what compaction can change. */
export function measureForCompaction(
  session: Session,
  options: Pick<CompactOptions, 'exact' | 'prefixTokens'> = {},
): Measured {
  const branch = conversationEntries(session);
  const tracker = trackerFor(session, branch, {
    ...(options.exact ? { exact: options.exact } : {}),
    ...(options.prefixTokens !== undefined ? { prefixTokens: options.prefixTokens } : {}),
    windowOf: windowsOf(),
  });
  followEntries(branch, tracker);
  const prediction = tracker.predict(modelAt(session, branch));
  const counter = tracker.counter;
  const view = activeView(session);
  const counted = view.reduce((n, it) => n + counter.message(it.message), 0);
  // One count: the size before is what `inspect` and the ContextManager give this session at this point.
  const { fixed, ratio } = splitPrompt(prediction.predicted, prediction, counted);
  return { branch, view, counter, before: prediction.predicted, fixed, ratio };
}

/**
 * Refuses options no compaction can follow: a `target` that is not a finite number of tokens ≥ 0 (undefined, NaN,
 * Infinity, negative — the search for a round that reaches it would never end), and likewise the tail sizes.
 */
export function checkCompactOptions(options: CompactOptions): void {
  const given = options as unknown as Record<string, unknown>;
  const bad = (name: string, v: unknown, integer: boolean) =>
    new AbridgeError(
      'INVALID_INPUT',
      `compact: option "${name}" must be a finite ${integer ? 'whole ' : ''}number ≥ 0${name === 'target' ? ' (the token budget to compact to)' : ''}, got ${describe(v)}`,
    );
  const target = given.target;
  if (typeof target !== 'number' || !Number.isFinite(target) || target < 0) throw bad('target', target, false);
  for (const [name, integer] of [
    ['keepRecentTokens', false],
    ['keepLastSteps', true],
    ['minKeepLastSteps', true],
    ['prefixTokens', false],
  ] as const) {
    const v = given[name];
    if (v === undefined) continue;
    if (typeof v !== 'number' || !Number.isFinite(v) || v < 0 || (integer && !Number.isInteger(v)))
      throw bad(name, v, integer);
  }
  const summary = given.summary;
  if (summary !== undefined && (typeof summary !== 'string' || summary.trim() === ''))
    throw new AbridgeError(
      'INVALID_INPUT',
      `compact: option "summary" must be the summary's text (not empty), got ${describe(summary)}`,
    );
  const pinned = given.pinned;
  if (pinned !== undefined && typeof pinned !== 'function') {
    const list = pinned instanceof Set ? [...pinned] : Array.isArray(pinned) ? pinned : undefined;
    const wrong = list === undefined ? pinned : list.find((e) => !Number.isInteger(e) || (e as number) < 0);
    if (list === undefined || wrong !== undefined)
      throw new AbridgeError(
        'INVALID_INPUT',
        `compact: option "pinned" must be entry numbers (whole numbers ≥ 0) or a test of each message, got ${describe(wrong)}`,
      );
  }
}

function describe(v: unknown): string {
  if (v === undefined) return 'undefined';
  if (typeof v === 'number') return String(v);
  if (typeof v === 'string') return `the string ${JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}…` : v)}`;
  return v === null ? 'null' : typeof v;
}

/**
 * Plans a compaction of `session` to `options.target`: what is protected in each round it may try, and the rooms.
 * Nothing is changed.
 */
export function planCompaction(session: Session, options: CompactOptions): CompactionPlan {
  checkCompactOptions(options);
  return planFrom(measureForCompaction(session, options), options);
}

/** The plan of a measured view. */
export function planFrom(m: Measured, options: CompactOptions): CompactionPlan {
  const { view: view0, counter, fixed, ratio } = m;
  const size = (view: readonly ViewItem[]) => view.reduce((n, it) => n + counter.message(it.message), 0);
  const counted0 = size(view0);
  const target = (options.target - fixed) / ratio;
  const opts = mergeOptions(options.options);
  const keep = options.keepLastSteps ?? 1;
  const canRelax = options.shrinkProtected !== false && options.minKeepLastSteps === undefined;
  const pinned = pinnedTest(options.pinned);
  const head = protect(view0, { steps: 0, tailCounted: 0, counter, pinned });
  const countedOf = (p: Protection) => [...p.entries.values()].reduce((n, msg) => n + counter.message(msg), 0);
  const head0 = countedOf(head);
  // Giving up the last step helps only when what stays whatever happens (system messages, the first request, the latest
  // instruction) fits beside the shortest note of an archive; otherwise it would be archived for nothing.
  const headFits = head0 + counter.message(summaryMessage(shortNote(1))) <= target;
  const minKeep = Math.min(keep, options.minKeepLastSteps ?? (headFits || canRelax ? 0 : 1));
  // When the last step gives way (no step protected, after keepLastSteps asked for some), it is cut short first, and
  // archived only if that is still over (its answer, however short, is what the model continues from).
  const lastUnit = unitsOf(view0).findLast((u) => u.kind === 'step');
  const lastStep =
    keep > 0 && lastUnit
      ? view0
          .slice(lastUnit.start, lastUnit.end)
          .map((v) => v.entry)
          .filter((e): e is number => e !== undefined)
      : [];
  // The room (counted) the target leaves beside what stays whatever happens (system messages, project memory, the first
  // request, the latest instruction), and the conversation besides that. The tail's default is a quarter of the room;
  // the summary's share of it is sized beside the tail (summaryRoom).
  const recent =
    options.keepRecentTokens ?? Math.min(DEFAULT_KEEP_RECENT_TOKENS, (ratio * Math.max(0, target - head0)) / 4);
  const latestEntries = [
    ...new Set(
      latest(view0)
        // (A pinned instruction is never cut: it stays whole, like the system messages.)
        .filter((it) => it !== undefined && !pinned(it))
        .map((it) => it?.entry)
        .filter((e): e is number => e !== undefined),
    ),
  ];
  const rounds: PlannedRound[] = [];
  // Protect the tail; if the target is still out of reach, protect half as much and run the whole chain again from the
  // start (so cheap strategies still come first), down to the last `minKeepLastSteps` steps alone. Last of all, when
  // cutting the last step short did not reach the target either: archive it like any older unit. Beyond that, what
  // must stay gives way in turn (shrinkProtected): 1 the thinking step of a loop under way, 2 another agent's summary,
  // 3 the first request, and last of all 4 the latest instruction — cut short in place, never archived: it is what the
  // next step answers. The system messages and project memory never give way.
  let tail = Math.max(0, recent / ratio);
  let archiveLast = false;
  let relax = 0;
  for (let k = keep; ; ) {
    const headCounted =
      relax > 0 ? countedOf(protect(view0, { steps: 0, tailCounted: 0, counter, relax, pinned })) : head0;
    const room = Math.max(0, target - headCounted);
    const conversation = Math.max(0, counted0 - headCounted);
    // With the last step archived nothing recent stays beside the summary: it may take the whole room.
    const summaryCounted = archiveLast ? room : summaryRoom({ room, conversation, tail }, opts.summarize);
    const protection = protect(view0, {
      steps: k,
      tailCounted: tail,
      windowCounted: headCounted + room - summaryCounted,
      counter,
      relax,
      pinned,
    });
    rounds.push({ steps: k, tailCounted: tail, archiveLast, relax, protection, room, summaryRoom: summaryCounted });
    if (k === 0 && keep > 0 && !archiveLast && tail <= 0) {
      archiveLast = true;
      continue;
    }
    if (k === 0 && tail <= 0 && canRelax && relax < (latestEntries.length > 0 ? 4 : 3)) {
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
  return {
    view: view0,
    counter,
    before: m.before,
    fixed,
    ratio,
    counted: counted0,
    targetCounted: target,
    within: m.before <= options.target,
    options: opts,
    keep,
    minKeep,
    head,
    headFits,
    lastStep,
    latest: latestEntries,
    rounds,
  };
}

/**
 * What must stay of a plan's view at its least protected round — what no compaction with these options can archive —
 * in provider tokens, the session's prefix first: the overflow error's figure and `CompactionResult.protectedParts`.
 */
export function mustStay(
  plan: Pick<CompactionPlan, 'fixed' | 'ratio'> & { rounds?: readonly PlannedRound[] },
  protection: Protection = plan.rounds![plan.rounds!.length - 1]!.protection,
): ProtectedPart[] {
  return [
    { what: 'system prompt and tools (not in the transcript)', tokens: Math.round(plan.fixed) },
    ...protection.parts.map((x) => ({ what: x.what, tokens: Math.round(plan.ratio * x.counted) })),
  ].filter((x) => x.tokens > 0);
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
