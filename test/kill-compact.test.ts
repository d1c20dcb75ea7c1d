/**
 * kill -9 during `abridge compact --out` of a large session: the input stays whole, and the output is absent (the
 * file appears only once whole and synced), never cut short. The leftovers a kill may leave are named: the temp file
 * of the output (`.<name>.<pid>.<hex>.tmp`), and results the run had begun to offload (which no transcript names).
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { runCli } from './support/cli.js';
import { killWhen, largePiSession, sha256 } from './support/kill-midway.js';

const dir = mkdtempSync(join(tmpdir(), 'abridge-kill-compact-'));
let input = '';
let digest = '';

beforeAll(async () => {
  input = await largePiSession(join(dir, 'big.jsonl'), 24 * 1024 * 1024);
  digest = sha256(input);
}, 120_000);

describe('kill -9 during compact --out', () => {
  it('while the output is being written: no output file, the input unchanged; a rerun writes it whole', async () => {
    const work = mkdtempSync(join(dir, 'run-'));
    const out = join(work, 'out.jsonl');
    const tempOf = () => readdirSync(work).filter((f) => f.startsWith('.out.jsonl.') && f.endsWith('.tmp'));
    const outcome = await killWhen(['compact', input, '--budget', '60000', '--out', out], () => tempOf().length > 0);
    // Killed while its temp file was being written: the case this test is about.
    expect(outcome.killed, outcome.stderr).toBe(true);
    expect(existsSync(out)).toBe(false);
    expect(sha256(input)).toBe(digest);
    // What a kill leaves: at most the output's temp file (never the output itself).
    expect(tempOf().length).toBeLessThanOrEqual(1);

    const rerun = runCli(['compact', input, '--budget', '60000', '--out', out]);
    expect(rerun.code, rerun.stderr).toBe(0);
    const lines = readFileSync(out, 'utf8').trimEnd().split('\n');
    // Whole: every line of the input as it was, then abridge's records, each valid JSON.
    const inputLines = readFileSync(input, 'utf8').trimEnd().split('\n');
    expect(lines.slice(0, inputLines.length)).toEqual(inputLines);
    expect(lines.length).toBeGreaterThan(inputLines.length);
    for (const l of lines.slice(inputLines.length)) expect(() => JSON.parse(l)).not.toThrow();
    expect(sha256(input)).toBe(digest);
  }, 120_000);
});
