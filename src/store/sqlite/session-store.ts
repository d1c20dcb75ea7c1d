import { randomUUID } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { AbridgeError } from '../../errors.js';
import type { Entry, FormatId, Message, SessionInfo } from '../../model/types.js';
import {
  buildResumed,
  checkExpectedVersion,
  checkSessionId,
  decodeEntry,
  encodeEntries,
  encodeEntry,
  encodeJson,
  encodeSessionRow,
  encodeSnapshot,
  fullActiveMessages,
  pageSize,
  Positions,
  resolveRange,
  sessionExists,
  sessionNotFound,
  versionConflict,
} from '../memory-session-store.js';
import type {
  CreateFromOptions,
  EntryPagesOptions,
  NewSession,
  ResumedSession,
  SessionSnapshot,
  SessionStore,
  StoredSession,
} from '../session-store.js';
import {
  isNativeLoadError,
  loadSqliteDriver,
  nativeLoadError,
  type SqliteDatabase,
  type SqliteDriver,
} from './driver.js';
import { storeError, storeGuard } from './errors.js';
import { checkSchemaReadOnly, migrate } from './migrations.js';
import { SqliteResultStore } from './result-store.js';

interface SessionRow {
  id: string;
  format: string;
  info: string;
  extra: string | null;
  layout: string | null;
  version: number;
  created_at: string;
  updated_at: string;
}

interface SnapshotRow {
  at_version: number;
  messages: string;
  marker: string | null;
  tokens: number | null;
  created_at: string;
}

export interface SqliteStoreOptions {
  /** How long a writer waits for another process's transaction before giving up (STORE_ERROR). Default 10,000 ms. */
  busyTimeoutMs?: number;
  /**
   * PRAGMA synchronous. 'normal' (default; with WAL, a committed transaction survives a crash of the process, and the
   * database stays consistent on power loss, where the last transactions may be lost) or 'full' (each commit is
   * synced to disk: durable on power loss, slower single appends).
   */
  synchronous?: 'normal' | 'full';
  /** Open an existing database only: a missing file is AbridgeError('STORE_ERROR') instead of a new database. */
  mustExist?: boolean;
  /**
   * Open read-only (implies mustExist): nothing is written, no migration runs, the journal mode is left as it is; the
   * schema must be this abridge's version (STORE_ERROR otherwise). For listing and exporting from a file or folder
   * this process may not write. Writing methods fail with STORE_ERROR.
   */
  readonly?: boolean;
  /**
   * PRAGMA quick_check when opening (default 'quick'): a database with damaged pages is STORE_ERROR naming the file
   * instead of entries read wrong or missing later. It reads every page once: 'off' skips it for very large stores.
   */
  integrityCheck?: 'quick' | 'off';
  /** Clock for timestamps (tests). */
  now?: () => Date;
  /** The better-sqlite3 module to use (tests); default: imported on first use. */
  driver?: SqliteDriver;
  /**
   * @internal Test hooks: `insideRecordCompaction` is called inside the recordCompaction transaction, after its entries
   * and before its snapshot; `createSessionFromBatch` inside createSessionFrom's, after each batch is inserted.
   */
  hooks?: { insideRecordCompaction?: () => void; createSessionFromBatch?: (entries: number) => void };
}

const SESSION_COLUMNS = 'id, format, info, extra, layout, version, created_at, updated_at';

/**
 * Opens (creating it unless `mustExist`) an abridge SQLite database: WAL journal, foreign keys on, a busy timeout,
 * and the schema migrated to the current version. Needs the optional peer dependency better-sqlite3.
 */
export async function openSqliteStore(path: string, options: SqliteStoreOptions = {}): Promise<SqliteSessionStore> {
  const Driver = options.driver ?? (await loadSqliteDriver());
  const file = path === ':memory:' ? path : resolve(path);
  let db: SqliteDatabase;
  try {
    db = new Driver(file, {
      fileMustExist: (options.mustExist ?? false) || options.readonly === true,
      readonly: options.readonly === true,
      timeout: options.busyTimeoutMs ?? 10_000,
    });
  } catch (err) {
    if (isNativeLoadError(err)) throw nativeLoadError(err);
    if ((options.mustExist || options.readonly) && (err as { code?: unknown }).code === 'SQLITE_CANTOPEN') {
      throw new AbridgeError('STORE_ERROR', `${file}: no such SQLite database`);
    }
    throw storeError(file, 'cannot open the SQLite database', err);
  }
  if (options.readonly && file !== ':memory:') db = readableSnapshotIfNeeded(Driver, db, file);
  try {
    return new SqliteSessionStore(db, { ...options, name: file });
  } catch (err) {
    db.close();
    throw err;
  }
}

