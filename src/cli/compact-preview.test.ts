/**
 * `compact --preview`, `--summary-file`, `--pin`, `--pin-match` through the built CLI, on pi and Claude Code files: a
 * preview writes nothing and is the compaction `--out` writes; an edited summary is what pi (and, where
 * $ABRIDGE_CLAUDE_BIN is set, the Claude Code CLI) resumes; pinned messages reach the model verbatim.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseSession } from '../formats/read.js';
import { writeSession } from '../formats/write.js';
import { activeView } from '../model/view.js';
import { summaryText } from '../compaction/strategies/summarize.js';
import { CLI, runCli } from '../../test/support/cli.js';
import { pinnedLines } from './compact-preview.js';
import { claudeBinary, resumeWithClaudeCode } from '../../test/support/claude-code-cli.js';
import { generatedPiSession } from '../../test/support/fixture-transcripts.js';
import { piResume } from '../../test/support/pi-loader.js';

function files(): { dir: string; pi: string; claude: string } {
  const dir = mkdtempSync(join(tmpdir(), 'abridge-preview-'));
  const pi = join(dir, 'pi.jsonl');
  writeFileSync(pi, generatedPiSession());
  const claude = join(dir, 'claude.jsonl');
  // (Claude Code resumes a session by its UUID.)
  writeFileSync(
    claude,
    writeSession(parseSession(readFileSync(pi, 'utf8')), 'claude-code').replaceAll(
      '"sessionId":"fixture-generated"',
      '"sessionId":"0f6c2a5e-8d3b-4c1e-9a7f-2b5d8e4c6a10"',
    ),
  );
  return { dir, pi, claude };
}

/** The text of the compaction summary the view of a written transcript shows (abridge's marker, read back). */
function summaryOf(text: string): string | undefined {
  const m = activeView(parseSession(text)).find((v) => v.message.parts.some((p) => p.type === 'compaction'));
  return m && summaryText(m.message);
}

const BUDGET = ['--budget', '6000', '--prefix-tokens', '0'];
const EDITED =
  'Edited by a person: the date parser lives in src/date.ts; module-0 to module-7 were read; npm test failed twice.';

describe('abridge compact --preview', () => {
  it('prints what would be archived, shortened and kept, and the summary, writing nothing', () => {
    const { dir, pi } = files();
    const mtime = statSync(pi).mtimeMs;
    const before = readFileSync(pi, 'utf8');
    const r = runCli(['compact', pi, ...BUDGET, '--preview']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/preview: nothing written/);
    expect(r.stdout).toMatch(/→ [\d,]+ tokens, budget 6,000 ✓/);
    expect(r.stdout).toMatch(
      /archived \(\d+ entries, kept in the file\)\n {2}entries \d+–\d+\n\s+\d+ (user|assistant|tool)/,
    );
    expect(r.stdout).toMatch(/\nsummary\n/);
    expect(r.stdout).toMatch(/must stay: first user message \(entry 1\)/);
    expect(readFileSync(pi, 'utf8')).toBe(before);
    expect(statSync(pi).mtimeMs).toBe(mtime);
    expect(readdirSync(dir).sort()).toEqual(['claude.jsonl', 'pi.jsonl']);
  });

  it('--json: the same compaction --out writes (its summary, tokens and archived entries)', () => {
    const { dir, pi } = files();
    const r = runCli(['compact', pi, ...BUDGET, '--preview', '--json']);
    expect(r.code, r.stderr).toBe(0);
    const p = JSON.parse(r.stdout);
    expect(p.afterTokens).toBeLessThanOrEqual(6000);
    expect(p.archived.length).toBeGreaterThan(0);
    expect(p.archived[0].entries[0]).toMatchObject({
      entry: expect.any(Number),
      role: expect.any(String),
      gist: expect.any(String),
    });
    expect(p.summary.length).toBeGreaterThan(0);
    expect(p.verbatim.length).toBeGreaterThan(0);
    const out = join(dir, 'out.jsonl');
    const w = runCli(['compact', pi, ...BUDGET, '--out', out, '--json']);
    expect(w.code, w.stderr).toBe(0);
    const written = JSON.parse(w.stdout);
    expect(written.afterTokens).toBe(p.afterTokens);
    const back = activeView(parseSession(readFileSync(out, 'utf8')));
    expect(summaryOf(readFileSync(out, 'utf8'))).toBe(p.summary);
    const archived = new Set(
      p.archived.flatMap((a: { entries: { entry: number }[] }) => a.entries.map((e) => e.entry)),
    );
    for (const v of back) if (v.entry !== undefined) expect(archived.has(v.entry)).toBe(false);
  });

  it('refuses to write with --preview', () => {
    const { dir, pi } = files();
    const r = runCli(['compact', pi, ...BUDGET, '--preview', '--out', join(dir, 'x.jsonl')]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--preview writes nothing.*drop --out/);
    expect(existsSync(join(dir, 'x.jsonl'))).toBe(false);
  });
});

