import { describe, expect, it } from 'vitest';
import { AbridgeError } from '../errors.js';
import { MemorySessionStore } from './memory-session-store.js';
import { messageEntry, runSessionStoreSuite } from '../../test/support/session-store-suite.js';

runSessionStoreSuite('MemorySessionStore', async () => new MemorySessionStore());

describe('MemorySessionStore', () => {
  it('uses its clock for createdAt, updatedAt and snapshots', async () => {
    let t = Date.parse('2026-01-01T00:00:00.000Z');
    const store = new MemorySessionStore({ now: () => new Date((t += 1000)) });
    const s = await store.createSession({ id: 's', format: 'pi', info: {} });
    expect(s.createdAt).toBe('2026-01-01T00:00:01.000Z');
    await store.append('s', [messageEntry('user', 'x')]);
    expect((await store.getSession('s'))!.updatedAt).toBe('2026-01-01T00:00:02.000Z');
    await store.recordCompaction('s', [], { messages: [] });
    expect((await store.latestSnapshot('s'))!.createdAt).toBe('2026-01-01T00:00:03.000Z');
  });

  it('sessions are independent', async () => {
    const store = new MemorySessionStore();
    await store.createSession({ id: 'a', format: 'pi', info: {} });
    await store.createSession({ id: 'b', format: 'pi', info: {} });
    await store.append('a', [messageEntry('user', 'only in a')]);
    expect(await store.entries('b')).toEqual([]);
    expect((await store.getSession('b'))!.version).toBe(0);
  });

  it('an invalid session id is INVALID_INPUT', async () => {
    const store = new MemorySessionStore();
    await expect(store.createSession({ id: '', format: 'pi', info: {} })).rejects.toMatchObject({
      code: 'INVALID_INPUT',
    });
  });

  it('refuses use after close', async () => {
    const store = new MemorySessionStore();
    await store.close();
    await expect(store.listSessions()).rejects.toBeInstanceOf(AbridgeError);
  });
});