/**
 * A WAL database needs its -shm file to be read, and SQLite creates it: in a folder this user may not write, a
 * read-only connection cannot read at all (SQLITE_READONLY_DIRECTORY). When there is no write-ahead log to replay (no
 * -wal file, or an empty one), the database file alone is the whole store, so it is read into memory and opened
 * read-only there. Anything else is left to fail with SQLite's own message.
 */
function readableSnapshotIfNeeded(Driver: SqliteDriver, db: SqliteDatabase, file: string): SqliteDatabase {
  try {
    db.prepare('SELECT COUNT(*) FROM sqlite_master').get();
    return db;
  } catch (err) {
    const code = String((err as { code?: unknown }).code ?? '');
    if (!/^SQLITE_(READONLY|CANTOPEN)/.test(code)) return db;
    let walBytes = 0;
    try {
      walBytes = statSync(`${file}-wal`).size;
    } catch {
      // no -wal file: nothing pending
    }
    if (walBytes > 0) return db;
    const bytes = readFileSync(file);
    // Header bytes 18-19 say WAL (2); an in-memory copy has no log, so it is read as a rollback-journal database (1).
    if (bytes[18] === 2 && bytes[19] === 2) bytes[18] = bytes[19] = 1;
    db.close();
    return new Driver(bytes, { readonly: true });
  }
}

/**
 * A SessionStore in a SQLite database (better-sqlite3), shared safely by several processes:
 *
 * - `sessions` (one row per session, with its version), `entries (session_id, seq, entry JSON)`, `session_snapshots`,
 *   `tool_result_blobs` (see `results`), created by versioned migrations recorded in `schema_migrations`.
 * - Every write is one IMMEDIATE transaction that checks the version inside it, so writers in other processes
 *   serialize (waiting up to the busy timeout) and an `expectedVersion` check cannot race.
 * - recordCompaction writes its entries and the snapshot in one transaction: a process killed in the middle leaves
 *   both or neither.
 */
export class SqliteSessionStore implements SessionStore {
  /** The database file (or ':memory:'). */
  readonly path: string;
  /** Offloaded tool results, in the same database. */
  readonly results: SqliteResultStore;
  /** The better-sqlite3 connection (for inspection and maintenance; write through the store's methods). */
  readonly db: SqliteDatabase;
  private readonly now: () => Date;
  private readonly hooks: NonNullable<SqliteStoreOptions['hooks']>;
  private readonly guard: <T>(what: string, fn: () => T) => T;
  private readonly stmts;
  private readonly tx;

