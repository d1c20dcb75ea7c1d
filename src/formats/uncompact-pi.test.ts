/**
 * Undoing a compaction in a pi file: pi's own loader (parseSessionEntries → migrateSessionEntries →
 * buildSessionContext → convertToLlm) resumes exactly abridge's view of the undone file, and that view is the one
 * before the compaction (with what was added after it), message for message; the file keeps every line it had.
 */
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import { describe, expect, it } from 'vitest';
import { compact } from '../compaction/compact.js';
import { activeMessages } from '../model/view.js';
import { activeBranch } from '../model/branch.js';
import type { Message, Session } from '../model/types.js';
import { corpusAvailable, corpusFiles } from '../../test/support/corpus.js';
import { generatedPiSession } from '../../test/support/fixture-transcripts.js';
import { comparable, firstDifference, piResume } from '../../test/support/pi-loader.js';
import { TokenCounter } from '../tokens/counter.js';
import { migratedPiText } from './pi-write.js';
import { parseSession } from './read.js';
import { writeSession } from './write.js';
import { appendRecords, compactionsInView, PI_UNDO_TYPE, uncompactPi, uncompactText } from './uncompact.js';

const counter = new TokenCounter();
const tokens = (ms: readonly Message[]) => ms.reduce((n, m) => n + counter.message(m), 0);

function expectSame(label: string, a: readonly Message[], b: readonly Message[]): void {
  const at = firstDifference(a, b);
  if (at !== -1) expect.soft({ label, at, a: comparable(a)[at], b: comparable(b)[at] }).toBeUndefined();
  expect(at, label).toBe(-1);
}

async function compacted(text: string, fraction: number): Promise<string> {
  const session = parseSession(text);
  await compact(session, { target: Math.floor(tokens(activeMessages(session)) * fraction), force: true });
  return writeSession(session);
}

/** Undone, the file keeps its lines (an older file migrated, as pi does); pi resumes abridge's view of it. */
function undo(text: string, options: Parameters<typeof uncompactPi>[1] = {}): { text: string; session: Session } {
  const r = uncompactText(text, options);
  if (!r.migrated) expect(r.text.startsWith(text)).toBe(true);
  const session = parseSession(r.text);
  expectSame('pi resumes abridge view', piResume(r.text).sent, activeMessages(session));
  return { text: r.text, session };
}

