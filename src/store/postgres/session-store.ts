import { randomUUID } from 'node:crypto';
import type { Pool, PoolClient } from 'pg';
import { AbridgeError } from '../../errors.js';
import type { Entry, FormatId, Message, Session, SessionInfo } from '../../model/types.js';
import { activeMessages } from '../../model/view.js';
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
import { inTransaction, storeError } from './connection.js';
import { intStatement, runIntStatement, type IntStatement } from './int-query.js';
import { PostgresResultStore } from './result-store.js';

/** Test hooks: points inside the store's transactions where a test can hold a transaction open or fail it. */
export interface PostgresStoreHooks {
  /**
   * Called inside the transaction of an append, a recordCompaction or a createSession, after all its writes and before COMMIT, with the
   * session row still locked. What it throws rolls the transaction back; a promise that never settles holds it open
   * (until the process dies, when the server rolls it back).
   */
  beforeCommit?(op: 'append' | 'recordCompaction' | 'createSession', sessionId: string): void | Promise<void>;
  /** Called inside createSessionFrom's transaction after each batch is inserted, with the entries stored so far. */
  createSessionFromBatch?(sessionId: string, entries: number): void | Promise<void>;
}

export interface PostgresSessionStoreConfig {
  pool: Pool;
  /** The schema's name as given (for messages and the advisory lock). */
  schema: string;
  /** The schema's name quoted for SQL. */
  quoted: string;
  now?: () => Date;
  hooks?: PostgresStoreHooks;
}

interface SessionRow {
  id: string;
  format: string;
  info: string;
  extra: string | null;
  layout: string | null;
  version: number;
  created_at: Date;
  updated_at: Date;
}

interface SnapshotRow {
  session_id: string;
  at_version: number;
  messages: string;
  marker: string | null;
  tokens: number | null;
  created_at: Date;
}

const SESSION_COLUMNS = 'id, format, info, extra, layout, version, created_at, updated_at';
const SNAPSHOT_COLUMNS = 'session_id, at_version, messages, marker, tokens, created_at';
/** Entries per INSERT statement (an append of a long transcript is several statements in its one transaction). */
const INSERT_CHUNK_ENTRIES = 1000;
const INSERT_CHUNK_CHARS = 16 * 1024 * 1024;
/** Positions are PostgreSQL integers. */
const MAX_POSITION = 2_147_483_647;

/**
 * A SessionStore in PostgreSQL, for many workers (processes, machines) sharing sessions. Create it with
 * `openPostgresStore(url, { schema })`, which migrates the schema first.
 *
 * - Tables (in the store's schema): `sessions` (one row per session, its `version` = number of entries),
 *   `entries` (session_id, seq, entry TEXT: the entry's JSON exactly as written, so an exported transcript is the same
 *   bytes), `session_snapshots`, `tool_result_blobs` (the ResultStore, `store.results`), `schema_migrations`.
 * - An append is one transaction that bumps the session row's version (locking the row), checks `expectedVersion`,
 *   and inserts the entries at the positions before the new version. Concurrent writers queue on the row lock, so
 *   nothing is lost, duplicated or interleaved inside a batch; with `expectedVersion` a writer that has not seen the
 *   latest entries gets AbridgeError('CONFLICT') and nothing is written.
 * - Group commit inside one process: the appends and compactions of one session through one store instance run one at
 *   a time, in call order; appends without expectedVersion that arrive while one is in flight are sent together as
 *   one statement (one round trip, one transaction) when it returns. Each caller's promise resolves only after the
 *   transaction holding its entries has committed, with the version right after its own entries; a failed statement
 *   rejects every caller in it, and none of their entries is stored.
 * - The client's cost per append is kept near one round trip's: a session's queue keeps the pooled connection it took
 *   while operations follow one another (also a writer awaiting each append: see `park`), handing it back as soon as
 *   anyone else waits for one; an append of one entry goes as a text parameter through a query without pg's per-call
 *   result description (see int-query.ts), several as one text[].
 * - recordCompaction appends and saves the snapshot in the same transaction: a process killed in the middle leaves
 *   both or neither (the server rolls back the transaction of a dead connection).
 * - resume reads the latest snapshot and the entries after it in one REPEATABLE READ transaction.
 */
