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
  /** What compaction may not archive, in provider tokens: the sum of `mustStay`. */
  protected: number;
  /**
   * What compaction may not archive, named, with its size: the messages of the least protected round of its plan (with
   * the default options: the system messages, project memory and the latest instruction).
   */
  mustStay?: { what: string; tokens: number }[];
  /** Room kept for the prediction's own error. */
  margin: number;
  /** With `native: 'only'`: abridge did not compact, the provider's edits were all that ran. */
  nativeOnly?: boolean;
}

/**
 * A request that would exceed the model's window even after compaction: thrown by `ContextManager.prepare` instead of
 * handing the caller a request the provider would refuse. The message names what does not fit.
 */
export class ContextOverflowError extends AbridgeError<OverflowDetails> {
  declare readonly details: OverflowDetails;
  constructor(details: OverflowDetails) {
    super('CONTEXT_OVERFLOW', describeOverflow(details), { details });
  }
}

const k = (n: number) => (n >= 10_000 ? `${Math.round(n / 1000)}K` : n.toLocaleString('en-US'));

export function describeOverflow(d: OverflowDetails): string {
  const fixed = d.system + d.tools;
  const room = d.ceiling - d.margin - fixed;
  const head = `the request for ${d.model} cannot fit its ${k(d.window)}-token window with max output ${k(d.maxOutputTokens)} (the prompt may hold ${k(Math.max(0, d.ceiling))})`;
  if (d.maxOutputTokens >= d.window) return `${head}: max output tokens alone reach the window; lower maxOutputTokens`;
  if (room <= 0)
    return `${head}: system prompt + tools ≈ ${k(fixed)} leave no room for the conversation; shorten them, defer tools, or lower maxOutputTokens`;
  if (d.nativeOnly)
    return `${head}: the provider's own edits leave the prompt at ≈ ${k(d.predicted)}, and with native 'only' abridge does not compact (native 'prefer' lets it when the provider's edits are not enough)`;
  const named = d.mustStay?.length ? ` (${d.mustStay.map((p) => `${p.what} ≈ ${k(p.tokens)}`).join(', ')})` : '';
  if (d.protected > room)
    return `${head}: system prompt + tools ≈ ${k(fixed)} leave ${k(room)}; what must stay verbatim${named} needs ${k(d.protected)}; lower maxOutputTokens or shorten it`;
  return `${head}: after compaction the prompt is still ≈ ${k(d.predicted)} (system prompt + tools ≈ ${k(fixed)}, what must stay verbatim ≈ ${k(d.protected)}${named})`;
}
