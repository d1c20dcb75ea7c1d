import { argumentsText, promptTokens } from '../model/parts.js';
import type { Entry, Message, Session } from '../model/types.js';
import { TokenCounter } from './counter.js';
import { FAMILY_RATIO, harnessPrefixTokens } from './defaults.js';
import type { ExactTokenizer } from './exact.js';
import { familyOf, type ProviderFamily } from './family.js';
import { PromptTracker, startsResponse, type PredictorOptions } from './predict.js';
import { harnessSends } from './sent.js';

export interface ReplayRequest {
  /** Entry index of the assistant message that carries the usage. */
  index: number;
  /** Entry index where the response began (its first assistant message): the prediction is of the context before it. */
  start: number;
  line?: number;
  model: string;
  family: ProviderFamily;
  /** input + cache read + cache write, as the provider reported. */
  reported: number;
  /** Predicted from the entries before the request only (never from this request's usage). */
  predicted: number;
  /** The prediction with no usage anchor at all (family ratio and harness prefix only). */
  estimateOnly: number;
  anchored: boolean;
  /** Why the bill was not used (`PromptTracker.observe`): a report that cannot be a count of this request. */
  ignored?: string;
}

export interface ReplayOptions extends Omit<PredictorOptions, 'counter'> {
  exact?: ExactTokenizer;
}

/**
 * A PromptTracker set up for a session: its family's counter, counting what the harness sends (`harnessSends`), and the
 * harness prefix its format implies. Every count of a session goes through one of these (inspect, compact, replay, the
 * ContextManager), so that they give one session the same size at the same point.
 */
export function trackerFor(session: Session, branch: readonly Entry[], options: ReplayOptions = {}): PromptTracker {
  // The family (which frames and prices what is counted) of the first model the entries name.
  const first = branch.find(
    (e) => (e.message?.role === 'assistant' && e.message.model) || (e.kind === 'model-change' && e.model?.id),
  );
  const model = first?.message?.model ?? first?.model?.id ?? modelAt(session, []);
  const family = familyOf(model, first?.message?.provider ?? first?.model?.provider);
  const send = harnessSends(session, model);
  const counter = new TokenCounter({
    family,
    ...(options.exact ? { exact: options.exact } : {}),
    ...(send ? { send } : {}),
  });
  // The harness' own prompt (what transcripts do not record) plus tool definitions a request body carries, in provider
  // tokens. `prefixTokens` replaces the first only.
  const tools = Math.round(
    requestPrefixTokens(session, counter) * (options.familyRatio?.[family] ?? FAMILY_RATIO[family]),
  );
  const prefixTokens = (options.prefixTokens ?? harnessPrefixTokens(session)) + tools;
  // Codex talks to the Responses API, which drops the reasoning of earlier turns.
  return new PromptTracker({
    ...options,
    counter,
    prefixTokens,
    ...(session.format === 'codex' ? { reasoningDroppedAtUserTurn: true } : {}),
  });
}

/**
 * Feeds entries to a tracker in order, predicting each provider request just before it starts and then observing
 * what the provider reported for it. `onRequest` sees each request that reported usage, once.
 */
export function followEntries(
  entries: Iterable<Entry>,
  tracker: PromptTracker,
  onRequest?: (r: ReplayRequest) => void,
): void {
  let previousAssistant: Message | undefined;
  let pending:
    | {
        counted: number;
        predicted: number;
        estimateOnly: number;
        anchored: boolean;
        reported: boolean;
        start: number;
      }
    | undefined;
  for (const e of entries) {
    const m = e.message;
    if (m?.role === 'assistant') {
      if (startsResponse(m, previousAssistant)) {
        const p = tracker.predict(m.model);
        pending = {
          counted: tracker.contextTokens,
          predicted: p.predicted,
          estimateOnly: p.estimateOnly,
          anchored: p.anchored,
          reported: false,
          start: e.index,
        };
      }
      if (m.usage && pending && !pending.reported && promptTokens(m.usage) > 0) {
        const model = m.model ?? 'unknown';
        const r: ReplayRequest = {
          index: e.index,
          start: pending.start,
          model,
          family: familyOf(model, m.provider),
          reported: promptTokens(m.usage),
          predicted: pending.predicted,
          estimateOnly: pending.estimateOnly,
          anchored: pending.anchored,
        };
        if (e.line !== undefined) r.line = e.line;
        const verdict = tracker.observe(m.usage, model, e.index, pending.counted);
        if (!verdict.used && verdict.problem) r.ignored = verdict.problem;
        onRequest?.(r);
        pending.reported = true;
      }
      previousAssistant = m;
    } else if (m) previousAssistant = undefined;
    tracker.push(e);
  }
}

/**
 * The model the next request goes to, as far as the entries say: the last one an assistant message or a model change
 * names, else the request body's, else `fallback`. Every count of a session at a point asks this one question the same
 * way (a model decides the ratio, and which bill anchors).
 */
export function modelAt(session: Session, entries: Iterable<Entry>, fallback?: string): string | undefined {
  const requestModel = (session.extra?.request as { model?: unknown } | undefined)?.model;
  let model = fallback ?? (typeof requestModel === 'string' ? requestModel : undefined);
  for (const e of entries) {
    if (e.message?.role === 'assistant' && e.message.model) model = e.message.model;
    if (e.kind === 'model-change' && e.model?.id) model = e.model.id;
  }
  return model;
}

/** Tokens of a request body's tool definitions (API formats keep them outside the messages). */
function requestPrefixTokens(session: Session, counter: TokenCounter): number {
  const request = session.extra?.request as Record<string, unknown> | undefined;
  if (!request || !Array.isArray(request.tools)) return 0;
  // Deferred tools (Anthropic `defer_loading`) are not in the prompt until searched for.
  return counter.text(
    argumentsText(
      request.tools.filter(
        (t) => !(t && typeof t === 'object' && (t as { defer_loading?: unknown }).defer_loading === true),
      ),
    ),
  );
}
