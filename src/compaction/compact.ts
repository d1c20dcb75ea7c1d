/**
 * `compact`: measure the session (the one count), plan the rounds (plan.ts: what each protects, what must stay), carry
 * them out in order until one reaches the target (chain.ts), record the result (marker.ts).
 */
import { DEFAULT_KEEP_RECENT_TOKENS } from '../defaults.js';
import { AbridgeError } from '../errors.js';
import type { Session } from '../model/types.js';
import { activeView, isSummaryItem, type ViewItem } from '../model/view.js';
import { createRedactor } from '../redact/redact.js';
import { runRound, type ChainEnv, type RoundOutcome } from './chain.js';
import { checkInvariants, introducedViolations } from './invariants.js';
import { appendMarker, markerOf } from './marker.js';
import { MemoryResultStore } from './memory-result-store.js';
import { pinnedTest, protect, type Protection } from './must-stay.js';
import type { CompactOptions, CompactionResult } from './options.js';
import { shortNote } from './give-way.js';
import { checkCompactOptions, measureForCompaction, mustStay, planFrom, type PlannedRound } from './plan.js';
import { memoRedactor, redactingStore, redactingSummarizer } from './redaction.js';
import type { StrategyName } from './strategies/strategy.js';
import { summaryMessage } from './strategies/summarize.js';
import { ExtractiveSummarizer } from './summarizers/extractive.js';
import { isHumanUser, isRequest } from './turns.js';

