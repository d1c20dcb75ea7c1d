import { conversationEntries } from '../model/branch.js';
import type { CompactionMarker, Entry, Message, Session } from '../model/types.js';
import { stableId } from '../formats/ids.js';
import { MemoryResultStore } from '../store/memory-result-store.js';
import type { ResultStore } from '../store/result-store.js';
import type { ExactTokenizer } from '../tokens/exact.js';
import { followEntries, trackerFor } from '../tokens/replay.js';
import { createRedactor, redactMarker, type Redactor } from '../redact/redact.js';
import { checkInvariants, introducedViolations, type Violation } from './invariants.js';
import { redactingStore, redactingSummarizer } from './redaction.js';
import { clearToolResults } from './strategies/clear-tool-results.js';
import { headTail } from './strategies/head-tail.js';
import { offloadResults } from './strategies/offload.js';
import { DEFAULT_STRATEGY_OPTIONS, STRATEGY_NAMES, StrategySkipped, type Strategy, type StrategyContext, type StrategyName, type StrategyOptions } from './strategies/strategy.js';
import { summarizeSpan, summaryText } from './strategies/summarize.js';
import { truncateOldest } from './strategies/truncate.js';
import { ExtractiveSummarizer } from './summarizers/extractive.js';
import type { Summarizer } from './summarizers/summarizer.js';
import { isHumanUser, unitsOf } from './turns.js';
import { activeView, isSummaryItem, type AbridgeMarker, type EntryEdit, type ViewItem } from '../model/view.js';

export const STRATEGIES: Record<StrategyName, Strategy> = {
  'clear-tool-results': clearToolResults,
  offload: offloadResults,
  'head-tail': headTail,
  summarize: summarizeSpan,
  truncate: truncateOldest,
};

export interface CompactOptions {
  /** Tokens (as the provider counts them) the context must get down to. */
  target: number;
  /** Which strategies, cheapest first (default: all, in STRATEGY_NAMES order). */
  strategies?: readonly StrategyName[];
  summarizer?: Summarizer;
  /** Where cleared and offloaded results go (default: a new in-memory store). */
  store?: ResultStore;
  /** Agent steps at the end kept verbatim (default 5). */
  keepLastSteps?: number;
  /**
   * When the target cannot be reached with `keepLastSteps` protected, protect fewer (down to this many) rather than
   * miss it; default 1. Set it equal to `keepLastSteps` to never relax.
   */
  minKeepLastSteps?: number;
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
}

export interface CompactionResult {
  beforeTokens: number;
  afterTokens: number;
  beforeMessages: number;
  afterMessages: number;
  strategiesRun: { name: StrategyName; beforeTokens: number; afterTokens: number }[];
  skipped: { name: StrategyName; reason: string }[];
  reachedTarget: boolean;
  /** Agent steps at the end kept verbatim in the end (fewer than asked when that was needed to reach the target). */
  keptLastSteps: number;
  /** Invariant violations the compaction introduced (always empty: a strategy that would introduce one is undone). */
  violations: Violation[];
  /** The marker entry appended to the session, when anything changed. */
  entry?: Entry;
  marker?: AbridgeMarker;
}

/**
 * Compacts what the model sees until it fits `target` tokens, running strategies cheapest first and stopping as soon as
 * it fits. Nothing is deleted: a compaction marker is appended to the session (summary, archived range, edits, tokens
 * before/after), and `activeView(session)` shows the result. Every step is checked against the invariants and undone
 * if it breaks one; a failing strategy or summarizer is skipped and reported.
 */
