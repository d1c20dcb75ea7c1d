import { argumentsText, promptTokens } from '../model/parts.js';
import type { Entry, Message, Session } from '../model/types.js';
import { TokenCounter } from './counter.js';
import { FAMILY_RATIO, harnessPrefixTokens } from './defaults.js';
import type { ExactTokenizer } from './exact.js';
import { familyOf, type ProviderFamily } from './family.js';
import { PromptTracker, startsResponse, type PredictorOptions } from './predict.js';

export interface ReplayRequest {
  /** Entry index of the assistant message that carries the usage. */
  index: number;
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
}

export interface ReplayOptions extends Omit<PredictorOptions, 'counter'> {
  exact?: ExactTokenizer;
}

/** A PromptTracker set up for a session: its family's counter and the harness prefix its format implies. */
export function trackerFor(session: Session, branch: readonly Entry[], options: ReplayOptions = {}): PromptTracker {
  const firstModel = branch.find((e) => e.message?.role === 'assistant' && e.message.model)?.message;
  const family = familyOf(firstModel?.model, firstModel?.provider);
  const counter = new TokenCounter(options.exact ? { family, exact: options.exact } : { family });
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
    | { counted: number; predicted: number; estimateOnly: number; anchored: boolean; reported: boolean }
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
        };
      }
      if (m.usage && pending && !pending.reported && promptTokens(m.usage) > 0) {
        const model = m.model ?? 'unknown';
        const r: ReplayRequest = {
          index: e.index,
          model,
          family: familyOf(model, m.provider),
          reported: promptTokens(m.usage),
          predicted: pending.predicted,
          estimateOnly: pending.estimateOnly,
          anchored: pending.anchored,
        };
        if (e.line !== undefined) r.line = e.line;
        onRequest?.(r);
        tracker.observe(m.usage, model, e.index, pending.counted);
        pending.reported = true;
      }
      previousAssistant = m;
    } else if (m) previousAssistant = undefined;
    tracker.push(e);
  }
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
