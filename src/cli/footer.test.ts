import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { markdownFooter } from '../budget/report.js';
import { contextBreakdown } from '../budget/breakdown.js';
import { readSession } from '../formats/read.js';
import { runCli } from '../../test/support/cli.js';
import { corpusAvailable, corpusFile } from '../../test/support/corpus.js';
import { EXAMPLE_PI, generatedPiSession } from '../../test/support/fixture-transcripts.js';

const abridge = (...args: string[]) => runCli(args);

/** The footer of a `large` session (over 30% of its window; its footer matches `footer`) and of a `small` one (under). */
function footerTests(large: string, small: string, footer: RegExp): void {
  it("prints the session's Markdown footer, the same as the library's", async () => {
    const r = abridge('footer', large);
    expect(r.code).toBe(0);
    expect(r.stdout).toBe(`${markdownFooter(contextBreakdown(await readSession(large)))}\n`);
    expect(r.stdout).toMatch(footer);
  });

  it('prints nothing for a session under 30% of its window', () => {
    const r = abridge('footer', small);
    expect(r).toMatchObject({ code: 0, stdout: '' });
  });

  it('the CI recipe: compacted before the agent runs, the footer shows the lower pressure', () => {
    const out = join(mkdtempSync(join(tmpdir(), 'abridge-footer-')), 'session.jsonl');
    expect(abridge('compact', large, '--budget', '40000', '--out', out).code).toBe(0);
    const after = abridge('footer', out);
    expect(after.code).toBe(0);
    const pct = (s: string) => Number(/(\d+)%/.exec(s)?.[1]);
    expect(pct(after.stdout || 'Context 0%')).toBeLessThan(pct(abridge('footer', large).stdout));
  });
}

describe('abridge footer on the fixture transcripts', () => {
  // examples/refactor-session.jsonl is ~80% of its window; the generated session ~12%.
  const small = join(mkdtempSync(join(tmpdir(), 'abridge-footer-small-')), 'small.jsonl');
  writeFileSync(small, generatedPiSession());
  footerTests(
    EXAMPLE_PI,
    small,
    /^\n---\n<sub>Context [█░]+ \d+% · [\d.]+K\/200K · \w+<\/sub>\n<sub>The context is filling up/,
  );
});

describe.skipIf(!corpusAvailable())('abridge footer on real transcripts', () => {
  footerTests(
    corpusFile('pi', 'badlogic__pi-mono__large-session.jsonl'),
    corpusFile('pi', 'japer-technology__forgejo-society__issue-3.jsonl'),
    /^\n---\n<sub>Context [█░]+ \d+% · [\d.]+K\/200K · \w+<\/sub>\n<sub>⚠️ The context is nearly full/,
  );
});

describe('abridge footer', () => {
  it('a missing file is bad input (exit 2), named', () => {
    const r = abridge('footer', '/nonexistent/session.jsonl');
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('/nonexistent/session.jsonl');
  });
});
