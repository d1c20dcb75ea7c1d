/**
 * What abridge reports is what pi resumes: every pi transcript of the corpus, compacted at 50% and 25% of its visible
 * tokens, written with the pi writer, loaded by pi's own code (parseSessionEntries → migrateSessionEntries →
 * buildSessionContext → convertToLlm) and decoded by abridge's pi decoder, equals abridge's view message for message —
 * the same roles and parts in the same order, the same text once pi's summary wrappers are taken off — and, wrappers
 * included, within 2% of its tokens. Read back by abridge, the file gives the same view again; compacted a second time
 * (at half the budget), the same holds.
 */
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { contextBreakdown } from '../budget/breakdown.js';
import { compact } from '../compaction/compact.js';
import { activeMessages } from '../model/view.js';
import type { Message, Session } from '../model/types.js';
import { corpusAvailable, corpusFiles } from '../../test/support/corpus.js';
import { fixtureTranscripts } from '../../test/support/fixture-transcripts.js';
import { PiTranscript } from '../../test/support/random-session.js';
import { comparable, firstDifference, PI_WRAPPERS, piResume } from '../../test/support/pi-loader.js';
import { TokenCounter } from '../tokens/counter.js';
import { parseSession, readSession } from './read.js';
import { writeSession } from './write.js';

const run = corpusAvailable() ? describe : describe.skip;
const FRACTIONS = [0.5, 0.25] as const;
const counter = new TokenCounter();
const tokens = (ms: readonly Message[]) => ms.reduce((n, m) => n + counter.message(m), 0);
/** What pi adds around a compaction summary it shows first (its COMPACTION_SUMMARY_PREFIX and _SUFFIX). */
const WRAPPER_TOKENS = counter.text(PI_WRAPPERS.compaction.join(''));

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
  const snap = contextBreakdown(session);
  const fixed = snap.components.unrecorded;
  return fixed + Math.round((snap.used - fixed) * fraction);
}

/** pi's resumed messages against abridge's view; fails with the first difference. */
function expectSame(label: string, pi: readonly Message[], view: readonly Message[]): void {
  const at = firstDifference(pi, view);
  if (at !== -1) {
    const a = comparable(pi);
    const b = comparable(view);
    expect
      .soft({ label, at, pi: a.length, abridge: b.length, piMessage: a[at], abridgeMessage: b[at] })
      .toBeUndefined();
  }
  expect(at, label).toBe(-1);
}

/** Compacted at 50% and 25%, written with the pi writer and loaded by pi's own code: pi resumes abridge's view. */
async function piResumesTheView(file: string): Promise<void> {
  for (const fraction of FRACTIONS) {
    const session = await readSession(file);
    const target = budget(session, fraction);
    const r = await compact(session, { target });
    const view = activeMessages(session);
    const text = writeSession(session, 'pi');
    const resumed = piResume(text);
    const pi = resumed.sent;
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
    // With the model and thinking level the session was using, whatever was archived.
    const original = piResume(readFileSync(file, 'utf8'));
    expect({ model: resumed.model, thinking: resumed.thinkingLevel }, `${fraction}: model`).toEqual({
      model: original.model,
      thinking: original.thinkingLevel,
    });
    // Within 2% — or, for a view of a few hundred tokens, within the tokens of pi's wrapper around a summary.
    expect(Math.abs(row.piTokens - row.abridgeTokens)).toBeLessThanOrEqual(
      Math.max(0.02 * row.abridgeTokens, WRAPPER_TOKENS),
    );

    // abridge reads its own file back to the same view, and can compact it again.
    const back = parseSession(text);
    expect(back.problems.filter((p) => p.kind !== 'multiple-objects')).toEqual([]);
    expectSame(`${fraction}: read back`, activeMessages(back), view);
    row.readBack = true;
    if (!r.marker) continue;
    // And counts it as compact reported it (anchored where the re-appended view ends).
    expect(contextBreakdown(back).used).toBe(r.afterTokens);
    const r2 = await compact(back, { target: budget(session, fraction / 2) });
    const text2 = writeSession(back, 'pi');
    const view2 = activeMessages(back);
    const resumed2 = piResume(text2);
    expectSame(`${fraction}: second compaction, pi`, resumed2.sent, view2);
    expect(resumed2.model, `${fraction}: second compaction, model`).toEqual(original.model);
    expectSame(`${fraction}: second compaction, read back`, activeMessages(parseSession(text2)), view2);
    if (r2.marker) expect(contextBreakdown(parseSession(text2)).used).toBe(r2.afterTokens);
    // Archive, never delete: every record of the first file is in the second.
    const lines2 = new Set(text2.split('\n'));
    for (const line of text.split('\n')) if (line.trim()) expect(lines2.has(line), line.slice(0, 120)).toBe(true);
    row.second = true;
  }
}

describe('pi resumes exactly the view abridge reported (fixture transcripts)', async () => {
  const fixtures = (await fixtureTranscripts()).filter((f) => f.folder === 'pi');
  it.each(fixtures.map((f) => [f.name, f.file]))('%s', (_name, file) => piResumesTheView(file), 120_000);
});

run('pi resumes exactly the view abridge reported', () => {
  for (const file of corpusFiles('pi')) it(basename(file), () => piResumesTheView(file), 120_000);
});

const output = (tag: string, n: number) =>
  Array.from({ length: n }, (_, k) => `${tag} line ${k}: npm ERR! at retry (src/net/retry.ts:${k})`).join('\n');

