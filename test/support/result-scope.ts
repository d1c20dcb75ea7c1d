import { expect } from 'vitest';
import { AbridgeError } from '../../src/errors.js';
import type { KeyedResultStore } from '../../src/compaction/result-store.js';

/**
 * The session-scoping contract every shared ResultStore keeps (memory, file, SQLite, PostgreSQL): a ref written for
 * session A cannot be read, stat'ed or listed through session B's view — B is answered exactly as for an unknown ref —
 * while A reads it back whole; the same content put by both sessions is stored twice, each copy owned by its session.
 */
export async function checkSessionScoping(store: KeyedResultStore): Promise<void> {
  const a = store.forSession('session-a');
  const b = store.forSession('session-b');
  const secret = 'output only session A may read\nline 2\n';
  const put = await a.put(secret, { tool: 'bash', callId: 'c1' });
  expect(put.sessionId).toBe('session-a');
  expect((await a.read(put.refId)).text).toBe(secret);
  expect(await a.stat(put.refId)).toEqual(put);
  expect((await a.list()).map((r) => r.refId)).toContain(put.refId);

  const denied = await b.read(put.refId).then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(denied).toBeInstanceOf(AbridgeError);
  expect((denied as AbridgeError).code).toBe('RESULT_NOT_FOUND');
  expect((denied as AbridgeError).message).not.toContain('session-a');
  expect(await b.stat(put.refId)).toBeUndefined();
  expect((await b.list()).map((r) => r.refId)).not.toContain(put.refId);

  // Same content from B: its own copy under its own ref; neither view sees the other's.
  const mine = await b.put(secret);
  expect(mine.refId).not.toBe(put.refId);
  expect((await b.read(mine.refId)).text).toBe(secret);
  expect(await a.stat(mine.refId)).toBeUndefined();
  // A result put without a session (the whole store's own) is not readable through a session's view either.
  const global = await store.put('unscoped result\n');
  expect(await a.stat(global.refId)).toBeUndefined();
}
