/**
 * Replay of predictions: what abridge would have predicted for each request of a recorded session, beside what the
 * provider billed (`abridge replay`, bench:tokens, the viewer).
 */
import { codexSentOutput, codexTruncationPolicy } from '../formats/codex.js';
import { conversationEntries } from '../model/branch.js';
import type { Entry, Session } from '../model/types.js';
import type { ProviderFamily } from '../tokens/family.js';
import { followEntries, trackerFor, type ReplayOptions, type ReplayRequest } from '../tokens/replay.js';

/**
 * Replays a session request by request: for every provider response that reported usage, what abridge would have
 * predicted for its prompt just before it was sent, beside what the provider billed.
 */
export function replaySession(session: Session, options: ReplayOptions = {}): ReplayRequest[] {
  const branch = conversationEntries(session);
  const tracker = trackerFor(session, branch, options);
  const out: ReplayRequest[] = [];
  followEntries(session.format === 'codex' ? codexSends(session, branch) : branch, tracker, (r) => out.push(r));
  return out;
}

/**
 * Codex's entries as it sends them: a tool output longer than its model's truncation policy allows is cut in the
 * history Codex sends (the rollout keeps it whole), so the replay counts the cut text. See `codexSentOutput`.
 */
function* codexSends(session: Session, branch: readonly Entry[]): Generator<Entry> {
  let model: string | undefined;
  for (const e of branch) {
    if (e.model) model = e.model.id;
    if (e.message?.role === 'assistant' && e.message.model) model = e.message.model;
    const m = e.message;
    if (m?.role !== 'tool') {
      yield e;
      continue;
    }
    const policy = codexTruncationPolicy(session, model);
    let changed = false;
    const parts = m.parts.map((p) => {
      if (p.type !== 'tool-result') return p;
      const texts = p.content.filter((c) => c.type === 'text').map((c) => c.text);
      const sent = codexSentOutput(texts, policy);
      if (sent.every((t, i) => t === texts[i])) return p;
      changed = true;
      let i = 0;
      return { ...p, content: p.content.map((c) => (c.type === 'text' ? { ...c, text: sent[i++]! } : c)) };
    });
    yield changed ? { ...e, message: { ...m, parts } } : e;
  }
}

export interface ErrorSummary {
  requests: number;
  /** Median and 90th percentile of |predicted − reported| / reported, as fractions. */
  predicted: { median: number; p90: number };
  estimateOnly: { median: number; p90: number };
}

/** Error of the predictions against what was billed, per family and overall. */
export function summarizeReplay(
  requests: readonly ReplayRequest[],
): Record<ProviderFamily | 'all', ErrorSummary | undefined> {
  const out = {} as Record<ProviderFamily | 'all', ErrorSummary | undefined>;
  const groups: [ProviderFamily | 'all', readonly ReplayRequest[]][] = [
    ['all', requests],
    ...(['claude', 'gpt', 'gemini', 'other'] as const).map(
      (f) => [f, requests.filter((r) => r.family === f)] as [ProviderFamily, ReplayRequest[]],
    ),
  ];
  for (const [key, rs] of groups) {
    if (rs.length === 0) {
      out[key] = undefined;
      continue;
    }
    const rel = (pick: (r: ReplayRequest) => number) => rs.map((r) => Math.abs(pick(r) - r.reported) / r.reported);
    out[key] = {
      requests: rs.length,
      predicted: quantiles(rel((r) => r.predicted)),
      estimateOnly: quantiles(rel((r) => r.estimateOnly)),
    };
  }
  return out;
}

function quantiles(xs: number[]): { median: number; p90: number } {
  const s = [...xs].sort((a, b) => a - b);
  const at = (q: number) => s[Math.min(s.length - 1, Math.floor(q * s.length))]!;
  return { median: at(0.5), p90: at(0.9) };
}