export class PostgresSessionStore implements SessionStore {
  /** Offloaded tool results, in the same database and schema (table tool_result_blobs). */
  readonly results: PostgresResultStore;
  readonly schema: string;
  private readonly pool: Pool;
  private readonly s: string;
  private readonly now: () => Date;
  private readonly hooks: PostgresStoreHooks;
  private closed: Promise<void> | undefined;
  private closing = false;
  /** Per session: the operations waiting for their turn (see `enqueue`), present while the session's queue drains. */
  private readonly queues = new Map<string, QueuedOp[]>();
  /** Resolved when the last queue has drained (for close(); see `drain`). */
  private idle: { promise: Promise<void>; resolve: () => void } | undefined;
  /** The append statements (see appendStatement): one entry, and a batch; prepared once per connection. */
  private readonly appendOne: IntStatement;
  private readonly appendManyName: string;
  private readonly appendManySql: string;
  /**
   * A connection a queue finished with, kept checked out until the pending promise callbacks have run (see `park`), so
   * that the next append of a writer awaiting each of its appends goes out on it without a trip through the pool.
   */
  private parked: PoolClient | undefined;
  private unparking = false;

  constructor(config: PostgresSessionStoreConfig) {
    this.pool = config.pool;
    this.schema = config.schema;
    this.s = config.quoted;
    this.now = config.now ?? (() => new Date());
    this.hooks = config.hooks ?? {};
    this.results = new PostgresResultStore(config);
    // $1 session id, $2 the entry (text) or entries (text[]), $3 updated_at (ISO text), $4 expected version or NULL.
    const upd = (count: string) => `WITH upd AS (
           UPDATE ${this.s}.sessions SET version = version + ${count}, updated_at = $3::timestamptz
           WHERE id = $1::text AND ($4::integer IS NULL OR version = $4::integer)
           RETURNING version
         )`;
    // Prepared once per connection under these names (per schema, as the text is): no parsing or planning per append.
    this.appendOne = intStatement(
      `abridge_append1_v1:${this.schema}`,
      `${upd('1')}
         INSERT INTO ${this.s}.entries (session_id, seq, entry) SELECT $1, upd.version - 1, $2::text FROM upd
         RETURNING seq + 1`,
    );
    this.appendManyName = `abridge_append_v3:${this.schema}`;
    this.appendManySql = `${upd('cardinality($2::text[])')}, ins AS (
           INSERT INTO ${this.s}.entries (session_id, seq, entry)
           SELECT $1, upd.version - cardinality($2::text[]) + (t.ord::integer - 1), t.entry
           FROM upd, unnest($2::text[]) WITH ORDINALITY AS t(entry, ord)
         )
         SELECT version FROM upd`;
  }

  async createSession(init: NewSession, entries: readonly Omit<Entry, 'index'>[] = []): Promise<StoredSession> {
    const id = init.id ?? randomUUID();
    checkSessionId(id);
    const { info, extra, layout } = encodeSessionRow(init);
    const texts = encodeEntries(entries);
    const at = this.now();
    try {
      // The session row and its first entries in one transaction: a failed import leaves nothing to block a retry.
      return await inTransaction(this.pool, async (client) => {
        const { rows } = await client.query<SessionRow>(
          `INSERT INTO ${this.s}.sessions (id, format, info, extra, layout, version, created_at, updated_at)
           VALUES ($1, $2, $3, $4, $5, 0, $6, $6)
           ON CONFLICT (id) DO NOTHING
           RETURNING ${SESSION_COLUMNS}`,
          [id, init.format, info, extra, layout, at],
        );
        if (!rows[0]) throw sessionExists(id);
        let row = rows[0];
        if (texts.length) {
          await this.appendLocked(client, id, texts, 0);
          row = (
            await client.query<SessionRow>(`SELECT ${SESSION_COLUMNS} FROM ${this.s}.sessions WHERE id = $1`, [id])
          ).rows[0]!;
        }
        await this.hooks.beforeCommit?.('createSession', id);
        return toStoredSession(row);
      });
    } catch (err) {
      throw storeError(`creating session "${id}"`, err);
    }
  }