export async function compact(session: Session, options: CompactOptions): Promise<CompactionResult> {
  const branch = conversationEntries(session);
  const tracker = trackerFor(session, branch, { ...(options.exact ? { exact: options.exact } : {}), ...(options.prefixTokens !== undefined ? { prefixTokens: options.prefixTokens } : {}) });
  followEntries(branch, tracker);
  const lastModel = [...branch].reverse().find((e) => e.message?.role === 'assistant' && e.message.model)?.message?.model;
  const prediction = tracker.predict(lastModel);
  const counter = tracker.counter;
  const ratio = prediction.ratio;

  const view0 = activeView(session);
  const size = (view: readonly ViewItem[]) => view.reduce((n, it) => n + counter.message(it.message), 0);
  const counted0 = size(view0);
  const beforeTokens = prediction.predicted;
  const tokensOf = (counted: number) => Math.round(beforeTokens - ratio * (counted0 - counted));
  const target = counted0 - (beforeTokens - options.target) / ratio;
  const result: CompactionResult = {
    beforeTokens,
    afterTokens: beforeTokens,
    beforeMessages: view0.length,
    afterMessages: view0.length,
    strategiesRun: [],
    skipped: [],
    reachedTarget: beforeTokens <= options.target,
    keptLastSteps: options.keepLastSteps ?? 5,
    violations: [],
  };
  if (result.reachedTarget && !options.force) return result;

  const opts = mergeOptions(options.options);
  const task = view0.find((v) => isHumanUser(v.message))?.message;
  const redact = options.redact ?? createRedactor();
  const store = redactingStore(options.store ?? new MemoryResultStore(), redact);
  const summarizer = redactingSummarizer(options.summarizer ?? new ExtractiveSummarizer(), redact);
  const keep = options.keepLastSteps ?? 5;
  const minKeep = Math.min(keep, options.minKeepLastSteps ?? 1);
  let view = view0;
  let protectedEntries = protect(view0, keep);
  // The smallest result of the rounds, in case none reaches the target.
  let best: { view: ViewItem[]; k: number; run: CompactionResult['strategiesRun']; protectedEntries: Map<number, Message> } | undefined;
  // Protect the last `keep` steps; if the target is still out of reach, protect fewer and run the whole chain again
  // from the start (so cheap strategies still come first).
  for (let k = keep; ; k = Math.max(minKeep, Math.min(k - 1, Math.floor(k / 2)))) {
    protectedEntries = protect(view0, k);
    result.keptLastSteps = k;
    view = view0;
    result.strategiesRun = [];
    const ctx: StrategyContext = {
      counter,
      target,
      size,
      protectedEntries: new Set(protectedEntries.keys()),
      store,
      summarizer,
      options: opts,
      ...(task ? { task: textOf(task) } : {}),
      ...(session.info.id ? { sessionId: session.info.id } : {}),
    };
    const baseline = checkInvariants(view0, { protectedEntries });
    for (const name of options.strategies ?? STRATEGY_NAMES) {
      if (size(view) <= target) break;
      const strategy = STRATEGIES[name];
      const before = size(view);
      let next: ViewItem[];
      try {
        next = await strategy.apply(view, ctx);
      } catch (err) {
        result.skipped.push({ name, reason: `${k < keep ? `(last ${k} steps kept) ` : ''}${err instanceof StrategySkipped ? err.reason : `failed: ${err instanceof Error ? err.message : String(err)}`}` });
        continue;
      }
      if (size(next) >= before) {
        result.skipped.push({ name, reason: 'undone: it would not make the context smaller' });
        continue;
      }
      const broken = introducedViolations(baseline, checkInvariants(next, { protectedEntries }));
      if (broken.length > 0) {
        result.skipped.push({ name, reason: `undone: it would break an invariant (${broken[0]!.message})` });
        continue;
      }
      view = next;
      result.strategiesRun.push({ name, beforeTokens: tokensOf(before), afterTokens: tokensOf(size(view)) });
    }
    if (!best || size(view) < size(best.view)) best = { view, k, run: result.strategiesRun, protectedEntries };
    if (size(view) <= target || k <= minKeep) break;
  }
  // Unless the last round reached the target, keep the round that got furthest (protecting more on ties).
  if (best && size(view) > target) {
    view = best.view;
    result.keptLastSteps = best.k;
    result.strategiesRun = best.run;
    protectedEntries = best.protectedEntries;
  }
  // Report a strategy as skipped only if it never ran, once, with its last reason.
  const ran = new Set(result.strategiesRun.map((r) => r.name));
  const lastReason = new Map<StrategyName, string>();
  for (const s of result.skipped) if (!ran.has(s.name)) lastReason.set(s.name, s.reason);
  result.skipped = [...lastReason].map(([name, reason]) => ({ name, reason }));
  if (view === view0) return result;

  const after = size(view);
  result.afterTokens = tokensOf(after);
  result.afterMessages = view.length;
  result.reachedTarget = result.afterTokens <= options.target;
  const { entry, marker } = appendMarker(session, branch, view, result, options.now ?? (() => new Date()), redact);
  result.entry = entry;
  result.marker = marker;
  // What the session now shows must be exactly what the chain produced, and as sound.
  result.violations = introducedViolations(checkInvariants(view0, { protectedEntries }), checkInvariants(activeView(session), { protectedEntries }));
  return result;
}