describe('uncompact a pi file', () => {
  const original = generatedPiSession();
  const before = activeMessages(parseSession(original));

  it('restores the view before abridge compaction, which pi resumes', async () => {
    const once = await compacted(original, 0.5);
    expect(tokens(activeMessages(parseSession(once)))).toBeLessThan(tokens(before));
    const { text, session } = undo(once);
    expectSame('the view before', activeMessages(session), before);
    // The compaction record stays in the file; the undo names it.
    const undoRecord = JSON.parse(text.trimEnd().split('\n').at(-1)!);
    expect(undoRecord).toMatchObject({ type: 'custom', customType: PI_UNDO_TYPE, data: { undone: [{ number: 1 }] } });
    expect(session.entries.filter((e) => e.compaction)).toHaveLength(1);
    expect(compactionsInView(session)).toHaveLength(0);
    expect(() => uncompactPi(session)).toThrow(/no compaction in view/);
  });

  it('keeps what was added after the compaction, after the earlier view', async () => {
    const once = await compacted(original, 0.5);
    const s = parseSession(once);
    const last = activeBranch(s).at(-1)!.id!;
    const added = [
      {
        type: 'message',
        id: 'aaaa0001',
        parentId: last,
        timestamp: '2026-01-01T00:00:00.000Z',
        message: { role: 'user', content: [{ type: 'text', text: 'One more thing.' }], timestamp: 1 },
      },
      {
        type: 'model_change',
        id: 'aaaa0002',
        parentId: 'aaaa0001',
        timestamp: '2026-01-01T00:00:01.000Z',
        provider: 'anthropic',
        modelId: 'claude-x',
      },
      {
        type: 'message',
        id: 'aaaa0003',
        parentId: 'aaaa0002',
        timestamp: '2026-01-01T00:00:02.000Z',
        message: { role: 'user', content: [{ type: 'text', text: 'And another.' }], timestamp: 2 },
      },
    ];
    const grown = appendRecords(once, added);
    const { text, session } = undo(grown);
    const more = activeMessages(parseSession(grown)).slice(-2);
    expectSame('the view before, then what was added', activeMessages(session), [...before, ...more]);
    expect(piResume(text).model).toEqual({ provider: 'anthropic', modelId: 'claude-x' });
  });

  it('--marker N and --all across two compactions', async () => {
    const once = await compacted(original, 0.6);
    const afterFirst = activeMessages(parseSession(once));
    const twice = await compacted(once, 0.5);
    expect(compactionsInView(parseSession(twice)).map((e) => e.compaction!.number)).toEqual([1, 2]);
    const last = undo(twice);
    expectSame('before the second', activeMessages(last.session), afterFirst);
    const m2 = undo(twice, { marker: 2 });
    expectSame('--marker 2', activeMessages(m2.session), afterFirst);
    const all = undo(twice, { all: true });
    expectSame('--all', activeMessages(all.session), before);
    const m1 = undo(twice, { marker: 1 });
    expectSame('--marker 1', activeMessages(m1.session), before);
    // Undone again from the partly undone file: the first compaction goes too.
    const again = undo(last.text);
    expectSame('undone twice', activeMessages(again.session), before);
    expect(() => uncompactPi(parseSession(twice), { marker: 3 })).toThrow(/no compaction #3/);
    expect(() => uncompactPi(last.session, { marker: 2 })).toThrow(/#2 is not in view/);
  });

  it('compacted again after an undo, pi resumes abridge view', async () => {
    const { text } = undo(await compacted(original, 0.5));
    const again = await compacted(text, 0.4);
    expectSame('compacted after undo', piResume(again).sent, activeMessages(parseSession(again)));
  });
});

const run = corpusAvailable() ? describe : describe.skip;
run('uncompact corpus pi files with their own compactions', () => {
  const files = corpusFiles('pi');
  it('pi resumes the view before each of pi compactions, as abridge reads it', () => {
    let checked = 0;
    for (const file of files) {
      const read = parseSession(readFileSync(file, 'utf8'));
      // An older file (no ids) is undone as pi migrates it; migrated, it reads as it did.
      const linear = !read.entries.some((e) => e.id !== undefined && e.parentId !== undefined);
      const text = linear ? migratedPiText(read) : readFileSync(file, 'utf8');
      const session = parseSession(text);
      // (A line holding two records is one pi skips; migrated, each is on a line of its own, as the writer does.)
      if (!read.entries.some((e) => e.sameLineAsPrevious))
        expectSame(`${basename(file)} migrated`, activeMessages(session), activeMessages(read));
      const inView = compactionsInView(session);
      for (const m of inView) {
        const n = m.compaction!.number;
        const { session: after } = undo(text, { marker: n });
        // The view before: the path up to the compaction's parent (earlier compactions applied), then what followed it.
        const path = activeBranch(session);
        const k = path.indexOf(m);
        const keep = new Set(path.slice(0, k).map((e) => e.index));
        const cut = parseSession(text);
        const upTo = activeMessages({
          ...cut,
          entries: cut.entries.filter((e) => keep.has(e.index) || e.kind === 'header'),
        });
        const later = path
          .slice(k + 1)
          .filter((e) => e.message && !e.compaction)
          .map((e) => e.message!);
        expectSame(`${basename(file)} #${n}`, activeMessages(after), [...upTo, ...later]);
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(0);
  });

  it('abridge compactions of every corpus pi file undone: pi resumes the view before', async () => {
    for (const file of files) {
      const text = readFileSync(file, 'utf8');
      const read = parseSession(text);
      if (read.entries.some((e) => e.sameLineAsPrevious)) continue;
      const before = activeMessages(read);
      const once = await compacted(text, 0.5);
      if (compactionsInView(parseSession(once)).length === compactionsInView(read).length) continue;
      const { session } = undo(once);
      expectSame(`${basename(file)} undone`, activeMessages(session), before);
    }
  });
});
