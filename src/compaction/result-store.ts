import { createHash } from 'node:crypto';
import { DEFAULT_READ_LIMIT, MAX_READ_LIMIT } from '../defaults.js';
import { AbridgeError } from '../errors.js';

/** What the caller knows about a result when it offloads it. */
export interface StoredResultMeta {
  tool?: string;
  callId?: string;
  sessionId?: string;
  entry?: number;
}

/** A stored result's metadata. `chars` counts UTF-16 code units (JavaScript string length); `bytes` is the UTF-8 size. */
export interface StoredResult extends StoredResultMeta {
  refId: string;
  bytes: number;
  chars: number;
  lines: number;
  /** ISO 8601 timestamp of the first put of this content. */
  createdAt: string;
}

/**
 * A run of lines of a stored result. `offset` and `limit` are the request (after defaults);
 * `text` is the exact substring of the stored text, line terminators (`\n` or `\r\n`) included,
 * so concatenating consecutive slices reproduces the result byte for byte.
 */
export interface ResultSlice {
  refId: string;
  text: string;
  offset: number;
  limit: number;
  totalChars: number;
  totalLines: number;
  /** The offset to read next, or null when this slice reaches the end. */
  nextOffset: number | null;
}

/**
 * Where offloaded tool results live. Async and minimal so durable stores (SQLite, PostgreSQL) can implement it.
 *
 * Lines: a line ends after each `\n`; text after the last `\n` is a final line (no terminator).
 * So `""` has 0 lines, `"a"` and `"a\n"` have 1, `"a\nb"` has 2.
 */
export interface ResultStore {
  /** Stores text and returns its reference. Same content → same refId (content-addressed: `r_` + first 16 hex of sha256), stored once. */
  put(text: string, meta?: StoredResultMeta): Promise<StoredResult>;
  /** A slice by LINES: offset = first line (0-based), limit = max lines (default 200, max 2000); never throws for a range past the end (empty slice, nextOffset null). Unknown refId → AbridgeError('RESULT_NOT_FOUND', message naming the ref and how refs look). */
  read(refId: string, range?: { offset?: number; limit?: number }): Promise<ResultSlice>;
  stat(refId: string): Promise<StoredResult | undefined>;
  /** Every stored result's metadata (for listing / audits), oldest first. */
  list(): Promise<StoredResult[]>;
  /**
   * A view of this store whose puts are readable at once but made durable together, at `commit()` — for work that
   * puts many results and then records what refers to them (a compaction commits before its marker exists). Optional:
   * a store without it is durable at each put.
   */
  batch?(): ResultBatch;
}

/** Puts whose durability waits for `commit()` (see ResultStore.batch). */
export interface ResultBatch {
  store: ResultStore;
  /** Makes every result put through `store` durable; STORE_ERROR when one cannot be. */
  commit(): Promise<void>;
}

/**
 * A ResultStore that can hold a result under a ref the caller chooses: what session-scoped views (`forSession`) are
 * built on. Every store abridge ships implements it.
 */
export interface KeyedResultStore extends ResultStore {
  /** Stores `text` under `refId` (idempotent: a ref already stored keeps its first metadata). */
  putWithRef(refId: string, text: string, meta?: StoredResultMeta): Promise<StoredResult>;
  /** A view of this store that sees only the results put through it for `sessionId` (see SessionResultStore). */
  forSession(sessionId: string): ResultStore;
  batch?(): { store: KeyedResultStore; commit(): Promise<void> };
}

export { DEFAULT_READ_LIMIT, MAX_READ_LIMIT };
export const REF_ID_PATTERN = /^r_[0-9a-f]{16}$/;

/** How refs look, for error messages. */
export const REF_ID_SHAPE = '"r_" followed by 16 lowercase hex digits, e.g. "r_0123456789abcdef"';

/** The content address of `text`: `r_` + the first 16 hex digits of the SHA-256 of its UTF-8 bytes. */
export function refIdFor(text: string): string {
  return `r_${createHash('sha256').update(text, 'utf8').digest('hex').slice(0, 16)}`;
}

/**
 * The ref of `text` put for one session: content-addressed within the session, distinct across sessions. The hashed
 * bytes must say where the id ends: `abridge-session NUL id NUL text` does for an id without NUL (the refs stored so
 * far, kept as they are); an id holding NUL ("a\0b" with "c" would hash as "a" with "b\0c") is hashed under another
 * prefix with its length in front instead.
 */