/** A pi tree: an abandoned branch, a branch summary, harness and bash messages on the active one. */
function branchedSession(): string {
  const t = new PiTranscript('branched');
  t.user('Fix the flaky retry in src/net/retry.ts.');
  const u1 = t.records.at(-1)!.id as string;
  for (let i = 0; i < 3; i++)
    t.step({
      text: `Trying ${i}.`,
      calls: [{ name: 'bash', args: { command: `try ${i}` }, result: output(`try${i}`, 150) }],
    });
  const abandoned = t.records.at(-1)!.id as string;
  const branchStart = t.records.length;
  t.synthetic('Remember: keep the backoff under 250 ms.');
  for (let i = 0; i < 8; i++)
    t.step({
      text: `Step ${i}.`,
      calls: [{ name: i % 2 ? 'read' : 'bash', args: { path: `src/f${i}.ts` }, result: output(`step${i}`, 120) }],
    });
  t.user('Now run the tests.');
  const records = t.records;
  // The second branch starts again from the first request, after pi's summary of the abandoned one.
  records.splice(branchStart, 0, {
    type: 'branch_summary',
    id: 'bs',
    parentId: u1,
    timestamp: records[1]!.timestamp,
    fromId: abandoned,
    summary: 'Tried three retries; none fixed it.',
  });
  records[branchStart + 1]!.parentId = 'bs';
  const last = records.at(-1)!.id as string;
  records.push({
    type: 'message',
    id: 'bx',
    parentId: last,
    timestamp: records[1]!.timestamp,
    message: {
      role: 'bashExecution',
      command: 'npm test',
      output: output('test', 80),
      exitCode: 1,
      cancelled: false,
      truncated: false,
      timestamp: 99,
    },
  });
  for (let i = 0; i < 3; i++)
    records.push({
      type: 'message',
      id: `z${i}`,
      parentId: i ? `z${i - 1}` : 'bx',
      timestamp: records[1]!.timestamp,
      message: { role: 'user', content: `More ${i}.`, timestamp: 100 + i },
    });
  return `${records.map((r) => JSON.stringify(r)).join('\n')}\n`;
}

describe('pi resumes the view on the active branch of a tree', () => {
  it.each([
    ['clearing only', 0.7, ['clear-tool-results'] as const],
    ['with a summary', 0.3, ['summarize'] as const],
  ])('%s', async (_, fraction, strategies) => {
    const text0 = branchedSession();
    const session = parseSession(text0);
    expect(session.problems).toEqual([]);
    const before = piResume(text0).sent;
    expect(firstDifference(before, activeMessages(session))).toBe(-1);
    const size = tokens(activeMessages(session));
    const r = await compact(session, { target: Math.floor(size * fraction), prefixTokens: 0, strategies });
    expect(r.marker).toBeDefined();
    if (strategies[0] === 'clear-tool-results') expect(r.marker!.archived).toBeUndefined();
    else expect(r.strategiesRun.map((x) => x.name)).toContain('summarize');
    const text = writeSession(session, 'pi');
    expectSame('pi', piResume(text).sent, activeMessages(session));
    expectSame('read back', activeMessages(parseSession(text)), activeMessages(session));
    // The abandoned branch and every original record are still there.
    const written = new Set(text.split('\n'));
    for (const line of text0.split('\n')) if (line) expect(written.has(line)).toBe(true);
  });
});

describe('pi resumes a command output abridge cut short', () => {
  it("a person's `!` command with a huge output, newest: its first and last lines, as pi sends them", async () => {
    const t = new PiTranscript('bang');
    t.user('Find what is left over from the old build.');
    for (let i = 0; i < 6; i++)
      t.step({
        text: `Step ${i}.`,
        calls: [{ name: 'bash', args: { command: `ls build/${i}` }, result: output(`ls${i}`, 60) }],
      });
    t.bash('find .', output('./found', 3000));
    const text0 = t.jsonl();
    const session = parseSession(text0);
    const size = tokens(activeMessages(session));
    const r = await compact(session, { target: Math.floor(size * 0.2), prefixTokens: 0 });
    expect(r.reachedTarget).toBe(true);
    const last = activeMessages(session).at(-1)!;
    const shown = last.parts.map((p) => (p.type === 'text' ? p.text : '')).join('');
    expect(shown).toMatch(/^Ran `find \.`/);
    expect(shown).toContain('./found line 2999');
    expect(shown).toContain('read_result');
    expect(shown).not.toContain('./found line 1500\n');
    const text = writeSession(session, 'pi');
    expectSame('pi', piResume(text).sent, activeMessages(session));
    expectSame('read back', activeMessages(parseSession(text)), activeMessages(session));
  });
});

afterAll(() => {
  if (rows.length === 0) return;
  const compacted = rows.filter((r) => r.compacted);
  const eq = (rs: Row[]) => rs.filter((r) => r.equal).length;
  const lines = [
    `pi resume: ${eq(rows)}/${rows.length} (sessions × budgets) equal; compacted ${compacted.length}, of which equal ${eq(compacted)}, read back ${compacted.filter((r) => r.readBack).length}, second compaction ${compacted.filter((r) => r.second).length}`,
    ...rows.map(
      (r) =>
        `  ${r.fraction * 100}% ${r.equal ? '=' : '≠'} ${r.compacted ? r.strategies.padEnd(40) : '(not compacted)'.padEnd(40)} msgs ${r.pi}/${r.abridge} tokens ${r.piTokens}/${r.abridgeTokens} ${r.file}`,
    ),
  ];
  console.log(lines.join('\n'));
});