  constructor(
    db: SqliteDatabase,
    options: Omit<SqliteStoreOptions, 'driver' | 'mustExist' | 'readonly'> & {
      /** @internal The file, for a database read into memory. */ name?: string;
    } = {},
  ) {
    this.db = db;
    this.path = options.name ?? db.name;
    this.now = options.now ?? (() => new Date());
    this.hooks = options.hooks ?? {};
    const where = `the SQLite store at ${this.path}`;
    this.guard = storeGuard(where);
    this.guard('cannot set it up', () => {
      db.pragma(`busy_timeout = ${Math.max(0, Math.floor(options.busyTimeoutMs ?? 10_000))}`);
      if (options.integrityCheck !== 'off') checkIntegrity(db, this.path);
      if (db.readonly) {
        checkSchemaReadOnly(db, this.path);
        return;
      }
      if (!db.memory) db.pragma('journal_mode = WAL');
      db.pragma(`synchronous = ${options.synchronous === 'full' ? 'FULL' : 'NORMAL'}`);
      db.pragma('foreign_keys = ON');
      migrate(db, this.path, this.now);
    });
    this.results = new SqliteResultStore(db, { now: this.now, where });
    this.stmts = {
      insertSession: db.prepare(
        'INSERT INTO sessions (id, format, info, extra, layout, version, created_at, updated_at) VALUES (?, ?, ?, ?, ?, 0, ?, ?)',
      ),
      session: db.prepare<[string], SessionRow>(`SELECT ${SESSION_COLUMNS} FROM sessions WHERE id = ?`),
      sessions: db.prepare<[], SessionRow>(`SELECT ${SESSION_COLUMNS} FROM sessions ORDER BY rowid`),
      version: db.prepare<[string], number>('SELECT version FROM sessions WHERE id = ?').pluck(),
      setVersion: db.prepare('UPDATE sessions SET version = ?, updated_at = ? WHERE id = ?'),
      setInfo: db.prepare('UPDATE sessions SET info = ?, updated_at = ? WHERE id = ?'),
      insertEntry: db.prepare('INSERT INTO entries (session_id, seq, entry) VALUES (?, ?, ?)'),
      entries: db.prepare<[string, number, number], { seq: number; entry: string }>(
        'SELECT seq, entry FROM entries WHERE session_id = ? AND seq >= ? AND seq < ? ORDER BY seq',
      ),
      finishSession: db.prepare(
        'UPDATE sessions SET format = ?, info = ?, extra = ?, layout = ?, version = ?, updated_at = ? WHERE id = ?',
      ),
      insertSnapshot: db.prepare(
        'INSERT INTO session_snapshots (session_id, at_version, messages, marker, tokens, created_at) VALUES (?, ?, ?, ?, ?, ?)',
      ),
      latestSnapshot: db.prepare<[string], SnapshotRow>(
        'SELECT at_version, messages, marker, tokens, created_at FROM session_snapshots WHERE session_id = ? ORDER BY at_version DESC, id DESC LIMIT 1',
      ),
    };
    const s = this.stmts;
    /** Checks the version and appends, inside the caller's transaction. */
    const appendRows = (
      id: string,
      encoded: readonly string[],
      expected: number | undefined,
    ): { version: number; at: string } => {
      const version = s.version.get(id);
      if (version === undefined) throw sessionNotFound(id);
      if (expected !== undefined && expected !== version) throw versionConflict(id, expected, version);
      const at = this.now().toISOString();
      if (encoded.length === 0) return { version, at };
      for (let i = 0; i < encoded.length; i++) s.insertEntry.run(id, version + i, encoded[i]);
      s.setVersion.run(version + encoded.length, at, id);
      return { version: version + encoded.length, at };
    };
    this.tx = {
      // The session row and its first entries: one transaction, so a failed import leaves nothing to block a retry.
      create: db.transaction(
        (
          id: string,
          format: string,
          info: string,
          extra: string | null,
          layout: string | null,
          encoded: readonly string[],
        ) => {
          const at = this.now().toISOString();
          try {
            s.insertSession.run(id, format, info, extra, layout, at, at);
          } catch (err) {
            if ((err as { code?: unknown }).code === 'SQLITE_CONSTRAINT_PRIMARYKEY') throw sessionExists(id);
            throw err;
          }
          if (encoded.length) appendRows(id, encoded, 0);
          return toStored(s.session.get(id)!);
        },
      ),
      append: db.transaction(appendRows),
      recordCompaction: db.transaction(
        (
          id: string,
          encoded: readonly string[],
          snap: ReturnType<typeof encodeSnapshot>,
          expected: number | undefined,
        ) => {
          const { version, at } = appendRows(id, encoded, expected);
          this.hooks.insideRecordCompaction?.();
          s.insertSnapshot.run(id, version, snap.messages, snap.marker, snap.tokens, at);
          return { version };
        },
      ),
      read: db.transaction((fn: () => unknown) => fn()),
    };
  }

  async createSession(init: NewSession, entries: readonly Omit<Entry, 'index'>[] = []): Promise<StoredSession> {
    const id = init.id ?? randomUUID();
    checkSessionId(id);
    const { info, extra, layout } = encodeSessionRow(init);
    const encoded = encodeEntries(entries);
    return this.guard(`cannot create session "${id}"`, () =>
      this.tx.create.immediate(id, init.format, info, extra, layout, encoded),
    );
  }

