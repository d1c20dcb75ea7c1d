/**
 * ContextManager.undoCompaction on a MemorySessionStore and SQLite: the working session restarts from the view before
 * the last compaction in view (then what was appended since), the store keeps the compaction and records the undo as
 * a checkpoint, and a manager resumed from the store continues from the restored view; called again, it undoes the one
 * before; with none in view, it is refused.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Message } from '../model/types.js';
import { activeMessages } from '../model/view.js';
import { MemorySessionStore } from '../store/memory-session-store.js';
import type { SessionStore } from '../store/session-store.js';
import { openSqliteStore } from '../store/sqlite/index.js';
import { grepSteps } from '../../test/support/agent-loop.js';
import { ContextManager } from './context-manager.js';

/** Messages as the model reads them (no bills, no timestamps). */
const readable = (ms: readonly Message[]) => ms.map((m) => JSON.stringify({ role: m.role, parts: m.parts }));

const stores: { name: string; open: () => Promise<{ store: SessionStore; reopen: () => Promise<SessionStore> }> }[] = [
  {
    name: 'MemorySessionStore',
    open: async () => {
      const store = new MemorySessionStore();
      return { store, reopen: async () => store };
    },
  },
  {
    name: 'SQLite',
    open: async () => {
      const file = join(mkdtempSync(join(tmpdir(), 'abridge-undo-')), 's.db');
      return { store: await openSqliteStore(file), reopen: () => openSqliteStore(file) };
    },
  },
];

for (const sc of stores)
  describe(`ContextManager.undoCompaction on ${sc.name}`, () => {
    it('restores the view before the last compaction, kept by a resumed manager; again: the one before', async () => {
      const { store, reopen } = await sc.open();
      const cm = new ContextManager({
        model: 'claude-sonnet-4-5',
        provider: 'anthropic',
        store,
        sessionId: 'undo-1',
        system: 'You are a coding agent.',
        now: () => new Date(0),
      });
      await expect(cm.undoCompaction()).rejects.toThrow(/no compaction in view/);
      await cm.append({ role: 'user', parts: [{ type: 'text', text: 'Find every use of value.' }] });
      await grepSteps(cm, 0, 8);
      const beforeFirst = activeMessages(cm.session);
      const first = await cm.compactNow({ target: 3000 });
      expect(first.marker).toBeDefined();
      await grepSteps(cm, 8, 4);
      const beforeSecond = activeMessages(cm.session);
      const second = await cm.compactNow({ target: 3000 });
      expect(second.marker).toBeDefined();
      const compacted = activeMessages(cm.session).length;
      await cm.append({ role: 'user', parts: [{ type: 'text', text: 'Now list the modules.' }] });
      const added = activeMessages(cm.session).at(-1)!;

      const r = await cm.undoCompaction();
      expect(r.undone).toBe(2);
      expect(r.afterTokens).toBeGreaterThan(r.beforeTokens);
      expect(readable(activeMessages(cm.session))).toEqual(readable([...beforeSecond, added]));
      expect(activeMessages(cm.session).length).toBeGreaterThan(compacted + 1);
      // The store keeps both compactions, and the undo as a checkpoint a resumed manager starts from.
      const markers = (await store.entries('undo-1')).filter((e) => e.compaction);
      expect(markers.map((e) => e.compaction!.trigger === 'undo')).toEqual([false, false, true]);
      const resumed = await ContextManager.resume(await reopen(), 'undo-1', { model: 'claude-sonnet-4-5' });
      expect(readable(activeMessages(resumed.session))).toEqual(readable(activeMessages(cm.session)));

      // Appended after the undo, then undone again (by the resumed manager): the view before the first compaction.
      await resumed.append({ role: 'user', parts: [{ type: 'text', text: 'And the tests.' }] });
      const later = activeMessages(resumed.session).at(-1)!;
      expect((await resumed.undoCompaction()).undone).toBe(1);
      const restored = [...beforeFirst, ...beforeSecond.slice(-8), added, later];
      expect(readable(activeMessages(resumed.session))).toEqual(readable(restored));
      await expect(resumed.undoCompaction()).rejects.toThrow(/no compaction in view/);
      // The restored session goes on: it compacts again.
      expect((await resumed.compactNow({ target: 3000 })).marker).toBeDefined();
    });
  });
