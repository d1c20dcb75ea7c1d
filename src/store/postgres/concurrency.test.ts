// Many workers on one PostgreSQL session, as real processes running the built store: no lost, duplicated or reordered
// appends; a worker killed inside recordCompaction leaves both the marker and the snapshot or neither.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Entry } from '../../model/types.js';
import { openPostgresStore, type PostgresSessionStore } from './index.js';

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

const REPO = resolve(fileURLToPath(new URL('.', import.meta.url)), '../../..');

/**
 * The built PostgreSQL store for child processes: dist/store/postgres/index.js, which vitest's global setup
 * (test/global-setup.ts) builds before any test runs when dist/ is missing or older than the sources.
 */
function builtStoreModule(): { path: string; cleanup: () => void } {
  const path = join(REPO, 'dist/store/postgres/index.js');
  if (!existsSync(path)) throw new Error(`${path} not found: vitest builds it in test/global-setup.ts`);
  return { path, cleanup: () => {} };
}

const CHILD = fileURLToPath(new URL('./test-child.mjs', import.meta.url));
const WRITERS = 8;
const APPENDS = 1000;

interface Run {
  child: ChildProcess;
  lines: string[];
  /** Resolves with the exit code or signal once the process has exited. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }>;
  /** Resolves when the child printed a line matching `re`. */
  waitFor(re: RegExp, timeoutMs?: number): Promise<string>;
}

