import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as fsp from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import fc from 'fast-check';
import ts from 'typescript';
import { afterAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { AbridgeError } from '../errors.js';
import { formatSlice, refIdFor, type ResultStore, type StoredResult } from '../compaction/result-store.js';
import { MemoryResultStore } from '../compaction/memory-result-store.js';
import { FileResultStore, syncFileSystem } from './file-result-store.js';
import { checkSessionScoping } from '../../test/support/result-scope.js';

// Spies on the fs functions the file store uses, so tests can see how it reads and make a rename fail.
vi.mock('node:fs', async (importOriginal) => {
  const actual = await importOriginal<typeof import('node:fs')>();
  return { ...actual, createReadStream: vi.fn(actual.createReadStream) };
});
vi.mock('node:fs/promises', async (importOriginal) => {
  const actual = await importOriginal<typeof import('node:fs/promises')>();
  return { ...actual, readFile: vi.fn(actual.readFile), rename: vi.fn(actual.rename), open: vi.fn(actual.open) };
});

const roots: string[] = [];
function tempDir(prefix = 'abridge-store-'): string {
  const dir = fs.realpathSync(fs.mkdtempSync(join(tmpdir(), prefix)));
  roots.push(dir);
  return dir;
}
afterAll(() => {
  for (const dir of roots) fs.rmSync(dir, { recursive: true, force: true });
});

/** A clock that advances one second per call, from 2026-01-01T00:00:00Z. */
function fakeClock(): () => Date {
  let t = Date.parse('2026-01-01T00:00:00.000Z');
  return () => new Date((t += 1000) - 1000);
}

/** The lines of `text` as the stores define them: each `\n` ends a line; a tail without `\n` is a last line. */
const linesOf = (text: string): string[] => text.match(/[^\n]*\n|[^\n]+$/g) ?? [];

const numbered = (n: number, prefix = 'l') => Array.from({ length: n }, (_, i) => `${prefix}${i}\n`).join('');

async function caught(p: Promise<unknown>): Promise<AbridgeError> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(AbridgeError);
    return err as AbridgeError;
  }
  throw new Error('expected a rejection');
}

const SHAPE = 'expected "r_" followed by 16 lowercase hex digits, e.g. "r_0123456789abcdef".';
const OFFSET = 'expected a non-negative integer (the 0-based line to start reading at).';
const LIMIT = 'expected an integer from 0 to 2000 (the number of lines to read; default 200).';
const UNKNOWN = 'r_0000000000000000';
const notFound = (where: string) =>
  `No stored result with ref_id "${UNKNOWN}" in ${where}. A ref_id is "r_" followed by 16 lowercase hex digits, e.g. "r_0123456789abcdef"; use one exactly as given where the result was offloaded.`;

const RESULT_FILE = /^r_[0-9a-f]{16}\.(txt|json)$/;

describe('refIdFor', () => {
  it('is "r_" + the first 16 hex digits of the SHA-256 of the UTF-8 text', () => {
    // sha256("hello") = 2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824
    expect(refIdFor('hello')).toBe('r_2cf24dba5fb0a30e');
    // sha256("") = e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855
    expect(refIdFor('')).toBe('r_e3b0c44298fc1c14');
    const text = 'naïve 😀\r\n';
    expect(refIdFor(text)).toBe(
      `r_${createHash('sha256').update(Buffer.from(text, 'utf8')).digest('hex').slice(0, 16)}`,
    );
    expect(refIdFor('a\n')).not.toBe(refIdFor('a\r\n'));
  });
});

const stores: [string, (opts?: { now?: () => Date }) => ResultStore, string][] = [
  ['MemoryResultStore', (opts) => new MemoryResultStore(opts), 'the in-memory result store'],
  ['FileResultStore', (opts) => new FileResultStore(tempDir(), opts), 'the result store at <dir>'],
];

describe.each(stores)('%s: refs are scoped per session', (_name, make) => {
  it('a ref written for session A cannot be read through session B', async () => {
    await checkSessionScoping(make() as MemoryResultStore | FileResultStore);
  });
});