export function sessionRefIdFor(sessionId: string, text: string): string {
  const head = sessionId.includes('\0')
    ? `abridge-session-lp\0${Buffer.byteLength(sessionId, 'utf8')}:${sessionId}`
    : `abridge-session\0${sessionId}\0`;
  return `r_${createHash('sha256').update(head, 'utf8').update(text, 'utf8').digest('hex').slice(0, 16)}`;
}

/**
 * One session's view of a shared ResultStore: `put` stores under a ref derived from the session and the content (so
 * sessions never share a stored result) with the session's id in the metadata; `read`, `stat` and `list` see only
 * results whose metadata names this session — a ref of another session is answered exactly like an unknown one.
 */
export class SessionResultStore implements ResultStore {
  constructor(
    private readonly base: KeyedResultStore,
    readonly sessionId: string,
  ) {
    if (typeof sessionId !== 'string' || sessionId === '')
      throw new AbridgeError('INVALID_INPUT', 'forSession needs a non-empty session id.');
  }

  put(text: string, meta?: StoredResultMeta): Promise<StoredResult> {
    return this.base.putWithRef(sessionRefIdFor(this.sessionId, text), text, { ...meta, sessionId: this.sessionId });
  }

  async read(refId: string, range?: { offset?: number; limit?: number }): Promise<ResultSlice> {
    validateRefId(refId);
    normalizeRange(range);
    if (!(await this.stat(refId))) throw resultNotFound(refId, "this session's stored results");
    return this.base.read(refId, range);
  }

  async stat(refId: string): Promise<StoredResult | undefined> {
    const s = await this.base.stat(refId);
    return s && s.sessionId === this.sessionId ? s : undefined;
  }

  async list(): Promise<StoredResult[]> {
    return (await this.base.list()).filter((s) => s.sessionId === this.sessionId);
  }

  /** The base store's batch, seen through this session (undefined when the base store has none). */
  get batch(): (() => ResultBatch) | undefined {
    const base = this.base;
    if (!base.batch) return undefined;
    return () => {
      const b = base.batch!();
      return { store: new SessionResultStore(b.store, this.sessionId), commit: () => b.commit() };
    };
  }
}

/**
 * What every content-addressed store shares: `put` stores under the text's own ref, `forSession` is the scoped view.
 * A store implements where and how a ref is kept (`putWithRef`, `read`, `stat`, `list`).
 */
export abstract class ContentAddressedStore implements KeyedResultStore {
  abstract putWithRef(refId: string, text: string, meta?: StoredResultMeta): Promise<StoredResult>;
  abstract read(refId: string, range?: { offset?: number; limit?: number }): Promise<ResultSlice>;
  abstract stat(refId: string): Promise<StoredResult | undefined>;
  abstract list(): Promise<StoredResult[]>;

  put(text: string, meta?: StoredResultMeta): Promise<StoredResult> {
    return this.putWithRef(refIdFor(text), text, meta);
  }

  /** A view that sees only the results of one session (see SessionResultStore). */
  forSession(sessionId: string): ResultStore {
    return new SessionResultStore(this, sessionId);
  }
}

/** A value as an error quotes it: never more than a short prefix of a long string (an oversized input is not echoed). */
const show = (v: unknown): string => {
  if (typeof v === 'string' && v.length > 40)
    return `${JSON.stringify(v.slice(0, 40))}… (${v.length.toLocaleString('en-US')} characters)`;
  return typeof v === 'number'
    ? String(v)
    : v === undefined
      ? 'undefined'
      : (JSON.stringify(v) ?? String(v)).slice(0, 200);
};

/** Throws AbridgeError('INVALID_INPUT') unless `refId` looks like a ref. */
export function validateRefId(refId: unknown): asserts refId is string {
  if (typeof refId !== 'string' || !REF_ID_PATTERN.test(refId)) {
    throw new AbridgeError('INVALID_INPUT', `Invalid ref_id ${show(refId)}: expected ${REF_ID_SHAPE}.`);
  }
}

