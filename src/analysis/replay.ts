/**
 * Replay of predictions: what abridge would have predicted for each request of a recorded session, beside what the
 * provider billed (`abridge replay`, bench:tokens, the viewer).
 */
import { windowsOf } from '../budget/windows.js';
import { conversationEntries } from '../model/branch.js';
import type { Session } from '../model/types.js';
import type { ProviderFamily } from '../tokens/family.js';
import { followEntries, trackerFor, type ReplayOptions, type ReplayRequest } from '../tokens/replay.js';

/**
 * Replays a session request by request: for every provider response that reported usage, what abridge would have
 * predicted for its prompt just before it was sent, beside what the provider billed.
 */
export function replaySession(session: Session, options: ReplayOptions = {}): ReplayRequest[] {
  const branch = conversationEntries(session);
  // The same bills believed as inspect and compact believe (the window check of the bundled catalog).
  const tracker = trackerFor(session, branch, { windowOf: windowsOf(), ...options });
  const out: ReplayRequest[] = [];
  // (The tracker counts what the harness sends: a Codex output as cut to its model's policy.)
  followEntries(branch, tracker, (r) => out.push(r));
  return out;
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
