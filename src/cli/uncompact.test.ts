/**
 * `abridge uncompact` as a user runs it (the built CLI): a pi and a Claude Code transcript compacted with
 * `compact --out`, undone with `--out` and `--in-place` (pi's own loader resumes the view before); a stored session
 * (SQLite, and PostgreSQL with ABRIDGE_PG_URL) undone with `--db --session`, `--marker N` and `--all`; what it
 * refuses, with exit 2 naming what.
 */
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseSession } from '../formats/read.js';
import { writeSession } from '../formats/write.js';
import { viewSession } from './compact.js';
import { activeMessages } from '../model/view.js';
import { fixtureTranscripts, generatedPiSession } from '../../test/support/fixture-transcripts.js';
import { runCli, SMALL_PI_SESSION } from '../../test/support/cli.js';
import { firstDifference, piResume } from '../../test/support/pi-loader.js';

const dir = mkdtempSync(join(tmpdir(), 'abridge-uncompact-'));
const path = (name: string) => join(dir, name);

function compactOut(input: string, out: string): void {
  const r = runCli(['compact', input, '--budget', '6000', '--out', out]);
  expect(r.code, r.stderr).toBe(0);
}

describe('abridge uncompact', () => {
  it('pi: --out gives the view before the compaction, which pi resumes; --in-place the same', () => {
    const original = path('pi.jsonl');
    writeFileSync(original, generatedPiSession());
    const before = activeMessages(parseSession(readFileSync(original, 'utf8')));
    const compacted = path('pi-compacted.jsonl');
    compactOut(original, compacted);
    const compactedText = readFileSync(compacted, 'utf8');

    const r = runCli(['uncompact', compacted, '--out', path('pi-undone.jsonl'), '--json']);
    expect(r.code, r.stderr).toBe(0);
    const report = JSON.parse(r.stdout);
    expect(report).toMatchObject({ format: 'pi', undone: [1], after: { messages: before.length } });
    expect(report.after.tokens).toBeGreaterThan(report.before.tokens);
    const undone = readFileSync(path('pi-undone.jsonl'), 'utf8');
    expect(undone.startsWith(compactedText)).toBe(true);
    expect(firstDifference(piResume(undone).sent, before)).toBe(-1);
    expect(firstDifference(activeMessages(parseSession(undone)), before)).toBe(-1);

    const inPlace = runCli(['uncompact', compacted, '--in-place']);
    expect(inPlace.code, inPlace.stderr).toBe(0);
    expect(inPlace.stdout).toMatch(/compaction #1 undone — .* messages, .* tokens \(est\.\) → .*written to/);
    // The same records (the undo record's timestamp aside).
    const stamp = (t: string) => t.replace(/"timestamp":"[^"]*","customType":"abridge.undo"/, '');
    expect(stamp(readFileSync(compacted, 'utf8'))).toBe(stamp(undone));

    // Nothing to undo any more; without --out or --in-place nothing is written.
    const again = runCli(['uncompact', compacted]);
    expect(again.code).toBe(2);
    expect(again.stderr).toMatch(/no compaction in view/);
  });

  it('Claude Code: --out gives the view before', async () => {
    const cc = (await fixtureTranscripts()).find((f) => f.folder === 'claude-code')!.file;
    compactOut(cc, path('cc-compacted.jsonl'));
    const dry = runCli(['uncompact', path('cc-compacted.jsonl')]);
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.stdout).toMatch(/nothing written/);
    const r = runCli(['uncompact', path('cc-compacted.jsonl'), '--marker', '1', '--out', path('cc-undone.jsonl')]);
    expect(r.code, r.stderr).toBe(0);
    // The same request as before the compaction (Claude Code's chain holds one record per API message).
    const request = (text: string) =>
      JSON.parse(writeSession(viewSession(parseSession(text)), 'anthropic')) as { messages: unknown[] };
    expect(request(readFileSync(path('cc-undone.jsonl'), 'utf8')).messages).toEqual(
      request(readFileSync(cc, 'utf8')).messages,
    );
    expect(JSON.parse(runCli(['uncompact', path('cc-compacted.jsonl'), '--json']).stdout)).toMatchObject({
      format: 'claude-code',
      undone: [1],
      after: { tokens: expect.any(Number) },
    });
  });

  it('refuses, with exit 2 naming what', () => {
    writeFileSync(path('small.jsonl'), SMALL_PI_SESSION);
    const none = runCli(['uncompact', path('small.jsonl')]);
    expect([none.code, none.stderr]).toEqual([2, expect.stringMatching(/no compaction in view; nothing to undo/)]);

    compactOut(path('pi.jsonl'), path('pi-c2.jsonl'));
    const range = runCli(['uncompact', path('pi-c2.jsonl'), '--marker', '4']);
    expect([range.code, range.stderr]).toEqual([2, expect.stringMatching(/no compaction #4 \(the file has 1/)]);
    const bad = runCli(['uncompact', path('pi-c2.jsonl'), '--marker', '0']);
    expect([bad.code, bad.stderr]).toEqual([2, expect.stringMatching(/--marker: expected a compaction number/)]);
    const both = runCli(['uncompact', path('pi-c2.jsonl'), '--marker', '1', '--all']);
    expect([both.code, both.stderr]).toEqual([2, expect.stringMatching(/--marker and --all: choose one/)]);
    const self = runCli(['uncompact', path('pi-c2.jsonl'), '--out', path('pi-c2.jsonl')]);
    expect([self.code, self.stderr]).toEqual([2, expect.stringMatching(/use --in-place/)]);

    writeFileSync(
      path('codex.jsonl'),
      `${JSON.stringify({ timestamp: '2026-01-01T00:00:00Z', type: 'session_meta', payload: { id: 'x', cwd: '/w' } })}\n${JSON.stringify({ timestamp: '2026-01-01T00:00:01Z', type: 'response_item', payload: { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'hi' }] } })}\n`,
    );
    const other = runCli(['uncompact', path('codex.jsonl')]);
    expect([other.code, other.stderr]).toEqual([
      2,
      expect.stringMatching(/is codex; abridge undoes compactions in pi and claude-code/),
    ]);
  });
});

describe('abridge uncompact --db --session', () => {
  it("undoes a stored session's last compaction; a resumed manager continues from the view before", async () => {
    const { openSqliteStore } = await import('../store/sqlite/index.js');
    const { ContextManager } = await import('../manager/context-manager.js');
    const db = path('s.db');
    const store = await openSqliteStore(db);
    const cm = new ContextManager({ model: 'claude-sonnet-4-5', provider: 'anthropic', store, sessionId: 'stored' });
    await cm.append({ role: 'user', parts: [{ type: 'text', text: 'Read the modules.' }] });
    for (let i = 0; i < 6; i++) {
      await cm.recordResponse({
        role: 'assistant',
        parts: [{ type: 'tool-call', id: `c${i}`, name: 'read', arguments: { path: `m${i}.ts` } }],
      });
      await cm.append({
        role: 'tool',
        parts: [
          {
            type: 'tool-result',
            callId: `c${i}`,
            toolName: 'read',
            isError: false,
            content: [{ type: 'text', text: `export const v${i} = 1;\n`.repeat(300) }],
          },
        ],
      });
    }
    const before = activeMessages(cm.session).map((m) => JSON.stringify(m.parts));
    expect((await cm.compactNow({ target: 2000 })).marker).toBeDefined();
    await store.close();

    const r = runCli(['uncompact', '--db', db, '--session', 'stored', '--json']);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ session: 'stored', undone: [1] });
    const again = await openSqliteStore(db);
    const resumed = await ContextManager.resume(again, 'stored', {});
    expect(activeMessages(resumed.session).map((m) => JSON.stringify(m.parts))).toEqual(before);
    await again.close();
    const none = runCli(['uncompact', '--db', db, '--session', 'stored']);
    expect([none.code, none.stderr]).toEqual([2, expect.stringMatching(/no compaction in view/)]);

    const mixed = runCli(['uncompact', path('pi.jsonl'), '--db', db, '--session', 'stored']);
    expect([mixed.code, mixed.stderr]).toEqual([2, expect.stringMatching(/drop a transcript file/)]);
    const alone = runCli(['uncompact', '--db', db]);
    expect([alone.code, alone.stderr]).toEqual([2, expect.stringMatching(/--db and --session go together/)]);

    // abridge's compaction of a pi file, imported: a branch of its own, undone in the transcript instead.
    compactOut(path('pi.jsonl'), path('pi-c3.jsonl'));
    expect(runCli(['import', path('pi-c3.jsonl'), '--db', db, '--id', 'imported']).code).toBe(0);
    const branchOf = runCli(['uncompact', '--db', db, '--session', 'imported']);
    expect([branchOf.code, branchOf.stderr]).toEqual([
      2,
      expect.stringMatching(/as a new branch; undo it in the transcript/),
    ]);
  });
});

type Manager = import('../manager/context-manager.js').ContextManager;

/** One step of an agent: it reads module i, 300 lines. */
async function readStep(cm: Manager, i: number): Promise<void> {
  await cm.recordResponse({
    role: 'assistant',
    parts: [{ type: 'tool-call', id: `c${i}`, name: 'read', arguments: { path: `m${i}.ts` } }],
  });
  await cm.append({
    role: 'tool',
    parts: [
      {
        type: 'tool-result',
        callId: `c${i}`,
        toolName: 'read',
        isError: false,
        content: [{ type: 'text', text: `export const v${i} = 1;\n`.repeat(300) }],
      },
    ],
  });
}

const partsOf = (cm: Manager) => activeMessages(cm.session).map((m) => JSON.stringify(m.parts));

/** A stored session compacted twice by a ContextManager: the view before each compaction, and what came after #1. */
async function compactedTwice(
  store: import('../store/session-store.js').SessionStore,
  sessionId: string,
): Promise<{ beforeFirst: string[]; beforeSecond: string[]; sinceFirst: string[]; compacted: number }> {
  const { ContextManager } = await import('../manager/context-manager.js');
  const cm = new ContextManager({ model: 'claude-sonnet-4-5', provider: 'anthropic', store, sessionId });
  await cm.append({ role: 'user', parts: [{ type: 'text', text: 'Read the modules.' }] });
  for (let i = 0; i < 6; i++) await readStep(cm, i);
  const beforeFirst = partsOf(cm);
  expect((await cm.compactNow({ target: 2000 })).marker?.number).toBe(1);
  const afterFirst = partsOf(cm).length;
  for (let i = 6; i < 9; i++) await readStep(cm, i);
  const beforeSecond = partsOf(cm);
  expect((await cm.compactNow({ target: 2000 })).marker?.number).toBe(2);
  return { beforeFirst, beforeSecond, sinceFirst: beforeSecond.slice(afterFirst), compacted: partsOf(cm).length };
}

const pgUrl = process.env.ABRIDGE_PG_URL || undefined;
const storeCases = [
  {
    name: 'SQLite',
    skip: false,
    db: (id: string) => path(`${id}.db`),
    open: async (db: string) => (await import('../store/sqlite/index.js')).openSqliteStore(db),
  },
  {
    // The PostgreSQL store's default schema, as the command opens it; each run's session ids are its own.
    name: `PostgreSQL${pgUrl ? '' : ' (skipped: set ABRIDGE_PG_URL)'}`,
    skip: !pgUrl,
    db: () => pgUrl!,
    open: async (db: string) => (await import('../store/postgres/index.js')).openPostgresStore(db),
  },
];

for (const sc of storeCases)
  describe.skipIf(sc.skip)(`abridge uncompact --db --session --marker N | --all on ${sc.name}`, () => {
    it('--marker 1: the view before the first compaction and every message since; the store keeps both', async () => {
      const { ContextManager } = await import('../manager/context-manager.js');
      const id = `undo-marker-${process.pid}-${Date.now()}`;
      const db = sc.db(id);
      const store = await sc.open(db);
      const { beforeFirst, sinceFirst, compacted } = await compactedTwice(store, id);
      const kept = (await store.entries(id)).map((e) => JSON.stringify(e));
      await store.close();

      const out = runCli(['uncompact', '--db', db, '--session', id, '--marker', '5']);
      expect([out.code, out.stderr]).toEqual([
        2,
        expect.stringContaining(`undoCompaction: "${id}" has no compaction #5; in view: #1, #2`),
      ]);
      const both = runCli(['uncompact', '--db', db, '--session', id, '--marker', '1', '--all']);
      expect([both.code, both.stderr]).toEqual([2, expect.stringMatching(/--marker and --all: choose one/)]);
      const zero = runCli(['uncompact', '--db', db, '--session', id, '--marker', '0']);
      expect([zero.code, zero.stderr]).toEqual([2, expect.stringMatching(/--marker: expected a compaction number/)]);

      const r = runCli(['uncompact', '--db', db, '--session', id, '--marker', '1', '--json']);
      expect(r.code, r.stderr).toBe(0);
      const report = JSON.parse(r.stdout);
      const restored = [...beforeFirst, ...sinceFirst];
      expect(report).toMatchObject({
        session: id,
        undone: [2, 1],
        after: { messages: restored.length },
      });
      expect(report.before.messages).toBe(compacted);
      expect(report.after.tokens).toBeGreaterThan(report.before.tokens);

      const again = await sc.open(db);
      try {
        const resumed = await ContextManager.resume(again, id, {});
        expect(activeMessages(resumed.session).map((m) => JSON.stringify(m.parts))).toEqual(restored);
        // Nothing removed: the records are all there, the undo's checkpoint after them.
        const now = await again.entries(id);
        expect(now.slice(0, kept.length).map((e) => JSON.stringify(e))).toEqual(kept);
        expect(now.filter((e) => e.compaction).map((e) => e.compaction)).toEqual([
          expect.objectContaining({ number: 1, source: 'abridge' }),
          expect.objectContaining({ number: 2, source: 'abridge' }),
          expect.objectContaining({ number: 3, trigger: 'undo', undoes: 1, undone: [2, 1] }),
        ]);
      } finally {
        await again.close();
      }
      const none = runCli(['uncompact', '--db', db, '--session', id, '--all']);
      expect([none.code, none.stderr]).toEqual([
        2,
        expect.stringMatching(/no compaction in view in ".*"; nothing to undo/),
      ]);

      // inspect lists the undo as such, and no compaction in view.
      const shown = runCli(['inspect', '--db', db, '--session', id]);
      expect(shown.code, shown.stderr).toBe(0);
      expect(shown.stdout).toMatch(/#2 by abridge · entry \d+ · .* · undone by #3\n +#3 undo of #1, #2 · entry \d+/);
      expect(shown.stdout).toMatch(/ 0 compactions · /);
    });

    it('--all after an undo and a compaction since: the view before the first, then every message since', async () => {
      const { ContextManager } = await import('../manager/context-manager.js');
      const id = `undo-all-${process.pid}-${Date.now()}`;
      const db = sc.db(id);
      const store = await sc.open(db);
      const { beforeFirst, beforeSecond, sinceFirst } = await compactedTwice(store, id);
      await store.close();
      const last = runCli(['uncompact', '--db', db, '--session', id]);
      expect(last.code, last.stderr).toBe(0);
      expect(last.stdout).toMatch(new RegExp(`^${id} in .*: compaction #2 undone — .* messages, .* tokens → `));
      const refused = runCli(['uncompact', '--db', db, '--session', id, '--marker', '2']);
      expect([refused.code, refused.stderr]).toEqual([
        2,
        expect.stringContaining(`compaction #2 of "${id}" is not in view (undone by #3); in view: #1`),
      ]);
      // The agent goes on from the restored view and compacts again (#4).
      const working = await sc.open(db);
      const cm = await ContextManager.resume(working, id, { model: 'claude-sonnet-4-5' });
      expect(partsOf(cm)).toEqual(beforeSecond);
      for (let i = 9; i < 12; i++) await readStep(cm, i);
      const sinceUndo = partsOf(cm).slice(beforeSecond.length);
      expect((await cm.compactNow({ target: 2000 })).marker?.number).toBe(4);
      await working.close();

      const r = runCli(['uncompact', '--db', db, '--session', id, '--all']);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toMatch(/: compactions #1, #4 undone — .*recorded in the store, which keeps the compactions\n$/);
      const again = await sc.open(db);
      try {
        const resumed = await ContextManager.resume(again, id, {});
        expect(partsOf(resumed)).toEqual([...beforeFirst, ...sinceFirst, ...sinceUndo]);
      } finally {
        await again.close();
      }
    });
  });
