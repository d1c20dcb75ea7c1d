/**
 * The behavior every SessionStore must have, as a vitest suite: call `runSessionStoreSuite` from a store's test file.
 *
 *   runSessionStoreSuite('SqliteSessionStore', async () => openSqliteStore(tempFile()), () => removeTempFiles());
 *
 * `makeStore` is called before each test (a fresh store, or a new connection to a shared database: the suite makes
 * sessions with fresh UUIDs and never assumes it is alone in the store); the suite closes the store after each test.
 * `cleanup`, when given, runs once after all of them (drop a schema, delete temp files).
 *
 * Not a test file itself (vitest includes `*.test.ts` only) and not part of the build: it imports vitest.
 */
import { randomUUID } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { compact } from '../../src/compaction/compact.js';
import { AbridgeError, type AbridgeErrorCode } from '../../src/errors.js';
import { readSession } from '../../src/formats/read.js';
import { writeSession } from '../../src/formats/write.js';
import type { CompactionMarker, Entry, Message, Role } from '../../src/model/types.js';
import { activeMessages } from '../../src/model/view.js';
import { corpusAvailable, corpusFiles } from './corpus.js';
import { importSession, loadSession, type SessionStore } from '../../src/store/session-store.js';

export const EXAMPLE_TRANSCRIPT = fileURLToPath(new URL('../../examples/refactor-session.jsonl', import.meta.url));
const REPO = resolve(fileURLToPath(new URL('../..', import.meta.url)));

/**
 * The built package for child processes and CLI tests: `dist/`, which vitest's global setup (test/global-setup.ts)
 * builds before any test runs when it is missing or older than the sources; no test builds anything inside its own
 * timeout. `cleanup` is kept for the callers (there is nothing to remove).
 */
export function builtDist(): { dir: string; cleanup: () => void } {
  const dir = join(REPO, 'dist');
  if (!existsSync(join(dir, 'cli/main.js')))
    throw new Error('dist/cli/main.js not found: vitest builds it in test/global-setup.ts (or run `npm run build`)');
  return { dir, cleanup: () => {} };
}

type Draft = Omit<Entry, 'index'>;

/** A message entry as a transcript reader would make it: the message, and a raw record that carries it. */
export function messageEntry(role: Role, text: string, extra: Partial<Draft> = {}): Draft {
  const message: Message = { role, parts: [{ type: 'text', text }] };
  return {
    kind: 'message',
    sourceType: 'message',
    message,
    raw: { type: 'message', message: { role, content: text } },
    ...extra,
  };
}

function markerEntry(number: number, summary: string, archived?: { fromEntry: number; toEntry: number }): Draft {
  const marker: CompactionMarker = {
    number,
    summary,
    source: 'abridge',
    ...(archived ? { archived, firstKeptEntry: archived.toEntry + 1 } : {}),
  };
  return {
    kind: 'compaction',
    sourceType: 'abridge',
    compaction: marker,
    message: {
      role: 'user',
      parts: [
        { type: 'compaction', marker },
        { type: 'text', text: summary },
      ],
    },
  };
}

async function rejection(p: Promise<unknown>, code: AbridgeErrorCode): Promise<AbridgeError> {
  let caught: unknown;
  try {
    await p;
  } catch (err) {
    caught = err;
  }
  expect(caught, `expected a rejection with ${code}`).toBeInstanceOf(AbridgeError);
  expect((caught as AbridgeError).code).toBe(code);
  return caught as AbridgeError;
}

const texts = (entries: readonly Entry[]) =>
  entries.map((e) => (e.message?.parts.find((p) => p.type === 'text') as { text?: string } | undefined)?.text);

