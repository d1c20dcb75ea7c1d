/**
 * loadSession, which every reader of a stored session goes through: the log of a manager resumed from a snapshot read as
 * one tree, and every other log read as it was stored.
 */
import { describe, expect, it } from 'vitest';
import { readSession } from '../formats/read.js';
import { ContextManager } from '../manager/context-manager.js';
import { conversationEntries } from '../model/branch.js';
import type { Entry } from '../model/types.js';
import type { AbridgeMarker } from '../model/view.js';
import { grepSteps } from '../../test/support/agent-loop.js';
import { fixtureTranscripts } from '../../test/support/fixture-transcripts.js';
import { messageEntry } from '../../test/support/session-store-suite.js';
import { MemorySessionStore } from './memory-session-store.js';
import { importSession, loadSession } from './session-store.js';

type Draft = Omit<Entry, 'index'>;

const withIds = (id: string, parentId: string | null, draft: Draft): Draft => ({ ...draft, id, parentId });
const viewMarker = (id: string, parentId: string): Draft => {
  const compaction: AbridgeMarker = {
    number: 1,
    summary: '',
    source: 'abridge',
    view: [{ role: 'user', parts: [{ type: 'text', text: 'kept' }] }],
  };
  return { kind: 'compaction', id, parentId, compaction };
};

describe('loadSession', () => {
  it("a manager resumed from a snapshot: its first entry, whose parent is the snapshot's last message, follows the entry before it", async () => {
    const store = new MemorySessionStore();
    const cm = new ContextManager({ model: 'claude-sonnet-4-5', provider: 'anthropic', store, sessionId: 's' });
    await cm.append({ role: 'user', parts: [{ type: 'text', text: 'Find every use of value.' }] });
    await grepSteps(cm, 0, 8);
    expect((await cm.compactNow({ target: 3000 })).marker).toBeDefined();
    const resumed = await ContextManager.resume(store, 's', {});
    await resumed.append({ role: 'user', parts: [{ type: 'text', text: 'Now list the modules.' }] });

    const log = await store.entries('s');
    const ids = new Set(log.map((e) => e.id));
    const dangling = log.filter((e) => typeof e.parentId === 'string' && !ids.has(e.parentId));
    expect(dangling.map((e) => e.index)).toEqual([log.length - 1]);

    const loaded = await loadSession(store, 's');
    expect(loaded.entries.slice(0, -1)).toEqual(log.slice(0, -1));
    expect(loaded.entries.at(-1)).toEqual({ ...log.at(-1), parentId: log.at(-2)!.id });
    expect(conversationEntries(loaded).map((e) => e.index)).toEqual(log.map((e) => e.index));
  });

  it('relinks only a parent the log holds nowhere, and only after a marker with its view', async () => {
    const store = new MemorySessionStore();
    const stored = async (entries: Draft[]) => (await store.createSession({ format: 'pi', info: {} }, entries)).id;
    const relinked = await stored([
      withIds('a', null, messageEntry('user', 'one')),
      viewMarker('b', 'a'),
      withIds('c', 'gone', messageEntry('user', 'two')),
      withIds('d', 'c', messageEntry('assistant', 'three')),
    ]);
    expect((await loadSession(store, relinked)).entries.map((e) => e.parentId)).toEqual([null, 'a', 'b', 'c']);

    // A parent recorded later in the log is one the log holds.
    const later = await stored([
      withIds('a', null, messageEntry('user', 'one')),
      viewMarker('b', 'a'),
      withIds('c', 'd', messageEntry('user', 'two')),
      withIds('d', 'b', messageEntry('assistant', 'three')),
    ]);
    expect((await loadSession(store, later)).entries).toEqual(await store.entries(later));

    // Without a snapshot's marker before it, a dangling link is the transcript's own (a file continued from another).
    const own = await stored([
      withIds('a', null, messageEntry('user', 'one')),
      withIds('c', 'in-another-file', messageEntry('user', 'two')),
    ]);
    expect((await loadSession(store, own)).entries).toEqual(await store.entries(own));
  });

  it('an imported pi or Claude Code transcript reads exactly as it was stored', async () => {
    const store = new MemorySessionStore();
    for (const [i, f] of (await fixtureTranscripts()).entries()) {
      // (Two fixtures share their session's id.)
      const { id } = await importSession(store, await readSession(f.file), `fixture-${i}`);
      expect((await loadSession(store, id)).entries, f.name).toEqual(await store.entries(id));
    }
  });
});
