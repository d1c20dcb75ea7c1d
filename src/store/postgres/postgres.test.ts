// The PostgreSQL store: the shared SessionStore suite, the ResultStore contract, migrations, exact JSON text, hooks,
// and what happens without `pg` or without a server. Needs ABRIDGE_PG_URL (scripts/pg-test-server.sh starts one);
// without it the server tests are skipped with a printed reason.
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import pg from 'pg';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import type { AbridgeError } from '../../errors.js';
import type { Entry, Message } from '../../model/types.js';
import { checkSessionScoping } from '../../../test/support/result-scope.js';
import { MemoryResultStore } from '../../compaction/memory-result-store.js';
import { refIdFor, type KeyedResultStore, type ResultStore } from '../../compaction/result-store.js';
import { importSession } from '../session-store.js';
import { messageEntry, runSessionStoreSuite } from '../../../test/support/session-store-suite.js';
import { isMissingPg } from './connection.js';
import {
  openPostgresStore,
  PostgresSessionStore,
  POSTGRES_SCHEMA_VERSION as SCHEMA_VERSION,
  type PostgresStoreOptions,
} from './index.js';
import { MIGRATIONS } from './migrations.js';

const PG_URL = process.env.ABRIDGE_PG_URL || undefined;
const SKIP_REASON = 'PostgreSQL tests skipped: set ABRIDGE_PG_URL (CI starts a server; see scripts/pg-test-server.sh)';

/** Prints why the PostgreSQL tests are skipped, once per vitest run (its test files run in child processes of one parent). */
function warnSkippedOnce(): void {
  if (PG_URL) return;
  try {
    writeFileSync(join(tmpdir(), `abridge-pg-skip-warned-${process.ppid}`), '', { flag: 'wx' });
  } catch {
    return; // another test file of this run printed it
  }
  console.warn(SKIP_REASON);
}
warnSkippedOnce();

/** A schema no other test file or run uses (dropped afterwards). */
const uniqueSchema = (label: string) => `t_${label}_${process.pid}_${randomBytes(3).toString('hex')}`.slice(0, 63);

async function caught(p: Promise<unknown>): Promise<AbridgeError> {
  try {
    await p;
  } catch (err) {
    // By name: a test that re-imports the modules (vi.resetModules) gets another AbridgeError class.
    expect(err).toMatchObject({ name: 'AbridgeError' });
    return err as AbridgeError;
  }
  throw new Error('expected a rejection');
}

describe('PostgreSQL store without a server', () => {
  it('a missing pg package is MISSING_DEPENDENCY: "install pg to use the PostgreSQL store"', async () => {
    vi.resetModules();
    vi.doMock('pg', () => {
      throw Object.assign(new Error("Cannot find package 'pg' imported from /app/dist/store/postgres/connection.js"), {
        code: 'ERR_MODULE_NOT_FOUND',
      });
    });
    try {
      const mod = await import('./index.js');
      const err = await caught(mod.openPostgresStore('postgres://u:p@127.0.0.1:1/db'));
      expect(err.code).toBe('MISSING_DEPENDENCY');
      expect(err.message).toBe('install pg to use the PostgreSQL store');
    } finally {
      vi.doUnmock('pg');
      vi.resetModules();
    }
  });

  it('recognizes "pg is not installed" errors, also wrapped ones, and no others', () => {
    const notFound = Object.assign(
      new Error("Cannot find package 'pg' imported from /x/dist/store/postgres/connection.js"),
      { code: 'ERR_MODULE_NOT_FOUND' },
    );
    expect(isMissingPg(notFound)).toBe(true);
    expect(isMissingPg(new Error('wrapped', { cause: notFound }))).toBe(true);
    expect(isMissingPg(Object.assign(new Error("Cannot find module 'pg'"), { code: 'MODULE_NOT_FOUND' }))).toBe(true);
    expect(
      isMissingPg(
        Object.assign(new Error("Cannot find package 'pg-pool' imported from /x/node_modules/pg/lib/index.js"), {
          code: 'ERR_MODULE_NOT_FOUND',
        }),
      ),
    ).toBe(false);
    expect(isMissingPg(new SyntaxError('Unexpected token'))).toBe(false);
  });

  it('an invalid schema name or an empty URL is INVALID_INPUT, before connecting', async () => {
    for (const schema of ['', '1abc', 'a-b', 'x"; DROP TABLE y; --', 'a'.repeat(64)]) {
      const err = await caught(openPostgresStore('postgres://u:p@127.0.0.1:1/db', { schema }));
      expect(err.code).toBe('INVALID_INPUT');
      expect(err.message).toContain('schema name');
    }
    expect((await caught(openPostgresStore(''))).code).toBe('INVALID_INPUT');
  });

  it('the package exports it as abridge-context/postgres (built code, types beside it)', () => {
    const repo = fileURLToPath(new URL('../../..', import.meta.url));
    const probe =
      "const m = await import('abridge-context/postgres'); console.log(typeof m.openPostgresStore, typeof m.PostgresSessionStore, typeof m.PostgresResultStore);";
    const out = execFileSync(process.execPath, ['--input-type=module', '-e', probe], { cwd: repo, encoding: 'utf8' });
    expect(out.trim()).toBe('function function function');
    expect(existsSync(join(repo, 'dist/store/postgres/index.d.ts'))).toBe(true);
  });

  it('an unreachable server is STORE_ERROR naming the URL without its password', async () => {
    const err = await caught(
      openPostgresStore('postgres://user:s3cret@127.0.0.1:1/db', { pool: { connectionTimeoutMillis: 5000 } }),
    );
    expect(err.code).toBe('STORE_ERROR');
    expect(err.message).toContain('postgres://user:***@127.0.0.1:1/db');
    expect(err.message).not.toContain('s3cret');
  });
});