describe.skipIf(!PG_URL)(`PostgreSQL store: concurrent worker processes${PG_URL ? '' : ` (${SKIP_REASON})`}`, () => {
  const schema = uniqueSchema('conc');
  let store: PostgresSessionStore;
  let built: ReturnType<typeof builtStoreModule>;

  function run(args: string[]): Run {
    const child = spawn(process.execPath, [CHILD, ...args], {
      env: { ...process.env, ABRIDGE_PG_URL: PG_URL, ABRIDGE_PG_SCHEMA: schema, ABRIDGE_PG_MODULE: built.path },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const lines: string[] = [];
    const waiters: { re: RegExp; resolve: (line: string) => void }[] = [];
    let buf = '';
    let stderr = '';
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      buf += chunk;
      for (let nl = buf.indexOf('\n'); nl !== -1; nl = buf.indexOf('\n')) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        lines.push(line);
        for (const w of waiters.splice(0)) w.re.test(line) ? w.resolve(line) : waiters.push(w);
      }
    });
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }>((resolve) =>
      child.on('exit', (code, signal) => resolve({ code, signal, stderr })),
    );
    return {
      child,
      lines,
      exited,
      waitFor: (re, timeoutMs = 30_000) =>
        new Promise<string>((resolve, reject) => {
          const seen = lines.find((l) => re.test(l));
          if (seen) return resolve(seen);
          const timer = setTimeout(
            () => reject(new Error(`child printed no line matching ${re} in ${timeoutMs} ms; stderr: ${stderr}`)),
            timeoutMs,
          );
          waiters.push({ re, resolve: (l) => (clearTimeout(timer), resolve(l)) });
          void exited.then(({ code, signal }) =>
            reject(new Error(`child exited (${code ?? signal}) before printing ${re}; stderr: ${stderr}`)),
          );
        }),
    };
  }

  async function succeeded(r: Run): Promise<string[]> {
    const { code, signal, stderr } = await r.exited;
    expect({ code, signal }, stderr).toEqual({ code: 0, signal: null });
    return r.lines;
  }

  async function killed(r: Run): Promise<void> {
    r.child.kill('SIGKILL');
    const { signal } = await r.exited;
    expect(signal).toBe('SIGKILL');
  }

  /** Every compaction marker entry has its snapshot (at the version right after it) and every snapshot its marker. */
  async function expectMarkersMatchSnapshots(sessionId: string): Promise<{ markers: number; snapshots: number }> {
    const client = new pg.Client({ connectionString: PG_URL });
    await client.connect();
    try {
      const snaps = await client.query<{ at_version: number; marker: string }>(
        `SELECT at_version, marker FROM "${schema}".session_snapshots WHERE session_id = $1 ORDER BY at_version`,
        [sessionId],
      );
      const entries = await store.entries(sessionId);
      entries.forEach((e, i) => expect(e.index).toBe(i));
      const markers = entries.filter((e) => e.compaction);
      expect(markers.map((e) => e.index + 1)).toEqual(snaps.rows.map((r) => r.at_version));
      for (const row of snaps.rows) expect(JSON.parse(row.marker)).toEqual(entries[row.at_version - 1]!.compaction);
      return { markers: markers.length, snapshots: snaps.rowCount ?? 0 };
    } finally {
      await client.end();
    }
  }

  beforeAll(async () => {
    built = builtStoreModule();
    store = await openPostgresStore(PG_URL!, { schema });
  });

  afterAll(async () => {
    await store?.close();
    built?.cleanup();
    const client = new pg.Client({ connectionString: PG_URL });
    await client.connect();
    await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await client.end();
  });

  it(`${WRITERS} processes × ${APPENDS.toLocaleString('en-US')} appends to one session: exactly ${(WRITERS * APPENDS).toLocaleString('en-US')} entries, none lost or duplicated, each writer's in its own order`, async () => {
    const session = await store.createSession({ id: 'shared', format: 'pi', info: {} });
    const t0 = performance.now();
    // Half the writers append with expectedVersion (re-reading and retrying on CONFLICT), half rely on the row lock.
    const runs = Array.from({ length: WRITERS }, (_, w) =>
      run(['append', session.id, String(w), String(APPENDS), w % 2 ? 'expected' : 'plain']),
    );
    const reports = (await Promise.all(runs.map(succeeded))).map(
      (lines) => JSON.parse(lines.at(-1)!) as { writer: number; conflicts: number; ms: number },
    );
    const wallMs = performance.now() - t0;

    const entries: Entry[] = await store.entries(session.id);
    expect(entries).toHaveLength(WRITERS * APPENDS);
    expect((await store.getSession(session.id))!.version).toBe(WRITERS * APPENDS);
    entries.forEach((e, i) => expect(e.index).toBe(i));
    const keys = new Set(entries.map((e) => JSON.stringify(e.raw)));
    expect(keys.size).toBe(WRITERS * APPENDS);
    for (let w = 0; w < WRITERS; w++) {
      const mine = entries.filter((e) => (e.raw as { w: number }).w === w).map((e) => (e.raw as { i: number }).i);
      expect(mine).toEqual(Array.from({ length: APPENDS }, (_, i) => i));
    }
    // Each writer's text matches its raw record (no entry's body mixed with another's).
    for (const e of entries) {
      const { w, i } = e.raw as { w: number; i: number };
      expect(e.message!.parts[0]).toEqual({ type: 'text', text: `w${w} #${i}` });
    }
    const conflicts = reports.reduce((n, r) => n + r.conflicts, 0);
    console.log(
      `[postgres] ${WRITERS} writers × ${APPENDS} appends: ${entries.length} entries in ${(wallMs / 1000).toFixed(1)} s wall ` +
        `(${Math.round(entries.length / (wallMs / 1000))} appends/s; per writer ${reports.map((r) => `${(r.ms / 1000).toFixed(1)}s`).join(' ')}; ` +
        `${conflicts} CONFLICT retries by the expectedVersion writers)`,
    );
  }, 300_000);

  it("processes whose 8 writers share one store (appends committed together), killed (SIGKILL) at random moments: every acknowledged append stored exactly once, each writer's entries a gap-free prefix in its own order", async () => {
    const session = await store.createSession({ id: 'killed-group', format: 'pi', info: {} });
    let seed = 424242;
    const next = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), seed / 2 ** 31);
    /** `${process}:${writer}` → the highest i acknowledged to that writer before its process was killed. */
    const acked = new Map<string, number>();
    const PROCESSES = 4;
    for (let p = 0; p < PROCESSES; p++) {
      const child = run(['append-together', session.id, String(WRITERS), `p${p}`]);
      await child.waitFor(/^ACK /);
      await new Promise((r) => setTimeout(r, 30 + next() * 300));
      await killed(child);
      // 'exit' can come before the last lines are read: wait for the end of its output.
      const out = child.child.stdout!;
      if (!out.readableEnded) await new Promise((resolve) => out.once('end', resolve));
      for (const line of child.lines) {
        const [, w, i] = line.split(' ');
        acked.set(`p${p}:${w}`, Math.max(acked.get(`p${p}:${w}`) ?? -1, Number(i)));
      }
    }
    // A killed client's last COMMIT may still be running in its server backend (the server learns of the dead socket
    // only after it): read the entries between two equal versions, so that none committed in between.
    let entries: Entry[] = [];
    let version = -1;
    for (let tries = 0; tries < 50; tries++) {
      const before = (await store.getSession(session.id))!.version;
      entries = await store.entries(session.id);
      version = (await store.getSession(session.id))!.version;
      if (version === before) break;
    }
    entries.forEach((e, n) => expect(e.index).toBe(n));
    expect(version).toBe(entries.length);
    const stored = new Map<string, number[]>();
    for (const e of entries) {
      const { p, w, i } = e.raw as { p: string; w: number; i: number };
      const key = `${p}:${w}`;
      if (!stored.has(key)) stored.set(key, []);
      stored.get(key)!.push(i);
    }
    expect(acked.size).toBeGreaterThan(0);
    for (const [key, highest] of acked) {
      const is = stored.get(key) ?? [];
      // 0, 1, 2, … in order, no gap, none twice; at least up to the last acknowledged one (an append committed but not
      // yet acknowledged when the process died may follow it).
      expect(is, key).toEqual(Array.from({ length: is.length }, (_, n) => n));
      expect(is.length, key).toBeGreaterThan(highest);
    }
    // And at most one beyond it: each writer awaits its append (and prints its ACK) before the next.
    for (const [key, is] of stored) expect(is.length, key).toBeLessThanOrEqual((acked.get(key) ?? -1) + 2);
    console.log(
      `[postgres] killed group commits: ${entries.length} entries from ${PROCESSES} killed processes of ${WRITERS} writers sharing a store, every acknowledged one stored once`,
    );
  });

  it('a worker killed (SIGKILL) while its recordCompaction transaction is open leaves neither marker nor snapshot; the session resumes and compacts again', async () => {
    const session = await store.createSession({ id: 'killed-compaction', format: 'pi', info: {} });
    const msg = (text: string) => ({ role: 'user' as const, parts: [{ type: 'text' as const, text }] });
    await store.append(
      session.id,
      Array.from({ length: 6 }, (_, i) => ({ kind: 'message' as const, message: msg(`m${i}`) })),
    );
    const first = { number: 1, summary: 'first summary', archived: { fromEntry: 0, toEntry: 5 }, source: 'abridge' };
    await store.recordCompaction(session.id, [{ kind: 'compaction', compaction: first, message: msg(first.summary) }], {
      messages: [msg(first.summary)],
      marker: first,
    });
    await store.append(session.id, [{ kind: 'message', message: msg('after the first compaction') }]);
    const before = await store.resume(session.id);
    expect(before).toMatchObject({ fromSnapshot: true, snapshotAt: 7, appended: 1, version: 8 });

    const child = run(['hold-compaction', session.id, '2']);
    await child.waitFor(/^HOLDING$/);
    // The child's transaction holds the row lock with its marker and snapshot written but not committed: others see
    // neither, and a writer with a lock timeout cannot append meanwhile.
    expect(await store.entries(session.id)).toHaveLength(8);
    expect((await store.latestSnapshot(session.id))!.atVersion).toBe(7);
    const probe = new pg.Client({ connectionString: PG_URL });
    await probe.connect();
    try {
      await probe.query("SET lock_timeout = '200ms'");
      await expect(
        probe.query(`SELECT version FROM "${schema}".sessions WHERE id = $1 FOR UPDATE`, [session.id]),
      ).rejects.toThrow(/lock timeout/);
    } finally {
      await probe.end();
    }
    await killed(child);
    expect(child.lines).toEqual(['HOLDING']);

    // Neither: the server rolled the dead connection's transaction back.
    expect(await store.entries(session.id)).toHaveLength(8);
    expect((await store.getSession(session.id))!.version).toBe(8);
    expect((await store.latestSnapshot(session.id))!.atVersion).toBe(7);
    expect(await store.resume(session.id)).toEqual(before);
    await expectMarkersMatchSnapshots(session.id);

    // The lock is free again: the compaction can be recorded, against the version the dead worker had seen.
    const second = { number: 2, summary: 'second summary', archived: { fromEntry: 0, toEntry: 7 }, source: 'abridge' };
    const { version } = await store.recordCompaction(
      session.id,
      [{ kind: 'compaction', compaction: second, message: msg(second.summary) }],
      { messages: [msg(second.summary)], marker: second, tokens: 10 },
      { expectedVersion: 8 },
    );
    expect(version).toBe(9);
    await store.append(session.id, [{ kind: 'message', message: msg('next question') }]);
    expect(await store.resume(session.id)).toEqual({
      messages: [msg('second summary'), msg('next question')],
      fromSnapshot: true,
      snapshotAt: 9,
      appended: 1,
      version: 10,
    });
    expect(await expectMarkersMatchSnapshots(session.id)).toEqual({ markers: 2, snapshots: 2 });
  });

  it('workers killed at random moments of a compaction loop: every marker has its snapshot and every snapshot its marker', async () => {
    const session = await store.createSession({ id: 'random-kills', format: 'pi', info: {} });
    let rounds = 0;
    // Deterministic "random" delays, so a failure can be replayed.
    let seed = 12345;
    const next = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), seed / 2 ** 31);
    for (let k = 0; k < 6; k++) {
      // Two workers at once, so the kills also land while one waits for the other's lock.
      const pair = [run(['compaction-loop', session.id, '1000000']), run(['compaction-loop', session.id, '1000000'])];
      await Promise.all(pair.map((r) => r.waitFor(/^ROUND 0$/)));
      await new Promise((r) => setTimeout(r, 20 + next() * 200));
      await Promise.all(pair.map(killed));
      rounds += pair.reduce((n, r) => n + r.lines.length, 0);
      const { markers, snapshots } = await expectMarkersMatchSnapshots(session.id);
      expect(markers).toBe(snapshots);
    }
    const { markers } = await expectMarkersMatchSnapshots(session.id);
    expect(markers).toBeGreaterThanOrEqual(rounds);
    const resumed = await store.resume(session.id);
    const snap = (await store.latestSnapshot(session.id))!;
    expect(resumed.fromSnapshot).toBe(true);
    expect(resumed.snapshotAt).toBe(snap.atVersion);
    expect(resumed.messages.slice(0, snap.messages.length)).toEqual(snap.messages);
    expect(snap.marker!.number).toBe(markers);
    console.log(
      `[postgres] random kills: ${markers} compactions recorded by 12 killed workers, all with their snapshots`,
    );
  }, 120_000);
});