describe.each(stores)('%s: the ResultStore contract', (_name, make, where) => {
  const whereOf = (store: ResultStore) => where.replace('<dir>', store instanceof FileResultStore ? store.dir : '');

  it('put returns the metadata; read gives the text back; stat agrees with put', async () => {
    const store = make({ now: fakeClock() });
    const text = 'alpha\nbeta\ngamma\n';
    const stored = await store.put(text, { tool: 'bash', callId: 'c1', sessionId: 's1', entry: 7 });
    expect(stored).toEqual({
      refId: refIdFor(text),
      bytes: 17,
      chars: 17,
      lines: 3,
      createdAt: '2026-01-01T00:00:00.000Z',
      tool: 'bash',
      callId: 'c1',
      sessionId: 's1',
      entry: 7,
    });
    expect(await store.read(stored.refId)).toEqual({
      refId: stored.refId,
      text,
      offset: 0,
      limit: 200,
      totalChars: 17,
      totalLines: 3,
      nextOffset: null,
    });
    expect(await store.stat(stored.refId)).toEqual(stored);
    expect(await store.stat(UNKNOWN)).toBeUndefined();
  });

  it('keeps only the known meta fields, and counts bytes (UTF-8) apart from chars (UTF-16 units)', async () => {
    const store = make({ now: fakeClock() });
    const stored = await store.put('é😀\n', { tool: 'read', extra: 'dropped' } as never);
    expect(stored).toEqual({
      refId: refIdFor('é😀\n'),
      bytes: 7,
      chars: 4,
      lines: 1,
      createdAt: '2026-01-01T00:00:00.000Z',
      tool: 'read',
    });
    expect((await store.read(stored.refId)).text).toBe('é😀\n');
  });

  it('is content-addressed: the same text is stored once and keeps its first metadata', async () => {
    const store = make({ now: fakeClock() });
    const a = await store.put('same\n', { tool: 'first' });
    const b = await store.put('same\n', { tool: 'second' });
    expect(b).toEqual(a);
    expect(b.tool).toBe('first');
    const c = await store.put('same\r\n');
    expect(c.refId).not.toBe(a.refId);
    expect((await store.list()).map((r) => r.refId)).toEqual([a.refId, c.refId]);
  });

  it('lists oldest first; putting stored content again does not move it', async () => {
    const store = make({ now: fakeClock() });
    const refs = [];
    for (const t of ['one', 'two', 'three']) refs.push((await store.put(t)).refId);
    await store.put('one');
    await store.read(refs[0]!);
    const list = await store.list();
    expect(list.map((r) => r.refId)).toEqual(refs);
    expect(list.map((r) => r.createdAt)).toEqual([
      '2026-01-01T00:00:00.000Z',
      '2026-01-01T00:00:01.000Z',
      '2026-01-01T00:00:02.000Z',
    ]);
  });

  it('returns copies: changing a returned record does not change the store', async () => {
    const store = make();
    const stored = await store.put('x');
    stored.tool = 'mutated';
    (await store.list())[0]!.lines = 99;
    expect(await store.stat(stored.refId)).toMatchObject({ lines: 1 });
    expect((await store.stat(stored.refId))?.tool).toBeUndefined();
  });

  describe('slices by lines', () => {
    const ten = numbered(10); // l0\n … l9\n

    it.each([
      ['offset 0', 0, 3, 'l0\nl1\nl2\n', 3],
      ['the middle', 4, 3, 'l4\nl5\nl6\n', 7],
      ['up to exactly the end', 7, 3, 'l7\nl8\nl9\n', null],
      ['a limit past the end', 8, 50, 'l8\nl9\n', null],
      ['the last line', 9, 1, 'l9\n', null],
      ['limit 1', 0, 1, 'l0\n', 1],
      ['just past the end', 10, 5, '', null],
      ['far past the end', 1_000_000, 5, '', null],
      ['limit 0 (nothing, next is the same offset)', 4, 0, '', 4],
      ['limit 0 past the end', 10, 0, '', null],
    ])('%s (offset %i, limit %i)', async (_label, offset, limit, text, nextOffset) => {
      const store = make();
      const { refId } = await store.put(ten);
      expect(await store.read(refId, { offset, limit })).toEqual({
        refId,
        text,
        offset,
        limit,
        totalChars: 30,
        totalLines: 10,
        nextOffset,
      });
    });

    it('defaults to 200 lines, allows 2000, and nextOffset walks to the end', async () => {
      const store = make();
      const text = numbered(2450);
      const { refId } = await store.put(text);
      const a = await store.read(refId);
      expect([a.offset, a.limit, a.nextOffset, a.text]).toEqual([0, 200, 200, numbered(200)]);
      const b = await store.read(refId, { offset: a.nextOffset! });
      expect(b.text.split('\n')[0]).toBe('l200');
      expect(b.nextOffset).toBe(400);
      const c = await store.read(refId, { offset: 400, limit: 2000 });
      expect(linesOf(c.text)).toHaveLength(2000);
      expect(c.nextOffset).toBe(2400);
      const d = await store.read(refId, { offset: c.nextOffset!, limit: 2000 });
      expect(linesOf(d.text)).toEqual(Array.from({ length: 50 }, (_, i) => `l${2400 + i}\n`));
      expect(d.nextOffset).toBeNull();
      expect(a.text + (await store.read(refId, { offset: 200, limit: 2000 })).text).toBe(
        text.slice(0, text.indexOf('l2200\n')),
      );
    });

    it('null offset or limit means the default (tool arguments are JSON)', async () => {
      const store = make();
      const { refId } = await store.put(ten);
      expect(await store.read(refId, { offset: null, limit: null } as never)).toMatchObject({
        offset: 0,
        limit: 200,
        text: ten,
      });
    });

    it('text without a final newline: the tail is the last line', async () => {
      const store = make();
      const { refId, lines } = await store.put('a\nb\nc');
      expect(lines).toBe(3);
      expect((await store.read(refId, { offset: 1, limit: 1 })).text).toBe('b\n');
      expect(await store.read(refId, { offset: 2, limit: 1 })).toMatchObject({
        text: 'c',
        nextOffset: null,
        totalLines: 3,
      });
      expect(await store.read(refId, { offset: 1 })).toMatchObject({ text: 'b\nc', nextOffset: null });
    });

    it('CRLF is kept as is; a lone CR does not end a line', async () => {
      const store = make();
      const text = 'a\r\nb\r\n\r\nc\rd\r\n';
      const { refId, lines } = await store.put(text);
      expect(lines).toBe(4);
      expect((await store.read(refId, { offset: 1, limit: 2 })).text).toBe('b\r\n\r\n');
      expect((await store.read(refId, { offset: 3, limit: 1 })).text).toBe('c\rd\r\n');
      expect((await store.read(refId)).text).toBe(text);
    });

    it('empty text has 0 lines; blank lines count', async () => {
      const store = make();
      const empty = await store.put('');
      expect(empty).toMatchObject({ refId: 'r_e3b0c44298fc1c14', bytes: 0, chars: 0, lines: 0 });
      expect(await store.read(empty.refId)).toEqual({
        refId: empty.refId,
        text: '',
        offset: 0,
        limit: 200,
        totalChars: 0,
        totalLines: 0,
        nextOffset: null,
      });
      expect((await store.put('\n')).lines).toBe(1);
      const blanks = await store.put('\n\n\nx');
      expect(blanks.lines).toBe(4);
      expect((await store.read(blanks.refId, { offset: 1, limit: 2 })).text).toBe('\n\n');
    });

    it('any slice is the same lines as splitting the text, and paging reproduces the text exactly', async () => {
      const store = make();
      const piece = fc.constantFrom('a', 'bc', 'é', '😀', '日本', ' ', '\n', '\r\n', '\r');
      await fc.assert(
        fc.asyncProperty(
          fc.array(piece, { maxLength: 60 }).map((p) => p.join('')),
          fc.nat(70),
          fc.nat(70),
          fc.integer({ min: 1, max: 7 }),
          async (text, offset, limit, page) => {
            const { refId, lines } = await store.put(text);
            const all = linesOf(text);
            expect(lines).toBe(all.length);
            const slice = await store.read(refId, { offset, limit });
            expect(slice.text).toBe(all.slice(offset, offset + limit).join(''));
            expect(slice.nextOffset).toBe(offset + limit < all.length ? offset + limit : null);
            let joined = '';
            for (let at: number | null = 0; at !== null; ) {
              const s: Awaited<ReturnType<ResultStore['read']>> = await store.read(refId, { offset: at, limit: page });
              joined += s.text;
              at = s.nextOffset;
            }
            expect(joined).toBe(text);
          },
        ),
        { numRuns: store instanceof FileResultStore ? 40 : 200 },
      );
    });
  });

  describe('validation', () => {
    it.each([
      ['nope', 'Invalid ref_id "nope": '],
      ['r_0123456789ABCDEF', 'Invalid ref_id "r_0123456789ABCDEF": '],
      ['r_0123456789abcde', 'Invalid ref_id "r_0123456789abcde": '],
      ['r_0123456789abcdef0', 'Invalid ref_id "r_0123456789abcdef0": '],
      ['../r_0123456789abcdef', 'Invalid ref_id "../r_0123456789abcdef": '],
      ['', 'Invalid ref_id "": '],
      [42, 'Invalid ref_id 42: '],
      [undefined, 'Invalid ref_id undefined: '],
    ])('a malformed ref_id %j is INVALID_INPUT for read and stat', async (refId, start) => {
      const store = make();
      for (const call of [() => store.read(refId as string), () => store.stat(refId as string)]) {
        const err = await caught(call());
        expect(err.code).toBe('INVALID_INPUT');
        expect(err.message).toBe(start + SHAPE);
      }
    });

    it.each([
      [{ offset: -1 }, `Invalid offset -1: ${OFFSET}`],
      [{ offset: 1.5 }, `Invalid offset 1.5: ${OFFSET}`],
      [{ offset: Number.NaN }, `Invalid offset NaN: ${OFFSET}`],
      [{ offset: '3' }, `Invalid offset "3": ${OFFSET}`],
      [{ limit: 2001 }, `Invalid limit 2001: ${LIMIT}`],
      [{ limit: -5 }, `Invalid limit -5: ${LIMIT}`],
      [{ limit: 2.5 }, `Invalid limit 2.5: ${LIMIT}`],
      [{ limit: Number.POSITIVE_INFINITY }, `Invalid limit Infinity: ${LIMIT}`],
    ])('range %j is INVALID_INPUT', async (range, message) => {
      const store = make();
      const { refId } = await store.put('x\n');
      const err = await caught(store.read(refId, range as never));
      expect([err.code, err.message]).toEqual(['INVALID_INPUT', message]);
      // checked before the lookup, so an unknown ref with a bad range is still an input error
      expect((await caught(store.read(UNKNOWN, range as never))).code).toBe('INVALID_INPUT');
    });

    it('a well-formed unknown ref_id is RESULT_NOT_FOUND, naming the ref and how refs look', async () => {
      const store = make();
      await store.put('something');
      const err = await caught(store.read(UNKNOWN, { offset: 5 }));
      expect(err.code).toBe('RESULT_NOT_FOUND');
      expect(err.message).toBe(notFound(whereOf(store)));
    });
  });
});

