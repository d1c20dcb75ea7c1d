/**
 * The SQLite store under real concurrency and real crashes: child processes (running the built code in dist/) append
 * to one database at once, and are killed with SIGKILL in the middle of a compaction record.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { builtDist, messageEntry } from '../../../test/support/session-store-suite.js';
import { openSqliteStore } from './index.js';

const DIST = builtDist();
afterAll(() => DIST.cleanup());
const DIST_SQLITE = join(DIST.dir, 'store', 'sqlite', 'index.js');

const dir = realpathSync(mkdtempSync(join(tmpdir(), 'abridge-sqlite-conc-')));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const SQLITE_URL = pathToFileURL(DIST_SQLITE).href;

/** A child that appends `count` single entries with expectedVersion, retrying on CONFLICT; prints its conflict count. */
const APPENDER = `
import { openSqliteStore } from ${JSON.stringify(SQLITE_URL)};
import { existsSync } from 'node:fs';
const [db, sessionId, worker, count] = process.argv.slice(2);
const store = await openSqliteStore(db);
// A start barrier: every writer is up before any appends, so they really contend (whatever the machine's load).
process.stdout.write('ready\\n');
while (!existsSync(db + '.go')) await new Promise((r) => setTimeout(r, 5));
let conflicts = 0;
for (let i = 0; i < Number(count); i++) {
  // A pause now and then: on a fast machine a writer's 250 appends took less than the others' wake-up from the
  // barrier's poll, and the writers ran one after another (the interleaving check below then failed).
  if (i % 10 === 0) await new Promise((r) => setTimeout(r, 1));
  for (;;) {
    const { version } = await store.getSession(sessionId);
    try {
      await store.append(sessionId, [{ kind: 'message', message: { role: 'user', parts: [{ type: 'text', text: worker + ':' + i } ] }, raw: { worker, i } }], { expectedVersion: version });
      break;
    } catch (err) {
      if (err.code !== 'CONFLICT') throw err;
      conflicts++;
    }
  }
}
await store.close();
process.stdout.write(JSON.stringify({ worker, conflicts }) + '\\n');
`;

/**
 * A child that records compactions. mode "pause": one recordCompaction that stops inside its transaction (after the
 * marker entry, before the snapshot) and says "paused". mode "loop": appends and compactions until killed.
 */
const COMPACTOR = `
import { writeSync } from 'node:fs';
import { openSqliteStore } from ${JSON.stringify(SQLITE_URL)};
const [db, sessionId, mode] = process.argv.slice(2);
const hooks = mode === 'pause' ? { insideRecordCompaction: () => { writeSync(1, 'paused\\n'); Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 60_000); } } : {};
const store = await openSqliteStore(db, { hooks });
const msg = (role, text) => ({ kind: 'message', message: { role, parts: [{ type: 'text', text }] }, raw: { role, text } });
const big = 'x'.repeat(20_000);
for (let round = 0; ; round++) {
  const { version } = await store.getSession(sessionId);
  if (mode === 'loop') await store.append(sessionId, [msg('user', 'q' + round + big), msg('assistant', 'a' + round + big)]);
  const marker = { number: round + 1, summary: 'summary ' + round, source: 'abridge' };
  const summary = { role: 'user', parts: [{ type: 'compaction', marker }, { type: 'text', text: 'summary ' + round }] };
  await store.recordCompaction(sessionId, [{ kind: 'compaction', sourceType: 'abridge', compaction: marker, message: summary }], { messages: [summary, { role: 'user', parts: [{ type: 'text', text: 'kept ' + round + big }] }], marker });
  if (mode !== 'loop') break;
  if (round === 0) writeSync(1, 'looping\\n');
}
await store.close();
`;

writeFileSync(join(dir, 'appender.mjs'), APPENDER);
writeFileSync(join(dir, 'compactor.mjs'), COMPACTOR);