describe('abridge compact --summary-file', () => {
  it('pi resumes the compaction with the edited summary', () => {
    const { dir, pi } = files();
    const summary = join(dir, 'summary.md');
    writeFileSync(summary, `${EDITED}\n`);
    const out = join(dir, 'out.jsonl');
    const r = runCli(['compact', pi, ...BUDGET, '--summary-file', summary, '--out', out]);
    expect(r.code, r.stderr).toBe(0);
    // What pi sends: the first request, then the person's summary (pi's wrappers around it), then the recent work.
    const resumed = piResume(readFileSync(out, 'utf8'));
    const texts = resumed.sent.map((m) => m.parts.map((p) => (p.type === 'text' ? p.text : '')).join(''));
    expect(texts.filter((t) => t.includes(EDITED))).toHaveLength(1);
    expect(texts.findIndex((t) => t.includes(EDITED))).toBe(1);
    expect(summaryOf(readFileSync(out, 'utf8'))).toBe(EDITED);
  });

  it('reads the summary from standard input, and previews with it', () => {
    const { pi } = files();
    const r = spawnSync(
      process.execPath,
      [CLI, 'compact', pi, ...BUDGET, '--summary-file', '-', '--preview', '--json'],
      {
        input: EDITED,
        encoding: 'utf8',
        env: { ...process.env, NO_COLOR: '1' },
      },
    );
    expect(r.status, r.stderr).toBe(0);
    const p = JSON.parse(r.stdout);
    expect(p.summary).toBe(EDITED);
    expect(p.editedSummary.tokens).toBeLessThanOrEqual(p.editedSummary.room);
  });

  it('exits 3 naming the size of the given summary and the room, writing nothing', () => {
    const { dir, pi } = files();
    const summary = join(dir, 'long.md');
    writeFileSync(summary, Array.from({ length: 600 }, (_, i) => `line ${i} of a very long summary`).join('\n'));
    const out = join(dir, 'out.jsonl');
    const r = runCli(['compact', pi, ...BUDGET, '--summary-file', summary, '--out', out]);
    expect(r.code).toBe(3);
    expect(r.stderr).toMatch(
      /the summary given \(.*long\.md\) is [\d,]+ tokens, and the rest of the compacted context leaves it [\d,]+ of the budget of 6,000 .*shorten it by [\d,]+ tokens; nothing was written/,
    );
    expect(existsSync(out)).toBe(false);
    expect(existsSync(`${out}.results`)).toBe(false);
  });

  it('refuses an empty or missing file (exit 2)', () => {
    const { dir, pi } = files();
    writeFileSync(join(dir, 'empty.md'), '  \n');
    const r = runCli(['compact', pi, ...BUDGET, '--summary-file', join(dir, 'empty.md')]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--summary-file: .*empty/);
    expect(runCli(['compact', pi, ...BUDGET, '--summary-file', join(dir, 'none.md')]).stderr).toMatch(
      /--summary-file: cannot read/,
    );
  });

  const cli = claudeBinary();
  it('a Claude Code transcript compacted with an edited summary reads back with it', async () => {
    const { dir, claude } = files();
    const summary = join(dir, 'summary.md');
    writeFileSync(summary, EDITED);
    const out = join(dir, 'out.jsonl');
    const r = runCli(['compact', claude, ...BUDGET, '--summary-file', summary, '--out', out]);
    expect(r.code, r.stderr).toBe(0);
    const text = readFileSync(out, 'utf8');
    const back = parseSession(text);
    expect(summaryOf(text)).toBe(EDITED);
    if ('reason' in cli) {
      console.log(`[compact --summary-file] Claude Code CLI check skipped: ${cli.reason}`);
      return;
    }
    const run = await resumeWithClaudeCode(cli.bin, text, back.info.id!, 'Go on.');
    expect(run.main, run.stderr).toBeDefined();
    expect(JSON.stringify(run.main!.messages)).toContain(EDITED.slice(0, 60));
  }, 180_000);
});