  async createSessionFrom(
    init: NewSession,
    batches: AsyncIterable<readonly Entry[]> | Iterable<readonly Entry[]>,
    options: CreateFromOptions = {},
  ): Promise<StoredSession> {
    const id = init.id ?? randomUUID();
    checkSessionId(id);
    const first = encodeSessionRow(init);
    try {
      // One transaction on one connection: the session row first (so that a taken id fails before anything is read),
      // each batch as multi-row INSERTs awaited before the next batch is taken, the row completed at the end. Any
      // error rolls it all back; a dead connection's transaction is rolled back by the server.
      return await inTransaction(this.pool, async (client) => {
        const created = await client.query(
          `INSERT INTO ${this.s}.sessions (id, format, info, extra, layout, version, created_at, updated_at)
           VALUES ($1, $2, $3, $4, $5, 0, $6, $6)
           ON CONFLICT (id) DO NOTHING`,
          [id, init.format, first.info, first.extra, first.layout, this.now()],
        );
        if (!created.rowCount) throw sessionExists(id);
        const positions = new Positions(MAX_POSITION);
        for await (const batch of batches) {
          if (!Array.isArray(batch)) throw new AbridgeError('INVALID_INPUT', 'batches: expected arrays of entries');
          let seqs: number[] = [];
          let texts: string[] = [];
          let chars = 0;
          const flush = async () => {
            if (texts.length === 0) return;
            await client.query(
              `INSERT INTO ${this.s}.entries (session_id, seq, entry)
               SELECT $1, t.seq, t.entry FROM unnest($2::integer[], $3::text[]) AS t(seq, entry)`,
              [id, seqs, texts],
            );
            seqs = [];
            texts = [];
            chars = 0;
          };
          for (const e of batch as readonly Entry[]) {
            positions.add(e?.index);
            const text = encodeEntry(e, `entry ${e.index}`);
            if (texts.length >= INSERT_CHUNK_ENTRIES || (texts.length > 0 && chars + text.length > INSERT_CHUNK_CHARS))
              await flush();
            seqs.push(e.index);
            texts.push(text);
            chars += text.length;
          }
          await flush();
          await this.hooks.createSessionFromBatch?.(id, positions.count);
        }
        const count = positions.complete();
        const tail = (await options.finish?.({ entries: count })) ?? {};
        const last = { ...init, ...tail };
        const row = encodeSessionRow(last);
        const { rows } = await client.query<SessionRow>(
          `UPDATE ${this.s}.sessions SET format = $2, info = $3, extra = $4, layout = $5, version = $6, updated_at = $7
           WHERE id = $1
           RETURNING ${SESSION_COLUMNS}`,
          [id, last.format, row.info, row.extra, row.layout, count, this.now()],
        );
        await this.hooks.beforeCommit?.('createSession', id);
        return toStoredSession(rows[0]!);
      });
    } catch (err) {
      throw storeError(`creating session "${id}"`, err);
    }
  }

  async getSession(id: string): Promise<StoredSession | undefined> {
    try {
      const { rows } = await this.pool.query<SessionRow>(
        `SELECT ${SESSION_COLUMNS} FROM ${this.s}.sessions WHERE id = $1`,
        [id],
      );
      return rows[0] && toStoredSession(rows[0]);
    } catch (err) {
      throw storeError(`reading session "${id}"`, err);
    }
  }

  async updateInfo(sessionId: string, info: SessionInfo): Promise<void> {
    const encoded = encodeJson(info, 'info');
    let updated: number;
    try {
      const { rowCount } = await this.pool.query(
        `UPDATE ${this.s}.sessions SET info = $1, updated_at = $2 WHERE id = $3`,
        [encoded, this.now().toISOString(), sessionId],
      );
      updated = rowCount ?? 0;
    } catch (err) {
      throw storeError(`updating session "${sessionId}"`, err);
    }
    if (updated === 0) throw sessionNotFound(sessionId);
  }