  async createSessionFrom(
    init: NewSession,
    batches: AsyncIterable<readonly Entry[]> | Iterable<readonly Entry[]>,
    options: CreateFromOptions = {},
  ): Promise<StoredSession> {
    const id = init.id ?? randomUUID();
    checkSessionId(id);
    const first = encodeSessionRow(init);
    const what = `cannot create session "${id}"`;
    const db = this.db;
    const s = this.stmts;
    // One IMMEDIATE transaction opened here and held across the batches (better-sqlite3 is synchronous: each batch is
    // inserted as it comes, nothing waits in memory). COMMIT at the end; ROLLBACK on any error. A process killed
    // before COMMIT leaves only uncommitted pages in the write-ahead log, which SQLite ignores on the next open.
    this.guard(what, () => {
      if (db.inTransaction)
        throw new AbridgeError('STORE_ERROR', `${what}: this connection is already inside a transaction`);
      db.exec('BEGIN IMMEDIATE');
    });
    try {
      const at = this.now().toISOString();
      this.guard(what, () => {
        try {
          s.insertSession.run(id, init.format, first.info, first.extra, first.layout, at, at);
        } catch (err) {
          if ((err as { code?: unknown }).code === 'SQLITE_CONSTRAINT_PRIMARYKEY') throw sessionExists(id);
          throw err;
        }
      });
      const positions = new Positions();
      for await (const batch of batches) {
        if (!Array.isArray(batch)) throw new AbridgeError('INVALID_INPUT', 'batches: expected arrays of entries');
        // Encoded and inserted one entry at a time: the batch's JSON texts are never all held at once.
        this.guard(what, () => {
          for (const e of batch as readonly Entry[]) {
            positions.add(e?.index);
            s.insertEntry.run(id, e.index, encodeEntry(e, `entry ${e.index}`));
          }
        });
        this.hooks.createSessionFromBatch?.(positions.count);
      }
      const count = positions.complete();
      const tail = (await options.finish?.({ entries: count })) ?? {};
      const last = { ...init, ...tail };
      const row = encodeSessionRow(last);
      return this.guard(what, () => {
        s.finishSession.run(last.format, row.info, row.extra, row.layout, count, this.now().toISOString(), id);
        const stored = toStored(s.session.get(id)!);
        db.exec('COMMIT');
        return stored;
      });
    } catch (err) {
      if (db.open && db.inTransaction) {
        try {
          db.exec('ROLLBACK');
        } catch {
          // A failed COMMIT may have rolled back already; the error that matters is the first one.
        }
      }
      throw err;
    }
  }

  async getSession(id: string): Promise<StoredSession | undefined> {
    return this.guard(`cannot read session "${id}"`, () => {
      const row = this.stmts.session.get(id);
      return row && toStored(row);
    });
  }

  async updateInfo(sessionId: string, info: SessionInfo): Promise<void> {
    const encoded = encodeJson(info, 'the session info');
    this.guard(`cannot update session "${sessionId}"`, () => {
      const { changes } = this.stmts.setInfo.run(encoded, this.now().toISOString(), sessionId);
      if (changes === 0) throw sessionNotFound(sessionId);
    });
  }

  async listSessions(): Promise<StoredSession[]> {
    return this.guard('cannot list sessions', () => this.stmts.sessions.all().map(toStored));
  }

  async append(
    sessionId: string,
    entries: readonly Omit<Entry, 'index'>[],
    options?: { expectedVersion?: number },
  ): Promise<{ version: number }> {
    checkExpectedVersion(options?.expectedVersion);
    const encoded = encodeEntries(entries);
    return this.guard(`cannot append to session "${sessionId}"`, () => ({
      version: this.tx.append.immediate(sessionId, encoded, options?.expectedVersion).version,
    }));
  }

  async entries(sessionId: string, range?: { from?: number; to?: number }): Promise<Entry[]> {
    return this.guard(`cannot read session "${sessionId}"`, () =>
      this.reading(() => this.readEntries(sessionId, range)),
    );
  }

  async *entryPages(sessionId: string, options: EntryPagesOptions = {}): AsyncIterable<Entry[]> {
    const size = pageSize(options.pageSize);
    const what = `cannot read session "${sessionId}"`;
    const db = this.db;
    // A read transaction held across the pages (each page one query by position): every page comes from the same
    // state of the database, and memory holds one page.
    const own = this.guard(what, () => {
      if (db.inTransaction) return false;
      db.exec('BEGIN');
      return true;
    });
    try {
      let { from, to } = this.guard(what, () => {
        const version = this.stmts.version.get(sessionId);
        if (version === undefined) throw sessionNotFound(sessionId);
        return resolveRange(options, version);
      });
      while (from < to) {
        const end = Math.min(to, from + size);
        const page = this.guard(what, () =>
          this.stmts.entries.all(sessionId, from, end).map((r) => decodeEntry(r.entry, r.seq)),
        );
        from = end;
        yield page;
      }
    } finally {
      if (own && db.open && db.inTransaction) db.exec('COMMIT');
    }
  }

