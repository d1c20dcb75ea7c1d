/**
 * ContextManager.undoCompaction on a MemorySessionStore, SQLite and (with ABRIDGE_PG_URL) PostgreSQL: the working
 * session restarts from the view before the compaction undone — the last in view, `marker` N (with every later one in
 * view), or `all` — then every message appended since; the store keeps the compactions and records the undo as a
 * checkpoint, and a manager resumed from the store continues from the restored view; a number not in view is refused
 * naming those in view.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Entry, Message } from '../model/types.js';
import { activeMessages } from '../model/view.js';
import { MemorySessionStore } from '../store/memory-session-store.js';
import type { SessionStore } from '../store/session-store.js';
import { openSqliteStore } from '../store/sqlite/index.js';
import { grepSteps } from '../../test/support/agent-loop.js';
import { ContextManager } from './context-manager.js';

const PG_URL = process.env.ABRIDGE_PG_URL || undefined;

/** Messages as the model reads them (no bills, no timestamps). */
const readable = (ms: readonly Message[]) => ms.map((m) => JSON.stringify({ role: m.role, parts: m.parts }));

/** The store's records as they are, for comparing before and after (their positions and markers, not the row ids). */
const records = (es: readonly Entry[]) => es.map((e) => JSON.stringify(e));

interface StoreCase {
  name: string;
  open: () => Promise<{ store: SessionStore; reopen: () => Promise<SessionStore>; close: () => Promise<void> }>;
  skip?: boolean;
}

const stores: StoreCase[] = [
  {
    name: 'MemorySessionStore',
    open: async () => {
      const store = new MemorySessionStore();
      return { store, reopen: async () => store, close: async () => undefined };
    },
  },
  {
    name: 'SQLite',
    open: async () => {
      const file = join(mkdtempSync(join(tmpdir(), 'abridge-undo-')), 's.db');
      const store = await openSqliteStore(file);
      const opened: SessionStore[] = [store];
      return {
        store,
        reopen: async () => {
          const again = await openSqliteStore(file);
          opened.push(again);
          return again;
        },
        close: async () => {
          for (const s of opened) await s.close();
        },
      };
    },
  },
  {
    name: 'PostgreSQL',
    skip: !PG_URL,
    open: async () => {
      const { openPostgresStore } = await import('../store/postgres/index.js');
      const schema = `abridge_undo_${process.pid}_${Date.now()}`;
      const store = await openPostgresStore(PG_URL!, { schema });
      const opened: SessionStore[] = [store];
      return {
        store,
        reopen: async () => {
          const again = await openPostgresStore(PG_URL!, { schema });
          opened.push(again);
          return again;
        },
        close: async () => {
          const pg = (await import('pg')).default;
          for (const s of opened) await s.close();
          const c = new pg.Client({ connectionString: PG_URL });
          await c.connect();
          await c.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
          await c.end();
        },
      };
    },
  },
];

const manager = (store: SessionStore, sessionId: string) =>
  new ContextManager({
    model: 'claude-sonnet-4-5',
    provider: 'anthropic',
    store,
    sessionId,
    system: 'You are a coding agent.',
    now: () => new Date(0),
  });

const user = (text: string): Message => ({ role: 'user', parts: [{ type: 'text', text }] });