describe('formatSlice', () => {
  const store = new MemoryResultStore();
  const text = numbered(1234);
  let ref = '';
  beforeEach(async () => {
    ref = (await store.put(text)).refId;
  });

  it('a header with the full ref, 0-based line range, total and next offset, then the text as is', async () => {
    const slice = await store.read(ref, { offset: 200 });
    expect(formatSlice(slice)).toBe(`[ref ${ref} · lines 200–399 of 1,234 · next: offset 400]\n${slice.text}`);
    expect(formatSlice(slice).split('\n')[1]).toBe('l200');
  });

  it('ends with "· end" on the last slice', async () => {
    const slice = await store.read(ref, { offset: 1200 });
    expect(formatSlice(slice)).toBe(
      `[ref ${ref} · lines 1,200–1,233 of 1,234 · end]\n${numbered(1234).slice(text.indexOf('l1200\n'))}`,
    );
  });

  it('a single line, past the end, limit 0, empty result', async () => {
    expect(formatSlice(await store.read(ref, { offset: 7, limit: 1 }))).toBe(
      `[ref ${ref} · line 7 of 1,234 · next: offset 8]\nl7\n`,
    );
    expect(formatSlice(await store.read(ref, { offset: 1233 }))).toBe(
      `[ref ${ref} · line 1,233 of 1,234 · end]\nl1233\n`,
    );
    expect(formatSlice(await store.read(ref, { offset: 5000 }))).toBe(
      `[ref ${ref} · no lines at offset 5,000: the result has 1,234 lines (offsets 0–1,233) · end]`,
    );
    expect(formatSlice(await store.read(ref, { offset: 10, limit: 0 }))).toBe(
      `[ref ${ref} · no lines read (limit 0) at offset 10 of 1,234 · next: offset 10]`,
    );
    const one = (await store.put('only')).refId;
    expect(formatSlice(await store.read(one, { offset: 1 }))).toBe(
      `[ref ${one} · no lines at offset 1: the result has 1 line (offsets 0–0) · end]`,
    );
    const empty = (await store.put('')).refId;
    expect(formatSlice(await store.read(empty))).toBe(`[ref ${empty} · empty result (0 lines) · end]`);
  });
});

