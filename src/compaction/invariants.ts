import type { Message, Part } from '../model/types.js';
import type { ViewItem } from '../model/view.js';

export type ViolationKind =
  | 'result-not-after-call' // a tool result that does not directly follow the message holding its call
  | 'result-without-call' // a tool result whose call is nowhere before it (the provider refuses it outright)
  | 'call-without-result' // a tool call with no result, other than in the final assistant message
  | 'duplicate-result' // two results for one call
  | 'empty-message'
  | 'protected-changed' // the first user message, the last turns or the latest thinking were altered
  | 'over-target';

export interface Violation {
  kind: ViolationKind;
  /** Position in the view. */
  at: number;
  /** What it is about (a tool-call id, an entry), to tell a violation the input already had from a new one. */
  key: string;
  message: string;
}

export interface InvariantOptions {
  /** Messages that must reach the model exactly as they were, keyed by entry index. */
  protectedEntries?: ReadonlyMap<number, Message>;
  /** Counted size of the view, and the most it may be. */
  size?: number;
  target?: number;
}

/** A message with nothing in it for the model. */
export function isEmptyMessage(m: Message): boolean {
  return (
    m.parts.length === 0 ||
    m.parts.every((p) =>
      p.type === 'text' ? p.text.trim() === '' : p.type === 'thinking' ? p.text === '' && !p.signature : false,
    )
  );
}

/**
 * Checks what every provider requires and what abridge promises of a compacted view. Pairs: each tool result's message
 * comes after the assistant message holding its call, with only other results of that message between them; every
 * call has exactly one result, except calls of the final assistant message (the agent may be about to run them).
 */
export function checkInvariants(view: readonly ViewItem[], options: InvariantOptions = {}): Violation[] {
  const out: Violation[] = [];
  let lastAssistant = -1;
  for (let i = view.length - 1; i >= 0; i--) {
    if (view[i]!.message.role === 'assistant') {
      lastAssistant = i;
      break;
    }
  }
  // Calls of the assistant message currently open (results may still follow), and who answered what.
  let open = new Map<string, number>();
  let openAt = -1;
  const answered = new Set<string>();
  // Every call so far: a result out of place (Codex records parallel calls one item each, their results after them
  // all) is a different fault from a result whose call is gone, and must not hide one that compaction introduced.
  const called = new Set<string>();
  const closeOpen = (before: number) => {
    for (const [id, at] of open) {
      if (!answered.has(id) && at !== lastAssistant)
        out.push({
          kind: 'call-without-result',
          at,
          key: id,
          message: `tool call ${id} (message ${at}) has no result before message ${before}`,
        });
    }
    open = new Map();
    openAt = -1;
  };
  view.forEach((item, i) => {
    const m = item.message;
    if (isEmptyMessage(m))
      out.push({
        kind: 'empty-message',
        at: i,
        key: `entry:${item.entry ?? 'summary'}`,
        message: `message ${i} (${m.role}) is empty`,
      });
    if (m.role === 'tool') {
      for (const p of m.parts) {
        if (p.type !== 'tool-result') continue;
        if (!called.has(p.callId))
          out.push({
            kind: 'result-without-call',
            at: i,
            key: p.callId,
            message: `tool result ${p.callId} (message ${i}) has no call before it`,
          });
        else if (!open.has(p.callId))
          out.push({
            kind: 'result-not-after-call',
            at: i,
            key: p.callId,
            message: `tool result ${p.callId} (message ${i}) does not follow the message holding its call`,
          });
        else if (answered.has(p.callId))
          out.push({
            kind: 'duplicate-result',
            at: i,
            key: p.callId,
            message: `tool call ${p.callId} has a second result at message ${i}`,
          });
        answered.add(p.callId);
      }
      return;
    }
    if (openAt !== -1) closeOpen(i);
    if (m.role === 'assistant') {
      const calls = m.parts.filter((p): p is Extract<Part, { type: 'tool-call' }> => p.type === 'tool-call');
      if (calls.length > 0) {
        openAt = i;
        for (const c of calls) {
          open.set(c.id, i);
          called.add(c.id);
        }
      }
    }
  });
  if (openAt !== -1) closeOpen(view.length);

  if (options.protectedEntries) {
    const seen = new Set<number>();
    view.forEach((item, i) => {
      if (item.entry === undefined) return;
      const want = options.protectedEntries!.get(item.entry);
      if (!want) return;
      seen.add(item.entry);
      if (item.message !== want)
        out.push({
          kind: 'protected-changed',
          at: i,
          key: `entry:${item.entry}`,
          message: `message ${i} (entry ${item.entry}) must reach the model verbatim but was changed`,
        });
    });
    for (const entry of options.protectedEntries.keys()) {
      if (!seen.has(entry))
        out.push({
          kind: 'protected-changed',
          at: -1,
          key: `entry:${entry}`,
          message: `entry ${entry} must reach the model verbatim but is gone`,
        });
    }
  }
  if (options.size !== undefined && options.target !== undefined && options.size > options.target) {
    out.push({
      kind: 'over-target',
      at: -1,
      key: 'size',
      message: `the view is ${options.size} tokens, over the target of ${options.target}`,
    });
  }
  return out;
}

/** Violations of `after` that `before` did not already have: what a compaction step introduced. */
export function introducedViolations(before: readonly Violation[], after: readonly Violation[]): Violation[] {
  const had = new Set(before.map((v) => `${v.kind}:${v.key}`));
  return after.filter((v) => !had.has(`${v.kind}:${v.key}`));
}
