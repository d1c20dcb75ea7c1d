import { activeBranch } from '../model/branch.js';
import { argumentsText, promptTokens } from '../model/parts.js';
import type { Message, Session } from '../model/types.js';
import { TokenCounter } from './counter.js';
import { HARNESS_PREFIX_TOKENS } from './defaults.js';
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

/**
 * Replays a session request by request: for every provider response that reported usage, what abridge would have
 * predicted for its prompt just before it was sent, beside what the provider billed.
 */
export function replaySession(session: Session, options: ReplayOptions = {}): ReplayRequest[] {
  const branch = activeBranch(session).filter((e) => !e.sidechain);
  const firstModel = branch.find((e) => e.message?.role === 'assistant' && e.message.model)?.message;
  const family = familyOf(firstModel?.model, firstModel?.provider);
  const counter = new TokenCounter(options.exact ? { family, exact: options.exact } : { family });
  const prefixTokens = options.prefixTokens ?? HARNESS_PREFIX_TOKENS[session.format] + requestPrefixTokens(session, counter);
  const tracker = new PromptTracker({ ...options, counter, prefixTokens });
  const out: ReplayRequest[] = [];
  let previousAssistant: Message | undefined;
  let pending: { counted: number; predicted: number; estimateOnly: number; anchored: boolean; reported: boolean } | undefined;
  for (const e of branch) {
    const m = e.message;
    if (m?.role === 'assistant') {
      if (startsResponse(m, previousAssistant)) {
        const p = tracker.predict(m.model);
        pending = { counted: tracker.contextTokens, predicted: p.predicted, estimateOnly: p.estimateOnly, anchored: p.anchored, reported: false };
      }
      if (m.usage && pending && !pending.reported && promptTokens(m.usage) > 0) {
        const model = m.model ?? 'unknown';
        const r: ReplayRequest = { index: e.index, model, family: familyOf(model, m.provider), reported: promptTokens(m.usage), predicted: pending.predicted, estimateOnly: pending.estimateOnly, anchored: pending.anchored };
        if (e.line !== undefined) r.line = e.line;
        out.push(r);
        tracker.observe(m.usage, model, e.index, pending.counted);
        pending.reported = true;
      }
      previousAssistant = m;
    } else if (m) previousAssistant = undefined;
    tracker.push(e);
  }
  return out;
}

/** Tokens of a request body's tool definitions (API formats keep them outside the messages). */
function requestPrefixTokens(session: Session, counter: TokenCounter): number {
  const request = session.extra?.request as Record<string, unknown> | undefined;
  if (!request || !Array.isArray(request.tools)) return 0;
  return counter.text(argumentsText(request.tools));
}