describe('MemoryResultStore: maxBytes and LRU eviction', () => {
  // Each text is 10 bytes.
  const A = 'aaaaaaaaa\n';
  const B = 'bbbbbbbbb\n';
  const C = 'ccccccccc\n';
  const D = 'ddddddddd\n';
  const E = 'eeeeeeeee\n';
  const F = 'fffffffff\n';
  const held = async (store: MemoryResultStore) => (await store.list()).map((r) => r.refId);

  it('evicts the least recently used; a read and a repeated put count as use, stat and list do not', async () => {
    const store = new MemoryResultStore({ maxBytes: 30 });
    const [a, b, c, d, e, f] = [A, B, C, D, E, F].map(refIdFor) as [string, string, string, string, string, string];
    await store.put(A);
    await store.put(B);
    await store.put(C);
    expect(store.bytes).toBe(30);
    await store.read(a); // use order: B C A
    await store.stat(b);
    await store.list();
    await store.put(D); // evicts B
    expect(await held(store)).toEqual([a, c, d]);
    await store.put(E); // evicts C
    expect(await held(store)).toEqual([a, d, e]);
    await store.put(A); // use order: D E A
    await store.put(F); // evicts D
    expect(await held(store)).toEqual([a, e, f]);
    expect([store.size, store.bytes]).toEqual([3, 30]);
    expect(await store.stat(b)).toBeUndefined();

    const err = await caught(store.read(b));
    expect(err.code).toBe('RESULT_NOT_FOUND');
    expect(err.message).toBe(
      `The result with ref_id "${b}" was evicted from the in-memory result store (it keeps at most 30 bytes, least recently used first) and is no longer available; run the tool again to get it.`,
    );
  });

  it('evicts as many as needed, keeps a result larger than maxBytes alone, and a re-put brings an evicted ref back', async () => {
    const store = new MemoryResultStore({ maxBytes: 30 });
    await store.put(A);
    await store.put(B);
    const big = 'x'.repeat(45);
    const { refId } = await store.put(big);
    expect(await held(store)).toEqual([refId]);
    expect(store.bytes).toBe(45);
    expect((await store.read(refId)).text).toBe(big);
    await store.put(A); // evicts big
    expect(await held(store)).toEqual([refIdFor(A)]);
    expect((await caught(store.read(refIdFor(B)))).message).toMatch(/was evicted/);
    await store.put(B);
    expect((await store.read(refIdFor(B))).text).toBe(B);
  });

  it('without maxBytes nothing is evicted', async () => {
    const store = new MemoryResultStore();
    for (let i = 0; i < 500; i++) await store.put(`result ${i}\n`.repeat(100));
    expect(store.size).toBe(500);
  });

  it.each([0, -1, 1.5, Number.NaN])('maxBytes %s is INVALID_INPUT', (maxBytes) => {
    expect(() => new MemoryResultStore({ maxBytes })).toThrow(
      new AbridgeError(
        'INVALID_INPUT',
        `Invalid maxBytes ${maxBytes}: expected a positive integer (bytes of stored text).`,
      ),
    );
  });
});

