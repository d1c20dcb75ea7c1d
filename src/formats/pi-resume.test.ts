/**
 * What abridge reports is what pi resumes: every pi transcript of the corpus, compacted at 50% and 25% of its visible
 * tokens, written with the pi writer, loaded by pi's own code (parseSessionEntries → migrateSessionEntries →
 * buildSessionContext → convertToLlm) and decoded by abridge's pi decoder, equals abridge's view message for message —
 * the same roles and parts in the same order, the same text once pi's summary wrappers are taken off — and, wrappers
 * included, within 2% of its tokens. Read back by abridge, the file gives the same view again; compacted a second time
 * (at half the budget), the same holds.
 */
import { basename } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { contextSnapshot } from '../budget/snapshot.js';
import { compact } from '../compaction/compact.js';
import { activeMessages } from '../model/view.js';
import type { Message, Session } from '../model/types.js';
import { corpusAvailable, corpusFiles } from '../test-support/corpus.js';
import { comparable, firstDifference, piResume } from '../test-support/pi-loader.js';
import { TokenCounter } from '../tokens/counter.js';
import { parseSession, readSession } from './read.js';
import { writeSession } from './write.js';

const run = corpusAvailable() ? describe : describe.skip;
const FRACTIONS = [0.5, 0.25] as const;
const counter = new TokenCounter();
const tokens = (ms: readonly Message[]) => ms.reduce((n, m) => n + counter.message(m), 0);

interface Row {
  file: string;
  fraction: number;
  compacted: boolean;
  strategies: string;
  abridge: number;
  pi: number;
  abridgeTokens: number;
  piTokens: number;
  equal: boolean;
  readBack: boolean;
  second: boolean;
}
const rows: Row[] = [];

function budget(session: Session, fraction: number): number {
  const snap = contextSnapshot(session);
  const fixed = snap.components.unrecorded;
  return fixed + Math.round((snap.used - fixed) * fraction);
}

/** pi's resumed messages against abridge's view; fails with the first difference. */
function expectSame(label: string, pi: readonly Message[], view: readonly Message[]): void {
  const at = firstDifference(pi, view);
  if (at !== -1) {
    const a = comparable(pi);
    const b = comparable(view);
    expect.soft({ label, at, pi: a.length, abridge: b.length, piMessage: a[at], abridgeMessage: b[at] }).toBeUndefined();
  }
  expect(at, label).toBe(-1);
}

run('pi resumes exactly the view abridge reported', () => {
  for (const file of corpusFiles('pi')) {
    it(basename(file), async () => {
      for (const fraction of FRACTIONS) {
        const session = await readSession(file);
        const target = budget(session, fraction);
        const r = await compact(session, { target });
        const view = activeMessages(session);
        const text = writeSession(session, 'pi');
        const pi = piResume(text).sent;
        const row: Row = {
          file: basename(file),
          fraction,
          compacted: r.marker !== undefined,
          strategies: r.strategiesRun.map((s) => s.name).join(','),
          abridge: comparable(view).length,
          pi: comparable(pi).length,
          abridgeTokens: tokens(view),
          piTokens: tokens(pi),
          equal: firstDifference(pi, view) === -1,
          readBack: false,
          second: false,
        };
        rows.push(row);
        expectSame(`${fraction}: pi`, pi, view);
        expect(Math.abs(row.piTokens - row.abridgeTokens) / Math.max(1, row.abridgeTokens)).toBeLessThanOrEqual(0.02);

        // abridge reads its own file back to the same view, and can compact it again.
        const back = parseSession(text);
        expect(back.problems.filter((p) => p.kind !== 'multiple-objects')).toEqual([]);
        expectSame(`${fraction}: read back`, activeMessages(back), view);
        row.readBack = true;
        if (!r.marker) continue;
        await compact(back, { target: budget(session, fraction / 2) });
        const text2 = writeSession(back, 'pi');
        const view2 = activeMessages(back);
        expectSame(`${fraction}: second compaction, pi`, piResume(text2).sent, view2);
        expectSame(`${fraction}: second compaction, read back`, activeMessages(parseSession(text2)), view2);
        // Archive, never delete: every record of the first file is in the second.
        const lines2 = new Set(text2.split('\n'));
        for (const line of text.split('\n')) if (line.trim()) expect(lines2.has(line), line.slice(0, 120)).toBe(true);
        row.second = true;
      }
    }, 120_000);
  }
});

afterAll(() => {
  if (rows.length === 0) return;
  const compacted = rows.filter((r) => r.compacted);
  const eq = (rs: Row[]) => rs.filter((r) => r.equal).length;
  const lines = [
    `pi resume: ${eq(rows)}/${rows.length} (sessions × budgets) equal; compacted ${compacted.length}, of which equal ${eq(compacted)}, read back ${compacted.filter((r) => r.readBack).length}, second compaction ${compacted.filter((r) => r.second).length}`,
    ...rows.map((r) => `  ${r.fraction * 100}% ${r.equal ? '=' : '≠'} ${r.compacted ? r.strategies.padEnd(40) : '(not compacted)'.padEnd(40)} msgs ${r.pi}/${r.abridge} tokens ${r.piTokens}/${r.abridgeTokens} ${r.file}`),
  ];
  console.log(lines.join('\n'));
});
