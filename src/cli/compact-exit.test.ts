import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PiTranscript } from '../../test/support/random-session.js';

const BIN = resolve(import.meta.dirname, '../../dist/cli/main.js');

function run(...args: string[]) {
  return spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8', env: { ...process.env, NO_COLOR: '1' } });
}

function session(): string {
  const t = new PiTranscript();
  t.user('Fix the failing parser tests in src/parser.ts. Do not touch package.json.');
  for (let i = 0; i < 12; i++)
    t.step({
      text: `Step ${i}.`,
      calls: [{ name: 'bash', args: { command: `npx vitest run test/p${i}.test.ts` }, result: `line\n`.repeat(400) }],
    });
  t.user('Now also handle CRLF.');
  t.step({ text: 'Done.' });
  const dir = mkdtempSync(join(tmpdir(), 'abridge-compact-exit-'));
  const file = join(dir, 's.jsonl');
  writeFileSync(file, `${t.records.map((r) => JSON.stringify(r)).join('\n')}\n`);
  return file;
}

describe('abridge compact exit status', () => {
  it('reaches a budget below what stays verbatim by letting it give way, and names what gave way', () => {
    // The first request and the latest instruction come to more than 30 tokens; the latest alone, with a note, less.
    const r = run('compact', session(), '--budget', '30', '--prefix-tokens', '0');
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(
      /note: to reach the target, these gave way: first user message \(entry \d+\) \(archived, quoted in the summary as far as it holds\)/,
    );
    // The latest instruction gives way only by being cut short, which a message this short cannot be: below it, exit 3.
    const below = run('compact', session(), '--budget', '20', '--prefix-tokens', '0');
    expect(below.status).toBe(3);
    expect(below.stderr).toMatch(/latest instruction \(entry \d+\): \d+ tokens/);
  });

  it('exits 3 when even what must stay verbatim is over the budget and --keep-protected keeps it, naming it', () => {
    const r = run('compact', session(), '--budget', '20', '--prefix-tokens', '0', '--keep-protected');
    expect(r.status).toBe(3);
    expect(r.stderr).toMatch(
      /budget not reached: even what must stay verbatim comes to [\d,]+ tokens, over the budget of 20/,
    );
    expect(r.stderr).toMatch(/first user message \(entry \d+\): \d+ tokens/);
    expect(r.stderr).toMatch(/latest instruction \(entry \d+\): \d+ tokens/);
    // A request body over the budget is not printed: the same exit and reason instead.
    const body = run(
      'compact',
      session(),
      '--budget',
      '20',
      '--prefix-tokens',
      '0',
      '--emit',
      'anthropic',
      '--keep-protected',
    );
    expect(body.status).toBe(3);
    expect(body.stdout).toBe('');
    expect(body.stderr).toMatch(/budget not reached: even what must stay verbatim/);
  });

  it('exits 3 too when what stays verbatim fits but the strategies asked for cannot reach the budget, saying so', () => {
    const r = run(
      'compact',
      session(),
      '--budget',
      '100',
      '--prefix-tokens',
      '0',
      '--strategies',
      'clear-tool-results',
    );
    expect(r.status).toBe(3);
    expect(r.stderr).toMatch(
      /the context is [\d,]+ tokens after clear-tool-results, over the budget of 100: what must stay verbatim \(\d+ tokens\)/,
    );
  });

  it('reaches a budget that leaves room for no more than a one-line note of what was archived', () => {
    const r = run('compact', session(), '--budget', '60', '--prefix-tokens', '0', '--json');
    expect(r.status).toBe(0);
    const out = JSON.parse(r.stdout) as {
      reachedTarget: boolean;
      afterTokens: number;
      protectedParts: { what: string }[];
    };
    expect(out.afterTokens).toBeLessThanOrEqual(60);
    expect(out.protectedParts.map((p) => p.what)).toContain('the note of what was archived, at its shortest');
    const body = run('compact', session(), '--budget', '60', '--prefix-tokens', '0', '--emit', 'anthropic');
    expect(body.stdout).toContain('[24 earlier messages archived; the full history is kept.]');
  });

  it('says what gave way when the last step was cut short to reach the budget, and its figures add up', () => {
    const t = new PiTranscript();
    t.user('Summarize the parser changes.');
    for (let i = 0; i < 6; i++)
      t.step({
        text: `Step ${i}.`,
        calls: [{ name: 'bash', args: { command: `git show c${i}` }, result: 'diff\n'.repeat(80) }],
      });
    t.assistant({ text: Array.from({ length: 200 }, (_, i) => `- change ${i} in src/parser.ts`).join('\n') });
    const dir = mkdtempSync(join(tmpdir(), 'abridge-compact-notes-'));
    const file = join(dir, 's.jsonl');
    writeFileSync(file, t.jsonl());
    const r = run('compact', file, '--budget', '900', '--prefix-tokens', '0');
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/note: the last step's answer \(entry \d+\) was cut to its first and last lines/);
    // The strategy table's last row ends where the headline does.
    const headline = /→ ([\d,]+) tokens/.exec(r.stdout)![1];
    const rows = r.stdout.split('\n').filter((l) => /^(summarize|truncate|clear-tool-results|offload)\s/.test(l));
    expect(rows.at(-1)!.trim().split(/\s+/)[2]).toBe(headline);
  });

  it('exits 0 when the budget is reached', () => {
    const r = run('compact', session(), '--budget', '3000', '--prefix-tokens', '0', '--json');
    expect(r.status).toBe(0);
    const out = JSON.parse(r.stdout) as { reachedTarget: boolean; afterTokens: number };
    expect(out.reachedTarget).toBe(true);
    expect(out.afterTokens).toBeLessThanOrEqual(3000);
  });
});