/** Applies defaults (offset 0, limit 200) and validates; null counts as absent (tool arguments are JSON). */
export function normalizeRange(range?: { offset?: number | null; limit?: number | null }): {
  offset: number;
  limit: number;
} {
  const offset = range?.offset ?? 0;
  const limit = range?.limit ?? DEFAULT_READ_LIMIT;
  if (typeof offset !== 'number' || !Number.isSafeInteger(offset) || offset < 0) {
    throw new AbridgeError(
      'INVALID_INPUT',
      `Invalid offset ${show(offset)}: expected a non-negative integer (the 0-based line to start reading at).`,
    );
  }
  if (typeof limit !== 'number' || !Number.isSafeInteger(limit) || limit < 0 || limit > MAX_READ_LIMIT) {
    throw new AbridgeError(
      'INVALID_INPUT',
      `Invalid limit ${show(limit)}: expected an integer from 0 to ${MAX_READ_LIMIT} (the number of lines to read; default ${DEFAULT_READ_LIMIT}).`,
    );
  }
  return { offset, limit };
}

/** Number of lines in `text` (see ResultStore for what a line is). */
export function countLines(text: string): number {
  if (text === '') return 0;
  let n = 0;
  for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) n++;
  return text.endsWith('\n') ? n : n + 1;
}

/** Lines [offset, offset + limit) of `text`, terminators included. */
export function sliceLines(text: string, offset: number, limit: number): string {
  let start = 0;
  for (let i = 0; i < offset; i++) {
    const nl = text.indexOf('\n', start);
    if (nl === -1) return '';
    start = nl + 1;
  }
  let end = start;
  for (let i = 0; i < limit && end < text.length; i++) {
    const nl = text.indexOf('\n', end);
    end = nl === -1 ? text.length : nl + 1;
  }
  return text.slice(start, end);
}

/** The metadata of `text` as a new StoredResult (only the known meta fields are kept). */
export function describeText(
  text: string,
  meta: StoredResultMeta | undefined,
  createdAt: Date,
  refId = refIdFor(text),
): StoredResult {
  const out: StoredResult = {
    refId,
    bytes: Buffer.byteLength(text, 'utf8'),
    chars: text.length,
    lines: countLines(text),
    createdAt: createdAt.toISOString(),
  };
  if (meta?.tool !== undefined) out.tool = meta.tool;
  if (meta?.callId !== undefined) out.callId = meta.callId;
  if (meta?.sessionId !== undefined) out.sessionId = meta.sessionId;
  if (meta?.entry !== undefined) out.entry = meta.entry;
  return out;
}

/** Builds a slice; nextOffset is where the next read starts, null once the slice reaches the end. */
export function makeSlice(stored: StoredResult, text: string, offset: number, limit: number): ResultSlice {
  const next = offset + limit;
  return {
    refId: stored.refId,
    text,
    offset,
    limit,
    totalChars: stored.chars,
    totalLines: stored.lines,
    nextOffset: next < stored.lines ? next : null,
  };
}

const n = (x: number) => x.toLocaleString('en-US');

/** The header line of a slice, e.g. `[ref r_0123456789abcdef · lines 200–399 of 1,234 · next: offset 400]`. Line numbers are 0-based, like offset. */
export function sliceHeader(slice: ResultSlice): string {
  const { refId, offset, limit, totalLines, nextOffset } = slice;
  const tail = nextOffset === null ? 'end' : `next: offset ${n(nextOffset)}`;
  let where: string;
  if (totalLines === 0) where = 'empty result (0 lines)';
  else if (offset >= totalLines)
    where = `no lines at offset ${n(offset)}: the result has ${n(totalLines)} line${totalLines === 1 ? '' : 's'} (offsets 0–${n(totalLines - 1)})`;
  else if (limit === 0) where = `no lines read (limit 0) at offset ${n(offset)} of ${n(totalLines)}`;
  else {
    const last = Math.min(offset + limit, totalLines) - 1;
    where =
      last === offset ? `line ${n(offset)} of ${n(totalLines)}` : `lines ${n(offset)}–${n(last)} of ${n(totalLines)}`;
  }
  return `[ref ${refId} · ${where} · ${tail}]`;
}

/** A slice as the model sees it: the header line, then the text exactly as stored. */
export function formatSlice(slice: ResultSlice): string {
  const header = sliceHeader(slice);
  return slice.text === '' ? header : `${header}\n${slice.text}`;
}

/** The RESULT_NOT_FOUND error for a well-formed ref the store does not hold. */
export function resultNotFound(refId: string, where: string): AbridgeError {
  return new AbridgeError(
    'RESULT_NOT_FOUND',
    `No stored result with ref_id "${refId}" in ${where}. A ref_id is ${REF_ID_SHAPE}; use one exactly as given where the result was offloaded.`,
  );
}
