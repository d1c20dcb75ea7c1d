/**
 * What a harness sends of what its transcript records. Counting must be of what the provider is sent, or the count of a
 * session drifts from its bill by whatever the harness leaves out: Codex records a tool output whole but keeps only its
 * model's truncation policy of it in the history it sends. Every count of a session (inspect, compact, replay, the
 * ContextManager resuming it) goes through the one counter `trackerFor` builds with `harnessSends`.
 */
import type { ToolResultPart } from '../model/types.js';

/** Codex's limit on a tool output kept in the history it sends (`truncation_policy` of its model). */
export interface CodexTruncationPolicy {
  mode: 'tokens' | 'bytes';
  limit: number;
}

/** How a harness sends a recorded tool result: the same part when it sends it as recorded. */
export type SendResult = (part: ToolResultPart) => ToolResultPart;

/**
 * The sending rule of a session's harness, or undefined when it sends what it records (every format but Codex's).
 * Results are transformed once each (a part is never edited in place), so a session counted again costs nothing more.
 */
export function harnessSends(
  session: { format?: string; extra?: Record<string, unknown> },
  model: string | undefined,
): SendResult | undefined {
  if (session.format !== 'codex') return undefined;
  const policy = codexTruncationPolicy(session, model);
  const sent = new WeakMap<ToolResultPart, ToolResultPart>();
  return (part) => {
    let out = sent.get(part);
    if (out === undefined) {
      out = codexSentResult(part, policy);
      sent.set(part, out);
    }
    return out;
  };
}

/** A tool result as Codex sends it: its text items cut to the policy together, the rest as it is. */
export function codexSentResult(part: ToolResultPart, policy: CodexTruncationPolicy): ToolResultPart {
  const texts = part.content.filter((c) => c.type === 'text').map((c) => c.text);
  const sent = codexSentOutput(texts, policy);
  if (sent.every((t, i) => t === texts[i])) return part;
  let i = 0;
  return { ...part, content: part.content.map((c) => (c.type === 'text' ? { ...c, text: sent[i++]! } : c)) };
}

/**
 * The policy of a model when the rollout does not record one (Codex 0.124 writes it into each `turn_context`; 0.140+
 * do not): Codex's model catalog (codex-rs/models-manager/models.json) gives its GPT-5 models 10,000 tokens; a model it
 * does not know gets its fallback, 10,000 bytes.
 */
export function codexTruncationPolicy(
  session: { extra?: Record<string, unknown> },
  model: string | undefined,
): CodexTruncationPolicy {
  const recorded = session.extra?.truncationPolicy as CodexTruncationPolicy | undefined;
  if (recorded) return recorded;
  return model === undefined || /^(gpt-5|codex-)/.test(model)
    ? { mode: 'tokens', limit: 10_000 }
    : { mode: 'bytes', limit: 10_000 };
}

/** Codex's approximate token count: 4 bytes a token, rounded up (codex_utils_string::approx_token_count). */
function approxTokens(bytes: number): number {
  return Math.ceil(bytes / 4);
}

/**
 * A tool output as Codex keeps it in the history it sends (ContextManager::process_item): the rollout records the
 * output whole, but the history truncates its text to the model's policy × 1.2 ("serialization budget") — the middle
 * cut out at UTF-8 boundaries, half the byte budget kept at each end, and a "…N tokens truncated…" (or "…N chars
 * truncated…") marker in its place. Text items of one output share the budget in order.
 */
export function codexSentOutput(texts: readonly string[], policy: CodexTruncationPolicy): string[] {
  const budget = Math.ceil(policy.limit * 1.2);
  let remaining = policy.mode === 'tokens' ? budget * 4 : budget;
  return texts.map((text) => {
    const bytes = Buffer.byteLength(text, 'utf8');
    if (bytes <= remaining) {
      remaining -= bytes;
      return text;
    }
    const kept = remaining;
    remaining = 0;
    if (kept === 0) return '';
    const buf = Buffer.from(text, 'utf8');
    const head = atCharBoundary(buf, Math.floor(kept / 2), 'end');
    const tail = atCharBoundary(buf, buf.length - (kept - Math.floor(kept / 2)), 'start');
    const removed = buf.subarray(head.length, buf.length - tail.length);
    const marker =
      policy.mode === 'tokens'
        ? `…${approxTokens(removed.length)} tokens truncated…`
        : `…${removed.toString('utf8').length} chars truncated…`;
    return `${head.toString('utf8')}${marker}${tail.toString('utf8')}`;
  });
}

/** The bytes of `buf` before (`end`) or from (`start`) offset `at`, moved so as not to split a UTF-8 character. */
function atCharBoundary(buf: Buffer, at: number, side: 'start' | 'end'): Buffer {
  let i = Math.max(0, Math.min(buf.length, at));
  // A continuation byte (10xxxxxx) is inside a character.
  if (side === 'end') {
    while (i > 0 && i < buf.length && (buf[i]! & 0xc0) === 0x80) i--;
    return buf.subarray(0, i);
  }
  while (i < buf.length && (buf[i]! & 0xc0) === 0x80) i++;
  return buf.subarray(i);
}
