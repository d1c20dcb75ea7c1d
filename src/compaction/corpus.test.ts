import { basename } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { contextBreakdown } from '../budget/breakdown.js';
import { readSession } from '../formats/read.js';
import { activeView } from '../model/view.js';
import type { Session } from '../model/types.js';
import { corpusAvailable, readableCorpusFiles } from '../../test/support/corpus.js';
import { fixtureTranscripts } from '../../test/support/fixture-transcripts.js';
import { compact } from './compact.js';
import { checkInvariants, introducedViolations } from './invariants.js';

const run = corpusAvailable() ? describe : describe.skip;
if (!corpusAvailable())
  console.warn('compaction corpus tests SKIPPED: ../shared/corpus not found (set ABRIDGE_CORPUS)');

const FRACTIONS = [0.5, 0.25, 0.1] as const;

/**
 * Files that reached the target at 50% of their visible tokens when this test was written (floor: a change that makes
 * fewer reach it fails here; more is fine — raise the floor).
 */
const REACHED_AT_HALF_FLOOR = 43;

interface Row {
  file: string;
  format: string;
  fixed: number;
  visible: number;
  runs: {
    fraction: number;
    target: number;
    before: number;
    after: number;
    reached: boolean;
    strategies: string;
    ms: number;
  }[];
}

const rows: Row[] = [];

/**
 * The target of a fraction: the fixed prefix (what the transcript does not hold: system prompt, tools) plus that
 * fraction of what it does hold.
 */
function budgetOf(session: Session): { fixed: number; visible: number } {
  const snap = contextBreakdown(session);
  const fixed = snap.components.unrecorded;
  return { fixed, visible: snap.used - fixed };
}

/** Compacts a transcript to 50%, 25% and 10% of its visible tokens and checks each run; its row goes `into`. */
async function compactsAtFractions(folder: string, file: string, into: Row[]): Promise<void> {
  const first = await readSession(file);
  const { fixed, visible } = budgetOf(first);
  const row: Row = { file: `${folder}/${basename(file)}`, format: first.format, fixed, visible, runs: [] };
  into.push(row);
  for (const fraction of FRACTIONS) {
    const session = fraction === FRACTIONS[0] ? first : await readSession(file);
    const original = session.entries.map((e) => JSON.stringify(e));
    const view0 = activeView(session);
    const target = fixed + Math.round(visible * fraction);
    const t0 = performance.now();
    const r = await compact(session, { target });
    const ms = performance.now() - t0;
    row.runs.push({
      fraction,
      target,
      before: r.beforeTokens,
      after: r.afterTokens,
      reached: r.reachedTarget,
      strategies: r.strategiesRun.map((s) => s.name).join(','),
      ms,
    });
    expect(r.violations, `${fraction}`).toEqual([]);
    expect(introducedViolations(checkInvariants(view0), checkInvariants(activeView(session))), `${fraction}`).toEqual(
      [],
    );
    // Archive, never delete: every original entry is still there, unchanged; at most a marker was appended.
    expect(session.entries.length).toBeGreaterThanOrEqual(original.length);
    expect(session.entries.length).toBeLessThanOrEqual(original.length + 1);
    for (let i = 0; i < original.length; i++)
      if (JSON.stringify(session.entries[i]) !== original[i]) expect.fail(`entry ${i} changed at ${fraction}`);
    if (r.reachedTarget) expect(r.afterTokens).toBeLessThanOrEqual(target);
    else expect(r.afterTokens).toBeGreaterThan(target);
    expect(r.afterTokens).toBeLessThanOrEqual(r.beforeTokens);
  }
}

describe('compaction of the fixture transcripts', async () => {
  const fixtures = await fixtureTranscripts();
  const fixtureRows: Row[] = [];
  for (const { folder, name, file } of fixtures)
    it(`${folder}/${name} at 50%, 25% and 10% of its visible tokens`, () =>
      compactsAtFractions(folder, file, fixtureRows));

  it('every fixture reaches the target at 50%', () => {
    expect(fixtureRows.map((r) => [r.file, r.runs[0]?.reached])).toEqual(
      fixtures.map((f) => [`${f.folder}/${basename(f.file)}`, true]),
    );
  });
});

run('compaction of every corpus transcript', () => {
  for (const { folder, file } of readableCorpusFiles())
    it(`${folder}/${basename(file)} at 50%, 25% and 10% of its visible tokens`, () =>
      compactsAtFractions(folder, file, rows));

  it('most files reach the target at 50%', () => {
    expect(rows.length).toBeGreaterThan(0);
    const reached = rows.filter((r) => r.runs[0]?.reached).length;
    expect(reached).toBeGreaterThanOrEqual(REACHED_AT_HALF_FLOOR);
    expect(reached).toBeGreaterThan(rows.length / 2);
  });

  afterAll(() => {
    if (rows.length === 0) return;
    const pad = (s: string | number, n: number) => String(s).padStart(n);
    const lines = [
      `${'file'.padEnd(60)} ${pad('fixed', 7)} ${pad('visible', 8)}  ${FRACTIONS.map((f) => `${pad(`${f * 100}%: after/target`, 22)}`).join(' ')}`,
    ];
    for (const r of rows) {
      const cells = r.runs.map((x) => pad(`${x.reached ? '✓' : '✗'} ${x.after}/${x.target}`, 22));
      lines.push(`${r.file.slice(0, 60).padEnd(60)} ${pad(r.fixed, 7)} ${pad(r.visible, 8)}  ${cells.join(' ')}`);
    }
    const reached = FRACTIONS.map((_, k) => rows.filter((r) => r.runs[k]?.reached).length);
    lines.push(`reached: ${FRACTIONS.map((f, k) => `${f * 100}% ${reached[k]}/${rows.length}`).join(', ')}`);
    console.log(lines.join('\n'));
  });
});
