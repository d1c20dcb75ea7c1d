import { spawn, spawnSync } from 'node:child_process';
import { createWriteStream, mkdtempSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { builtDist, EXAMPLE_TRANSCRIPT } from '../../test/support/session-store-suite.js';
import { readSession, streamSession } from './read.js';

// Standard input, pipes and FIFOs (issue 13): read as streams, with a wait that ends.
const root = realpathSync(mkdtempSync(join(tmpdir(), 'abridge-fifo-')));
const DIST = builtDist();
const BIN = join(DIST.dir, 'cli', 'main.js');
afterAll(() => {
  rmSync(root, { recursive: true, force: true });
  DIST.cleanup();
});
let n = 0;
function fifo(): string {
  const p = join(root, `f${n++}`);
  expect(spawnSync('mkfifo', [p]).status).toBe(0);
  return p;
}
const ORIGINAL = readFileSync(EXAMPLE_TRANSCRIPT, 'utf8');

describe('readSession from a FIFO (library)', () => {
  it('reads a transcript a writer sends through a FIFO, as it would the file', async () => {
    const path = fifo();
    const writer = createWriteStream(path);
    writer.end(ORIGINAL);
    const [fromFifo, fromFile] = await Promise.all([readSession(path), readSession(EXAMPLE_TRANSCRIPT)]);
    expect(fromFifo.format).toBe('pi');
    expect(fromFifo.entries.length).toBe(fromFile.entries.length);
    expect(fromFifo.entries.map((e) => e.raw)).toEqual(fromFile.entries.map((e) => e.raw));
  });

  it('streamSession too', async () => {
    const path = fifo();
    createWriteStream(path).end(ORIGINAL);
    let count = 0;
    const r = await streamSession(path, () => count++);
    expect(r.format).toBe('pi');
    expect(count).toBe(r.entries);
    expect(count).toBeGreaterThan(100);
  });

  it('a FIFO nobody opens for writing is INPUT_TIMEOUT after the wait, not a hang', async () => {
    const path = fifo();
    await expect(readSession(path, { inputTimeoutMs: 300 })).rejects.toMatchObject({
      code: 'INPUT_TIMEOUT',
      message: `${path}: no writer opened the FIFO within 0.3 s; nothing was read (start the writer first, or raise the wait with ABRIDGE_INPUT_TIMEOUT)`,
    });
  });

  it('a writer that opens the FIFO and sends nothing is INPUT_TIMEOUT too', async () => {
    const path = fifo();
    const holder = spawn('bash', ['-c', `exec 3>"${path}"; sleep 30`], { stdio: 'ignore' });
    try {
      await expect(readSession(path, { inputTimeoutMs: 500 })).rejects.toMatchObject({
        code: 'INPUT_TIMEOUT',
        message: `${path}: nothing came from the FIFO within 0.5 s; nothing was read (raise the wait with ABRIDGE_INPUT_TIMEOUT)`,
      });
    } finally {
      holder.kill();
    }
  });
});

describe('the CLI reading standard input, /dev/stdin and FIFOs', () => {
  const run = (args: string[], options: { input?: string; env?: Record<string, string>; shell?: string } = {}) => {
    const env = { ...process.env, NO_COLOR: '1', ...options.env };
    const r = options.shell
      ? spawnSync('bash', ['-c', options.shell, 'bash', process.execPath, BIN, ...args], { encoding: 'utf8', env })
      : spawnSync(process.execPath, [BIN, ...args], {
          encoding: 'utf8',
          env,
          ...(options.input !== undefined ? { input: options.input } : {}),
        });
    return { code: r.status, stdout: r.stdout, stderr: r.stderr };
  };
  const entriesOf = (stdout: string) => (JSON.parse(stdout) as { entries: { total: number } }).entries.total;
  const fileEntries = () => entriesOf(run(['inspect', EXAMPLE_TRANSCRIPT, '--json']).stdout);

  it('`-` and /dev/stdin from a pipe are read like the file (inspect, compact --json, replay)', () => {
    const expected = fileEntries();
    for (const name of ['-', '/dev/stdin']) {
      const r = run(['inspect', name, '--json'], { input: ORIGINAL });
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
      expect(entriesOf(r.stdout)).toBe(expected);
      expect((JSON.parse(r.stdout) as { bytes: number }).bytes).toBe(Buffer.byteLength(ORIGINAL));
    }
    const piped = run(['compact', '-', '--json', '--budget', '20000'], {
      shell: `cat "${EXAMPLE_TRANSCRIPT}" | "$1" "$2" "\${@:3}"`,
    });
    expect(piped.code).toBe(0);
    expect((JSON.parse(piped.stdout) as { format: string }).format).toBe('pi');
    expect(run(['replay', '-'], { input: ORIGINAL }).code).toBe(0);
  });

  it('empty standard input is exit 2 with a message; --in-place on standard input is refused', () => {
    expect(run(['inspect', '-'], { input: '' })).toMatchObject({
      code: 2,
      stderr: 'abridge: <stdin>: the input is empty (0 bytes came before it ended); expected a transcript\n',
    });
    expect(run(['compact', '-', '--in-place'], { input: ORIGINAL })).toMatchObject({
      code: 2,
      stderr: 'abridge: --in-place: the input is standard input, which cannot be replaced; use --out <file>\n',
    });
  });

  it('a FIFO with a writer is read; without one, exit 2 after ABRIDGE_INPUT_TIMEOUT', () => {
    const withWriter = fifo();
    const r = run(['inspect', withWriter, '--json'], {
      shell: `cat "${EXAMPLE_TRANSCRIPT}" > "${withWriter}" & "$1" "$2" "\${@:3}"`,
    });
    expect(r.stderr).toBe('');
    expect(entriesOf(r.stdout)).toBe(fileEntries());
    const lonely = fifo();
    for (const cmd of ['inspect', 'compact', 'replay']) {
      const t = run([cmd, lonely], { env: { ABRIDGE_INPUT_TIMEOUT: '0.5' } });
      expect([t.code, t.stderr]).toEqual([
        2,
        `abridge: ${lonely}: no writer opened the FIFO within 0.5 s; nothing was read (start the writer first, or raise the wait with ABRIDGE_INPUT_TIMEOUT)\n`,
      ]);
    }
    expect(run(['inspect', lonely], { env: { ABRIDGE_INPUT_TIMEOUT: 'soon' } })).toMatchObject({
      code: 2,
      stderr: 'abridge: ABRIDGE_INPUT_TIMEOUT: expected a number of seconds > 0, got "soon"\n',
    });
  });
});