describe('FileResultStore: files on disk', () => {
  const readFileSpy = vi.mocked(fsp.readFile);
  const renameSpy = vi.mocked(fsp.rename);
  const createReadStreamSpy = vi.mocked(fs.createReadStream);
  const resultFiles = (dir: string) => fs.readdirSync(dir).sort();

  it('one <refId>.txt with the text and one <refId>.json with the metadata, nothing else', async () => {
    const dir = tempDir();
    const store = new FileResultStore(dir, { now: fakeClock() });
    const text = 'héllo\r\nworld';
    const stored = await store.put(text, { tool: 'bash', entry: 3 });
    expect(resultFiles(dir)).toEqual([`${stored.refId}.json`, `${stored.refId}.txt`]);
    expect(fs.readFileSync(join(dir, `${stored.refId}.txt`))).toEqual(Buffer.from(text, 'utf8'));
    expect(JSON.parse(fs.readFileSync(join(dir, `${stored.refId}.json`), 'utf8'))).toEqual(stored);
    expect(stored).toEqual({
      refId: refIdFor(text),
      bytes: 13,
      chars: 12,
      lines: 2,
      createdAt: '2026-01-01T00:00:00.000Z',
      tool: 'bash',
      entry: 3,
    });
  });

  it('creates the directory (mkdir -p) on the first put, not before; a missing directory is an empty store', async () => {
    const dir = join(tempDir(), 'a', 'b', 'results');
    const store = new FileResultStore(dir);
    expect(await store.list()).toEqual([]);
    expect(await store.stat(UNKNOWN)).toBeUndefined();
    const err = await caught(store.read(UNKNOWN));
    expect([err.code, err.message]).toEqual(['RESULT_NOT_FOUND', notFound(`the result store at ${dir}`)]);
    expect(fs.existsSync(dir)).toBe(false);
    await store.put('first');
    expect(fs.readdirSync(dir)).toHaveLength(2);
  });

  it('a relative directory is resolved, and messages name the absolute path', () => {
    expect(new FileResultStore('some/results').dir).toBe(resolve('some/results'));
  });

  it('survives a new instance on the same directory', async () => {
    const dir = tempDir();
    const first = new FileResultStore(dir, { now: fakeClock() });
    const a = await first.put(numbered(500), { sessionId: 's' });
    const b = await first.put('second\n');
    const again = new FileResultStore(dir);
    expect(await again.list()).toEqual([a, b]);
    expect(await again.stat(a.refId)).toEqual(a);
    expect(await again.read(a.refId, { offset: 499 })).toEqual({
      refId: a.refId,
      text: 'l499\n',
      offset: 499,
      limit: 200,
      totalChars: a.chars,
      totalLines: 500,
      nextOffset: null,
    });
    expect(await again.put('second\n')).toEqual(b);
  });

  it('putting stored content again writes nothing', async () => {
    const dir = tempDir();
    const store = new FileResultStore(dir, { now: fakeClock() });
    const a = await store.put('idempotent\n', { tool: 'one' });
    const before = resultFiles(dir).map((f) => [f, fs.statSync(join(dir, f)).mtimeMs, fs.statSync(join(dir, f)).ino]);
    renameSpy.mockClear();
    expect(await new FileResultStore(dir, { now: fakeClock() }).put('idempotent\n', { tool: 'two' })).toEqual(a);
    expect(renameSpy).not.toHaveBeenCalled();
    expect(resultFiles(dir).map((f) => [f, fs.statSync(join(dir, f)).mtimeMs, fs.statSync(join(dir, f)).ino])).toEqual(
      before,
    );
  });

  it('leaves no temp files behind', async () => {
    const dir = tempDir();
    const store = new FileResultStore(dir);
    for (let i = 0; i < 30; i++) await store.put(`r${i}\n`.repeat(i));
    await store.put('r1\n');
    const files = resultFiles(dir);
    expect(files).toHaveLength(60);
    expect(files.every((f) => RESULT_FILE.test(f))).toBe(true);
  });

  it('a failed write leaves neither a temp file nor a result, and the next put succeeds', async () => {
    const dir = tempDir();
    const store = new FileResultStore(dir);
    await store.put('kept\n');
    renameSpy.mockRejectedValueOnce(Object.assign(new Error('EIO: i/o error, rename'), { code: 'EIO' }));
    const ref = refIdFor('lost\n');
    const err = await caught(store.put('lost\n'));
    expect([err.code, err.message]).toEqual([
      'STORE_ERROR',
      `Cannot store result ${ref} in ${dir}: EIO: i/o error, rename`,
    ]);
    expect(resultFiles(dir)).toEqual([`${refIdFor('kept\n')}.json`, `${refIdFor('kept\n')}.txt`]);
    expect(await store.stat(ref)).toBeUndefined();
    // the .txt landed but the .json (which makes the result exist) did not: still not a result, and put completes it
    renameSpy
      .mockImplementationOnce(renameSpy.getMockImplementation()!)
      .mockRejectedValueOnce(Object.assign(new Error('EIO: i/o error, rename'), { code: 'EIO' }));
    await caught(store.put('lost\n'));
    expect(resultFiles(dir)).toContain(`${ref}.txt`);
    expect(resultFiles(dir)).not.toContain(`${ref}.json`);
    expect((await store.list()).map((r) => r.refId)).toEqual([refIdFor('kept\n')]);
    expect((await caught(store.read(ref))).code).toBe('RESULT_NOT_FOUND');
    await store.put('lost\n');
    expect((await store.read(ref)).text).toBe('lost\n');
    expect(resultFiles(dir).every((f) => RESULT_FILE.test(f))).toBe(true);
  });

  it('stray temp files from a crashed put do not break list, read or put', async () => {
    const dir = tempDir();
    const store = new FileResultStore(dir, { now: fakeClock() });
    const kept = await store.put('kept\n');
    const crashed = refIdFor('crashed mid-write\n');
    fs.writeFileSync(join(dir, `.${crashed}.txt.4242-0123456789ab.tmp`), 'crashed mid-');
    fs.writeFileSync(join(dir, `.${kept.refId}.json.4242-0123456789ab.tmp`), '{"refId": "r_');
    fs.writeFileSync(join(dir, 'notes.txt'), 'not a result');
    expect(await store.list()).toEqual([kept]);
    expect((await store.read(kept.refId)).text).toBe('kept\n');
    expect((await caught(store.read(crashed))).code).toBe('RESULT_NOT_FOUND');
    await store.put('crashed mid-write\n');
    expect((await store.read(crashed)).text).toBe('crashed mid-write\n');
    expect((await store.list()).map((r) => r.refId)).toEqual([kept.refId, crashed]);
  });

  it('corrupt metadata is STORE_ERROR naming the file; put rewrites it', async () => {
    const dir = tempDir();
    const store = new FileResultStore(dir);
    const { refId } = await store.put('fine\n');
    const file = join(dir, `${refId}.json`);
    fs.writeFileSync(file, '{"refId": "r_');
    // One at a time: a second rejected promise left waiting would be an unhandled rejection.
    for (const call of [() => store.read(refId), () => store.stat(refId), () => store.list()]) {
      const err = await caught(call());
      expect(err.code).toBe('STORE_ERROR');
      expect(err.message).toMatch(
        new RegExp(
          `^Corrupt result metadata ${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: .+\\. Delete it \\(and ${refId}\\.txt\\) or put the result again to rewrite it\\.$`,
        ),
      );
    }
    fs.writeFileSync(
      file,
      JSON.stringify({
        refId: 'r_1111111111111111',
        bytes: 5,
        chars: 5,
        lines: 1,
        createdAt: '2026-01-01T00:00:00.000Z',
      }),
    );
    expect((await caught(store.stat(refId))).message).toBe(
      `Corrupt result metadata ${file}: refId is "r_1111111111111111", expected "${refId}". Delete it (and ${refId}.txt) or put the result again to rewrite it.`,
    );
    fs.writeFileSync(
      file,
      JSON.stringify({ refId, bytes: 5, chars: 5, lines: -1, createdAt: '2026-01-01T00:00:00.000Z' }),
    );
    expect((await caught(store.stat(refId))).message).toBe(
      `Corrupt result metadata ${file}: lines is -1, expected a non-negative integer. Delete it (and ${refId}.txt) or put the result again to rewrite it.`,
    );
    const repaired = await store.put('fine\n');
    expect(repaired).toMatchObject({ refId, bytes: 5, lines: 1 });
    expect(await store.read(refId)).toMatchObject({ text: 'fine\n', totalLines: 1 });
  });

  it('a missing or damaged text file: read is RESULT_NOT_FOUND naming it; put restores it', async () => {
    const dir = tempDir();
    const store = new FileResultStore(dir);
    const { refId } = await store.put('two\nlines\n');
    const txt = join(dir, `${refId}.txt`);
    fs.rmSync(txt);
    const message = `The result with ref_id "${refId}" has metadata ${join(dir, `${refId}.json`)} but its text file ${txt} is missing; put the result again to restore it.`;
    for (const range of [{}, { offset: 9 }, { limit: 0 }]) {
      const err = await caught(store.read(refId, range));
      expect([err.code, err.message]).toEqual(['RESULT_NOT_FOUND', message]);
    }
    await store.put('two\nlines\n');
    expect((await store.read(refId)).text).toBe('two\nlines\n');
    fs.writeFileSync(txt, 'two\n'); // truncated: the size no longer matches
    await store.put('two\nlines\n');
    expect(fs.readFileSync(txt, 'utf8')).toBe('two\nlines\n');
  });

  describe('a 20 MB result', () => {
    // ~20 MB: 200,000 lines mixing ASCII, multi-byte UTF-8 and CRLF, so chunk boundaries fall everywhere.
    const lines = Array.from({ length: 200_000 }, (_, i) => {
      const body = `${String(i).padStart(6, '0')} ${i % 7 === 0 ? 'ünïcødé 日本語 😀 ' : ''}${'x'.repeat((i * 37) % 190)}`;
      return i % 5 === 0 ? `${body}\r\n` : `${body}\n`;
    });
    const text = `${lines.join('')}tail without newline`;
    lines.push('tail without newline');
    const dir = tempDir();
    const store = new FileResultStore(dir);
    let refId = '';

    beforeEach(async () => {
      if (!refId) refId = (await store.put(text)).refId;
      readFileSpy.mockClear();
      createReadStreamSpy.mockClear();
    });

    it('is stored with its line count in the metadata', async () => {
      const bytes = Buffer.byteLength(text);
      expect(bytes).toBeGreaterThan(20_000_000);
      expect(await store.stat(refId)).toMatchObject({ bytes, chars: text.length, lines: 200_001 });
      expect(fs.statSync(join(dir, `${refId}.txt`)).size).toBe(bytes);
    });

    it.each([
      [0, 5],
      [1, 1],
      [65_000, 2000],
      [100_000, 200],
      [199_990, 200],
      [200_000, 1],
    ])(
      'the slice at offset %i, limit %i is right, and read streams the file instead of reading it whole',
      async (offset, limit) => {
        const slice = await store.read(refId, { offset, limit });
        expect(slice.text).toBe(lines.slice(offset, offset + limit).join(''));
        expect(slice.totalLines).toBe(200_001);
        expect(slice.nextOffset).toBe(offset + limit < 200_001 ? offset + limit : null);
        const txt = join(dir, `${refId}.txt`);
        // The metadata is read through a checked handle; the text is streamed, never read whole.
        expect(readFileSpy.mock.calls.map((c) => String(c[0]))).not.toContain(txt);
        expect(createReadStreamSpy.mock.calls.map((c) => String(c[0]))).toEqual([txt]);
      },
    );

    it('stops reading after the last requested line', async () => {
      await store.read(refId, { offset: 0, limit: 100 });
      const early = createReadStreamSpy.mock.results[0]!.value as fs.ReadStream;
      expect(early.bytesRead).toBeLessThan(1_000_000);
      await store.read(refId, { offset: 100_000, limit: 100 });
      const middle = createReadStreamSpy.mock.results[1]!.value as fs.ReadStream;
      expect(middle.bytesRead).toBeLessThan(Buffer.byteLength(text) * 0.6);
    });

    it('past the end: an empty slice without reading the text', async () => {
      expect(await store.read(refId, { offset: 200_001 })).toMatchObject({
        text: '',
        nextOffset: null,
        totalLines: 200_001,
      });
      expect(createReadStreamSpy).not.toHaveBeenCalled();
    });
  });
});