  async listSessions(): Promise<StoredSession[]> {
    try {
      const { rows } = await this.pool.query<SessionRow>(
        `SELECT ${SESSION_COLUMNS} FROM ${this.s}.sessions ORDER BY ord`,
      );
      return rows.map(toStoredSession);
    } catch (err) {
      throw storeError('listing sessions', err);
    }
  }

  async append(
    sessionId: string,
    entries: readonly Omit<Entry, 'index'>[],
    options?: { expectedVersion?: number },
  ): Promise<{ version: number }> {
    const expected = options?.expectedVersion;
    checkExpectedVersion(expected);
    const texts = encodeEntries(entries);
    try {
      if (texts.length > 0 && !this.hooks.beforeCommit && fitsOneStatement(texts)) {
        return { version: await this.enqueue<number>(sessionId, { texts, expected }) };
      }
      const version = await this.enqueue<number>(sessionId, {
        run: async () => {
          if (texts.length === 0) return this.currentVersion(sessionId, expected);
          return inTransaction(this.pool, async (client) => {
            const version = await this.appendLocked(client, sessionId, texts, expected);
            await this.hooks.beforeCommit?.('append', sessionId);
            return version;
          });
        },
      });
      return { version };
    } catch (err) {
      throw storeError(`appending to session "${sessionId}"`, err);
    }
  }