/**
 * Compacts now, whatever the fill: to `target` tokens when given, else to half of the current size (what an agent's
 * `compact_context` tool asks for).
 */
export async function forceCompact(session: Session, options: Omit<CompactOptions, 'target' | 'force'> & { target?: number } = {}): Promise<CompactionResult> {
  if (options.target !== undefined) return compact(session, { ...options, target: options.target, force: true });
  const probe = await compact(session, { ...options, target: Number.MAX_SAFE_INTEGER, strategies: [] });
  return compact(session, { ...options, target: Math.floor(probe.beforeTokens / 2), force: true });
}

/** Entries the model must see verbatim: leading system messages, the first and the last human messages, the last steps. */
function protect(view: readonly ViewItem[], keepLastSteps: number): Map<number, Message> {
  const out = new Map<number, Message>();
  const add = (it: ViewItem | undefined) => {
    if (it?.entry !== undefined && !isSummaryItem(it)) out.set(it.entry, it.message);
  };
  for (const it of view) {
    if (it.message.role !== 'system') break;
    add(it);
  }
  add(view.find((v) => isHumanUser(v.message)));
  add([...view].reverse().find((v) => isHumanUser(v.message)));
  const steps = unitsOf(view).filter((u) => u.kind === 'step');
  for (const u of steps.slice(Math.max(0, steps.length - keepLastSteps))) for (let i = u.start; i < u.end; i++) add(view[i]);
  // The latest assistant thinking stays as it was (providers verify signed thinking), with its whole step.
  for (let j = steps.length - 1; j >= 0; j--) {
    const u = steps[j]!;
    if (view[u.start]!.message.parts.some((p) => p.type === 'thinking')) {
      for (let i = u.start; i < u.end; i++) add(view[i]);
      break;
    }
  }
  return out;
}

function mergeOptions(o: CompactOptions['options']): StrategyOptions {
  const d = DEFAULT_STRATEGY_OPTIONS;
  return {
    clearing: { ...d.clearing, ...o?.clearing },
    offload: { ...d.offload, ...o?.offload },
    headTail: { ...d.headTail, ...o?.headTail },
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
function appendMarker(session: Session, branch: readonly Entry[], view: readonly ViewItem[], result: CompactionResult, now: () => Date, redact: Redactor): { entry: Entry; marker: AbridgeMarker } {
  // The summary this marker stands for: one made by this chain, or abridge's earlier one carried over unchanged.
  // Another agent's summary still in view stays an ordinary message of its own entry.
  const summary = view.find((v) => isSummaryItem(v) && markerOf(v.message)?.source === 'abridge');
  const visible = new Set(view.map((v) => v.entry).filter((e): e is number => e !== undefined));
  const covered = summary?.covers;
  // Entries neither visible nor under this summary were hidden by an earlier compaction: they stay hidden.
  const hidden: { fromEntry: number; toEntry: number }[] = [];
  let previous: number | undefined;
  for (const e of branch) {
    if (!e.message || e.compaction) continue;
    const hide = !visible.has(e.index) && !(covered && e.index >= covered.fromEntry && e.index <= covered.toEntry);
    if (hide) {
      const lastRange = hidden[hidden.length - 1];
      if (lastRange && lastRange.toEntry === previous) lastRange.toEntry = e.index;
      else hidden.push({ fromEntry: e.index, toEntry: e.index });
    }
    previous = e.index;
  }
  const edits: EntryEdit[] = view.filter((v) => v.entry !== undefined && v.edit !== undefined).map((v) => ({ entry: v.entry!, message: v.message, how: v.edit! }));
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
  const draft: Omit<Entry, 'index'> = { kind: 'compaction', sourceType: 'abridge', compaction: marker, timestamp: now().getTime() };
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