function run(
  script: string,
  args: string[],
): {
  child: ChildProcess;
  done: Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }>;
} {
  const child = spawn(process.execPath, [join(dir, script), ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const done = new Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }>(
    (res) => child.on('close', (code, signal) => res({ code, signal, stdout, stderr })),
  );
  return { child, done };
}

function waitFor(child: ChildProcess, text: string, timeoutMs = 30_000): Promise<void> {
  return new Promise((res, rej) => {
    let seen = '';
    const timer = setTimeout(
      () => rej(new Error(`child did not print "${text}" within ${timeoutMs} ms (printed: ${seen})`)),
      timeoutMs,
    );
    child.stdout!.on('data', (d: Buffer) => {
      seen += d.toString();
      if (seen.includes(text)) {
        clearTimeout(timer);
        res();
      }
    });
    child.on('close', () => {
      clearTimeout(timer);
      if (!seen.includes(text)) rej(new Error(`child exited before printing "${text}"`));
    });
  });
}

describe('SQLite store: child processes', () => {
  it('4 processes × 250 single appends with expectedVersion and retry on CONFLICT: exactly 1,000 entries, each writer in its own order, no duplicates', async () => {
    const db = join(dir, 'appenders.db');
    const setup = await openSqliteStore(db);
    await setup.createSession({ id: 'shared', format: 'pi', info: {} });
    await setup.close();

    const workers = ['w0', 'w1', 'w2', 'w3'];
    const runs = workers.map((w) => run('appender.mjs', [db, 'shared', w, '250']));
    await Promise.all(runs.map((r) => waitFor(r.child, 'ready')));
    writeFileSync(`${db}.go`, '');
    const results = await Promise.all(runs.map((r) => r.done));
    for (const r of results) expect(r, r.stderr).toMatchObject({ code: 0 });

    const store = await openSqliteStore(db);
    try {
      expect((await store.getSession('shared'))?.version).toBe(1000);
      const entries = await store.entries('shared');
      expect(entries).toHaveLength(1000);
      expect(entries.map((e) => e.index)).toEqual(Array.from({ length: 1000 }, (_, i) => i));
      const raws = entries.map((e) => e.raw as { worker: string; i: number });
      expect(new Set(raws.map((r) => `${r.worker}:${r.i}`)).size).toBe(1000);
      for (const w of workers)
        expect(raws.filter((r) => r.worker === w).map((r) => r.i)).toEqual(Array.from({ length: 250 }, (_, i) => i));
      // They did interleave (otherwise this tested nothing).
      const switches = raws.filter((r, i) => i > 0 && r.worker !== raws[i - 1]!.worker).length;
      expect(switches).toBeGreaterThan(3);
    } finally {
      await store.close();
    }
  });

  it('a process killed with SIGKILL inside recordCompaction (after the marker entry, before the snapshot) leaves neither; resume works', async () => {
    const db = join(dir, 'crash.db');
    const setup = await openSqliteStore(db);
    await setup.createSession({ id: 's', format: 'pi', info: {} });
    await setup.append('s', [messageEntry('user', 'u0'), messageEntry('assistant', 'a1'), messageEntry('user', 'u2')]);

    const { child, done } = run('compactor.mjs', [db, 's', 'pause']);
    await waitFor(child, 'paused');
    // While the child holds its transaction open, a reader sees the state before it.
    expect((await setup.getSession('s'))?.version).toBe(3);
    await setup.close();
    child.kill('SIGKILL');
    expect((await done).signal).toBe('SIGKILL');

    const store = await openSqliteStore(db);
    try {
      expect((await store.getSession('s'))?.version).toBe(3);
      expect((await store.entries('s')).some((e) => e.compaction)).toBe(false);
      expect(await store.latestSnapshot('s')).toBeUndefined();
      const resumed = await store.resume('s');
      expect(resumed).toMatchObject({ fromSnapshot: false, version: 3, appended: 3 });
      expect(resumed.messages.map((m) => (m.parts[0] as { text: string }).text)).toEqual(['u0', 'a1', 'u2']);
      // The database is usable: the next writer gets the write lock at once, and the same compaction goes through.
      const { done: again } = run('compactor.mjs', [db, 's', 'once']);
      expect((await again).code).toBe(0);
      expect((await store.getSession('s'))?.version).toBe(4);
      expect(await store.latestSnapshot('s')).toMatchObject({ atVersion: 4 });
      expect(await store.resume('s')).toMatchObject({ fromSnapshot: true, snapshotAt: 4, version: 4 });
    } finally {
      await store.close();
    }
  });

  it('processes killed at random moments while compacting in a loop: every marker entry has its snapshot and every snapshot its marker', async () => {
    const db = join(dir, 'crash-loop.db');
    const setup = await openSqliteStore(db);
    await setup.createSession({ id: 's', format: 'pi', info: {} });
    await setup.close();
    for (const delay of [37, 111, 263, 419]) {
      const { child, done } = run('compactor.mjs', [db, 's', 'loop']);
      await waitFor(child, 'looping');
      await new Promise((r) => setTimeout(r, delay));
      child.kill('SIGKILL');
      expect((await done).signal).toBe('SIGKILL');

      const store = await openSqliteStore(db);
      try {
        const entries = await store.entries('s');
        expect(entries.map((e) => e.index)).toEqual(entries.map((_, i) => i));
        const markerVersions = entries.filter((e) => e.compaction).map((e) => e.index + 1);
        const snapshotVersions = store.db
          .prepare("SELECT at_version FROM session_snapshots WHERE session_id = 's' ORDER BY at_version")
          .pluck()
          .all() as number[];
        expect(markerVersions.length).toBeGreaterThan(0);
        expect(snapshotVersions).toEqual(markerVersions);
        const resumed = await store.resume('s');
        const latest = (await store.latestSnapshot('s'))!;
        expect(resumed.fromSnapshot).toBe(true);
        expect(resumed.messages.slice(0, latest.messages.length)).toEqual(latest.messages);
        expect(resumed.version).toBe(entries.length);
      } finally {
        await store.close();
      }
    }
  });
});