for (const sc of stores)
  describe.skipIf(sc.skip === true)(
    `ContextManager.undoCompaction on ${sc.name}${sc.skip ? ' (skipped: set ABRIDGE_PG_URL)' : ''}`,
    () => {
      it('restores the view before the last compaction, kept by a resumed manager; again: the one before', async () => {
        const { store, reopen, close } = await sc.open();
        try {
          const cm = manager(store, 'undo-1');
          await expect(cm.undoCompaction()).rejects.toThrow(/no compaction in view/);
          await cm.append(user('Find every use of value.'));
          await grepSteps(cm, 0, 8);
          const beforeFirst = activeMessages(cm.session);
          const first = await cm.compactNow({ target: 3000 });
          expect(first.marker).toBeDefined();
          await grepSteps(cm, 8, 4);
          const beforeSecond = activeMessages(cm.session);
          const second = await cm.compactNow({ target: 3000 });
          expect(second.marker).toBeDefined();
          const compacted = activeMessages(cm.session).length;
          await cm.append(user('Now list the modules.'));
          const added = activeMessages(cm.session).at(-1)!;

          const r = await cm.undoCompaction();
          expect(r.undone).toEqual([2]);
          expect(r.afterTokens).toBeGreaterThan(r.beforeTokens);
          expect([r.beforeMessages, r.afterMessages]).toEqual([compacted + 1, beforeSecond.length + 1]);
          expect(readable(activeMessages(cm.session))).toEqual(readable([...beforeSecond, added]));
          expect(activeMessages(cm.session).length).toBeGreaterThan(compacted + 1);
          // The store keeps both compactions, and the undo as a checkpoint a resumed manager starts from.
          const markers = (await store.entries('undo-1')).filter((e) => e.compaction);
          expect(markers.map((e) => e.compaction!.trigger === 'undo')).toEqual([false, false, true]);
          expect(markers[2]!.compaction).toMatchObject({ number: 3, undoes: 2, undone: [2] });
          const resumed = await ContextManager.resume(await reopen(), 'undo-1', { model: 'claude-sonnet-4-5' });
          expect(readable(activeMessages(resumed.session))).toEqual(readable(activeMessages(cm.session)));

          // Appended after the undo, then undone again (by the resumed manager): the view before the first compaction.
          await resumed.append(user('And the tests.'));
          const later = activeMessages(resumed.session).at(-1)!;
          expect((await resumed.undoCompaction()).undone).toEqual([1]);
          const restored = [...beforeFirst, ...beforeSecond.slice(-8), added, later];
          expect(readable(activeMessages(resumed.session))).toEqual(readable(restored));
          await expect(resumed.undoCompaction()).rejects.toThrow(/no compaction in view/);
          // The restored session goes on: it compacts again.
          expect((await resumed.compactNow({ target: 3000 })).marker).toBeDefined();
        } finally {
          await close();
        }
      });

      it('marker N: the view before N and every message since, the later compactions undone with it; all: the first', async () => {
        const { store, reopen, close } = await sc.open();
        try {
          const cm = manager(store, 'undo-n');
          await cm.append(user('Find every use of value.'));
          await grepSteps(cm, 0, 8);
          const beforeFirst = activeMessages(cm.session);
          expect((await cm.compactNow({ target: 3000 })).marker?.number).toBe(1);
          const afterFirst = activeMessages(cm.session).length;
          await grepSteps(cm, 8, 4);
          const beforeSecond = activeMessages(cm.session);
          expect((await cm.compactNow({ target: 3000 })).marker?.number).toBe(2);
          const afterSecond = activeMessages(cm.session).length;
          await grepSteps(cm, 12, 4);
          const beforeThird = activeMessages(cm.session);
          expect((await cm.compactNow({ target: 3000 })).marker?.number).toBe(3);
          await cm.append(user('Now list the modules.'));
          const added = activeMessages(cm.session).at(-1)!;
          const kept = records(await store.entries('undo-n'));
          // Messages appended between the compactions (after each one's view).
          const sinceFirst = beforeSecond.slice(afterFirst);
          const sinceSecond = beforeThird.slice(afterSecond);
          expect(sinceFirst).toHaveLength(8);
          expect(sinceSecond).toHaveLength(8);

          const r = await cm.undoCompaction({ marker: 2 });
          expect(r.undone).toEqual([3, 2]);
          expect(readable(activeMessages(cm.session))).toEqual(readable([...beforeSecond, ...sinceSecond, added]));
          expect(r.afterMessages).toBe(beforeSecond.length + sinceSecond.length + 1);
          // Nothing deleted: every record is still there, the undo's checkpoint after them.
          const now = await store.entries('undo-n');
          expect(records(now.slice(0, kept.length))).toEqual(kept);
          const markers = now.filter((e) => e.compaction).map((e) => e.compaction!);
          expect(markers.map((m) => [m.number, m.trigger === 'undo'])).toEqual([
            [1, false],
            [2, false],
            [3, false],
            [4, true],
          ]);
          expect(markers[3]).toMatchObject({ source: 'abridge', undoes: 2, undone: [3, 2] });
          const resumed = await ContextManager.resume(await reopen(), 'undo-n', { model: 'claude-sonnet-4-5' });
          expect(readable(activeMessages(resumed.session))).toEqual(readable(activeMessages(cm.session)));

          // Not in view: undone, an undo's own number, never made — each named, with those in view.
          await expect(resumed.undoCompaction({ marker: 3 })).rejects.toMatchObject({
            code: 'INVALID_INPUT',
            message: 'undoCompaction: compaction #3 of "undo-n" is not in view (undone by #4); in view: #1',
          });
          await expect(resumed.undoCompaction({ marker: 4 })).rejects.toMatchObject({
            code: 'INVALID_INPUT',
            message: 'undoCompaction: #4 of "undo-n" is an undo (of #2), not a compaction; in view: #1',
          });
          await expect(resumed.undoCompaction({ marker: 9 })).rejects.toMatchObject({
            code: 'INVALID_INPUT',
            message: 'undoCompaction: "undo-n" has no compaction #9; in view: #1',
          });
          for (const bad of [{ marker: 0 }, { marker: 1.5 }, { marker: 1, all: true }])
            await expect(resumed.undoCompaction(bad)).rejects.toMatchObject({ code: 'INVALID_INPUT' });
          expect((await store.entries('undo-n')).length).toBe(now.length);

          // Compacted again after the undo, then all undone: the view before the first, and every message since.
          await grepSteps(resumed, 16, 4);
          const beforeFifth = activeMessages(resumed.session);
          const sinceUndo = beforeFifth.slice(beforeSecond.length + sinceSecond.length + 1);
          expect(sinceUndo).toHaveLength(8);
          expect((await resumed.compactNow({ target: 3000 })).marker?.number).toBe(5);
          const all = await resumed.undoCompaction({ all: true });
          expect(all.undone).toEqual([5, 1]);
          const everything = [...beforeFirst, ...sinceFirst, ...sinceSecond, added, ...sinceUndo];
          expect(readable(activeMessages(resumed.session))).toEqual(readable(everything));
          const again = await ContextManager.resume(await reopen(), 'undo-n', { model: 'claude-sonnet-4-5' });
          expect(readable(activeMessages(again.session))).toEqual(readable(everything));
          await expect(again.undoCompaction({ marker: 1 })).rejects.toThrow(
            'undoCompaction: no compaction in view in "undo-n"; nothing to undo',
          );
          const last = (await store.entries('undo-n')).filter((e) => e.compaction).map((e) => e.compaction!);
          expect(last.map((m) => m.number)).toEqual([1, 2, 3, 4, 5, 6]);
          expect(last[5]).toMatchObject({ trigger: 'undo', undoes: 1, undone: [5, 1] });
        } finally {
          await close();
        }
      });
    },
  );
