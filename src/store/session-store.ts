import { AbridgeError } from '../errors.js';
import type { CompactionMarker, Entry, FormatId, Message, Session, SessionInfo } from '../model/types.js';

/** A session as a store knows it. `version` is the number of entries appended so far (optimistic concurrency). */
export interface StoredSession {
  id: string;
  format: FormatId;
  info: SessionInfo;
  /** Format-specific data needed to write the session back (request fields, JSONL layout). */
  extra?: Record<string, unknown>;
  layout?: { finalNewline?: boolean; trailingBlankLines?: number };
  version: number;
  createdAt: string;
  updatedAt: string;
}

export interface NewSession {
  /** Default: a fresh UUID. */
  id?: string;
  format: FormatId;
  info: SessionInfo;
  extra?: Record<string, unknown>;
  layout?: { finalNewline?: boolean; trailingBlankLines?: number };
}

/**
 * The compacted context of a session at some version: what the model saw right after a compaction. Resuming starts
 * from it instead of replaying the whole history (which would overflow the window again at once).
 */
export interface SessionSnapshot {
  sessionId: string;
  /** The session's version (entry count) the snapshot describes, the compaction marker included. */
  atVersion: number;
  messages: Message[];
  marker?: CompactionMarker;
  tokens?: number;
  createdAt: string;
}

export interface ResumedSession {
  /** What the model should see: the snapshot's messages plus messages of entries appended after it; or, without a
   * snapshot, the active view of the full history. */
  messages: Message[];
  fromSnapshot: boolean;
  snapshotAt?: number;
  /** Entries appended after the snapshot (or all, without one). */
  appended: number;
  version: number;
}

/**
 * Sessions as append-only entry logs, plus snapshots of their compacted context. Implementations: in memory, SQLite
 * (`abridge-context/sqlite`), PostgreSQL (`abridge-context/postgres`); one shared test suite holds them to the same behavior.
 *
 * Entries are stored whole (their `raw` record included), so a transcript imported and exported again is the same
 * bytes. An append is atomic: all of a batch or none. With `expectedVersion`, an append made by a writer that has not
 * seen the latest entries fails with AbridgeError('CONFLICT') instead of interleaving.
 */
export interface SessionStore {
  /**
   * Creates a session, with its first entries when given, in one transaction: a failure (a bad entry, a full disk, a
   * killed process) leaves no session behind, so the same import can simply be retried.
   */
  createSession(init: NewSession, entries?: readonly Omit<Entry, 'index'>[]): Promise<StoredSession>;
  getSession(id: string): Promise<StoredSession | undefined>;
  /**
   * Replaces a session's info (its title, what it ran with): not an entry of its history, so the version does not
   * move. AbridgeError('SESSION_NOT_FOUND') for a session the store does not hold.
   */
  updateInfo(sessionId: string, info: SessionInfo): Promise<void>;
  listSessions(): Promise<StoredSession[]>;
  /** Appends entries in order; their `index` is set to their position. Returns the new version. */
  append(
    sessionId: string,
    entries: readonly Omit<Entry, 'index'>[],
    options?: { expectedVersion?: number },
  ): Promise<{ version: number }>;
  /** Entries by position, [from, to) (default: all). */
  entries(sessionId: string, range?: { from?: number; to?: number }): Promise<Entry[]>;
  /**
   * Records a compaction in one transaction: appends its marker entry (and any entries before it) and saves the
   * snapshot. A process killed in the middle leaves either both or neither.
   */
  recordCompaction(
    sessionId: string,
    entries: readonly Omit<Entry, 'index'>[],
    snapshot: Omit<SessionSnapshot, 'sessionId' | 'atVersion' | 'createdAt'>,
    options?: { expectedVersion?: number },
  ): Promise<{ version: number }>;
  latestSnapshot(sessionId: string): Promise<SessionSnapshot | undefined>;
  resume(sessionId: string): Promise<ResumedSession>;
  close(): Promise<void>;
}

/** The whole stored session as a Session (for writing it back in any format). */
export async function loadSession(store: SessionStore, sessionId: string): Promise<Session> {
  const s = await store.getSession(sessionId);
  if (!s) throw new AbridgeError('SESSION_NOT_FOUND', `no session "${sessionId}" in this store`);
  const session: Session = { format: s.format, info: s.info, entries: await store.entries(sessionId), problems: [] };
  if (s.extra) session.extra = s.extra;
  if (s.layout?.finalNewline !== undefined) session.finalNewline = s.layout.finalNewline;
  if (s.layout?.trailingBlankLines) session.trailingBlankLines = s.layout.trailingBlankLines;
  return session;
}

/** Stores a session read from a transcript: a new stored session with all its entries, in one transaction. */
export async function importSession(store: SessionStore, session: Session, id?: string): Promise<StoredSession> {
  const init: NewSession = { format: session.format, info: session.info };
  if (id ?? session.info.id) init.id = id ?? session.info.id!;
  if (session.extra) init.extra = session.extra;
  const layout: NonNullable<NewSession['layout']> = {};
  if (session.finalNewline !== undefined) layout.finalNewline = session.finalNewline;
  if (session.trailingBlankLines) layout.trailingBlankLines = session.trailingBlankLines;
  if (Object.keys(layout).length) init.layout = layout;
  return store.createSession(init, session.entries);
}
