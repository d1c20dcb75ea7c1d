/**
 * `abridge import` and `abridge export` on transcripts larger than one batch: streamed into one transaction, streamed
 * back out, byte for byte; and what a failure or a kill -9 in the middle leaves (nothing).
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readSession } from '../formats/read.js';
import { writeSession } from '../formats/write.js';
import { createRedactor } from '../redact/redact.js';
import { loadSession } from '../store/session-store.js';
import { openSqliteStore } from '../store/sqlite/index.js';
import { runCli } from '../../test/support/cli.js';
import { builtDist, EXAMPLE_TRANSCRIPT } from '../../test/support/session-store-suite.js';

const BIN = join(builtDist().dir, 'cli', 'main.js');
const dir = realpathSync(mkdtempSync(join(tmpdir(), 'abridge-store-stream-')));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let n = 0;
const tempDb = () => join(dir, `stream-${n++}.db`);
const abridge = (...args: string[]) => runCli(args, { bin: BIN });
const sha = (file: string) => createHash('sha256').update(readFileSync(file)).digest('hex');

const EXAMPLE_LINES = readFileSync(EXAMPLE_TRANSCRIPT, 'utf8').trimEnd().split('\n');

/**
 * A pi transcript of at least `bytes`: the example session's records repeated (many read chunks, many batches), with
 * every layout a writer must keep — blank lines, two records on one line, a line that is not JSON, a pi compaction
 * record (its marker completed only at the end of the read) — and `ending` after the last record.
 */
function bigTranscript(bytes: number, ending: string): string {
  const out: string[] = [EXAMPLE_LINES[0]!];
  const body = EXAMPLE_LINES.slice(1);
  let size = out[0]!.length;
  for (let round = 0; size < bytes; round++) {
    for (const line of body) {
      out.push(line);
      size += line.length + 1;
    }
    if (round === 1) {
      out.push('', '');
      out.push(`${body[0]}${body[1]}`);
      out.push('this line is not JSON');
      out.push(
        JSON.stringify({
          type: 'compaction',
          id: 'cmp00001',
          parentId: '19503b16',
          timestamp: '2025-10-14T09:00:00.000Z',
          summary: 'What happened so far.',
          firstKeptEntryId: '19503b16',
          tokensBefore: 12345,
        }),
      );
    }
  }
  return out.join('\n') + ending;
}

function importJson(file: string, db: string, ...more: string[]): { sessionId: string; entries: number } {
  const r = abridge('import', file, '--db', db, '--json', ...more);
  expect(r.stderr).toBe('');
  expect(r.code).toBe(0);
  return JSON.parse(r.stdout) as { sessionId: string; entries: number };
}

describe('abridge import / export of a transcript larger than a batch (streamed)', () => {
  for (const [name, ending] of [
    ['two trailing blank lines', '\n\n\n'],
    ['no final newline', ''],
  ] as const) {
    it(`round-trips byte for byte (${name}), storing exactly the entries a whole read gives`, async () => {
      const file = join(dir, `big-${n++}.jsonl`);
      const text = bigTranscript(3 * 1024 * 1024, ending);
      writeFileSync(file, text);
      const db = tempDb();
      const whole = await readSession(file);
      expect(importJson(file, db, '--id', 'big')).toEqual({ sessionId: 'big', entries: whole.entries.length });

      const store = await openSqliteStore(db, { mustExist: true });
      try {
        const stored = await store.getSession('big');
        // Streamed (the layout says the records are as read), with the info only the end of the file completes.
        expect(stored?.layout).toMatchObject({ asRead: whole.entries.length, finalNewline: ending !== '' });
        expect(stored?.info).toEqual(whole.info);
        // The same entries as a whole read, the compaction marker completed at the end of the read included.
        const back = await loadSession(store, 'big');
        expect(back.entries.find((e) => e.compaction)?.compaction).toEqual(
          whole.entries.find((e) => e.compaction)?.compaction,
        );
        expect(back.entries).toEqual(whole.entries);
      } finally {
        await store.close();
      }

      const out = join(dir, `back-${n++}.jsonl`);
      const r = abridge('export', 'big', '--db', db, '--out', out);
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
      expect(readFileSync(out, 'utf8') === text).toBe(true);
      const toStdout = abridge('export', 'big', '--db', db);
      expect(toStdout.code).toBe(0);
      expect(toStdout.stdout === text).toBe(true);
    });
  }

  it('export redacts each line as writeSession does (lines with a secret changed, all others byte for byte)', async () => {
    const key = `sk-ant-api03-${'Ab3dEf9hIj'.repeat(9)}AA`;
    const lines = bigTranscript(1024 * 1024, '\n').split('\n');
    const secret = JSON.parse(lines[5]!) as Record<string, unknown>;
    lines[5] = JSON.stringify({ ...secret, note: `the key is ${key}` });
    lines[9] = `not JSON, and a key: ${key}`;
    const file = join(dir, `secret-${n++}.jsonl`);
    writeFileSync(file, lines.join('\n'));
    const db = tempDb();
    importJson(file, db, '--id', 's');
    const r = abridge('export', 's', '--db', db);
    expect(r.code).toBe(0);
    expect(r.stdout).not.toContain(key);
    const expected = writeSession(await readSession(file), 'pi', { redact: createRedactor(), redactOriginal: true });
    expect(r.stdout === expected).toBe(true);
  });

  it('invalid UTF-8 deep in the file is refused with the line and byte, and nothing is stored (the same import then works)', async () => {
    const text = bigTranscript(2 * 1024 * 1024, '\n');
    const at = text.indexOf('\n', 1_500_000) + 1;
    const line = text.slice(0, at).split('\n').length;
    const bytes = Buffer.concat([
      Buffer.from(text.slice(0, at + 10)),
      Buffer.from([0xff]),
      Buffer.from(text.slice(at + 10)),
    ]);
    const file = join(dir, `bad-${n++}.jsonl`);
    writeFileSync(file, bytes);
    const db = tempDb();
    const r = abridge('import', file, '--db', db, '--id', 'u');
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain(`not valid UTF-8 at line ${line.toLocaleString('en-US')}, byte 11 of the line`);
    expect(r.stderr).toContain('nothing was imported');
    const store = await openSqliteStore(db, { mustExist: true });
    try {
      expect(await store.listSessions()).toEqual([]);
    } finally {
      await store.close();
    }
    writeFileSync(file, text);
    expect(importJson(file, db, '--id', 'u').sessionId).toBe('u');
  });

  it('an id already in the store is refused before the transcript is stored, with the --id hint', () => {
    const file = join(dir, `dup-${n++}.jsonl`);
    writeFileSync(file, bigTranscript(600 * 1024, '\n'));
    const db = tempDb();
    importJson(file, db, '--id', 'd');
    const again = abridge('import', file, '--db', db, '--id', 'd');
    expect(again.code).toBe(2);
    expect(again.stderr).toContain('a session "d" already exists in this store: import it under another id with --id');
  });
});