describe('abridge compact --pin, --pin-match', () => {
  it('pinned entries and matching messages reach the model verbatim (pi and Claude Code)', () => {
    const { dir, pi, claude } = files();
    for (const file of [pi, claude]) {
      const session = parseSession(readFileSync(file, 'utf8'));
      const results = session.entries.filter((e) => e.message?.role === 'tool').map((e) => e.index);
      const byNumber = results[1]!;
      const byId = results[3]!;
      const out = join(dir, `pinned-${file.endsWith('pi.jsonl') ? 'pi' : 'cc'}.jsonl`);
      const r = runCli([
        'compact',
        file,
        ...BUDGET,
        '--pin',
        `${byNumber},${session.entries[byId]!.id}`,
        '--pin-match',
        'Reminder: keep the public API',
        '--out',
        out,
      ]);
      expect(r.code, r.stderr).toBe(0);
      // (The written file holds every original record, then the view on a branch of its own: matched by content, part
      // by part — Claude Code keeps parallel results in one record, which reads back as one message.)
      const view = activeView(parseSession(readFileSync(out, 'utf8')));
      const partsOf = (v: typeof view) => new Set(v.flatMap((x) => x.message.parts.map((p) => JSON.stringify(p))));
      const shownParts = partsOf(view);
      const has = (set: Set<string>, e: number) =>
        session.entries[e]!.message!.parts.every((p) => set.has(JSON.stringify(p)));
      const reminder = session.entries.find((e) =>
        e.message?.parts.some((p) => p.type === 'text' && p.text.startsWith('Reminder: keep the public API')),
      )!.index;
      for (const e of [byNumber, byId, reminder]) {
        expect(has(shownParts, e), `${file} entry ${e}`).toBe(true);
      }
      // Unpinned, the same results are cleared or archived.
      const plain = join(dir, 'plain.jsonl');
      expect(runCli(['compact', file, ...BUDGET, '--out', plain]).code).toBe(0);
      const plainParts = partsOf(activeView(parseSession(readFileSync(plain, 'utf8'))));
      expect(has(plainParts, byNumber)).toBe(false);
      expect(has(plainParts, byId)).toBe(false);
      expect(view.some((v) => v.message.parts.some((p) => p.type === 'compaction'))).toBe(true);
    }
  });

  it('a budget that pins make unreachable exits 3 naming each pinned entry and its tokens', () => {
    const { pi } = files();
    const session = parseSession(readFileSync(pi, 'utf8'));
    const results = session.entries.filter((e) => e.message?.role === 'tool').map((e) => e.index);
    const pins = results.slice(4, 12);
    const r = runCli(['compact', pi, '--budget', '2000', '--prefix-tokens', '0', '--pin', pins.join(',')]);
    expect(r.code).toBe(3);
    for (const e of pins) expect(r.stderr).toMatch(new RegExp(`pinned: entry ${e} \\([\\d,]+ tokens\\)`));
    const p = JSON.parse(
      runCli([
        'compact',
        pi,
        '--budget',
        '2000',
        '--prefix-tokens',
        '0',
        '--pin',
        pins.join(','),
        '--preview',
        '--json',
      ]).stdout,
    );
    expect(p.pinned.map((x: { entry: number }) => x.entry)).toEqual(pins);
  });

  it('refuses bad values naming the option (exit 2)', () => {
    const { pi } = files();
    const bad = (args: string[], re: RegExp) => {
      const r = runCli(['compact', pi, ...BUDGET, ...args]);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr).toMatch(re);
    };
    bad(['--pin', '99999'], /--pin: "99999" is not an entry \(the transcript has entries 0–\d+\)/);
    bad(['--pin', 'nope'], /--pin: "nope" is neither an entry number nor the id of an entry/);
    bad(['--pin', '0'], /--pin: entry 0 holds no message/);
    bad(['--pin', ','], /--pin: expected entry numbers or ids/);
    bad(['--pin-match', '(unclosed'], /--pin-match: not a regular expression/);
  });
});

describe('pinnedLines: what pinning holds, for a person', () => {
  it('lists a few pins one a line, and many as one line of their entries, total and the largest three', () => {
    expect(pinnedLines([{ entry: 4, tokens: 1200 }])).toEqual(['pinned: entry 4 (1,200 tokens)']);
    const many = [
      ...Array.from({ length: 20 }, (_, i) => ({ entry: 10 + i, tokens: 10 })),
      { entry: 40, tokens: 5000 },
      { entry: 42, tokens: 3000 },
      ...Array.from({ length: 8 }, (_, i) => ({ entry: 50 + 2 * i, tokens: 1 })),
    ];
    expect(pinnedLines(many)).toEqual([
      'pinned: 30 messages, 8,208 tokens (entries 10–29, 40, 42, 50, 52, 54, …); the largest: entry 40 (5,000), entry 42 (3,000), entry 10 (10)',
    ]);
  });
});