  /**
   * Puts an operation on the session's queue and returns what it gives. The queue runs one operation at a time, in call
   * order, starting after the current microtask (so appends issued together share a statement); consecutive plain appends
   * (`texts` without `expected`) at its head are sent as one statement, as many as fit one (see fitsOneStatement).
   */
  private enqueue<T>(
    sessionId: string,
    op: { texts: string[]; expected: number | undefined } | { run: () => Promise<T> },
  ): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const queued = { ...op, resolve, reject } as QueuedOp;
      const queue = this.queues.get(sessionId);
      if (queue) {
        queue.push(queued);
        return;
      }
      const fresh = [queued];
      this.queues.set(sessionId, fresh);
      void this.drain(sessionId, fresh);
    });
  }

  /**
   * Runs the session's queue until it is empty; every operation's promise is settled here, so this never rejects. The
   * append statements of one drain go out on one connection checked out of the pool once (not once per statement),
   * handed back when the queue is empty (see `park`), before an operation that takes its own, after a failure of the
   * server or the connection, and as soon as anyone else waits for a connection of the pool.
   */
  private async drain(sessionId: string, queue: QueuedOp[]): Promise<void> {
    await Promise.resolve();
    let client: PoolClient | undefined;
    while (queue.length > 0) {
      const head = queue[0]!;
      if ('run' in head) {
        queue.shift();
        // It takes a connection of its own (a transaction, or a read), which a pool of one connection must be able to
        // give.
        if (client) client = this.giveBack(client);
        try {
          head.resolve(await head.run());
        } catch (err) {
          head.reject(err);
        }
        continue;
      }
      // An append with expectedVersion goes alone; plain appends at the head go together, as many as one statement
      // takes (the first always: it fits on its own).
      let group: StatementAppend[] = [head];
      let texts = head.texts;
      if (head.expected === undefined && queue.length > 1) {
        group = [];
        texts = [];
        let chars = 0;
        for (const op of queue) {
          if ('run' in op || op.expected !== undefined) break;
          let size = 0;
          for (const t of op.texts) size += t.length;
          if (
            group.length > 0 &&
            (texts.length + op.texts.length > INSERT_CHUNK_ENTRIES || chars + size > INSERT_CHUNK_CHARS)
          )
            break;
          group.push(op);
          for (const t of op.texts) texts.push(t);
          chars += size;
        }
      }
      queue.splice(0, group.length);
      try {
        client ??= this.takeParked() ?? (await this.connect());
        const after = await this.appendStatement(client, sessionId, texts, head.expected);
        // Each caller gets the version right after its own entries, which are contiguous and in call order.
        let version = after - texts.length;
        for (const op of group) op.resolve((version += op.texts.length));
      } catch (err) {
        for (const op of group) op.reject(err);
        // Not the store's own verdict (CONFLICT, SESSION_NOT_FOUND): the connection may be broken; do not reuse it.
        if (client && !(err instanceof AbridgeError)) client = this.giveBack(client, err);
      }
      if (client && this.pool.waitingCount > 0) client = this.giveBack(client);
    }
    this.queues.delete(sessionId);
    if (client) this.park(client);
    if (this.queues.size === 0 && this.idle) {
      this.idle.resolve();
      this.idle = undefined;
    }
  }

  /** A connection from the pool for the queue's statements (see drain). */
  private async connect(): Promise<PoolClient> {
    const client = await this.pool.connect();
    // Checked out, nobody else listens to it: a connection lost while it is parked must not crash the process (its
    // next query fails instead, and the connection is dropped).
    client.on('error', ignoreError);
    return client;
  }

  /** Returns a connection taken by `connect` to the pool (dropping it when `err` is given); returns undefined. */
  private giveBack(client: PoolClient, err?: unknown): undefined {
    client.removeListener('error', ignoreError);
    client.release(err === undefined ? undefined : err instanceof Error ? err : true);
    return undefined;
  }

  private takeParked(): PoolClient | undefined {
    const client = this.parked;
    this.parked = undefined;
    return client;
  }

  /**
   * Keeps the connection of a queue that just emptied until the promise callbacks pending now have run (a
   * process.nextTick queued from them runs after them): a writer awaiting each append sends its next one from those
   * callbacks, and gets this connection back without a trip through the pool. Then it goes back to the pool. One
   * connection is kept at most; none once close() has begun.
   */
  private park(client: PoolClient): void {
    if (this.parked || this.closing) {
      this.giveBack(client);
      return;
    }
    this.parked = client;
    if (this.unparking) return;
    this.unparking = true;
    process.nextTick(() => {
      this.unparking = false;
      const parked = this.takeParked();
      if (parked) this.giveBack(parked);
    });
  }

  /** The session's version, checked against `expected` (an empty append). */
  private async currentVersion(sessionId: string, expected: number | undefined): Promise<number> {
    const { rows } = await this.pool.query<{ version: number }>(
      `SELECT version FROM ${this.s}.sessions WHERE id = $1`,
      [sessionId],
    );
    if (!rows[0]) throw sessionNotFound(sessionId);
    if (expected !== undefined && expected !== rows[0].version)
      throw versionConflict(sessionId, expected, rows[0].version);
    return rows[0].version;
  }

  /**
   * An append of at least one entry as one statement (one round trip, its own transaction) on `client`: bump the
   * session's version (checking the expected one), and insert the entries at the positions below the new version. The
   * row lock taken by the UPDATE is held only while the server runs the statement and commits, not across round trips
   * to the client, so concurrent writers of one session queue on it briefly and, without expectedVersion, never
   * conflict. In READ COMMITTED an UPDATE that waited for the lock re-reads the row its predecessor committed, and
   * re-checks the version against it. When no row was updated, a second read says why (no session, or another
   * version). One entry goes as a text parameter (`appendOne`), more as a text[] (`appendManySql`).
   */
  private async appendStatement(
    client: PoolClient,
    sessionId: string,
    texts: string[],
    expected: number | undefined,
  ): Promise<number> {
    // pg refuses Submittables other than its Query on a connection in pipeline mode.
    const direct = texts.length === 1 && !(client as { pipeline?: boolean }).pipeline;
    for (;;) {
      // The time as ISO text, cast by the server (cheaper for the client than a Date parameter).
      const at = this.now().toISOString();
      const after = direct
        ? await runIntStatement(client, this.appendOne, [
            sessionId,
            texts[0]!,
            at,
            expected === undefined ? null : String(expected),
          ])
        : (
            await client.query<[number]>({
              name: this.appendManyName,
              text: this.appendManySql,
              values: [sessionId, texts, at, expected ?? null],
              rowMode: 'array',
            })
          ).rows[0]?.[0];
      if (after !== undefined) return after;
      const found = await client.query<{ version: number }>(`SELECT version FROM ${this.s}.sessions WHERE id = $1`, [
        sessionId,
      ]);
      const version = found.rows[0]?.version;
      if (version === undefined) throw sessionNotFound(sessionId);
      if (expected !== undefined && version !== expected) throw versionConflict(sessionId, expected, version);
      // Otherwise the row changed since the UPDATE looked (a session created after its snapshot, or one brought up to
      // `expected` by other writers: versions only grow): try again.
    }
  }

  async entries(sessionId: string, range?: { from?: number; to?: number }): Promise<Entry[]> {
    const { from, to } = resolveRange(range, MAX_POSITION);
    try {
      const { rows } = await this.pool.query<{ seq: number; entry: string }>(
        `SELECT seq, entry FROM ${this.s}.entries WHERE session_id = $1 AND seq >= $2 AND seq < $3 ORDER BY seq`,
        [sessionId, from, to],
      );
      if (rows.length === 0) await this.mustExist(this.pool, sessionId);
      return rows.map(toEntry);
    } catch (err) {
      throw storeError(`reading the entries of session "${sessionId}"`, err);
    }
  }

  async *entryPages(sessionId: string, options: EntryPagesOptions = {}): AsyncIterable<Entry[]> {
    const size = pageSize(options.pageSize);
    const what = `reading the entries of session "${sessionId}"`;
    let client: PoolClient;
    try {
      client = await this.pool.connect();
    } catch (err) {
      throw storeError(what, err);
    }
    let failed: unknown;
    try {
      // One REPEATABLE READ transaction on one connection, held across the pages: every page sees the same snapshot
      // (appends made meanwhile are not seen), and memory holds one page (LIMIT by position: one statement a page).
      let from: number;
      let to: number;
      try {
        await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
        const { rows } = await client.query<{ version: number }>(
          `SELECT version FROM ${this.s}.sessions WHERE id = $1`,
          [sessionId],
        );
        if (!rows[0]) throw sessionNotFound(sessionId);
        ({ from, to } = resolveRange(options, rows[0].version));
      } catch (err) {
        throw storeError(what, err);
      }
      while (from < to) {
        let page: Entry[];
        try {
          const { rows } = await client.query<{ seq: number; entry: string }>(
            `SELECT seq, entry FROM ${this.s}.entries WHERE session_id = $1 AND seq >= $2 AND seq < $3 ORDER BY seq LIMIT $4`,
            [sessionId, from, to, size],
          );
          page = rows.map(toEntry);
        } catch (err) {
          throw storeError(what, err);
        }
        if (page.length === 0) break;
        from = page[page.length - 1]!.index + 1;
        yield page;
      }
    } catch (err) {
      failed = err;
      throw err;
    } finally {
      let destroy: Error | boolean = failed !== undefined && !(failed instanceof AbridgeError);
      try {
        await client.query('COMMIT');
      } catch (commitErr) {
        destroy = commitErr instanceof Error ? commitErr : true;
      }
      client.release(destroy);
    }
  }

  async recordCompaction(
    sessionId: string,
    entries: readonly Omit<Entry, 'index'>[],
    snapshot: Omit<SessionSnapshot, 'sessionId' | 'atVersion' | 'createdAt'>,
    options?: { expectedVersion?: number },
  ): Promise<{ version: number }> {
    const expected = options?.expectedVersion;
    checkExpectedVersion(expected);
    const texts = encodeEntries(entries);
    const { messages, marker, tokens } = encodeSnapshot(snapshot);
    try {
      const version = await this.enqueue<number>(sessionId, {
        run: () => this.recordCompactionNow(sessionId, texts, { messages, marker, tokens }, expected),
      });
      return { version };
    } catch (err) {
      throw storeError(`recording a compaction of session "${sessionId}"`, err);
    }
  }

  /** recordCompaction's transaction: the entries and the snapshot, both or neither. */
  private recordCompactionNow(
    sessionId: string,
    texts: string[],
    { messages, marker, tokens }: ReturnType<typeof encodeSnapshot>,
    expected: number | undefined,
  ): Promise<number> {
    return inTransaction(this.pool, async (client) => {
      const version = await this.appendLocked(client, sessionId, texts, expected);
      await client.query(
        `INSERT INTO ${this.s}.session_snapshots (session_id, at_version, messages, marker, tokens, created_at)
         VALUES ($1, $2, $3, $4, $5, $6)
         ON CONFLICT (session_id, at_version) DO UPDATE
           SET messages = EXCLUDED.messages, marker = EXCLUDED.marker, tokens = EXCLUDED.tokens, created_at = EXCLUDED.created_at`,
        [sessionId, version, messages, marker, tokens, this.now()],
      );
      await this.hooks.beforeCommit?.('recordCompaction', sessionId);
      return version;
    });
  }

  async latestSnapshot(sessionId: string): Promise<SessionSnapshot | undefined> {
    try {
      const { rows } = await this.pool.query<SnapshotRow>(
        `SELECT ${SNAPSHOT_COLUMNS} FROM ${this.s}.session_snapshots WHERE session_id = $1 ORDER BY at_version DESC LIMIT 1`,
        [sessionId],
      );
      if (!rows[0]) await this.mustExist(this.pool, sessionId);
      return rows[0] && toSnapshot(rows[0]);
    } catch (err) {
      throw storeError(`reading the latest snapshot of session "${sessionId}"`, err);
    }
  }

  async resume(sessionId: string): Promise<ResumedSession> {
    try {
      // One consistent view of the session: its version, latest snapshot and entries, as of one moment.
      return await inTransaction(
        this.pool,
        async (client) => {
          const { rows } = await client.query<SessionRow>(
            `SELECT ${SESSION_COLUMNS} FROM ${this.s}.sessions WHERE id = $1`,
            [sessionId],
          );
          if (!rows[0]) throw sessionNotFound(sessionId);
          const stored = toStoredSession(rows[0]);
          const snap = await client.query<SnapshotRow>(
            `SELECT ${SNAPSHOT_COLUMNS} FROM ${this.s}.session_snapshots WHERE session_id = $1 ORDER BY at_version DESC LIMIT 1`,
            [sessionId],
          );
          const snapshot = snap.rows[0] && toSnapshot(snap.rows[0]);
          const readFrom = async (from: number) => {
            const { rows: entryRows } = await client.query<{ seq: number; entry: string }>(
              `SELECT seq, entry FROM ${this.s}.entries WHERE session_id = $1 AND seq >= $2 ORDER BY seq`,
              [sessionId, from],
            );
            return entryRows.map(toEntry);
          };
          const after = snapshot ? await readFrom(snapshot.atVersion) : [];
          return buildResumed(stored.version, snapshot, after, async () => {
            const session: Session = {
              format: stored.format,
              info: stored.info,
              entries: await readFrom(0),
              problems: [],
            };
            if (stored.extra) session.extra = stored.extra;
            return activeMessages(session);
          });
        },
        'BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY',
      );
    } catch (err) {
      throw storeError(`resuming session "${sessionId}"`, err);
    }
  }

  /** Ends the connection pool, after the appends and compactions already asked for. Calling it again does nothing. */
  close(): Promise<void> {
    this.closed ??= (async () => {
      while (this.queues.size > 0) {
        if (!this.idle) {
          let resolve!: () => void;
          const promise = new Promise<void>((r) => (resolve = r));
          this.idle = { promise, resolve };
        }
        await this.idle.promise;
      }
      this.closing = true;
      const parked = this.takeParked();
      if (parked) this.giveBack(parked);
      await this.pool.end();
    })();
    return this.closed;
  }

  /**
   * Inside a transaction: locks the session row, checks the expected version, inserts the entries after the last one
   * and bumps the version. Returns the new version.
   */
  private async appendLocked(
    client: PoolClient,
    sessionId: string,
    texts: string[],
    expected: number | undefined,
  ): Promise<number> {
    const { rows } = await client.query<{ version: number }>(
      `SELECT version FROM ${this.s}.sessions WHERE id = $1 FOR UPDATE`,
      [sessionId],
    );
    if (!rows[0]) throw sessionNotFound(sessionId);
    const version = rows[0].version;
    if (expected !== undefined && expected !== version) throw versionConflict(sessionId, expected, version);
    if (texts.length === 0) return version;
    for (let start = 0; start < texts.length; ) {
      let end = start;
      let chars = 0;
      while (
        end < texts.length &&
        end - start < INSERT_CHUNK_ENTRIES &&
        (end === start || chars + texts[end]!.length <= INSERT_CHUNK_CHARS)
      ) {
        chars += texts[end]!.length;
        end++;
      }
      await client.query(
        `INSERT INTO ${this.s}.entries (session_id, seq, entry)
         SELECT $1, $2::integer + (t.ord::integer - 1), t.entry FROM unnest($3::text[]) WITH ORDINALITY AS t(entry, ord)`,
        [sessionId, version + start, texts.slice(start, end)],
      );
      start = end;
    }
    const next = version + texts.length;
    await client.query(`UPDATE ${this.s}.sessions SET version = $2, updated_at = $3 WHERE id = $1`, [
      sessionId,
      next,
      this.now(),
    ]);
    return next;
  }

  private async mustExist(db: Pool | PoolClient, sessionId: string): Promise<void> {
    const { rowCount } = await db.query(`SELECT 1 FROM ${this.s}.sessions WHERE id = $1`, [sessionId]);
    if (!rowCount) throw sessionNotFound(sessionId);
  }
}