  async recordCompaction(
    sessionId: string,
    entries: readonly Omit<Entry, 'index'>[],
    snapshot: Omit<SessionSnapshot, 'sessionId' | 'atVersion' | 'createdAt'>,
    options?: { expectedVersion?: number },
  ): Promise<{ version: number }> {
    checkExpectedVersion(options?.expectedVersion);
    const encoded = encodeEntries(entries);
    const snap = encodeSnapshot(snapshot);
    return this.guard(`cannot record a compaction of session "${sessionId}"`, () =>
      this.tx.recordCompaction.immediate(sessionId, encoded, snap, options?.expectedVersion),
    );
  }

  async latestSnapshot(sessionId: string): Promise<SessionSnapshot | undefined> {
    return this.guard(`cannot read session "${sessionId}"`, () =>
      this.reading(() => {
        if (this.stmts.version.get(sessionId) === undefined) throw sessionNotFound(sessionId);
        return this.readSnapshot(sessionId);
      }),
    );
  }

  async resume(sessionId: string): Promise<ResumedSession> {
    const { version, snapshot, after } = this.guard(`cannot read session "${sessionId}"`, () =>
      this.reading(() => {
        const version = this.stmts.version.get(sessionId);
        if (version === undefined) throw sessionNotFound(sessionId);
        const snapshot = this.readSnapshot(sessionId);
        return { version, snapshot, after: snapshot ? this.readEntries(sessionId, { from: snapshot.atVersion }) : [] };
      }),
    );
    return buildResumed(version, snapshot, after, () => fullActiveMessages(this, sessionId));
  }

  async close(): Promise<void> {
    if (this.db.open) this.db.close();
  }

  /** Runs PRAGMA wal_checkpoint(TRUNCATE) (folds the write-ahead log into the database file). */
  checkpoint(): void {
    this.guard('cannot checkpoint', () => this.db.pragma('wal_checkpoint(TRUNCATE)'));
  }

  /** Runs `fn` in a read transaction: what it reads is one consistent state of the database. */
  private reading<T>(fn: () => T): T {
    return this.tx.read(fn) as T;
  }

  private readEntries(sessionId: string, range: { from?: number; to?: number } | undefined): Entry[] {
    const version = this.stmts.version.get(sessionId);
    if (version === undefined) throw sessionNotFound(sessionId);
    const { from, to } = resolveRange(range, version);
    if (from >= to) return [];
    return this.stmts.entries.all(sessionId, from, to).map((r) => decodeEntry(r.entry, r.seq));
  }

  private readSnapshot(sessionId: string): SessionSnapshot | undefined {
    const row = this.stmts.latestSnapshot.get(sessionId);
    if (!row) return undefined;
    const out: SessionSnapshot = {
      sessionId,
      atVersion: row.at_version,
      messages: JSON.parse(row.messages) as Message[],
      createdAt: row.created_at,
    };
    if (row.marker !== null) out.marker = JSON.parse(row.marker) as SessionSnapshot['marker'];
    if (row.tokens !== null) out.tokens = row.tokens;
    return out;
  }
}

/**
 * PRAGMA quick_check: every page's structure (b-tree pages, overflow chains, free list). Damage is STORE_ERROR naming
 * the file and the first problems SQLite found, with what to do.
 */
function checkIntegrity(db: SqliteDatabase, file: string): void {
  let rows: string[];
  try {
    rows = (db.pragma('quick_check(5)') as { quick_check: string }[]).map((r) => r.quick_check);
  } catch (err) {
    // Only damage is reported as damage; a busy or unreadable database keeps its own error.
    if (!/^SQLITE_(CORRUPT|NOTADB)/.test(String((err as { code?: unknown }).code ?? ''))) throw err;
    const message = err instanceof Error ? err.message : String(err);
    throw new AbridgeError(
      'STORE_ERROR',
      `${file}: the SQLite database failed its integrity check (${message}); restore it from a backup, or recover what is readable with: sqlite3 ${file} .recover`,
    );
  }
  if (rows.length === 1 && rows[0] === 'ok') return;
  throw new AbridgeError(
    'STORE_ERROR',
    `${file}: the SQLite database failed its integrity check (${rows.slice(0, 3).join('; ')}); restore it from a backup, or recover what is readable with: sqlite3 ${file} .recover`,
  );
}

function toStored(row: SessionRow): StoredSession {
  const out: StoredSession = {
    id: row.id,
    format: row.format as FormatId,
    info: JSON.parse(row.info) as StoredSession['info'],
    version: row.version,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
  if (row.extra !== null) out.extra = JSON.parse(row.extra) as Record<string, unknown>;
  if (row.layout !== null) out.layout = JSON.parse(row.layout) as NonNullable<StoredSession['layout']>;
  return out;
}