describe('FileResultStore: a batch syncs at commit', () => {
  const openSpy = vi.mocked(fsp.open);
  /** The files (and folders) synced while `work` runs, by name. */
  async function syncsDuring(work: () => Promise<void>): Promise<string[]> {
    const actual = await vi.importActual<typeof import('node:fs/promises')>('node:fs/promises');
    const synced: string[] = [];
    openSpy.mockImplementation(async (...args: Parameters<typeof actual.open>) => {
      const fh = await actual.open(...args);
      const sync = fh.sync.bind(fh);
      fh.sync = async () => {
        synced.push(
          String(args[0])
            .split('/')
            .pop()!
            .replace(/^\.(r_[0-9a-f]{16}\.\w+)\..*\.tmp$/, '$1'),
        );
        return sync();
      };
      return fh;
    });
    try {
      await work();
    } finally {
      openSpy.mockImplementation(actual.open);
    }
    return synced;
  }

  it('a plain put syncs its two files and the folder; a batch syncs nothing until commit, then each file once', async () => {
    const dir = tempDir();
    const plain = await syncsDuring(async () => {
      await new FileResultStore(dir).put('plain\n');
    });
    const ref = refIdFor('plain\n');
    expect(plain).toEqual([`${ref}.txt`, `${ref}.json`, dir.split('/').pop()]);

    const base = new FileResultStore(dir, { now: fakeClock() });
    const batch = base.batch();
    const texts = ['one\n', 'two\n', 'three\n'];
    const duringPuts = await syncsDuring(async () => {
      for (const t of texts) await batch.store.put(t, { tool: 'bash' });
    });
    expect(duringPuts).toEqual([]);
    // Readable at once, through the batch and through the store itself.
    for (const t of texts) {
      expect((await batch.store.read(refIdFor(t))).text).toBe(t);
      expect((await base.read(refIdFor(t))).text).toBe(t);
    }
    const atCommit = await syncsDuring(() => batch.commit());
    const files = texts.flatMap((t) => [`${refIdFor(t)}.txt`, `${refIdFor(t)}.json`]);
    expect(atCommit.slice(0, -1).sort()).toEqual(files.sort());
    expect(atCommit[atCommit.length - 1]).toBe(dir.split('/').pop());
    // Nothing left to commit; content already stored is not written (nor synced) again.
    expect(await syncsDuring(() => batch.commit())).toEqual([]);
    expect(
      await syncsDuring(async () => {
        await batch.store.put('one\n');
        await batch.commit();
      }),
    ).toEqual([]);
    expect(fs.readdirSync(dir).every((f) => RESULT_FILE.test(f))).toBe(true);
  });

  it('a batch of many results syncs their file system once; where that fails, each file', async () => {
    const dir = tempDir();
    const calls: string[] = [];
    const texts = Array.from({ length: 40 }, (_, i) => `result ${i}\n`);
    for (const works of [true, false]) {
      const store = new FileResultStore(join(dir, String(works)), {
        syncFileSystem: async (d) => {
          calls.push(d);
          return works;
        },
      });
      const batch = store.batch();
      for (const t of texts) await batch.store.put(t);
      const synced = await syncsDuring(() => batch.commit());
      // 80 files: over the threshold. One call for the file system, or (it failed) every file and the folder.
      expect(calls.pop()).toBe(join(dir, String(works)));
      expect(synced.length).toBe(works ? 0 : 81);
      for (const t of texts) expect((await store.read(refIdFor(t))).text).toBe(t);
    }
    // A small batch never asks for the whole file system.
    const small = new FileResultStore(join(dir, 'small'), {
      syncFileSystem: async () => {
        throw new Error('not for a small batch');
      },
    }).batch();
    await small.store.put('one\n');
    expect((await syncsDuring(() => small.commit())).length).toBe(3);
  });

  it('syncFileSystem syncs a real folder on Linux and says false elsewhere or when it cannot', async () => {
    expect(await syncFileSystem(tempDir())).toBe(process.platform === 'linux');
    expect(await syncFileSystem(join(tempDir(), 'no', 'such', 'folder'))).toBe(false);
  });

  it('a result that cannot be synced at commit is STORE_ERROR naming it', async () => {
    const dir = tempDir();
    const batch = new FileResultStore(dir).batch();
    const { refId } = await batch.store.put('gone before the commit\n');
    fs.rmSync(join(dir, `${refId}.txt`));
    const err = await caught(batch.commit());
    expect(err.code).toBe('STORE_ERROR');
    expect(err.message).toMatch(new RegExp(`^Cannot make result ${refId}\\.txt durable in ${dir}: ENOENT`));
  });

  it("one session's view has the batch too, and what it puts stays that session's", async () => {
    const dir = tempDir();
    const store = new FileResultStore(dir);
    const batch = store.forSession('s1').batch!();
    const { refId } = await batch.store.put('scoped\n');
    await batch.commit();
    expect((await store.forSession('s1').read(refId)).text).toBe('scoped\n');
    expect(await store.forSession('s2').stat(refId)).toBeUndefined();
    expect((await store.stat(refId))?.sessionId).toBe('s1');
    // A store without batches gives its sessions none.
    expect(new MemoryResultStore().forSession('s1').batch).toBeUndefined();
  });
});

