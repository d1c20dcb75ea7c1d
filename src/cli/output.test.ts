import { parseSession } from '../formats/read.js';
import { spawn, spawnSync } from 'node:child_process';
import {
  appendFileSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import lockfile from 'proper-lockfile';
import { afterAll, describe, expect, it } from 'vitest';
import { builtDist, EXAMPLE_TRANSCRIPT } from '../../test/support/session-store-suite.js';

// What a user of `--out` and `--in-place` gets: the built CLI, real files, a real file size limit.
const DIST = builtDist();
const BIN = join(DIST.dir, 'cli', 'main.js');
const root = realpathSync(mkdtempSync(join(tmpdir(), 'abridge-out-')));
afterAll(() => {
  rmSync(root, { recursive: true, force: true });
  DIST.cleanup();
});
const ORIGINAL = readFileSync(EXAMPLE_TRANSCRIPT);
let n = 0;
function workdir(): { dir: string; file: string } {
  const dir = join(root, `w${n++}`);
  mkdirSync(dir);
  const file = join(dir, 'session.jsonl');
  copyFileSync(EXAMPLE_TRANSCRIPT, file);
  return { dir, file };
}

function abridge(args: string[], shellPrefix?: string) {
  const r = shellPrefix
    ? spawnSync('bash', ['-c', `${shellPrefix}; exec "$0" "$@"`, process.execPath, BIN, ...args], {
        encoding: 'utf8',
        env: { ...process.env, NO_COLOR: '1' },
      })
    : spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8', env: { ...process.env, NO_COLOR: '1' } });
  return { code: r.status, signal: r.signal, stdout: r.stdout, stderr: r.stderr };
}

function abridgeAsync(args: string[]): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      env: { ...process.env, NO_COLOR: '1' },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('close', (code) => resolve({ code, stderr }));
  });
}

/** abridge's compactions in a written transcript, as abridge reads it back (pi records or abridge's own). */
const compactions = (text: string) => parseSession(text).entries.filter((e) => e.compaction).length;
/** The first line a compaction appended (pi's compaction record, or abridge's re-appended branch). */
const firstAppended = (lines: string[]) =>
  lines.findIndex((l) => l.startsWith('{"type":"compaction"') || l.includes('"customType":"abridge.'));

