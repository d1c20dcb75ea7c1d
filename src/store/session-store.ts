import { AbridgeError } from '../errors.js';
import type { CompactionMarker, Entry, FormatId, Message, Session, SessionInfo } from '../model/types.js';
import type { AbridgeMarker } from '../model/view.js';

/** A session as a store knows it. `version` is the number of entries appended so far (optimistic concurrency). */
export interface StoredSession {
  id: string;
  format: FormatId;
  info: SessionInfo;
  /** Format-specific data needed to write the session back (request fields, JSONL layout). */
  extra?: Record<string, unknown>;
  layout?: SessionLayout;
  version: number;
  createdAt: string;
  updatedAt: string;
}

/** How a transcript's lines were laid out, for writing it back byte for byte. */
export interface SessionLayout {
  finalNewline?: boolean;
  trailingBlankLines?: number;
  /**
   * Set by an import: entries [0, asRead) are the transcript's own records as read, each with its `raw` record or its
   * source text (`rawText`). While the session's version is still `asRead` (nothing appended since), `abridge export`
   * writes it back in its own format record by record, reading the entries a page at a time, instead of loading the
   * whole session. Sessions stored without it are exported whole, as before.
   */
  asRead?: number;
}

export interface NewSession {
  /** Default: a fresh UUID. */
  id?: string;
  format: FormatId;
  info: SessionInfo;
  extra?: Record<string, unknown>;
  layout?: SessionLayout;
}

/** What `createSessionFrom` learns only once the last batch is in (a transcript's info is complete at its end). */
export type SessionTail = Partial<Omit<NewSession, 'id'>>;

export interface CreateFromOptions {
  /**
   * Called once after the last batch, inside the transaction, with the number of entries stored: what it returns
   * replaces the session's format, info, extra and layout (fields left out keep `init`'s). What it throws rolls the
   * whole session back (an import refused once the whole transcript has been read, e.g. for invalid UTF-8).
   */
  finish?: (stored: { entries: number }) => SessionTail | Promise<SessionTail>;
}

/** Options of `SessionStore.entryPages`. */
export interface EntryPagesOptions {
  /** Entries by position, [from, to) (default: all). */
  from?: number;
  to?: number;
  /** Entries per page (default 128): memory is bounded by one page, not by the session. */
  pageSize?: number;
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
  /**
   * Creates a session from entries that arrive in batches (a transcript read as a stream), all in one transaction:
   * memory stays bounded by a batch, not by the session, and a failure at any point — an error thrown by `batches` or
   * by `options.finish`, a bad entry, a full disk, a killed process — leaves no session behind, so the same import can
   * simply be retried. A session with this id already there is AbridgeError('SESSION_EXISTS') before any batch is read.
   *
   * Each entry's `index` is its position: the positions of all the batches together must be 0…n-1, each once, in any
   * order (a reader may hold back an entry it completes later and give it in the last batch); a duplicate or a gap is
   * AbridgeError('INVALID_INPUT') and nothing is stored.
   *
   * The store's connection is held by the transaction until the promise settles (SQLite: the database's write lock);
   * do not write through the same store instance meanwhile.
   */
  createSessionFrom(
    init: NewSession,
    batches: AsyncIterable<readonly Entry[]> | Iterable<readonly Entry[]>,
    options?: CreateFromOptions,
  ): Promise<StoredSession>;
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
   * The same entries a page at a time, in order, all from one consistent state of the session (one read transaction,
   * held until the iteration ends: finish it, or leave the loop with `break`). For a session too large to hold whole
   * (`abridge export`). AbridgeError('SESSION_NOT_FOUND') for a session the store does not hold. Do not write through
   * the same store instance while iterating.
   */
  entryPages(sessionId: string, options?: EntryPagesOptions): AsyncIterable<Entry[]>;
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

/**
 * The whole stored session as a Session (for writing it back in any format), its log one tree (relinkedLog): export,
 * view, inspect and a manager's undo all read a stored session through here, so all of them see the same branch.
 */
export async function loadSession(store: SessionStore, sessionId: string): Promise<Session> {
  const s = await store.getSession(sessionId);
  if (!s) throw new AbridgeError('SESSION_NOT_FOUND', `no session "${sessionId}" in this store`);
  const entries = relinkedLog(await store.entries(sessionId));
  const session: Session = { format: s.format, info: s.info, entries, problems: [] };
  if (s.extra) session.extra = s.extra;
  if (s.layout?.finalNewline !== undefined) session.finalNewline = s.layout.finalNewline;
  if (s.layout?.trailingBlankLines) session.trailingBlankLines = s.layout.trailingBlankLines;
  return session;
}

/**
 * A manager resumed from a compaction's snapshot appends after the snapshot's last message, whose id is the working
 * session's own and no record of the log: read as it is, the branch would start at that append, without the history
 * before it. Such an entry is linked to the entry before it in the log (the marker of the snapshot it resumed from).
 *
 * Only a parent id the log holds nowhere is relinked, and only after a marker that carries its view (what a snapshot
 * is made of): a transcript's own links — kept whole, or dangling into a file the log never held — read as they are.
 */
function relinkedLog(entries: Entry[]): Entry[] {
  const ids = new Set<string>();
  for (const e of entries) if (e.id !== undefined) ids.add(e.id);
  let snapshotBefore = false;
  let relinked: Entry[] | undefined;
  entries.forEach((e, i) => {
    if (snapshotBefore && typeof e.parentId === 'string' && !ids.has(e.parentId)) {
      relinked ??= entries.slice();
      relinked[i] = { ...e, parentId: entries[i - 1]!.id ?? null };
    }
    if ((e.compaction as AbridgeMarker | undefined)?.view) snapshotBefore = true;
  });
  return relinked ?? entries;
}

/**
 * Stores a session read from a transcript: a new stored session with all its entries, in one transaction. For a
 * transcript too large to hold whole, read it as a stream into `store.createSessionFrom` (as `abridge import` does).
 */
export async function importSession(store: SessionStore, session: Session, id?: string): Promise<StoredSession> {
  const init: NewSession = { format: session.format, info: session.info };
  if (id ?? session.info.id) init.id = id ?? session.info.id!;
  if (session.extra) init.extra = session.extra;
  const layout = transcriptLayout(session, session.entries.every(isAsRead) ? session.entries.length : undefined);
  if (layout) init.layout = layout;
  return store.createSession(init, session.entries);
}

/** The layout a stored transcript keeps: its final newline, its trailing blank lines, and `asRead` when given. */
export function transcriptLayout(
  session: Pick<Session, 'finalNewline' | 'trailingBlankLines'>,
  asRead: number | undefined,
): SessionLayout | undefined {
  const layout: SessionLayout = {};
  if (session.finalNewline !== undefined) layout.finalNewline = session.finalNewline;
  if (session.trailingBlankLines) layout.trailingBlankLines = session.trailingBlankLines;
  if (asRead !== undefined && asRead > 0) layout.asRead = asRead;
  return Object.keys(layout).length ? layout : undefined;
}

/**
 * An entry a transcript writer gives back as it was read: it has its record (`raw`) or its source text (`rawText`),
 * or it is a further entry of a record already written (`fromSameRecord`).
 */
export function isAsRead(e: Omit<Entry, 'index'>): boolean {
  return e.fromSameRecord === true || e.raw !== undefined || e.rawText !== undefined;
}
