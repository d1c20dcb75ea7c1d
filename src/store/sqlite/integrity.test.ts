import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  writeSync,
  closeSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { readSession } from '../../formats/read.js';
import { importSession, loadSession } from '../session-store.js';
import { builtDist, EXAMPLE_TRANSCRIPT } from '../../../test/support/session-store-suite.js';
import { openSqliteStore } from './index.js';

// Issue 13: a read-only database can be listed and exported (no migration, no write); damaged pages are found on open.
const root = realpathSync(mkdtempSync(join(tmpdir(), 'abridge-sqlite-ro-')));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let n = 0;

/** A real store: the example transcript imported, the WAL folded into the file, closed. */
async function realStore(): Promise<string> {
  const dir = join(root, `d${n++}`);
  mkdirSync(dir);
  const path = join(dir, 'store.db');
  const store = await openSqliteStore(path);
  await importSession(store, await readSession(EXAMPLE_TRANSCRIPT), 'example');
  store.checkpoint();
  await store.close();
  return path;
}

describe('SQLite store opened read-only', () => {
  it('lists and exports without writing a byte (no migration, no journal change, no -wal or -shm left)', async () => {
    const path = await realStore();
    const before = readFileSync(path);
    const mtime = statSync(path).mtimeMs;
    const store = await openSqliteStore(path, { readonly: true });
    try {
      expect((await store.listSessions()).map((s) => s.id)).toEqual(['example']);
      expect((await loadSession(store, 'example')).entries.length).toBeGreaterThan(100);
      await expect(store.append('example', [{ kind: 'unknown', raw: {} }])).rejects.toMatchObject({
        code: 'STORE_ERROR',
        message: expect.stringContaining('readonly'),
      });
    } finally {
      await store.close();
    }
    expect(readFileSync(path).equals(before)).toBe(true);
    expect(statSync(path).mtimeMs).toBe(mtime);
  });

  it('an older schema opened read-only is a clear STORE_ERROR, and is not migrated', async () => {
    const path = await realStore();
    const db = new Database(path);
    db.prepare('DELETE FROM schema_migrations').run();
    db.close();
    await expect(openSqliteStore(path, { readonly: true })).rejects.toMatchObject({
      code: 'STORE_ERROR',
      message: `${path}: the database schema is at version 0, older than this abridge's (1), and it was opened read-only; open it once with write access (e.g. abridge import) to migrate it`,
    });
    const check = new Database(path, { readonly: true });
    expect(check.prepare('SELECT COUNT(*) AS n FROM schema_migrations').get()).toEqual({ n: 0 });
    check.close();
  });

  it('a file that is not an abridge store is refused read-only, and left as it was', async () => {
    const path = join(root, 'other.db');
    const db = new Database(path);
    db.exec('CREATE TABLE t (x)');
    db.close();
    await expect(openSqliteStore(path, { readonly: true })).rejects.toMatchObject({
      code: 'STORE_ERROR',
      message: `${path}: not an abridge store (no schema_migrations table); opened read-only, nothing was created`,
    });
  });

  // Root may write anywhere: the CLI runs as `nobody`, who may read the store but not write it or its folder.
  const nobody = spawnSync('id', ['-u', 'nobody']).status === 0 && process.getuid?.() === 0;
  it.skipIf(!nobody)(
    'the CLI lists and exports a store its user may only read (sessions, export); import says why it cannot write',
    async () => {
      const DIST = builtDist();
      try {
        const path = await realStore();
        chmodSync(root, 0o755); // mkdtemp makes it 0700: nobody could not even look inside
        chmodSync(join(path, '..'), 0o755);
        const bin = join(DIST.dir, 'cli', 'main.js');
        const asNobody = (...args: string[]) =>
          spawnSync('runuser', ['-u', 'nobody', '--', process.execPath, bin, ...args], {
            encoding: 'utf8',
            env: { ...process.env, NO_COLOR: '1' },
          });
        const probe = asNobody('--version');
        if (probe.status !== 0) return; // nobody cannot run this checkout's files: nothing to learn here
        const list = asNobody('sessions', '--db', path, '--json');
        expect(list.stderr).toBe('');
        expect((JSON.parse(list.stdout) as { id: string }[]).map((s) => s.id)).toEqual(['example']);
        const exported = asNobody('export', 'example', '--db', path);
        expect(exported.status).toBe(0);
        expect(exported.stdout === readFileSync(EXAMPLE_TRANSCRIPT, 'utf8')).toBe(true);
        const imported = asNobody('import', EXAMPLE_TRANSCRIPT, '--db', path, '--id', 'again');
        expect(imported.status).toBe(2);
        expect(imported.stderr).toMatch(/^abridge: .*store\.db.*readonly/);
        expect(existsSync(`${path}-shm`)).toBe(false);
      } finally {
        DIST.cleanup();
      }
    },
  );
});

describe('SQLite store: damaged pages are found when opening', () => {
  it('overwriting any one page in the middle of a real store with random bytes is a STORE_ERROR naming the file, every time (18 runs)', async () => {
    const original = await realStore();
    const pageSize = 4096;
    const pages = statSync(original).size / pageSize;
    expect(pages).toBeGreaterThan(40);
    let seed = 13;
    const random = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    const outcomes: string[] = [];
    for (let run = 0; run < 18; run++) {
      const path = join(root, `corrupt-${run}.db`);
      copyFileSync(original, path);
      // A page from the middle half of the file (page 1 is the header, which SQLite checks on its own).
      const page = Math.floor(pages / 4 + random() * (pages / 2));
      const garbage = Buffer.alloc(pageSize);
      for (let i = 0; i < pageSize; i++) garbage[i] = Math.floor(random() * 256);
      const fd = openSync(path, 'r+');
      writeSync(fd, garbage, 0, pageSize, page * pageSize);
      closeSync(fd);
      try {
        const store = await openSqliteStore(path, { readonly: true });
        await store.close();
        outcomes.push(`run ${run} (page ${page}): opened`);
      } catch (err) {
        const e = err as { code?: string; message?: string };
        outcomes.push(
          e.code === 'STORE_ERROR' &&
            e.message!.startsWith(`${path}: the SQLite database failed its integrity check (`) &&
            e.message!.includes('sqlite3')
            ? 'refused'
            : `run ${run}: ${e.code} ${e.message}`,
        );
      }
    }
    expect(outcomes).toEqual(Array(18).fill('refused'));
  });
});
