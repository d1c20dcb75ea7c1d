import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
// @ts-expect-error bench/generate.js is plain JavaScript without types
import { generatePiSession } from '../../bench/generate.js';

const BIN = resolve(import.meta.dirname, '../../dist/cli/main.js');

const sha256 = (file: string) => createHash('sha256').update(readFileSync(file)).digest('hex');

describe('abridge view killed midway', () => {
  it('SIGKILL once the page is being written: no page, the transcript unchanged', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'abridge-view-kill-'));
    const input = join(dir, 'big.jsonl');
    // Large enough to take a second or more to read and write (bench/generate.js: the same bytes every run).
    await generatePiSession(input, 24 * 1024 * 1024);
    const before = sha256(input);
    const out = join(dir, 'p.html');
    const child = spawn(process.execPath, [BIN, 'view', input, '--out', out], { stdio: 'ignore' });
    const exited = new Promise<NodeJS.Signals | null>((done) => child.once('exit', (_code, signal) => done(signal)));
    // The page is written into `.p.html.<pid>.<random>.tmp` beside it from the start, renamed to p.html once whole.
    const temp = () => readdirSync(dir).find((f) => f.startsWith('.p.html.') && f.endsWith('.tmp'));
    let seen: string | undefined;
    let finished = false;
    void exited.then(() => {
      finished = true;
    });
    while (!seen && !finished) {
      seen = temp();
      if (!seen) await new Promise((r) => setTimeout(r, 5));
    }
    expect(seen, 'the temp file appeared before the command finished').toBeDefined();
    child.kill('SIGKILL');
    expect(await exited).toBe('SIGKILL');
    expect(existsSync(out)).toBe(false);
    expect(sha256(input)).toBe(before);
    // What a kill leaves: at most the temp file, never a page under the name asked for.
    expect(readdirSync(dir).filter((f) => f !== 'big.jsonl' && f !== seen)).toEqual([]);
  });
});
