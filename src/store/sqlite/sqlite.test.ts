import { mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { AbridgeError } from '../../errors.js';
import { refIdFor } from '../../compaction/result-store.js';
import { importSession } from '../session-store.js';
import { messageEntry, runSessionStoreSuite } from '../../../test/support/session-store-suite.js';
import { checkSessionScoping } from '../../../test/support/result-scope.js';
import {
  openSqliteStore,
  SQLITE_SCHEMA_VERSION as SCHEMA_VERSION,
  SqliteResultStore,
  type SqliteSessionStore,
} from './index.js';
import { loadSqliteDriver } from './driver.js';
import { MIGRATIONS } from './migrations.js';

const root = realpathSync(mkdtempSync(join(tmpdir(), 'abridge-sqlite-')));
let n = 0;
const tempDb = () => join(root, `store-${n++}.db`);
afterAll(() => rmSync(root, { recursive: true, force: true }));

runSessionStoreSuite('SqliteSessionStore', async () => openSqliteStore(tempDb()));

async function caught(p: Promise<unknown>): Promise<AbridgeError> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(AbridgeError);
    return err as AbridgeError;
  }
  throw new Error('expected a rejection');
}

/** A clock that advances one second per call, from 2026-01-01T00:00:00Z. */
function fakeClock(): () => Date {
  let t = Date.parse('2026-01-01T00:00:00.000Z');
  return () => new Date((t += 1000) - 1000);
}

