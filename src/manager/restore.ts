import { AbridgeError } from '../errors.js';
import { conversationEntries } from '../model/branch.js';
import type { Entry, Session, SessionSettings } from '../model/types.js';
import { loadSession, type SessionStore } from '../store/session-store.js';

/**
 * A stored session as a ContextManager continues it (`ContextManagerOptions.restore`, what `ContextManager.resume`
 * reads): the working session, which of its entries are counted without their bills and which are followed with them,
 * and what the session ran with.
 */
export interface RestoredSession {
  /**
   * The working session: from the latest compaction snapshot, its messages then the entries appended after it, as one
   * chain; without a snapshot (a session imported from a transcript), the stored session as it is, in its own format.
   */
  session: Session;
  /** Entries counted without their bills: a snapshot's messages carry bills of the context before it was compacted. */
  counted: Entry[];
  /** Entries followed with their bills (what came after the snapshot, or the whole conversation). */
  follow: Entry[];
  /** The size the manager gave the snapshot's view when it compacted (provider tokens, its whole request). */
  snapshotTokens?: number;
  /** The number of the snapshot's compaction (the session's compactions so far, as the manager numbers them). */
  compactions?: number;
  /** What the session ran with, as the manager that kept it recorded (`SessionInfo.settings`). */
  settings?: SessionSettings;
}

/** Reads what `ContextManager.resume` continues: the latest snapshot and what came after it, or the whole session. */
export async function restoreSession(store: SessionStore, sessionId: string): Promise<RestoredSession> {
  const stored = await store.getSession(sessionId);
  if (!stored)
    throw new AbridgeError(
      'SESSION_NOT_FOUND',
      `no session "${sessionId}" in this store: start it with new ContextManager({store, sessionId})`,
    );
  const settings = stored.info.settings;
  const snapshot = await store.latestSnapshot(sessionId);
  if (!snapshot) {
    // The stored session as it is (its entries keep their numbers, which its markers refer to), in its own format.
    const session = await loadSession(store, sessionId);
    return { session, counted: [], follow: conversationEntries(session), ...(settings ? { settings } : {}) };
  }
  // The working session is one chain: the snapshot's messages, then what came after, linked in order.
  const session: Session = { format: stored.format, info: stored.info, entries: [], problems: [] };
  const entries = session.entries;
  const add = (draft: Omit<Entry, 'index'>): Entry => {
    const parentId = entries.length > 0 ? entries[entries.length - 1]!.id! : null;
    const entry = { ...draft, id: draft.id ?? `snapshot-${entries.length}`, parentId, index: entries.length } as Entry;
    entries.push(entry);
    return entry;
  };
  // A snapshot's messages carry bills of the context before it was compacted: nothing may anchor on them.
  const counted = snapshot.messages.map((message) => {
    const { usage: _usage, ...rest } = message;
    return add({ kind: 'message', message: rest });
  });
  const after = await store.entries(sessionId, { from: snapshot.atVersion });
  const follow = after.map(({ index: _index, ...draft }) => add(draft));
  return {
    session,
    counted,
    follow,
    ...(snapshot.tokens !== undefined ? { snapshotTokens: snapshot.tokens } : {}),
    ...(snapshot.marker?.number !== undefined ? { compactions: snapshot.marker.number } : {}),
    ...(settings ? { settings } : {}),
  };
}

/** The model a restored session's requests went to last: its settings, else its last model change or answer. */
export function lastModelOf(restored: RestoredSession): string | undefined {
  const entries = restored.session.entries;
  for (let i = entries.length - 1; i >= 0; i--) {
    const e = entries[i]!;
    if (e.kind === 'model-change' && e.model?.id) return e.model.id;
    if (e.message?.role === 'assistant' && e.message.model) return e.message.model;
  }
  return restored.settings?.model;
}