/**
 * An append of one statement (see appendStatement); without expectedVersion it may share the statement with its
 * neighbours in the queue.
 */
interface StatementAppend {
  texts: string[];
  expected: number | undefined;
  resolve(version: number): void;
  reject(err: unknown): void;
}

/** Any other operation on the session (large or empty appends, appends under a beforeCommit hook, compactions). */
interface SoloOp {
  run(): Promise<unknown>;
  resolve(value: unknown): void;
  reject(err: unknown): void;
}

type QueuedOp = StatementAppend | SoloOp;

const ignoreError = (): void => {};

/** A batch small enough for the one-statement append (larger ones are inserted in chunks inside a transaction). */
function fitsOneStatement(texts: readonly string[]): boolean {
  if (texts.length > INSERT_CHUNK_ENTRIES) return false;
  let chars = 0;
  for (const t of texts) chars += t.length;
  return chars <= INSERT_CHUNK_CHARS;
}

function toEntry(row: { seq: number; entry: string }): Entry {
  return decodeEntry(row.entry, row.seq);
}

function toStoredSession(r: SessionRow): StoredSession {
  const s: StoredSession = {
    id: r.id,
    format: r.format as FormatId,
    info: JSON.parse(r.info) as StoredSession['info'],
    version: r.version,
    createdAt: r.created_at.toISOString(),
    updatedAt: r.updated_at.toISOString(),
  };
  if (r.extra !== null) s.extra = JSON.parse(r.extra) as NonNullable<StoredSession['extra']>;
  if (r.layout !== null) s.layout = JSON.parse(r.layout) as NonNullable<StoredSession['layout']>;
  return s;
}

function toSnapshot(r: SnapshotRow): SessionSnapshot {
  const s: SessionSnapshot = {
    sessionId: r.session_id,
    atVersion: r.at_version,
    messages: JSON.parse(r.messages) as Message[],
    createdAt: r.created_at.toISOString(),
  };
  if (r.marker !== null) s.marker = JSON.parse(r.marker) as NonNullable<SessionSnapshot['marker']>;
  if (r.tokens !== null) s.tokens = r.tokens;
  return s;
}