describe('kill -9 in the middle of a streamed import or export leaves nothing partial', () => {
  let big: string;
  let bigSha: string;
  beforeAll(() => {
    big = join(dir, 'kill-source.jsonl');
    writeFileSync(big, bigTranscript(40 * 1024 * 1024, '\n'));
    bigSha = sha(big);
  });

  /** Spawns the CLI; resolves once `started()` holds (polled), having killed the child with SIGKILL. */
  async function killWhen(args: string[], started: () => boolean): Promise<{ killed: boolean }> {
    const child: ChildProcess = spawn(process.execPath, [BIN, ...args], { stdio: 'ignore' });
    const exited = new Promise<NodeJS.Signals | null>((resolve) =>
      child.on('exit', (_code, signal) => resolve(signal)),
    );
    let done = false;
    void exited.then(() => (done = true));
    while (!done && !started()) await new Promise((r) => setTimeout(r, 5));
    const killed = !done && child.kill('SIGKILL');
    await exited;
    return { killed };
  }

  it('import and export of a 40 MB transcript run within a 64 MB heap (read whole, they would need several times that)', () => {
    const db = tempDb();
    const run = (...args: string[]) =>
      spawnSync(process.execPath, ['--max-old-space-size=64', BIN, ...args], { encoding: 'utf8' });
    const imported = run('import', big, '--db', db, '--id', 'm');
    expect(imported.stderr).toBe('');
    expect(imported.status).toBe(0);
    const out = join(dir, 'heap-back.jsonl');
    const exported = run('export', 'm', '--db', db, '--out', out);
    expect(exported.stderr).toBe('');
    expect(exported.status).toBe(0);
    expect(sha(out)).toBe(bigSha);
  }, 60_000);

  it('import: the store opens and holds no session, and the transcript is unchanged', async () => {
    const db = tempDb();
    // Started writing: the write-ahead log holds some megabytes of the transaction's pages.
    const { killed } = await killWhen(['import', big, '--db', db, '--id', 'k'], () => {
      try {
        return statSync(`${db}-wal`).size > 4 * 1024 * 1024;
      } catch {
        return false;
      }
    });
    expect(killed, 'the import ended before it could be killed: make the transcript larger').toBe(true);
    const store = await openSqliteStore(db, { mustExist: true });
    try {
      expect(await store.listSessions()).toEqual([]);
      expect(await store.getSession('k')).toBeUndefined();
    } finally {
      await store.close();
    }
    expect(sha(big)).toBe(bigSha);
    // The same import then simply works.
    expect(importJson(big, db, '--id', 'k').sessionId).toBe('k');
  }, 60_000);

  it('export --out: no file (or the previous one, intact), never a partial one', async () => {
    const db = tempDb();
    importJson(big, db, '--id', 'x');
    const folder = mkdtempSync(join(dir, 'out-'));
    const out = join(folder, 'back.jsonl');
    const temp = () => readdirSync(folder).find((f) => f.startsWith('.back.jsonl.') && f.endsWith('.tmp'));
    const writing = () => {
      const t = temp();
      try {
        return t !== undefined && statSync(join(folder, t)).size > 0;
      } catch {
        return false;
      }
    };
    const first = await killWhen(['export', 'x', '--db', db, '--out', out], writing);
    expect(first.killed, 'the export ended before it could be killed: make the transcript larger').toBe(true);
    expect(existsSync(out)).toBe(false);
    // A temp file a kill -9 leaves behind may remain (nothing can remove it); it is never the target.
    writeFileSync(out, 'the previous export\n');
    for (const f of readdirSync(folder)) if (f.endsWith('.tmp')) rmSync(join(folder, f));
    const second = await killWhen(['export', 'x', '--db', db, '--out', out], writing);
    expect(second.killed).toBe(true);
    expect(readFileSync(out, 'utf8')).toBe('the previous export\n');
    // And a full export is the transcript.
    const r = abridge('export', 'x', '--db', db, '--out', out);
    expect(r.code).toBe(0);
    expect(sha(out)).toBe(bigSha);
  }, 60_000);
});