describe('SqliteSessionStore: the database', () => {
  it('WAL journal, foreign keys on, a busy timeout, NORMAL sync', async () => {
    const store = await openSqliteStore(tempDb(), { busyTimeoutMs: 1234 });
    try {
      expect(store.db.pragma('journal_mode', { simple: true })).toBe('wal');
      expect(store.db.pragma('foreign_keys', { simple: true })).toBe(1);
      expect(store.db.pragma('busy_timeout', { simple: true })).toBe(1234);
      expect(store.db.pragma('synchronous', { simple: true })).toBe(1);
    } finally {
      await store.close();
    }
    const full = await openSqliteStore(tempDb(), { synchronous: 'full' });
    expect(full.db.pragma('synchronous', { simple: true })).toBe(2);
    await full.close();
  });

  it('migration 1 creates sessions, entries (session_id, seq, entry; primary key both), session_snapshots, tool_result_blobs, recorded in schema_migrations', async () => {
    const path = tempDb();
    const store = await openSqliteStore(path);
    await store.close();
    const db = new Database(path, { readonly: true });
    try {
      const tables = (
        db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").pluck().all() as string[]
      ).filter((t) => !t.startsWith('sqlite_'));
      expect(tables).toEqual(['entries', 'schema_migrations', 'session_snapshots', 'sessions', 'tool_result_blobs']);
      const cols = db.prepare("SELECT name, pk FROM pragma_table_info('entries') ORDER BY cid").all();
      expect(cols).toEqual([
        { name: 'session_id', pk: 1 },
        { name: 'seq', pk: 2 },
        { name: 'entry', pk: 0 },
      ]);
      const migrations = db.prepare('SELECT version, name FROM schema_migrations').all();
      expect(migrations).toEqual(MIGRATIONS.map((m) => ({ version: m.version, name: m.name })));
      expect(SCHEMA_VERSION).toBe(1);
    } finally {
      db.close();
    }
  });

  it('reopening keeps the data and applies no migration twice', async () => {
    const path = tempDb();
    const a = await openSqliteStore(path);
    await a.createSession({ id: 's', format: 'pi', info: { cwd: '/x' } });
    await a.append('s', [messageEntry('user', 'kept')]);
    const ref = await a.results.put('result text\n', { tool: 'bash' });
    await a.close();
    const b = await openSqliteStore(path, { mustExist: true });
    try {
      expect((await b.getSession('s'))?.version).toBe(1);
      expect((await b.entries('s'))[0]?.message?.parts[0]).toEqual({ type: 'text', text: 'kept' });
      expect((await b.results.read(ref.refId)).text).toBe('result text\n');
      expect(b.db.prepare('SELECT COUNT(*) FROM schema_migrations').pluck().get()).toBe(MIGRATIONS.length);
    } finally {
      await b.close();
    }
  });

  it('a database from a newer abridge is refused (STORE_ERROR naming both versions)', async () => {
    const path = tempDb();
    await (await openSqliteStore(path)).close();
    const db = new Database(path);
    db.prepare("INSERT INTO schema_migrations VALUES (99, 'future', '2030-01-01T00:00:00.000Z')").run();
    db.close();
    const err = await caught(openSqliteStore(path));
    expect(err.code).toBe('STORE_ERROR');
    expect(err.message).toMatch(/version 99, newer than this abridge knows \(1\)/);
  });

  it('mustExist: a missing file is STORE_ERROR, and no file is created', async () => {
    const path = join(root, 'missing', 'nope.db');
    const err = await caught(openSqliteStore(path, { mustExist: true }));
    expect(err.code).toBe('STORE_ERROR');
    expect(err.message).toContain('nope.db');
  });

  it('foreign keys hold: entries of an unknown session cannot be inserted behind the store', async () => {
    const store = await openSqliteStore(tempDb());
    try {
      expect(() =>
        store.db.prepare("INSERT INTO entries (session_id, seq, entry) VALUES ('ghost', 0, '{}')").run(),
      ).toThrow(/FOREIGN KEY/);
    } finally {
      await store.close();
    }
  });

  it('an import that fails part way leaves no session: the retry under the same id succeeds', async () => {
    const store = await openSqliteStore(tempDb());
    try {
      // The 4th entry's insert fails inside the database, as a full disk or a constraint would.
      store.db.exec(
        "CREATE TRIGGER fail_fourth BEFORE INSERT ON entries WHEN NEW.seq = 3 BEGIN SELECT RAISE(ABORT, 'disk full (simulated)'); END",
      );
      const session = {
        format: 'pi' as const,
        info: { id: 'imported' },
        entries: Array.from({ length: 6 }, (_, i) => ({ ...messageEntry('user', `m${i}`), index: i })),
        problems: [],
      };
      const err = await caught(importSession(store, session));
      expect(err.code).toBe('STORE_ERROR');
      expect(err.message).toContain('disk full (simulated)');
      expect(await store.getSession('imported')).toBeUndefined();
      expect(await store.listSessions()).toEqual([]);
      expect(store.db.prepare('SELECT COUNT(*) AS n FROM entries').get()).toEqual({ n: 0 });
      store.db.exec('DROP TRIGGER fail_fourth');
      expect((await importSession(store, session)).version).toBe(6);
    } finally {
      await store.close();
    }
  });

  it('two connections to one file: each sees the other, and a stale expectedVersion is CONFLICT across them', async () => {
    const path = tempDb();
    const a = await openSqliteStore(path);
    const b = await openSqliteStore(path);
    try {
      await a.createSession({ id: 's', format: 'pi', info: {} });
      await b.append('s', [messageEntry('user', 'from b')], { expectedVersion: 0 });
      expect((await a.entries('s')).map((e) => e.message?.parts[0])).toEqual([{ type: 'text', text: 'from b' }]);
      const err = await caught(a.append('s', [messageEntry('user', 'stale')], { expectedVersion: 0 }));
      expect([err.code, err.message]).toEqual([
        'CONFLICT',
        'session "s" is at version 1, not the expected version 0: another writer appended first; read the new entries and retry',
      ]);
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('a writer blocked past the busy timeout gets STORE_ERROR, and nothing is appended', async () => {
    const path = tempDb();
    const store = await openSqliteStore(path, { busyTimeoutMs: 50 });
    await store.createSession({ id: 's', format: 'pi', info: {} });
    const other = new Database(path);
    other.exec('BEGIN IMMEDIATE');
    try {
      const err = await caught(store.append('s', [messageEntry('user', 'x')]));
      expect(err.code).toBe('STORE_ERROR');
      expect(err.message).toMatch(/locked|busy/i);
    } finally {
      other.exec('ROLLBACK');
      other.close();
    }
    expect(await store.entries('s')).toEqual([]);
    expect(await store.append('s', [messageEntry('user', 'x')])).toEqual({ version: 1 });
    await store.close();
  });

  it('a missing better-sqlite3 is MISSING_DEPENDENCY: "install better-sqlite3 to use the SQLite store"', async () => {
    const missing = Object.assign(new Error("Cannot find package 'better-sqlite3' imported from /x/index.js"), {
      code: 'ERR_MODULE_NOT_FOUND',
    });
    const err = await caught(loadSqliteDriver(() => Promise.reject(missing)));
    expect(err.code).toBe('MISSING_DEPENDENCY');
    expect(err.message).toMatch(/^install better-sqlite3 to use the SQLite store/);
    const broken = Object.assign(
      new Error('The module was compiled against a different Node.js version using NODE_MODULE_VERSION 115'),
      { code: 'ERR_DLOPEN_FAILED' },
    );
    const err2 = await caught(loadSqliteDriver(() => Promise.reject(broken)));
    expect(err2.code).toBe('MISSING_DEPENDENCY');
    expect(err2.message).toMatch(/npm rebuild better-sqlite3/);
    // The real module loads.
    expect(typeof (await loadSqliteDriver())).toBe('function');
  });

  // Speed is measured by `npm run bench:store` (≥ 20,000 entries/s there); a test only checks the batches land whole.
  it(`appends 20,000 entries in batches of 1,000, in order`, async () => {
    const store = await openSqliteStore(tempDb());
    try {
      await store.createSession({ id: 's', format: 'pi', info: {} });
      const text = 'Some tool output line that is typical of a coding agent transcript. '.repeat(6);
      const batch = (b: number) =>
        Array.from({ length: 1000 }, (_, i) =>
          messageEntry(i % 2 ? 'assistant' : 'user', `${b}:${i} ${text}`, {
            id: `e${b}-${i}`,
            timestamp: 1_700_000_000_000 + i,
          }),
        );
      const batches = Array.from({ length: 20 }, (_, b) => batch(b));
      for (const [b, entries] of batches.entries()) await store.append('s', entries, { expectedVersion: b * 1000 });
      expect((await store.getSession('s'))?.version).toBe(20_000);
      const stored = await store.entries('s', { from: 19_998 });
      expect(stored.map((e) => e.id)).toEqual(['e19-998', 'e19-999']);
    } finally {
      await store.close();
    }
  });
});

describe('SqliteResultStore: the ResultStore contract', () => {
  const open = async (now?: () => Date): Promise<SqliteSessionStore> => openSqliteStore(tempDb(), now ? { now } : {});

  it('a ref written for session A cannot be read through session B', async () => {
    await checkSessionScoping((await open()).results as SqliteResultStore);
  });
  const UNKNOWN = 'r_0000000000000000';

  it('put returns the metadata; read gives the text back; stat agrees with put; content-addressed, first metadata kept', async () => {
    const store = await open(fakeClock());
    const results = store.results;
    expect(results).toBeInstanceOf(SqliteResultStore);
    const text = 'alpha\nbeta\ngamma\n';
    const stored = await results.put(text, { tool: 'bash', callId: 'c1', sessionId: 's1', entry: 7 });
    expect(stored).toEqual({
      refId: refIdFor(text),
      bytes: 17,
      chars: 17,
      lines: 3,
      createdAt: '2026-01-01T00:00:01.000Z',
      tool: 'bash',
      callId: 'c1',
      sessionId: 's1',
      entry: 7,
    });
    expect(await results.read(stored.refId)).toEqual({
      refId: stored.refId,
      text,
      offset: 0,
      limit: 200,
      totalChars: 17,
      totalLines: 3,
      nextOffset: null,
    });
    expect(await results.stat(stored.refId)).toEqual(stored);
    expect(await results.stat(UNKNOWN)).toBeUndefined();
    expect(await results.put(text, { tool: 'second' })).toEqual(stored);
    const other = await results.put('é😀\n', { tool: 'read', extra: 'dropped' } as never);
    expect(other).toMatchObject({ bytes: 7, chars: 4, lines: 1, tool: 'read' });
    expect(other).not.toHaveProperty('extra');
    expect((await results.list()).map((r) => r.refId)).toEqual([stored.refId, other.refId]);
    await store.close();
  });

  it('slices by lines like the others (CRLF kept, tail without newline, past the end, limit 0, empty)', async () => {
    const store = await open();
    const r = store.results;
    const ten = Array.from({ length: 10 }, (_, i) => `l${i}\n`).join('');
    const { refId } = await r.put(ten);
    expect(await r.read(refId, { offset: 4, limit: 3 })).toEqual({
      refId,
      text: 'l4\nl5\nl6\n',
      offset: 4,
      limit: 3,
      totalChars: 30,
      totalLines: 10,
      nextOffset: 7,
    });
    expect(await r.read(refId, { offset: 8, limit: 50 })).toMatchObject({ text: 'l8\nl9\n', nextOffset: null });
    expect(await r.read(refId, { offset: 10, limit: 5 })).toMatchObject({ text: '', nextOffset: null });
    expect(await r.read(refId, { offset: 4, limit: 0 })).toMatchObject({ text: '', nextOffset: 4 });
    const crlf = await r.put('a\r\nb\r\n\r\nc\rd\r\n');
    expect(crlf.lines).toBe(4);
    expect((await r.read(crlf.refId, { offset: 1, limit: 2 })).text).toBe('b\r\n\r\n');
    const tail = await r.put('a\nb\nc');
    expect(await r.read(tail.refId, { offset: 1 })).toMatchObject({ text: 'b\nc', nextOffset: null });
    const empty = await r.put('');
    expect(await r.read(empty.refId)).toEqual({
      refId: empty.refId,
      text: '',
      offset: 0,
      limit: 200,
      totalChars: 0,
      totalLines: 0,
      nextOffset: null,
    });
    await store.close();
  });

  it('validation: a malformed ref or range is INVALID_INPUT; an unknown ref is RESULT_NOT_FOUND naming the database', async () => {
    const store = await open();
    const r = store.results;
    expect((await caught(r.read('nope'))).code).toBe('INVALID_INPUT');
    expect((await caught(r.stat('../r_0123456789abcdef'))).code).toBe('INVALID_INPUT');
    expect((await caught(r.read(UNKNOWN, { offset: -1 }))).code).toBe('INVALID_INPUT');
    expect((await caught(r.read(UNKNOWN, { limit: 2001 }))).code).toBe('INVALID_INPUT');
    const err = await caught(r.read(UNKNOWN));
    expect(err.code).toBe('RESULT_NOT_FOUND');
    expect(err.message).toBe(
      `No stored result with ref_id "${UNKNOWN}" in the SQLite store at ${store.path}. A ref_id is "r_" followed by 16 lowercase hex digits, e.g. "r_0123456789abcdef"; use one exactly as given where the result was offloaded.`,
    );
    await store.close();
  });

  it('returns copies', async () => {
    const store = await open();
    const stored = await store.results.put('x');
    stored.tool = 'mutated';
    (await store.results.list())[0]!.lines = 99;
    expect(await store.results.stat(stored.refId)).toEqual({ ...stored, tool: undefined, lines: 1 });
    await store.close();
  });
});