describe.skipIf(!PG_URL)(`PostgreSQL store${PG_URL ? '' : ` (${SKIP_REASON})`}`, () => {
  const schemas = new Set<string>();
  const open: PostgresSessionStore[] = [];

  async function admin<T>(fn: (client: pg.Client) => Promise<T>): Promise<T> {
    const client = new pg.Client({ connectionString: PG_URL });
    await client.connect();
    try {
      return await fn(client);
    } finally {
      await client.end();
    }
  }

  async function dropSchemas(): Promise<void> {
    await admin(async (c) => {
      for (const s of schemas) await c.query(`DROP SCHEMA IF EXISTS "${s}" CASCADE`);
    });
    schemas.clear();
  }

  /** A store in a schema of its own (dropped after the file), closed after the test. */
  async function fresh(
    label: string,
    options: Omit<PostgresStoreOptions, 'schema'> = {},
  ): Promise<PostgresSessionStore> {
    const schema = uniqueSchema(label);
    schemas.add(schema);
    const store = await openPostgresStore(PG_URL!, { ...options, schema });
    open.push(store);
    return store;
  }

  afterEach(async () => {
    for (const s of open.splice(0)) await s.close();
  });
  afterAll(dropSchemas);

  // The shared suite: every test opens a new store (pool) on one schema shared by all of them.
  const suiteSchema = uniqueSchema('suite');
  schemas.add(suiteSchema);
  runSessionStoreSuite('PostgresSessionStore', () => openPostgresStore(PG_URL!, { schema: suiteSchema }));

  it('an import that fails part way (the 4th entry refused by the server) leaves no session: the retry succeeds', async () => {
    const store = await fresh('import');
    await admin(async (c) => {
      await c.query(
        `CREATE FUNCTION "${store.schema}".fail_fourth() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN IF NEW.seq = 3 THEN RAISE EXCEPTION 'disk full (simulated)'; END IF; RETURN NEW; END $$`,
      );
      await c.query(
        `CREATE TRIGGER fail_fourth BEFORE INSERT ON "${store.schema}".entries FOR EACH ROW EXECUTE FUNCTION "${store.schema}".fail_fourth()`,
      );
    });
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
    await admin((c) => c.query(`DROP TRIGGER fail_fourth ON "${store.schema}".entries`));
    expect((await importSession(store, session)).version).toBe(6);
    expect((await store.entries('imported')).length).toBe(6);
  });

  it('migrate: false opens without writing: a user with read rights only lists and reads; a missing schema is a clear STORE_ERROR', async () => {
    const store = await fresh('ro');
    await importSession(store, {
      format: 'pi',
      info: { id: 'kept' },
      entries: [{ ...messageEntry('user', 'hi'), index: 0 }],
      problems: [],
    });
    const role = `ro_${process.pid}_${randomBytes(3).toString('hex')}`;
    const url = new URL(PG_URL!);
    await admin(async (c) => {
      await c.query(`CREATE ROLE ${role} LOGIN PASSWORD 'ro-pass'`);
      await c.query(`GRANT USAGE ON SCHEMA "${store.schema}" TO ${role}`);
      await c.query(`GRANT SELECT ON ALL TABLES IN SCHEMA "${store.schema}" TO ${role}`);
    });
    url.username = role;
    url.password = 'ro-pass';
    try {
      const reader = await openPostgresStore(url.href, { schema: store.schema, migrate: false });
      open.push(reader);
      expect((await reader.listSessions()).map((s) => s.id)).toEqual(['kept']);
      expect((await reader.entries('kept')).length).toBe(1);
      const err = await caught(openPostgresStore(PG_URL!, { schema: uniqueSchema('absent'), migrate: false }));
      expect(err.code).toBe('STORE_ERROR');
      expect(err.message).toMatch(
        /holds no abridge store \(no schema_migrations table\); opened without migrating, nothing was created/,
      );
    } finally {
      for (const s of open.splice(0)) await s.close();
      await admin(async (c) => {
        await c.query(`REVOKE ALL ON ALL TABLES IN SCHEMA "${store.schema}" FROM ${role}`);
        await c.query(`REVOKE ALL ON SCHEMA "${store.schema}" FROM ${role}`);
        await c.query(`DROP ROLE ${role}`);
      });
    }
  });

  describe('schema and migrations', () => {
    it('creates the schema with its tables and records each migration once; reopening (also by several workers at once) changes nothing', async () => {
      const schema = uniqueSchema('mig');
      schemas.add(schema);
      const stores = await Promise.all(Array.from({ length: 4 }, () => openPostgresStore(PG_URL!, { schema })));
      open.push(...stores);
      const again = await openPostgresStore(PG_URL!, { schema });
      open.push(again);
      await admin(async (c) => {
        const migrations = await c.query<{ version: number; name: string }>(
          `SELECT version, name FROM "${schema}".schema_migrations ORDER BY version`,
        );
        expect(migrations.rows).toEqual(MIGRATIONS.map((m) => ({ version: m.version, name: m.name })));
        expect(SCHEMA_VERSION).toBe(MIGRATIONS.at(-1)!.version);
        const tables = await c.query<{ table_name: string }>(
          `SELECT table_name FROM information_schema.tables WHERE table_schema = $1 ORDER BY table_name`,
          [schema],
        );
        expect(tables.rows.map((r) => r.table_name)).toEqual([
          'entries',
          'schema_migrations',
          'session_snapshots',
          'sessions',
          'tool_result_blobs',
        ]);
        // JSON is kept as TEXT, not JSONB (which would reorder keys).
        const entryType = await c.query<{ data_type: string }>(
          `SELECT data_type FROM information_schema.columns WHERE table_schema = $1 AND table_name = 'entries' AND column_name = 'entry'`,
          [schema],
        );
        expect(entryType.rows[0]!.data_type).toBe('text');
      });
    });

    it('a schema migrated by a newer abridge is STORE_ERROR', async () => {
      const store = await fresh('newer');
      await admin((c) =>
        c.query(`INSERT INTO "${store.schema}".schema_migrations (version, name) VALUES ($1, 'from the future')`, [
          SCHEMA_VERSION + 1,
        ]),
      );
      const err = await caught(openPostgresStore(PG_URL!, { schema: store.schema }));
      expect(err.code).toBe('STORE_ERROR');
      expect(err.message).toMatch(/newer than this abridge knows/);
    });

    it('stores in different schemas do not see each other', async () => {
      const a = await fresh('iso_a');
      const b = await fresh('iso_b');
      await a.createSession({ id: 'same-id', format: 'pi', info: {} });
      await a.append('same-id', [messageEntry('user', 'only in a')]);
      expect(await b.getSession('same-id')).toBeUndefined();
      await b.createSession({ id: 'same-id', format: 'pi', info: {} });
      expect(await b.entries('same-id')).toEqual([]);
      await a.results.put('in a');
      expect(await b.results.list()).toEqual([]);
    });
  });

  describe('entries as exact JSON text', () => {
    it('each entry is stored as the JSON text of the entry without its index: key order, numbers and strings as given', async () => {
      const store = await fresh('text');
      const { id } = await store.createSession({ format: 'pi', info: {} });
      const raw = {
        zeta: 1,
        alpha: { y: [3, 1, 2], x: null },
        float: 1.5e-7,
        big: 9007199254740991,
        s: 'tab\there "q" \\ \u2028 😀',
      };
      const draft: Omit<Entry, 'index'> = {
        kind: 'message',
        message: { role: 'user', parts: [{ type: 'text', text: 'hi' }] },
        raw,
      };
      await store.append(id, [{ ...draft, index: 42 } as Entry]);
      const rows = await admin((c) =>
        c.query<{ seq: number; entry: string }>(
          `SELECT seq, entry FROM "${store.schema}".entries WHERE session_id = $1`,
          [id],
        ),
      );
      expect(rows.rows).toEqual([{ seq: 0, entry: JSON.stringify(draft) }]);
      const [back] = await store.entries(id);
      expect(JSON.stringify(back!.raw)).toBe(JSON.stringify(raw));
      expect(Object.keys(back!.raw as object)).toEqual(['zeta', 'alpha', 'float', 'big', 's']);
    });

    it('a batch larger than one INSERT statement (2,500 entries, some large) is appended whole and in order', async () => {
      const store = await fresh('big');
      const { id } = await store.createSession({ format: 'pi', info: {} });
      const batch = Array.from({ length: 2500 }, (_, i) =>
        messageEntry(i % 2 ? 'assistant' : 'user', i % 500 === 7 ? `big ${i} ${'x'.repeat(200_000)}` : `e${i}`),
      );
      expect(await store.append(id, batch, { expectedVersion: 0 })).toEqual({ version: 2500 });
      const back = await store.entries(id);
      expect(back.map((e) => e.index)).toEqual(batch.map((_, i) => i));
      expect(back.map((e) => (e.message!.parts[0] as { text: string }).text)).toEqual(
        batch.map((e) => (e.message!.parts[0] as { text: string }).text),
      );
    });
  });

  describe('concurrent appends through one store (queued per session, plain appends committed together)', () => {
    /** The number of transactions that wrote the session's entries (each row's xmin is the transaction that inserted it). */
    const transactions = async (store: PostgresSessionStore, id: string) =>
      Number(
        (
          await admin((c) =>
            c.query<{ n: string }>(
              `SELECT count(DISTINCT xmin::text) AS n FROM "${store.schema}".entries WHERE session_id = $1`,
              [id],
            ),
          )
        ).rows[0]!.n,
      );
    const text = (e: Entry) => (e.message!.parts[0] as { text: string }).text;

    it('8 writers on one session, each awaiting its own appends: every entry stored exactly once, each writer in its own order, versions as acknowledged, no conflict', async () => {
      const store = await fresh('writers8');
      const { id } = await store.createSession({ format: 'pi', info: {} });
      const WRITERS = 8;
      const EACH = 150;
      const acked = new Map<string, number>();
      await Promise.all(
        Array.from({ length: WRITERS }, async (_, w) => {
          let last = 0;
          for (let i = 0; i < EACH; i++) {
            const { version } = await store.append(id, [messageEntry('user', `w${w}:${i}`)]);
            expect(version).toBeGreaterThan(last);
            last = version;
            acked.set(`w${w}:${i}`, version);
          }
        }),
      );
      const entries = await store.entries(id);
      expect(entries).toHaveLength(WRITERS * EACH);
      expect((await store.getSession(id))!.version).toBe(WRITERS * EACH);
      // Each acknowledged version is the position right after that entry.
      for (const e of entries) expect(acked.get(text(e))).toBe(e.index + 1);
      for (let w = 0; w < WRITERS; w++) {
        expect(entries.map(text).filter((t) => t.startsWith(`w${w}:`))).toEqual(
          Array.from({ length: EACH }, (_, i) => `w${w}:${i}`),
        );
      }
      // The writers' first appends, issued together, shared one transaction at least.
      expect(await transactions(store, id)).toBeLessThan(WRITERS * EACH);
    });

    it('appends issued together (not awaited) land in call order, with the versions of that order, in one transaction; one with expectedVersion between them sees those before it', async () => {
      const store = await fresh('callorder');
      const { id } = await store.createSession({ format: 'pi', info: {} });
      const N = 200;
      const results = await Promise.all([
        ...Array.from({ length: N }, (_, i) =>
          store.append(id, [messageEntry('user', `p${i}`), messageEntry('assistant', `q${i}`)]),
        ),
        store.append(id, [messageEntry('user', 'checked')], { expectedVersion: 2 * N }),
        store.append(id, [messageEntry('user', 'last')]),
      ]);
      expect(results.map((r) => r.version)).toEqual([
        ...Array.from({ length: N }, (_, i) => 2 * (i + 1)),
        2 * N + 1,
        2 * N + 2,
      ]);
      expect((await store.entries(id)).map(text)).toEqual([
        ...Array.from({ length: N }, (_, i) => [`p${i}`, `q${i}`]).flat(),
        'checked',
        'last',
      ]);
      // The 200 plain appends in one statement, then the checked one alone, then the last: 3 transactions.
      expect(await transactions(store, id)).toBe(3);
    });

    it('a statement that fails rejects every append in it, and none of their entries is stored; the next ones go through', async () => {
      const store = await fresh('groupfail');
      const { id } = await store.createSession({ format: 'pi', info: {} });
      await store.append(id, [messageEntry('user', 'before')]);
      await admin(async (c) => {
        await c.query(
          `CREATE FUNCTION "${store.schema}".no_poison() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN IF NEW.entry LIKE '%poison%' THEN RAISE EXCEPTION 'poisoned entry (simulated)'; END IF; RETURN NEW; END $$`,
        );
        await c.query(
          `CREATE TRIGGER no_poison BEFORE INSERT ON "${store.schema}".entries FOR EACH ROW EXECUTE FUNCTION "${store.schema}".no_poison()`,
        );
      });
      const settled = await Promise.allSettled(
        ['a', 'poison', 'c'].map((t) => store.append(id, [messageEntry('user', t)])),
      );
      for (const r of settled) {
        expect(r.status).toBe('rejected');
        expect((r as PromiseRejectedResult).reason).toMatchObject({
          code: 'STORE_ERROR',
          message: expect.stringContaining('poisoned entry (simulated)'),
        });
      }
      expect((await store.entries(id)).map(text)).toEqual(['before']);
      expect((await store.getSession(id))!.version).toBe(1);
      expect(await store.append(id, [messageEntry('user', 'after')])).toEqual({ version: 2 });
      // Alone (one entry: the one-entry statement), the same; the connection it failed on is not the next one's.
      expect(await caught(store.append(id, [messageEntry('user', 'poison again')]))).toMatchObject({
        code: 'STORE_ERROR',
        message: expect.stringContaining('poisoned entry (simulated)'),
      });
      expect(await store.append(id, [messageEntry('user', 'after again')])).toEqual({ version: 3 });
      expect((await store.entries(id)).map(text)).toEqual(['before', 'after', 'after again']);
      // A missing session: every append of the group is SESSION_NOT_FOUND.
      const missing = await Promise.allSettled(
        [1, 2, 3].map((i) => store.append('no-such-session', [messageEntry('user', `x${i}`)])),
      );
      expect(missing.map((r) => (r as PromiseRejectedResult).reason?.code)).toEqual([
        'SESSION_NOT_FOUND',
        'SESSION_NOT_FOUND',
        'SESSION_NOT_FOUND',
      ]);
    });

    it('a pool of one connection: a writer appending without a pause lets reads and a compaction through (its queue hands the connection back)', async () => {
      const store = await fresh('pool1', { pool: { max: 1 } });
      const { id } = await store.createSession({ format: 'pi', info: {} });
      let stop = false;
      let written = 0;
      const writer = (async () => {
        while (!stop) {
          await store.append(id, [messageEntry('user', `w${written}`)]);
          written++;
        }
      })();
      // Each of these needs the pool's one connection while the writer's queue uses it between appends; a queue that
      // kept it would starve them (and the writer, stopped only after them, would never end).
      const seen: number[] = [];
      for (let i = 0; i < 10; i++) seen.push((await store.getSession(id))!.version);
      const { version } = await store.recordCompaction(id, [], { messages: [] });
      for (let i = 0; i < 10; i++) seen.push((await store.entries(id)).length);
      stop = true;
      await writer;
      expect(new Set(seen).size).toBeGreaterThan(1); // the writer went on between the reads
      expect((await store.latestSnapshot(id))!.atVersion).toBe(version);
      const entries = await store.entries(id);
      expect(entries.map(text)).toEqual(Array.from({ length: written }, (_, i) => `w${i}`));
      expect((await store.getSession(id))!.version).toBe(written);
    });

    it('stores sharing one pool and schema each prepare their append statement on a connection the other prepared it on', async () => {
      const first = await fresh('sharedpool');
      const { id } = await first.createSession({ format: 'pi', info: {} });
      const pool = new pg.Pool({ connectionString: PG_URL, max: 1 });
      try {
        const config = { pool, schema: first.schema, quoted: `"${first.schema}"` };
        const [a, b] = [new PostgresSessionStore(config), new PostgresSessionStore(config)];
        for (let i = 0; i < 3; i++) {
          expect(await a.append(id, [messageEntry('user', `a${i}`)])).toEqual({ version: 2 * i + 1 });
          expect(await b.append(id, [messageEntry('user', `b${i}`)], { expectedVersion: 2 * i + 1 })).toEqual({
            version: 2 * i + 2,
          });
        }
        expect((await first.entries(id)).map(text)).toEqual(['a0', 'b0', 'a1', 'b1', 'a2', 'b2']);
        await a.close(); // ends the shared pool, once b's connection is back in it
      } finally {
        if (!pool.ended) await pool.end();
      }
    });

    it('close() waits for the appends already asked for: all of them are stored', async () => {
      const store = await fresh('closewait');
      const { id } = await store.createSession({ format: 'pi', info: {} });
      const pending = Array.from({ length: 51 }, (_, i) => store.append(id, [messageEntry('user', `c${i}`)]));
      await Promise.all([store.close(), ...pending]);
      const again = await openPostgresStore(PG_URL!, { schema: store.schema });
      open.push(again);
      expect(await again.entries(id)).toHaveLength(51);
    });
  });

  describe('transactions (beforeCommit hook)', () => {
    it('an append or a recordCompaction failing just before COMMIT leaves nothing: no entries, no snapshot, same version', async () => {
      let fail = false;
      const store = await fresh('hook', {
        hooks: {
          beforeCommit: () => {
            if (fail) throw new Error('injected failure before COMMIT');
          },
        },
      });
      const { id } = await store.createSession({ format: 'pi', info: {} });
      await store.append(id, [messageEntry('user', 'u0'), messageEntry('assistant', 'a1')]);
      const summary: Message = { role: 'user', parts: [{ type: 'text', text: 'summary' }] };
      const marker = {
        kind: 'compaction' as const,
        compaction: { number: 1, summary: 'summary', source: 'abridge' },
        message: summary,
      };
      fail = true;
      const a = await caught(store.append(id, [messageEntry('user', 'lost')]));
      expect(a.code).toBe('STORE_ERROR');
      expect(a.message).toContain('injected failure before COMMIT');
      const r = await caught(
        store.recordCompaction(id, [messageEntry('user', 'lost too'), marker], {
          messages: [summary],
          marker: marker.compaction,
          tokens: 5,
        }),
      );
      expect(r.code).toBe('STORE_ERROR');
      expect((await store.getSession(id))!.version).toBe(2);
      expect(await store.entries(id)).toHaveLength(2);
      expect(await store.latestSnapshot(id)).toBeUndefined();
      fail = false;
      expect(
        await store.recordCompaction(
          id,
          [marker],
          { messages: [summary], marker: marker.compaction },
          { expectedVersion: 2 },
        ),
      ).toEqual({ version: 3 });
      expect(await store.resume(id)).toEqual({
        messages: [summary],
        fromSnapshot: true,
        snapshotAt: 3,
        appended: 0,
        version: 3,
      });
    });

    it('uses its clock for createdAt, updatedAt and snapshots', async () => {
      let t = Date.parse('2026-01-01T00:00:00.000Z');
      const store = await fresh('clock', { now: () => new Date((t += 1000)) });
      const s = await store.createSession({ id: 's', format: 'pi', info: {} });
      expect(s.createdAt).toBe('2026-01-01T00:00:01.000Z');
      await store.append('s', [messageEntry('user', 'x')]);
      expect((await store.getSession('s'))!.updatedAt).toBe('2026-01-01T00:00:02.000Z');
      await store.recordCompaction('s', [], { messages: [] });
      expect((await store.latestSnapshot('s'))!.createdAt).toBe('2026-01-01T00:00:03.000Z');
    });

    it('close() ends the pool: calling it twice is fine; using the store afterwards is STORE_ERROR', async () => {
      const store = await openPostgresStore(PG_URL!, { schema: suiteSchema });
      await store.close();
      await store.close();
      expect((await caught(store.listSessions())).code).toBe('STORE_ERROR');
    });
  });

  describe('PostgresResultStore: the ResultStore contract', () => {
    const UNKNOWN = 'r_0123456789abcdef';
    const clock = () => {
      let t = Date.parse('2026-01-01T00:00:00.000Z');
      return () => new Date((t += 1000) - 1000);
    };
    const numbered = (n: number) => Array.from({ length: n }, (_, i) => `l${i}\n`).join('');

    async function results(label: string, now?: () => Date): Promise<ResultStore> {
      return (await fresh(`res_${label}`, now ? { now } : {})).results;
    }

    it('a ref written for session A cannot be read through session B', async () => {
      await checkSessionScoping((await results('scoped')) as KeyedResultStore);
    });

    it('put returns the metadata; read gives the text back; stat agrees; list is oldest first; same content is stored once, keeping its first metadata', async () => {
      const store = await results('basic', clock());
      const text = 'alpha\nbeta\ngamma\n';
      const stored = await store.put(text, {
        tool: 'bash',
        callId: 'c1',
        sessionId: 's1',
        entry: 7,
        extra: 'dropped',
      } as never);
      expect(stored).toEqual({
        refId: refIdFor(text),
        bytes: 17,
        chars: 17,
        lines: 3,
        createdAt: '2026-01-01T00:00:00.000Z',
        tool: 'bash',
        callId: 'c1',
        sessionId: 's1',
        entry: 7,
      });
      expect(await store.read(stored.refId)).toEqual({
        refId: stored.refId,
        text,
        offset: 0,
        limit: 200,
        totalChars: 17,
        totalLines: 3,
        nextOffset: null,
      });
      expect(await store.stat(stored.refId)).toEqual(stored);
      expect(await store.stat(UNKNOWN)).toBeUndefined();
      expect(await store.put(text, { tool: 'second' })).toEqual(stored);
      const unicode = await store.put('é😀\n');
      expect(unicode).toMatchObject({ bytes: 7, chars: 4, lines: 1, createdAt: '2026-01-01T00:00:01.000Z' });
      const crlf = await store.put('alpha\r\nbeta\r\n');
      expect((await store.list()).map((r) => r.refId)).toEqual([stored.refId, unicode.refId, crlf.refId]);
    });

    it('keeps any text exactly: NUL characters, CR, CRLF, blank lines, empty text', async () => {
      const store = await results('exact');
      for (const text of ['a\u0000b\n\u0000\n', 'a\r\nb\r\n\r\nc\rd\r\n', '', '\n\n\nx', 'no newline at the end']) {
        const { refId, chars } = await store.put(text);
        expect(chars).toBe(text.length);
        let joined = '';
        for (let at: number | null = 0; at !== null; ) {
          const s = await store.read(refId, { offset: at, limit: 1 });
          joined += s.text;
          at = s.nextOffset;
        }
        expect(joined).toBe(text);
        expect((await store.read(refId)).text).toBe(text);
      }
    });

    it('slices by lines exactly as the in-memory reference store does', async () => {
      const store = await results('slices');
      const reference = new MemoryResultStore();
      const ten = numbered(10);
      const { refId } = await store.put(ten);
      await reference.put(ten);
      for (const [offset, limit] of [
        [0, 3],
        [4, 3],
        [7, 3],
        [8, 50],
        [9, 1],
        [0, 1],
        [10, 5],
        [1_000_000, 5],
        [4, 0],
        [10, 0],
      ] as const) {
        expect(await store.read(refId, { offset, limit })).toEqual(await reference.read(refId, { offset, limit }));
      }
      const long = numbered(2450);
      const big = await store.put(long);
      await reference.put(long);
      for (const range of [
        undefined,
        { offset: 200 },
        { offset: 400, limit: 2000 },
        { offset: 2400, limit: 2000 },
        { offset: null, limit: null } as never,
      ]) {
        expect(await store.read(big.refId, range)).toEqual(await reference.read(big.refId, range));
      }
      const piece = fc.constantFrom('a', 'bc', 'é', '😀', ' ', '\n', '\r\n', '\r', '\u0000');
      await fc.assert(
        fc.asyncProperty(
          fc.array(piece, { maxLength: 40 }).map((p) => p.join('')),
          fc.nat(45),
          fc.nat(45),
          async (text, offset, limit) => {
            const stored = await store.put(text);
            const expected = await reference.put(text);
            expect({ ...stored, createdAt: '' }).toEqual({ ...expected, createdAt: '' });
            expect(await store.read(stored.refId, { offset, limit })).toEqual(
              await reference.read(stored.refId, { offset, limit }),
            );
          },
        ),
        { numRuns: 40 },
      );
    });

    it('validates refs and ranges like the others; a well-formed unknown ref is RESULT_NOT_FOUND naming it and how refs look', async () => {
      const store = await results('validation');
      const reference = new MemoryResultStore();
      const { refId } = await store.put('x\n');
      for (const bad of ['nope', 'r_0123456789ABCDEF', '', 42, undefined]) {
        for (const call of [() => store.read(bad as string), () => store.stat(bad as string)]) {
          const err = await caught(call());
          expect(err.code).toBe('INVALID_INPUT');
          expect(err.message).toBe((await caught(reference.read(bad as string))).message);
        }
      }
      for (const range of [{ offset: -1 }, { offset: 1.5 }, { limit: 2001 }, { limit: -5 }]) {
        expect((await caught(store.read(refId, range))).code).toBe('INVALID_INPUT');
        expect((await caught(store.read(UNKNOWN, range))).code).toBe('INVALID_INPUT');
      }
      const err = await caught(store.read(UNKNOWN, { offset: 5 }));
      expect(err.code).toBe('RESULT_NOT_FOUND');
      expect(err.message).toContain(`"${UNKNOWN}"`);
      expect(err.message).toContain('"r_" followed by 16 lowercase hex digits');
      expect(err.message).toContain('PostgreSQL result store');
    });

    it('workers putting the same content at once: one row, every put gets the same metadata', async () => {
      const first = await fresh('res_race');
      const others = await Promise.all(
        Array.from({ length: 3 }, () => openPostgresStore(PG_URL!, { schema: first.schema })),
      );
      open.push(...others);
      const stores = [first, ...others];
      const texts = Array.from({ length: 10 }, (_, i) => `shared result ${i}\n`.repeat(1000));
      const puts = await Promise.all(
        stores.flatMap((s, w) => texts.map((t, i) => s.results.put(t, { tool: `w${w}`, entry: i }))),
      );
      for (const [i, text] of texts.entries()) {
        const mine = puts.filter((p) => p.refId === refIdFor(text));
        expect(mine).toHaveLength(stores.length);
        for (const p of mine) expect(p).toEqual(mine[0]);
        expect(mine[0]!.entry).toBe(i);
      }
      expect(await first.results.list()).toHaveLength(texts.length);
    });

    it('a 5 MB result: stored once, read in slices without loss', async () => {
      const store = await results('large');
      const text = Array.from({ length: 100_000 }, (_, i) => `line ${i} ${'·'.repeat(i % 40)}\n`).join('');
      const stored = await store.put(text);
      expect(stored.lines).toBe(100_000);
      expect(stored.bytes).toBe(Buffer.byteLength(text));
      const slice = await store.read(stored.refId, { offset: 99_990, limit: 2000 });
      expect(slice.text).toBe(
        text
          .split('\n')
          .slice(99_990, 100_000)
          .map((l) => `${l}\n`)
          .join(''),
      );
      expect(slice.nextOffset).toBeNull();
      expect(await store.read(stored.refId, { offset: 100_000 })).toMatchObject({
        text: '',
        nextOffset: null,
        totalLines: 100_000,
      });
    });
  });
});