describe('compact --out / --in-place', () => {
  it('refuses an --out that is the input itself, also through a symbolic link, and leaves it alone', () => {
    const { dir, file } = workdir();
    symlinkSync(file, join(dir, 'link.jsonl'));
    for (const [input, out] of [
      [file, file],
      [join(dir, 'link.jsonl'), file],
      [file, join(dir, 'link.jsonl')],
      [file, join(dir, '.', 'session.jsonl')],
    ] as const) {
      const r = abridge(['compact', input, '--out', out, '--budget', '20000']);
      expect(r.code).toBe(2);
      expect(r.stderr).toBe(
        `abridge: --out ${out} is the input file itself; to replace the transcript, use --in-place (atomic, under a lock) instead\n`,
      );
    }
    expect(readFileSync(file).equals(ORIGINAL)).toBe(true);
  });

  it('a write cut short by the file size limit (ulimit -f) exits 2 naming the file, and leaves the transcript whole', () => {
    const { dir, file } = workdir();
    // 100 blocks of 1 KiB: far less than the 0.7 MB transcript.
    const r = abridge(
      ['compact', file, '--in-place', '--budget', '20000', '--results-dir', join(dir, 'results')],
      'ulimit -f 100',
    );
    expect(r.signal).toBeNull();
    expect(r.stderr).toBe(
      `abridge: ${file}: cannot write (EFBIG: file too large (the file size limit, ulimit -f, was reached)); the file was left as it was\n`,
    );
    expect(r.code).toBe(2);
    expect(readFileSync(file).equals(ORIGINAL)).toBe(true);
    // The results the failed run stored are removed with the folder it made (issue 34): none is left unreferenced.
    expect(readdirSync(dir).sort()).toEqual(['session.jsonl']);
  });

  it('the same for --out over an existing file', () => {
    const { dir } = workdir();
    const out = join(dir, 'out.jsonl');
    writeFileSync(out, 'previous content\n');
    const r = abridge(
      ['compact', EXAMPLE_TRANSCRIPT, '--out', out, '--budget', '20000', '--results-dir', join(dir, 'results')],
      'ulimit -f 100',
    );
    expect(r.code).toBe(2);
    expect(readFileSync(out, 'utf8')).toBe('previous content\n');
    expect(readdirSync(dir).filter((f) => f.endsWith('.tmp'))).toEqual([]);
  });

  it('write errors exit 2 with one line: a folder that does not exist, a directory as --out', () => {
    const { dir } = workdir();
    const missing = abridge([
      'compact',
      EXAMPLE_TRANSCRIPT,
      '--out',
      join(dir, 'no', 'such', 'x.jsonl'),
      '--results-dir',
      join(dir, 'r1'),
    ]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toBe(
      `abridge: ${join(dir, 'no', 'such', 'x.jsonl')}: cannot write (ENOENT: the folder does not exist); the file was left as it was\n`,
    );
    mkdirSync(join(dir, 'adir'));
    const isDir = abridge([
      'compact',
      EXAMPLE_TRANSCRIPT,
      '--out',
      join(dir, 'adir'),
      '--results-dir',
      join(dir, 'r2'),
    ]);
    expect(isDir.code).toBe(2);
    expect(isDir.stderr).toBe(
      `abridge: ${join(dir, 'adir')}: cannot write (EISDIR: is a directory); the file was left as it was\n`,
    );
  });

  it.skipIf(!existsSync('/dev/full'))(
    'standard output on a full disk (/dev/full) is exit 2 with one line, not a stack trace',
    () => {
      const r = abridge(['inspect', EXAMPLE_TRANSCRIPT], 'exec >/dev/full');
      expect([r.code, r.stderr]).toEqual([
        2,
        'abridge: standard output: cannot write (ENOSPC: no space left on the device)\n',
      ]);
    },
  );

  it('--in-place replaces the transcript (mode 0600 is not forced on an existing file) and --out creates 0600', () => {
    const { dir, file } = workdir();
    const r = abridge(['compact', file, '--in-place', '--budget', '20000']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const text = readFileSync(file, 'utf8');
    expect(compactions(text)).toBe(1);
    expect(text.startsWith(ORIGINAL.toString('utf8'))).toBe(true);
    const out = join(dir, 'new.jsonl');
    expect(abridge(['compact', EXAMPLE_TRANSCRIPT, '--out', out, '--budget', '20000']).code).toBe(0);
    expect(compactions(readFileSync(out, 'utf8'))).toBe(1);
    expect(spawnSync('stat', ['-c', '%a', out], { encoding: 'utf8' }).stdout.trim()).toBe('600');
    expect(abridge(['compact', file, '--in-place', '--out', out]).code).toBe(2);
  });

  it('refuses to write back a transcript holding bytes that are not UTF-8 (they would become U+FFFD), and leaves it alone', () => {
    const { dir, file } = workdir();
    const bad = Buffer.concat([ORIGINAL.subarray(0, 400), Buffer.from([0xff]), ORIGINAL.subarray(400)]);
    writeFileSync(file, bad);
    const line = bad.subarray(0, 400).toString('latin1').split('\n').length;
    for (const args of [['--in-place'], ['--out', join(dir, 'out.jsonl')]]) {
      const r = abridge(['compact', file, ...args, '--budget', '20000']);
      expect(r.code).toBe(2);
      expect(r.stderr).toBe(
        `abridge: ${file}: line ${line} is not valid UTF-8, and writing the transcript back would replace those bytes with U+FFFD; repair the line first (abridge inspect lists every such line); nothing was written\n`,
      );
    }
    expect(readFileSync(file).equals(bad)).toBe(true);
  });

  it('--in-place waits for the lock: what another lock holder wrote meanwhile is read, not overwritten', async () => {
    const { file } = workdir();
    const release = await lockfile.lock(file, { realpath: true, stale: 10_000 });
    const run = abridgeAsync(['compact', file, '--in-place', '--budget', '20000']);
    // Give the CLI time to reach the lock (without a lock it would read the file now and compact it alone).
    await new Promise((r) => setTimeout(r, 1500));
    const extra =
      '{"type":"custom","customType":"note","data":{"by":"another writer"},"id":"c0ffee01","parentId":"0697ba09","timestamp":"2025-10-14T09:21:00.000Z"}';
    appendFileSync(file, `${extra}\n`);
    await release();
    const r = await run;
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const lines = readFileSync(file, 'utf8').split('\n');
    const at = lines.indexOf(extra);
    expect(at).toBeGreaterThan(0);
    // The compaction record came after the other writer's line: the CLI read the file once the lock was free.
    expect(firstAppended(lines)).toBeGreaterThan(at);
  });

  it('two concurrent --in-place runs both finish and leave one whole transcript, no temp or lock files', async () => {
    const { dir, file } = workdir();
    const [a, b] = await Promise.all([
      abridgeAsync(['compact', file, '--in-place', '--budget', '30000']),
      abridgeAsync(['compact', file, '--in-place', '--budget', '30000']),
    ]);
    expect([a.code, b.code, a.stderr, b.stderr]).toEqual([0, 0, '', '']);
    const text = readFileSync(file, 'utf8');
    expect(text.startsWith(ORIGINAL.toString('utf8'))).toBe(true);
    expect(compactions(text)).toBeGreaterThanOrEqual(1);
    expect(readdirSync(dir).sort()).toEqual(['session.jsonl', 'session.jsonl.results']);
  });
});
