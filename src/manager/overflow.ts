import { AbridgeError } from '../errors.js';

/** What a request would hold, in provider tokens, when it cannot be made to fit. */
export interface OverflowDetails {
  model: string;
  window: number;
  /** The request's own max output tokens (the provider checks prompt + max output ≤ window). */
  maxOutputTokens: number;
  /** window − maxOutputTokens: the most the prompt may hold. */
  ceiling: number;
  /** The prompt abridge predicts after doing all it could. */
  predicted: number;
  /** System prompt and tool definitions: sent whole with every request, never compacted. */
  system: number;
  tools: number;
  /** What compaction may not touch: the first request, the latest instruction, the last step. */
  protected: number;
  /** Room kept for the prediction's own error. */
  margin: number;
}

/**
 * A request that would exceed the model's window even after compaction: thrown by `ContextManager.prepare` instead of
 * handing the caller a request the provider would refuse. The message names what does not fit.
 */
export class ContextOverflowError extends AbridgeError {
  constructor(readonly details: OverflowDetails) {
    super('CONTEXT_OVERFLOW', describeOverflow(details));
  }
}

const k = (n: number) => (n >= 10_000 ? `${Math.round(n / 1000)}K` : n.toLocaleString('en-US'));

export function describeOverflow(d: OverflowDetails): string {
  const fixed = d.system + d.tools;
  const room = d.ceiling - d.margin - fixed;
  const head = `the request for ${d.model} cannot fit its ${k(d.window)}-token window with max output ${k(d.maxOutputTokens)} (the prompt may hold ${k(d.ceiling)})`;
  if (d.maxOutputTokens >= d.window) return `${head}: max output tokens alone reach the window; lower maxOutputTokens`;
  if (room <= 0)
    return `${head}: system prompt + tools ≈ ${k(fixed)} leave no room for the conversation; shorten them, defer tools, or lower maxOutputTokens`;
  if (d.protected > room)
    return `${head}: system prompt + tools ≈ ${k(fixed)} leave ${k(room)}; the protected messages (first request, latest instruction, last step) need ${k(d.protected)}; lower maxOutputTokens or split the last step's output`;
  return `${head}: after compaction the prompt is still ≈ ${k(d.predicted)} (system prompt + tools ≈ ${k(fixed)}, protected messages ≈ ${k(d.protected)})`;
}