describe('FileResultStore: two processes putting the same content at once', () => {
  /** The store's modules transpiled from the current source (no dependency on a stale dist/). */
  function storeModuleUrl(): string {
    const src = resolve(import.meta.dirname, '..');
    const out = tempDir('abridge-store-mod-');
    fs.writeFileSync(join(out, 'package.json'), '{"type":"module"}');
    for (const rel of ['errors.ts', 'defaults.ts', 'compaction/result-store.ts', 'store/file-result-store.ts']) {
      const js = ts.transpileModule(fs.readFileSync(join(src, rel), 'utf8'), {
        compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022, verbatimModuleSyntax: true },
      }).outputText;
      const dest = join(out, rel.replace(/\.ts$/, '.js'));
      fs.mkdirSync(dirname(dest), { recursive: true });
      fs.writeFileSync(dest, js);
    }
    return pathToFileURL(join(out, 'store/file-result-store.js')).href;
  }

  const child = `
    const { FileResultStore } = await import(process.env.STORE_MODULE);
    const store = new FileResultStore(process.env.STORE_DIR);
    const texts = [Array.from({ length: 100000 }, (_, i) => 'big line ' + i + '\\n').join('')];
    for (let i = 0; i < 30; i++) texts.push('small ' + i + '\\n'.repeat(i));
    const startAt = Number(process.env.START_AT);
    while (Date.now() < startAt) {}
    const refs = [];
    for (const t of texts) refs.push((await store.put(t, { tool: 'child-' + process.pid })).refId);
    console.log(JSON.stringify(refs));
  `;

  function run(env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
    return new Promise((done, fail) => {
      const p = spawn(process.execPath, ['--input-type=module', '-e', child], { env: { ...process.env, ...env } });
      let stdout = '';
      let stderr = '';
      p.stdout.on('data', (d: Buffer) => (stdout += d));
      p.stderr.on('data', (d: Buffer) => (stderr += d));
      p.on('error', fail);
      p.on('close', (code) => done({ code, stdout, stderr }));
    });
  }

  it('both succeed with the same refs, and each result is one .txt and one .json', async () => {
    const dir = join(tempDir(), 'shared');
    const env = { STORE_MODULE: storeModuleUrl(), STORE_DIR: dir, START_AT: String(Date.now() + 1500) };
    const [a, b] = await Promise.all([run(env), run(env)]);
    expect(a).toMatchObject({ code: 0, stderr: '' });
    expect(b).toMatchObject({ code: 0, stderr: '' });
    const refs = JSON.parse(a.stdout) as string[];
    expect(JSON.parse(b.stdout)).toEqual(refs);
    expect(new Set(refs).size).toBe(31);

    const files = fs.readdirSync(dir).sort();
    expect(files).toEqual(refs.flatMap((r) => [`${r}.json`, `${r}.txt`]).sort());
    const store = new FileResultStore(dir);
    const big = Array.from({ length: 100000 }, (_, i) => `big line ${i}\n`).join('');
    expect(refs[0]).toBe(refIdFor(big));
    expect(fs.readFileSync(join(dir, `${refs[0]}.txt`), 'utf8')).toBe(big);
    expect(await store.read(refs[0]!, { offset: 99_999 })).toMatchObject({
      text: 'big line 99999\n',
      totalLines: 100_000,
      nextOffset: null,
    });
    const listed: StoredResult[] = await store.list();
    expect(listed.map((r) => r.refId).sort()).toEqual([...refs].sort());
    expect(listed.every((r) => /^child-\d+$/.test(r.tool ?? ''))).toBe(true);
  });
});