export function runSessionStoreSuite(
  name: string,
  makeStore: () => Promise<SessionStore>,
  cleanup?: () => Promise<void> | void,
): void {
  describe(`${name}: the SessionStore contract`, () => {
    let store: SessionStore;
    beforeEach(async () => {
      store = await makeStore();
    });
    afterEach(async () => {
      await store?.close();
    });
    if (cleanup) afterAll(cleanup);

    /** A new session with `n` message entries u0, a1, u2, … */
    async function sessionWith(n: number): Promise<string> {
      const { id } = await store.createSession({ format: 'pi', info: { cwd: '/work' } });
      if (n > 0)
        await store.append(
          id,
          Array.from({ length: n }, (_, i) => messageEntry(i % 2 ? 'assistant' : 'user', `${i % 2 ? 'a' : 'u'}${i}`)),
        );
      return id;
    }

    describe('sessions', () => {
      it('createSession with entries stores the session and all of them at once (version = their count); importSession uses it', async () => {
        const entries = Array.from({ length: 5 }, (_, i) => messageEntry(i % 2 ? 'assistant' : 'user', `m${i}`));
        const created = await store.createSession({ format: 'pi', info: {} }, entries);
        expect(created.version).toBe(5);
        expect((await store.getSession(created.id))!.version).toBe(5);
        expect((await store.entries(created.id)).map((e) => e.message?.parts[0])).toEqual(
          entries.map((e) => e.message!.parts[0]),
        );
        await expect(store.createSession({ id: created.id, format: 'pi', info: {} }, entries)).rejects.toMatchObject({
          code: 'SESSION_EXISTS',
        });
        expect((await store.getSession(created.id))!.version).toBe(5);
      });

      it('createSession stores what it is given at version 0; getSession returns it; listSessions holds it, oldest first', async () => {
        const id = randomUUID();
        const created = await store.createSession({
          id,
          format: 'claude-code',
          info: { id: 'source-id', cwd: '/repo', title: 'Fix the build', startedAt: 1_700_000_000_000, version: 3 },
          extra: { request: { model: 'm', nested: [1, 'two', null, { three: true }] } },
          layout: { finalNewline: false, trailingBlankLines: 2 },
        });
        expect(created).toMatchObject({
          id,
          format: 'claude-code',
          info: { id: 'source-id', cwd: '/repo', title: 'Fix the build', startedAt: 1_700_000_000_000, version: 3 },
          extra: { request: { model: 'm', nested: [1, 'two', null, { three: true }] } },
          layout: { finalNewline: false, trailingBlankLines: 2 },
          version: 0,
        });
        expect(Number.isNaN(Date.parse(created.createdAt))).toBe(false);
        expect(created.updatedAt).toBe(created.createdAt);
        expect(await store.getSession(id)).toEqual(created);

        const second = await store.createSession({ format: 'pi', info: {} });
        const listed = await store.listSessions();
        const ids = listed.map((s) => s.id);
        expect(ids).toContain(id);
        expect(ids.indexOf(second.id)).toBeGreaterThan(ids.indexOf(id));
        expect(listed.find((s) => s.id === id)).toEqual(created);
      });

      it('without an id, a fresh UUID', async () => {
        const a = await store.createSession({ format: 'pi', info: {} });
        const b = await store.createSession({ format: 'pi', info: {} });
        expect(a.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
        expect(b.id).not.toBe(a.id);
      });

      it('a duplicate id is SESSION_EXISTS, and the first session is left as it was', async () => {
        const id = await sessionWith(2);
        const err = await rejection(
          store.createSession({ id, format: 'claude-code', info: { title: 'other' } }),
          'SESSION_EXISTS',
        );
        expect(err.message).toContain(id);
        expect(await store.getSession(id)).toMatchObject({ format: 'pi', version: 2 });
        expect(await store.entries(id)).toHaveLength(2);
      });

      it('an unknown session: getSession is undefined, the others are SESSION_NOT_FOUND naming it', async () => {
        const id = `missing-${randomUUID()}`;
        expect(await store.getSession(id)).toBeUndefined();
        // One at a time: a rejection nobody awaits yet would be reported as unhandled.
        for (const call of [
          () => store.append(id, [messageEntry('user', 'x')]),
          () => store.entries(id),
          () => store.recordCompaction(id, [markerEntry(1, 's')], { messages: [] }),
          () => store.latestSnapshot(id),
          () => store.resume(id),
          () => store.updateInfo(id, { title: 'x' }),
        ]) {
          expect((await rejection(call(), 'SESSION_NOT_FOUND')).message).toContain(id);
        }
      });

      it('updateInfo replaces the info (what the session ran with) without moving the version', async () => {
        const id = await sessionWith(2);
        const settings = {
          writer: 'context-manager' as const,
          model: 'claude-sonnet-4-6',
          provider: 'anthropic',
          contextWindow: 40_000,
          reserveTokens: 20_000,
        };
        await store.updateInfo(id, { id, title: 'run with', settings });
        const after = (await store.getSession(id))!;
        expect(after.info).toEqual({ id, title: 'run with', settings });
        expect(after.version).toBe(2);
        expect((await store.listSessions()).find((s) => s.id === id)?.info.settings).toEqual(settings);
        // Replaced, not merged.
        await store.updateInfo(id, { id });
        expect((await store.getSession(id))!.info).toEqual({ id });
        expect(await store.entries(id)).toHaveLength(2);
      });

      it('an append moves version and updatedAt; getSession and listSessions show them', async () => {
        const id = await sessionWith(0);
        const before = (await store.getSession(id))!;
        await new Promise((r) => setTimeout(r, 5));
        expect(await store.append(id, [messageEntry('user', 'one'), messageEntry('assistant', 'two')])).toEqual({
          version: 2,
        });
        const after = (await store.getSession(id))!;
        expect(after.version).toBe(2);
        expect(after.createdAt).toBe(before.createdAt);
        expect(Date.parse(after.updatedAt)).toBeGreaterThan(Date.parse(before.updatedAt));
        expect((await store.listSessions()).find((s) => s.id === id)?.version).toBe(2);
      });
    });

    describe('createSessionFrom (a stream of batches, one transaction) and entryPages', () => {
      const indexed = (from: number, n: number, tag = 'm'): Entry[] =>
        Array.from({ length: n }, (_, i) => ({
          ...messageEntry(i % 2 ? 'assistant' : 'user', `${tag}${from + i}`),
          index: from + i,
        }));
      async function* slowly<T>(items: readonly T[]): AsyncIterable<T> {
        for (const it of items) {
          await new Promise((r) => setImmediate(r));
          yield it;
        }
      }

      it('stores every batch under one session, in position order even when a batch comes late; finish completes the row', async () => {
        const id = randomUUID();
        const all = indexed(0, 7);
        // 0-2, then 4-6, then 3 (an entry a reader completed at the end).
        const batches = [all.slice(0, 3), all.slice(4), [all[3]!]];
        let finishedWith: number | undefined;
        const created = await store.createSessionFrom({ id, format: 'pi', info: {} }, slowly(batches), {
          finish: ({ entries }) => {
            finishedWith = entries;
            return { info: { id: 'from-the-end', title: 't' }, layout: { finalNewline: false, asRead: 7 } };
          },
        });
        expect(finishedWith).toBe(7);
        expect(created).toMatchObject({ id, version: 7, format: 'pi', info: { id: 'from-the-end', title: 't' } });
        expect(created.layout).toEqual({ finalNewline: false, asRead: 7 });
        expect(await store.getSession(id)).toEqual(created);
        expect(texts(await store.entries(id))).toEqual(all.map((e) => `m${e.index}`));
        const pages: number[][] = [];
        for await (const page of store.entryPages(id, { pageSize: 3 })) pages.push(page.map((e) => e.index));
        expect(pages).toEqual([[0, 1, 2], [3, 4, 5], [6]]);
        const mid: string[] = [];
        for await (const page of store.entryPages(id, { from: 2, to: 5, pageSize: 2 }))
          mid.push(...texts(page).map(String));
        expect(mid).toEqual(['m2', 'm3', 'm4']);
        // The session goes on like any other.
        expect((await store.append(id, [messageEntry('user', 'next')])).version).toBe(8);
      });

      it('an error thrown by the batches, by finish, or by a bad entry leaves no session, and the same import can be retried', async () => {
        const id = randomUUID();
        async function* failing(): AsyncIterable<Entry[]> {
          yield indexed(0, 3);
          throw new Error('the reader failed midway');
        }
        await expect(store.createSessionFrom({ id, format: 'pi', info: {} }, failing())).rejects.toThrow(
          'the reader failed midway',
        );
        expect(await store.getSession(id)).toBeUndefined();
        await expect(
          store.createSessionFrom({ id, format: 'pi', info: {} }, [indexed(0, 2)], {
            finish: () => {
              throw new AbridgeError('INVALID_INPUT', 'refused at the end');
            },
          }),
        ).rejects.toThrow('refused at the end');
        expect(await store.getSession(id)).toBeUndefined();
        const cyclic = indexed(2, 1)[0]! as Entry & { raw: Record<string, unknown> };
        cyclic.raw.self = cyclic.raw;
        await rejection(
          store.createSessionFrom({ id, format: 'pi', info: {} }, [indexed(0, 2), [cyclic]]),
          'INVALID_INPUT',
        );
        expect(await store.getSession(id)).toBeUndefined();
        expect((await store.listSessions()).map((s) => s.id)).not.toContain(id);
        // Nothing was left to block the retry.
        const created = await store.createSessionFrom({ id, format: 'pi', info: {} }, [indexed(0, 2), indexed(2, 2)]);
        expect(created.version).toBe(4);
        expect(texts(await store.entries(id))).toEqual(['m0', 'm1', 'm2', 'm3']);
      });

      it('positions must be 0…n-1 each once: a duplicate or a gap is INVALID_INPUT and stores nothing', async () => {
        const id = randomUUID();
        await rejection(
          store.createSessionFrom({ id, format: 'pi', info: {} }, [indexed(0, 2), indexed(1, 2)]),
          'INVALID_INPUT',
        );
        await rejection(
          store.createSessionFrom({ id, format: 'pi', info: {} }, [indexed(0, 2), indexed(3, 1)]),
          'INVALID_INPUT',
        );
        const noIndex = { ...messageEntry('user', 'x') } as Entry;
        await rejection(store.createSessionFrom({ id, format: 'pi', info: {} }, [[noIndex]]), 'INVALID_INPUT');
        expect(await store.getSession(id)).toBeUndefined();
        // No batches at all: an empty session.
        expect((await store.createSessionFrom({ id, format: 'pi', info: {} }, [])).version).toBe(0);
      });

      it('an id already taken is SESSION_EXISTS before any batch is read, and the existing session is untouched', async () => {
        const id = await sessionWith(2);
        let read = false;
        async function* batches(): AsyncIterable<Entry[]> {
          read = true;
          yield indexed(0, 1);
        }
        await rejection(store.createSessionFrom({ id, format: 'pi', info: {} }, batches()), 'SESSION_EXISTS');
        expect(read).toBe(false);
        expect(texts(await store.entries(id))).toEqual(['u0', 'a1']);
      });

      it('entryPages of a session the store does not hold is SESSION_NOT_FOUND; leaving the loop early ends the read', async () => {
        await rejection(
          (async () => {
            for await (const _ of store.entryPages(randomUUID())) break;
          })(),
          'SESSION_NOT_FOUND',
        );
        const id = await sessionWith(5);
        for await (const page of store.entryPages(id, { pageSize: 2 })) {
          expect(page.length).toBe(2);
          break;
        }
        // The store is usable again at once (the read transaction ended with the loop).
        expect((await store.append(id, [messageEntry('user', 'after')])).version).toBe(6);
        const seen: number[] = [];
        for await (const page of store.entryPages(id, { pageSize: 4 })) seen.push(...page.map((e) => e.index));
        expect(seen).toEqual([0, 1, 2, 3, 4, 5]);
      });

      it('a large transcript streamed in many batches comes back byte for byte (importSession sets layout.asRead)', async () => {
        const session = await readSession(EXAMPLE_TRANSCRIPT);
        const batches: Entry[][] = [];
        for (let i = 0; i < session.entries.length; i += 7) batches.push(session.entries.slice(i, i + 7));
        const created = await store.createSessionFrom({ format: session.format, info: {} }, slowly(batches), {
          finish: () => ({ info: session.info, layout: { finalNewline: session.finalNewline ?? true } }),
        });
        expect(created.version).toBe(session.entries.length);
        const back = await loadSession(store, created.id);
        expect(writeSession(back)).toBe(readFileSync(EXAMPLE_TRANSCRIPT, 'utf8'));
        const imported = await importSession(store, session, randomUUID());
        expect(imported.layout?.asRead).toBe(session.entries.length);
      });
    });

    describe('append', () => {
      it('keeps the order; each entry gets its position as index, whatever index it came with', async () => {
        const id = await sessionWith(0);
        expect(
          await store.append(id, [
            messageEntry('user', 'e0'),
            messageEntry('assistant', 'e1'),
            messageEntry('user', 'e2'),
          ]),
        ).toEqual({ version: 3 });
        expect(
          await store.append(id, [
            { ...messageEntry('assistant', 'e3'), index: 99 } as Draft,
            messageEntry('user', 'e4'),
          ]),
        ).toEqual({ version: 5 });
        expect(await store.append(id, [])).toEqual({ version: 5 });
        const entries = await store.entries(id);
        expect(entries.map((e) => e.index)).toEqual([0, 1, 2, 3, 4]);
        expect(texts(entries)).toEqual(['e0', 'e1', 'e2', 'e3', 'e4']);
      });

      it('stores entries whole: every field, the raw record and unusual strings', async () => {
        const id = await sessionWith(0);
        const entry: Draft = {
          kind: 'message',
          sourceType: 'message',
          id: 'abc',
          parentId: null,
          timestamp: 1_712_345_678_901,
          line: 7,
          blankLinesBefore: 1,
          message: {
            role: 'assistant',
            parts: [
              { type: 'thinking', text: 'hmm', signature: 'sig' },
              { type: 'text', text: 'naïve 😀 \u2028 "quoted" \\ \n\t\u0000 \ud800 lone surrogate' },
              {
                type: 'tool-call',
                id: 'call_1',
                name: 'bash',
                arguments: { command: 'ls -la', nested: { a: [1, 2.5, -3e-7, null, false] } },
              },
            ],
            model: 'claude-x',
            usage: { input: 10, output: 20, cacheRead: 30, cacheWrite: 0 },
            timestamp: 1_712_345_678_901,
          },
          raw: {
            type: 'message',
            unknown_field: { deep: ['kept', 1, true, null] },
            big: 12345678901234,
            float: 0.1,
            '': 'empty key',
          },
        };
        await store.append(id, [entry, { kind: 'unknown', line: 8, rawText: '{"truncated": ' }]);
        const [back, bad] = await store.entries(id);
        expect(back).toEqual({ ...entry, index: 0 });
        expect(bad).toEqual({ kind: 'unknown', line: 8, rawText: '{"truncated": ', index: 1 });
      });

      it('copies in and out: changing an appended or a returned entry does not change the store', async () => {
        const id = await sessionWith(0);
        const entry = messageEntry('user', 'original');
        await store.append(id, [entry]);
        (entry.message!.parts[0] as { text: string }).text = 'changed after append';
        (entry.raw as { type: string }).type = 'changed';
        const [first] = await store.entries(id);
        expect(texts([first!])).toEqual(['original']);
        expect(first!.raw).toEqual({ type: 'message', message: { role: 'user', content: 'original' } });
        (first!.message!.parts[0] as { text: string }).text = 'changed after read';
        first!.kind = 'label';
        const [again] = await store.entries(id);
        expect(texts([again!])).toEqual(['original']);
        expect(again!.kind).toBe('message');
      });

      it('a batch is atomic: an entry that cannot be serialized (a BigInt in raw) fails it whole, nothing is appended', async () => {
        const id = await sessionWith(2);
        const batch = [
          messageEntry('user', 'fine'),
          messageEntry('assistant', 'also fine'),
          { ...messageEntry('user', 'bad'), raw: { n: 10n } },
          messageEntry('user', 'after'),
        ];
        const err = await rejection(store.append(id, batch), 'INVALID_INPUT');
        expect(err.message).toMatch(/entry 2\b/);
        expect((await store.getSession(id))!.version).toBe(2);
        expect(texts(await store.entries(id))).toEqual(['u0', 'a1']);
        // A cycle, too.
        const cyclic: Record<string, unknown> = { type: 'message' };
        cyclic.self = cyclic;
        await rejection(
          store.append(id, [messageEntry('user', 'ok'), { ...messageEntry('user', 'cycle'), raw: cyclic }]),
          'INVALID_INPUT',
        );
        expect(await store.entries(id)).toHaveLength(2);
        // The store still works.
        expect(await store.append(id, [messageEntry('user', 'u2')], { expectedVersion: 2 })).toEqual({ version: 3 });
      });
    });

    describe('optimistic concurrency', () => {
      it('with the right expectedVersion the append goes through; a stale one is CONFLICT naming both versions, and nothing is appended', async () => {
        const id = await sessionWith(0);
        expect(await store.append(id, [messageEntry('user', 'a')], { expectedVersion: 0 })).toEqual({ version: 1 });
        expect(
          await store.append(id, [messageEntry('assistant', 'b'), messageEntry('user', 'c')], { expectedVersion: 1 }),
        ).toEqual({ version: 3 });
        const err = await rejection(
          store.append(id, [messageEntry('user', 'stale')], { expectedVersion: 1 }),
          'CONFLICT',
        );
        expect(err.message).toMatch(/\b1\b/);
        expect(err.message).toMatch(/\b3\b/);
        await rejection(store.append(id, [messageEntry('user', 'ahead')], { expectedVersion: 7 }), 'CONFLICT');
        // An empty batch checks the version too.
        await rejection(store.append(id, [], { expectedVersion: 2 }), 'CONFLICT');
        expect(texts(await store.entries(id))).toEqual(['a', 'b', 'c']);
        // Without expectedVersion, no check.
        expect(await store.append(id, [messageEntry('assistant', 'd')])).toEqual({ version: 4 });
      });

      it('an invalid expectedVersion is INVALID_INPUT', async () => {
        const id = await sessionWith(1);
        for (const v of [-1, 1.5, Number.NaN, '1'])
          await rejection(
            store.append(id, [messageEntry('user', 'x')], { expectedVersion: v as number }),
            'INVALID_INPUT',
          );
        expect(await store.entries(id)).toHaveLength(1);
      });

      it('writers racing with the same expectedVersion: exactly one wins, the others get CONFLICT', async () => {
        const id = await sessionWith(3);
        const results = await Promise.allSettled(
          Array.from({ length: 8 }, (_, w) =>
            store.append(id, [messageEntry('user', `w${w}-0`), messageEntry('assistant', `w${w}-1`)], {
              expectedVersion: 3,
            }),
          ),
        );
        const won = results.filter((r) => r.status === 'fulfilled');
        expect(won).toHaveLength(1);
        expect((won[0] as PromiseFulfilledResult<{ version: number }>).value).toEqual({ version: 5 });
        for (const r of results) if (r.status === 'rejected') expect((r.reason as AbridgeError).code).toBe('CONFLICT');
        const tail = texts(await store.entries(id, { from: 3 }));
        expect(tail).toHaveLength(2);
        expect(tail[0]!.slice(0, -2)).toBe(tail[1]!.slice(0, -2));
      });
    });

    describe('entries(range)', () => {
      it('[from, to), clamped to what exists', async () => {
        const id = await sessionWith(6);
        const idx = async (range?: { from?: number; to?: number }) =>
          (await store.entries(id, range)).map((e) => e.index);
        expect(await idx()).toEqual([0, 1, 2, 3, 4, 5]);
        expect(await idx({ from: 2, to: 5 })).toEqual([2, 3, 4]);
        expect(await idx({ from: 4 })).toEqual([4, 5]);
        expect(await idx({ to: 2 })).toEqual([0, 1]);
        expect(await idx({ from: 3, to: 4 })).toEqual([3]);
        expect(await idx({ from: 3, to: 3 })).toEqual([]);
        expect(await idx({ from: 5, to: 2 })).toEqual([]);
        expect(await idx({ from: 6 })).toEqual([]);
        expect(await idx({ from: 100, to: 200 })).toEqual([]);
        expect(await idx({ from: 4, to: 100 })).toEqual([4, 5]);
        expect(texts(await store.entries(id, { from: 2, to: 4 }))).toEqual(['u2', 'a3']);
      });

      it('a negative or fractional bound is INVALID_INPUT', async () => {
        const id = await sessionWith(2);
        for (const range of [{ from: -1 }, { to: -2 }, { from: 0.5 }, { to: Number.NaN }])
          await rejection(store.entries(id, range), 'INVALID_INPUT');
      });

      it('an empty session has no entries', async () => {
        const id = await sessionWith(0);
        expect(await store.entries(id)).toEqual([]);
      });
    });

    describe('compactions, snapshots and resume', () => {
      it('recordCompaction appends its entries and saves the snapshot at the new version; latestSnapshot is the last one', async () => {
        const id = await sessionWith(4);
        expect(await store.latestSnapshot(id)).toBeUndefined();
        const summary: Message = { role: 'user', parts: [{ type: 'text', text: 'summary of u0..a1' }] };
        const kept: Message[] = [
          summary,
          { role: 'user', parts: [{ type: 'text', text: 'u2' }] },
          { role: 'assistant', parts: [{ type: 'text', text: 'a3' }] },
        ];
        const marker = markerEntry(1, 'summary of u0..a1', { fromEntry: 0, toEntry: 1 });
        expect(
          await store.recordCompaction(
            id,
            [marker],
            { messages: kept, marker: marker.compaction!, tokens: 1234 },
            { expectedVersion: 4 },
          ),
        ).toEqual({ version: 5 });
        expect((await store.entries(id, { from: 4 }))[0]).toEqual({ ...marker, index: 4 });
        const snap = (await store.latestSnapshot(id))!;
        expect(snap).toMatchObject({
          sessionId: id,
          atVersion: 5,
          messages: kept,
          marker: marker.compaction,
          tokens: 1234,
        });
        expect(Number.isNaN(Date.parse(snap.createdAt))).toBe(false);

        // Entries before the marker go in the same transaction; a snapshot without marker or tokens is fine.
        const second: Message[] = [{ role: 'user', parts: [{ type: 'text', text: 'second summary' }] }];
        expect(
          await store.recordCompaction(id, [messageEntry('user', 'u5'), markerEntry(2, 'second summary')], {
            messages: second,
          }),
        ).toEqual({ version: 7 });
        const latest = (await store.latestSnapshot(id))!;
        expect(latest).toMatchObject({ sessionId: id, atVersion: 7, messages: second });
        expect(latest.marker).toBeUndefined();
        expect(latest.tokens).toBeUndefined();
        expect(texts(await store.entries(id, { from: 5 }))).toEqual(['u5', 'second summary']);
      });

      it('recordCompaction is all or nothing: a stale version or an unserializable snapshot or entry records nothing', async () => {
        const id = await sessionWith(4);
        const messages: Message[] = [{ role: 'user', parts: [{ type: 'text', text: 's' }] }];
        await rejection(
          store.recordCompaction(id, [markerEntry(1, 's')], { messages }, { expectedVersion: 3 }),
          'CONFLICT',
        );
        await rejection(
          store.recordCompaction(id, [markerEntry(1, 's')], {
            messages: [{ role: 'user', parts: [{ type: 'tool-call', id: 'c', name: 'n', arguments: 5n }] }],
          }),
          'INVALID_INPUT',
        );
        await rejection(
          store.recordCompaction(id, [{ ...markerEntry(1, 's'), raw: { n: 1n } }], { messages }),
          'INVALID_INPUT',
        );
        expect((await store.getSession(id))!.version).toBe(4);
        expect(await store.entries(id)).toHaveLength(4);
        expect(await store.latestSnapshot(id)).toBeUndefined();
      });

      it('snapshots are copies: changing the messages given or returned does not change the store', async () => {
        const id = await sessionWith(2);
        const messages: Message[] = [{ role: 'user', parts: [{ type: 'text', text: 'kept' }] }];
        await store.recordCompaction(id, [markerEntry(1, 'kept')], { messages });
        (messages[0]!.parts[0] as { text: string }).text = 'changed';
        const snap = (await store.latestSnapshot(id))!;
        expect(snap.messages).toEqual([{ role: 'user', parts: [{ type: 'text', text: 'kept' }] }]);
        snap.messages.pop();
        expect((await store.resume(id)).messages).toHaveLength(1);
      });

      it('resume without a snapshot: the activeView of the whole history', async () => {
        const id = await sessionWith(5);
        const r = await store.resume(id);
        expect(r).toMatchObject({ fromSnapshot: false, appended: 5, version: 5 });
        expect(r.snapshotAt).toBeUndefined();
        expect(r.messages).toEqual(activeMessages(await loadSession(store, id)));
        expect(r.messages.map((m) => (m.parts[0] as { text: string }).text)).toEqual(['u0', 'a1', 'u2', 'a3', 'u4']);

        // A compaction marker appended without a snapshot is honored: the view archives what it says.
        await store.append(id, [markerEntry(1, 'summary of u0..u2', { fromEntry: 0, toEntry: 2 })]);
        const after = await store.resume(id);
        expect(after.fromSnapshot).toBe(false);
        expect(after.messages.map((m) => (m.parts.find((p) => p.type === 'text') as { text: string }).text)).toEqual([
          'summary of u0..u2',
          'a3',
          'u4',
        ]);
        const empty = await sessionWith(0);
        expect(await store.resume(empty)).toMatchObject({ messages: [], fromSnapshot: false, appended: 0, version: 0 });
      });

      it('resume with a snapshot: the snapshot messages, then the messages of the entries appended after it', async () => {
        const id = await sessionWith(4);
        const snapshot: Message[] = [
          { role: 'user', parts: [{ type: 'text', text: 'THE SNAPSHOT' }] },
          { role: 'assistant', parts: [{ type: 'text', text: 'a3' }] },
        ];
        // The snapshot is taken as given, even where the marker would give another view.
        await store.recordCompaction(id, [markerEntry(1, 'marker summary', { fromEntry: 0, toEntry: 2 })], {
          messages: snapshot,
        });
        expect(await store.resume(id)).toEqual({
          messages: snapshot,
          fromSnapshot: true,
          snapshotAt: 5,
          appended: 0,
          version: 5,
        });
        await store.append(id, [
          messageEntry('user', 'later 1'),
          { kind: 'label', raw: { type: 'label' } },
          messageEntry('assistant', 'later 2'),
        ]);
        const r = await store.resume(id);
        expect(r).toMatchObject({ fromSnapshot: true, snapshotAt: 5, appended: 3, version: 8 });
        expect(r.messages).toEqual([
          ...snapshot,
          messageEntry('user', 'later 1').message,
          messageEntry('assistant', 'later 2').message,
        ]);
      });
    });

    const run = corpusAvailable() ? describe : describe.skip;
    run('every corpus pi and Claude Code transcript: import → loadSession → writeSession is the original bytes', () => {
      for (const folder of ['pi', 'claude-code']) {
        for (const file of corpusFiles(folder)) {
          it(`${folder}/${basename(file)}`, async () => {
            const original = readFileSync(file, 'utf8');
            const session = await readSession(file);
            const stored = await importSession(store, session, randomUUID());
            expect(stored.version).toBe(session.entries.length);
            const loaded = await loadSession(store, stored.id);
            expect(loaded.format).toBe(session.format);
            expect(loaded.entries).toHaveLength(session.entries.length);
            const written = writeSession(loaded);
            expect(written.length).toBe(original.length);
            expect(written === original).toBe(true);
            // What the model sees is the same, too.
            const resumed = await store.resume(stored.id);
            expect(resumed.fromSnapshot).toBe(false);
            expect(resumed.messages).toEqual(activeMessages(session));
          });
        }
      }
    });

    it('a real compaction: examples/refactor-session.jsonl compacted to 60,000 tokens, recorded, resumed, continued', async () => {
      const session = await readSession(EXAMPLE_TRANSCRIPT);
      const stored = await importSession(store, session, randomUUID());
      const result = await compact(session, { target: 60_000 });
      expect(result.entry).toBeDefined();
      expect(result.reachedTarget).toBe(true);
      expect(result.entry!.index).toBe(stored.version);
      const messages = activeMessages(session);
      expect(messages.length).toBeLessThan(session.entries.filter((e) => e.message).length);

      const { version } = await store.recordCompaction(
        stored.id,
        [result.entry!],
        { messages, marker: result.marker!, tokens: result.afterTokens },
        { expectedVersion: stored.version },
      );
      expect(version).toBe(stored.version + 1);
      expect(await store.latestSnapshot(stored.id)).toMatchObject({
        atVersion: version,
        tokens: result.afterTokens,
        marker: result.marker,
      });

      const resumed = await store.resume(stored.id);
      expect(resumed).toMatchObject({ fromSnapshot: true, snapshotAt: version, appended: 0, version });
      expect(resumed.messages).toEqual(messages);
      // The stored marker entry gives the same view when the whole history is read back.
      expect(activeMessages(await loadSession(store, stored.id))).toEqual(messages);

      const more = [
        messageEntry('user', 'Now add a changelog entry.'),
        messageEntry('assistant', 'Added CHANGELOG.md entry.'),
        messageEntry('user', 'Thanks!'),
      ];
      expect(await store.append(stored.id, more, { expectedVersion: version })).toEqual({ version: version + 3 });
      const continued = await store.resume(stored.id);
      expect(continued).toMatchObject({ fromSnapshot: true, snapshotAt: version, appended: 3, version: version + 3 });
      expect(continued.messages).toEqual([...messages, ...more.map((e) => e.message!)]);
    });
  });
}