export { STRATEGIES } from './chain.js';
export { shortNote, squeezeSummary } from './give-way.js';
export type { CompactOptions, CompactionResult, ProtectedPart } from './options.js';
export { planCompaction, splitPrompt, type CompactionPlan, type PlannedRound } from './plan.js';
export { DEFAULT_KEEP_RECENT_TOKENS };

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
  checkCompactOptions(options);
  const measured = measureForCompaction(session, options);
  const { view: view0, counter, before: beforeTokens, fixed, ratio } = measured;
  const size = (view: readonly ViewItem[]) => view.reduce((n, it) => n + counter.message(it.message), 0);
  const tokensOf = (counted: number) => Math.max(0, Math.round(fixed + ratio * counted));
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
              tokens: Math.round(ratio * counter.message(summaryMessage(shortNote(1)))),
            },
          ];
    result.protectedParts = [...mustStay({ fixed, ratio }, p), ...noteParts].filter((x) => x.tokens > 0);
    result.protectedTokens = result.protectedParts.reduce((n, x) => n + x.tokens, 0);
  };
  if (result.reachedTarget && !options.force) {
    report(
      protect(view0, {
        steps: options.keepLastSteps ?? 1,
        tailCounted: 0,
        counter,
        pinned: pinnedTest(options.pinned),
      }),
    );
    return result;
  }

  const plan = planFrom(measured, options);
  const task = view0.find((v) => isRequest(v.message))?.message ?? view0.find((v) => isHumanUser(v.message))?.message;
  // Memoized: a loop's compactions redact the same long texts again (the previous summary, the edits carried on).
  const redact = memoRedactor(options.redact ?? createRedactor());
  // Results put during the chain are made durable together, before the marker that refers to them exists.
  const batch = options.store?.batch?.();
  const env: ChainEnv = {
    plan,
    options,
    store: redactingStore(batch?.store ?? options.store ?? new MemoryResultStore(), redact),
    summarizer: redactingSummarizer(options.summarizer ?? new ExtractiveSummarizer(), redact),
    // What each entry showed before this compaction (an earlier compaction's edit included).
    before: new Map(view0.filter((v) => v.entry !== undefined && !isSummaryItem(v)).map((v) => [v.entry!, v])),
    raw: (entry) => session.entries[entry]?.message,
    tokensOf,
    // Reached as the result will say it (in provider tokens, rounded), not a fraction of a token short of it.
    reached: (v) => tokensOf(size(v)) <= options.target,
    ...(task ? { task: task.parts.map((p) => (p.type === 'text' ? p.text : '')).join('\n') } : {}),
    ...(session.info.id ? { sessionId: session.info.id } : {}),
  };
  // The rounds in order, until one reaches the target; short of that, the one that got furthest — among those where
  // neither the last step nor anything else that must stay gave way (a round that lets them go counts only if it
  // reaches the target).
  let last: { round: PlannedRound; outcome: RoundOutcome } | undefined;
  let best: { round: PlannedRound; outcome: RoundOutcome } | undefined;
  for (const round of plan.rounds) {
    const outcome = await runRound(env, round);
    result.skipped.push(...outcome.skipped);
    last = { round, outcome };
    const reached = env.reached(outcome.view);
    const gaveWay = !reached && ((round.steps === 0 && plan.keep > 0) || round.relax > 0);
    if (!best || (!gaveWay && size(outcome.view) < size(best.outcome.view))) best = last;
    if (reached) break;
  }
  const chosen = last && env.reached(last.outcome.view) ? last : best!;
  let view = chosen.outcome.view;
  // A person's edit of the summary stands in for the one the chain made, whole; whether it fits is said, not forced.
  if (options.summary !== undefined) {
    const at = view.findIndex((v) => isSummaryItem(v) && markerOf(v.message)?.source === 'abridge');
    const item = view[at];
    if (!item || !isSummaryItem(item))
      throw new AbridgeError(
        'INVALID_INPUT',
        `compact: summary given, but this compaction archives nothing (${chosen.outcome.run.map((r) => r.name).join(', ') || 'no strategy ran'}): there is no summary to replace`,
      );
    view = view.slice();
    view[at] = { ...item, message: summaryMessage(options.summary) };
    const tokens = Math.round(ratio * counter.message(view[at]!.message));
    result.editedSummary = { tokens, room: options.target - (tokensOf(size(view)) - tokens) };
  }
  const protection = chosen.round.protection;
  const notes = chosen.outcome.notes;
  result.strategiesRun = chosen.outcome.run;
  result.summaryNotes = notes;
  report(
    protection,
    view.some((v) => isSummaryItem(v) && markerOf(v.message)?.source === 'abridge')
      ? 'archived'
      : !env.reached(view) && !plan.headFits
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

  // What was protected and is not in view any more, or not as it was, gave way (never silently: the result names it).
  const inView = new Map(view.filter((v) => v.entry !== undefined).map((v) => [v.entry!, v]));
  const shownMessages = new Set(view.map((v) => v.message));
  const how = (p: Protection['parts'][number]): string | undefined => {
    if (!p.entries?.length)
      return p.message && !shownMessages.has(p.message)
        ? 'archived, quoted in the summary as far as it holds'
        : undefined;
    if (p.entries.every((e) => !inView.has(e))) return 'archived, quoted in the summary as far as it holds';
    const cut = p.entries.some((e) => inView.get(e)?.message !== env.before.get(e)?.message && inView.has(e));
    return cut ? 'cut to its first and last lines, the whole stored' : undefined;
  };
  const gave = plan.head.parts.flatMap((p) => {
    const h = how(p);
    if (!h) return [];
    // Cut in place is only ever the latest instruction (which may also be the first message a person wrote).
    const cutLatest = h.startsWith('cut') && p.entries!.some((e) => plan.latest.includes(e));
    return [{ what: cutLatest ? `latest instruction (entry ${p.entries![0]})` : p.what, how: h }];
  });
  result.gaveWay = gave.map((g) => g.what);
  if (gave.length > 0)
    notes.push(`to reach the target, these gave way: ${gave.map((g) => `${g.what} (${g.how})`).join('; ')}`);
  result.summaryNotes = notes;
  result.afterTokens = Math.min(beforeTokens, tokensOf(size(view)));
  result.afterMessages = view.length;
  result.reachedTarget = result.afterTokens <= options.target;
  const { entry, marker } = appendMarker(
    session,
    measured.branch,
    view,
    result,
    options.now ?? (() => new Date()),
    redact,
  );
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