describe.runIf(process.platform !== 'win32')('FileResultStore: links and files planted in its folder', () => {
  const OUTSIDE = 'OUTSIDE-CONTENT-7d1e: never to be read through the store';

  function planted() {
    const base = tempDir();
    const dir = join(base, 'results');
    const outside = join(base, 'outside');
    fs.mkdirSync(dir);
    fs.mkdirSync(outside);
    return { base, dir, outside };
  }

  it('never follows a link planted as a result file; errors name the file, not where it leads nor what it holds', async () => {
    const { dir, outside } = planted();
    const store = new FileResultStore(dir);
    const ref = refIdFor(OUTSIDE);
    // A well-formed metadata file and text outside, linked in under the ref's names.
    fs.writeFileSync(
      join(outside, 'meta.json'),
      JSON.stringify({
        refId: ref,
        bytes: OUTSIDE.length,
        chars: OUTSIDE.length,
        lines: 1,
        createdAt: '2026-01-01T00:00:00.000Z',
      }),
    );
    fs.writeFileSync(join(outside, 'text.txt'), OUTSIDE);
    fs.symlinkSync(join(outside, 'meta.json'), join(dir, `${ref}.json`));
    fs.symlinkSync(join(outside, 'text.txt'), join(dir, `${ref}.txt`));
    const err = await caught(store.read(ref));
    expect(err.code).toBe('STORE_ERROR');
    expect(err.message).toContain(`${ref}.json`);
    expect(err.message).toContain('symbolic link');
    expect(err.message).not.toContain(outside);
    expect(err.message).not.toContain('OUTSIDE-CONTENT');
    expect((await caught(store.stat(ref))).code).toBe('STORE_ERROR');
    // A real metadata file with the text linked to a file outside: the text is not read either.
    fs.unlinkSync(join(dir, `${ref}.json`));
    fs.writeFileSync(join(dir, `${ref}.json`), fs.readFileSync(join(outside, 'meta.json')));
    const err2 = await caught(store.read(ref));
    expect(err2.message).toContain(`${ref}.txt`);
    expect(err2.message).not.toContain(outside);
    expect(err2.message).not.toContain('OUTSIDE-CONTENT');
    // put does not write through the link either: it replaces it with a file of its own.
    await store.put(OUTSIDE);
    expect(fs.lstatSync(join(dir, `${ref}.txt`)).isSymbolicLink()).toBe(false);
    expect(fs.readFileSync(join(outside, 'text.txt'), 'utf8')).toBe(OUTSIDE);
  });

  it('a metadata file that is not JSON is reported without quoting it', async () => {
    const { dir } = planted();
    const store = new FileResultStore(dir);
    const ref = 'r_0123456789abcdef';
    fs.writeFileSync(join(dir, `${ref}.json`), `${OUTSIDE} root:x:0:0`);
    const err = await caught(store.read(ref));
    expect(err.message).toContain('not valid JSON');
    expect(err.message).not.toContain('OUTSIDE');
  });

  it('writes results 0600 and creates its directory 0700', async () => {
    const { base } = planted();
    const dir = join(base, 'new-results');
    const store = new FileResultStore(dir);
    const { refId } = await store.put('a result with a key\n');
    expect(fs.statSync(dir).mode & 0o777).toBe(0o700);
    expect(fs.statSync(join(dir, `${refId}.txt`)).mode & 0o777).toBe(0o600);
    expect(fs.statSync(join(dir, `${refId}.json`)).mode & 0o777).toBe(0o600);
  });
});
