import { randomUUID } from 'node:crypto';
import { AbridgeError } from '../errors.js';
import type { Entry, Message, SessionInfo } from '../model/types.js';
import { activeMessages } from '../model/view.js';
import {
  loadSession,
  type CreateFromOptions,
  type EntryPagesOptions,
  type NewSession,
  type ResumedSession,
  type SessionSnapshot,
  type SessionStore,
  type StoredSession,
} from './session-store.js';

// ---------------------------------------------------------------------------------------------------------------------
// Helpers shared by the SessionStore implementations (memory, SQLite, PostgreSQL), so that they fail alike.

/** AbridgeError('SESSION_NOT_FOUND') for a session the store does not hold. */
export function sessionNotFound(id: string): AbridgeError {
  return new AbridgeError('SESSION_NOT_FOUND', `no session "${id}" in this store`);
}

/** AbridgeError('SESSION_EXISTS') for a createSession with an id already taken. */
export function sessionExists(id: string): AbridgeError {
  return new AbridgeError('SESSION_EXISTS', `a session "${id}" already exists in this store (choose another id)`);
}

/** AbridgeError('CONFLICT'): the writer has not seen the latest entries. Names both versions. */
export function versionConflict(id: string, expected: number, actual: number): AbridgeError {
  return new AbridgeError(
    'CONFLICT',
    `session "${id}" is at version ${actual}, not the expected version ${expected}: another writer appended first; read the new entries and retry`,
    { details: { sessionId: id, expected, actual } },
  );
}

/** Throws AbridgeError('INVALID_INPUT') unless `expectedVersion` is absent or a non-negative integer. */
export function checkExpectedVersion(expected: unknown): asserts expected is number | undefined {
  if (expected === undefined) return;
  if (typeof expected !== 'number' || !Number.isSafeInteger(expected) || expected < 0) {
    throw new AbridgeError(
      'INVALID_INPUT',
      `Invalid expectedVersion ${String(expected)}: expected a non-negative integer (the session's version, its number of entries)`,
    );
  }
}

/** Throws AbridgeError('INVALID_INPUT') unless `id` is a usable session id (a non-empty string of at most 200 characters). */
export function checkSessionId(id: unknown): asserts id is string {
  if (typeof id !== 'string' || id === '' || id.length > 200) {
    throw new AbridgeError(
      'INVALID_INPUT',
      `Invalid session id ${JSON.stringify(id) ?? String(id)}: expected a non-empty string of at most 200 characters`,
    );
  }
}

/** Resolves an entries() range to [from, to) within [0, version]; invalid bounds are AbridgeError('INVALID_INPUT'). */
export function resolveRange(
  range: { from?: number; to?: number } | undefined,
  version: number,
): { from: number; to: number } {
  const check = (name: string, v: unknown) => {
    if (v !== undefined && (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0)) {
      throw new AbridgeError(
        'INVALID_INPUT',
        `Invalid range.${name} ${String(v)}: expected a non-negative integer (an entry index)`,
      );
    }
  };
  check('from', range?.from);
  check('to', range?.to);
  const from = Math.min(range?.from ?? 0, version);
  const to = Math.min(range?.to ?? version, version);
  return { from, to: Math.max(from, to) };
}

/**
 * JSON text of each entry of a batch, without its `index` (a stored entry's index is its position). All or nothing:
 * an entry that cannot be serialized (a BigInt, a cycle) is AbridgeError('INVALID_INPUT') naming it, before anything
 * is written.
 */
export function encodeEntries(entries: readonly Omit<Entry, 'index'>[]): string[] {
  if (!Array.isArray(entries)) throw new AbridgeError('INVALID_INPUT', 'entries: expected an array of entries');
  return entries.map((e, i) => {
    if (e === null || typeof e !== 'object' || Array.isArray(e))
      throw new AbridgeError('INVALID_INPUT', `entry ${i} of the batch is not an object; nothing was stored`);
    const { index: _index, ...rest } = e as Entry;
    return encodeJson(rest, `entry ${i} of the batch`);
  });
}

/** A session row's JSON columns (info, extra, layout), each checked to be storable; null for what is absent. */
export function encodeSessionRow(s: Omit<NewSession, 'id'>): {
  info: string;
  extra: string | null;
  layout: string | null;
} {
  return {
    info: encodeJson(s.info ?? {}, 'the session info'),
    extra: s.extra === undefined ? null : encodeJson(s.extra, 'the session extra data'),
    layout: s.layout === undefined ? null : encodeJson(s.layout, 'the session layout'),
  };
}

/** JSON text of a value, or AbridgeError('INVALID_INPUT') naming `what` when it cannot be serialized. */
export function encodeJson(value: unknown, what: string): string {
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch (err) {
    throw new AbridgeError(
      'INVALID_INPUT',
      `${what} cannot be stored: ${err instanceof Error ? err.message : String(err)} (stored data must be JSON-serializable); nothing was stored`,
    );
  }
  if (text === undefined)
    throw new AbridgeError('INVALID_INPUT', `${what} cannot be stored: it has no JSON form; nothing was stored`);
  return text;
}

/**
 * The positions of a createSessionFrom, checked as its batches arrive: each a non-negative integer below `max`, none
 * twice, and together 0…n-1 (see `complete`). AbridgeError('INVALID_INPUT') otherwise.
 */
export class Positions {
  private seen = new Uint8Array(1024);
  private highest = -1;
  count = 0;

  constructor(private readonly max = Number.MAX_SAFE_INTEGER) {}

  add(index: unknown): number {
    if (typeof index !== 'number' || !Number.isSafeInteger(index) || index < 0 || index >= this.max)
      throw new AbridgeError(
        'INVALID_INPUT',
        `entry index ${String(index)}: expected the entry's position, a non-negative integer${this.max < Number.MAX_SAFE_INTEGER ? ` below ${this.max}` : ''}; nothing was stored`,
      );
    if (index >= this.seen.length * 8) {
      const grown = new Uint8Array(Math.max(this.seen.length * 2, (index >> 3) + 1));
      grown.set(this.seen);
      this.seen = grown;
    }
    const bit = 1 << (index & 7);
    if (this.seen[index >> 3]! & bit)
      throw new AbridgeError('INVALID_INPUT', `entry index ${index} was given twice; nothing was stored`);
    this.seen[index >> 3]! |= bit;
    if (index > this.highest) this.highest = index;
    return ++this.count;
  }

  /** Throws unless the positions seen are exactly 0…count-1. */
  complete(): number {
    if (this.highest !== this.count - 1)
      throw new AbridgeError(
        'INVALID_INPUT',
        `entries: positions 0…${this.highest} expected each once, but ${this.count} entries came (a gap); nothing was stored`,
      );
    return this.count;
  }
}

/** JSON text of one entry without its `index` (see encodeEntries); `what` names it in the error. */
export function encodeEntry(e: Entry, what: string): string {
  if (e === null || typeof e !== 'object' || Array.isArray(e))
    throw new AbridgeError('INVALID_INPUT', `${what} is not an object; nothing was stored`);
  const { index: _index, ...rest } = e;
  return encodeJson(rest, what);
}

/** A stored entry back from its JSON text, with its position as index. */
export function decodeEntry(text: string, index: number): Entry {
  const e = JSON.parse(text) as Entry;
  e.index = index;
  return e;
}

/** The page size of an entryPages call: a positive integer (default 128). */
export function pageSize(size: unknown): number {
  if (size === undefined) return 128;
  if (typeof size !== 'number' || !Number.isSafeInteger(size) || size < 1)
    throw new AbridgeError('INVALID_INPUT', `Invalid pageSize ${String(size)}: expected a positive integer`);
  return size;
}

/** The snapshot fields a compaction record stores, validated and encoded (messages must be an array). */
export function encodeSnapshot(snapshot: Omit<SessionSnapshot, 'sessionId' | 'atVersion' | 'createdAt'>): {
  messages: string;
  marker: string | null;
  tokens: number | null;
} {
  if (snapshot === null || typeof snapshot !== 'object' || !Array.isArray(snapshot.messages)) {
    throw new AbridgeError('INVALID_INPUT', 'snapshot: expected { messages: Message[], marker?, tokens? }');
  }
  if (snapshot.tokens !== undefined && (typeof snapshot.tokens !== 'number' || !Number.isFinite(snapshot.tokens))) {
    throw new AbridgeError('INVALID_INPUT', `snapshot.tokens: expected a number, got ${String(snapshot.tokens)}`);
  }
  return {
    messages: encodeJson(snapshot.messages, 'the snapshot messages'),
    marker: snapshot.marker === undefined ? null : encodeJson(snapshot.marker, 'the snapshot marker'),
    tokens: snapshot.tokens ?? null,
  };
}

/**
 * What `resume()` returns, from the session's version, its latest snapshot and the entries appended after it.
 *
 * With a snapshot: its messages, then the messages of the entries appended after it (subagent sidechain entries
 * left out, as in activeView, unless every one of them is on a sidechain). When a compaction marker was appended
 * after the snapshot without one of its own (a plain append), the snapshot is stale and the session's activeView is
 * used instead, as it is without any snapshot: `fullView` is then called for the messages of the whole history.
 */
export async function buildResumed(
  version: number,
  snapshot: SessionSnapshot | undefined,
  after: readonly Entry[],
  fullView: () => Promise<Message[]>,
): Promise<ResumedSession> {
  if (snapshot && !after.some((e) => e.compaction)) {
    const withMessage = after.filter((e) => e.message);
    const main = withMessage.filter((e) => !e.sidechain);
    const tail = (main.length > 0 ? main : withMessage).map((e) => e.message!);
    return {
      messages: [...snapshot.messages, ...tail],
      fromSnapshot: true,
      snapshotAt: snapshot.atVersion,
      appended: after.length,
      version,
    };
  }
  return {
    messages: await fullView(),
    fromSnapshot: false,
    appended: snapshot ? after.length : version,
    version,
    ...(snapshot ? { snapshotAt: snapshot.atVersion } : {}),
  };
}

/** The messages of a stored session's active view (the whole history read back, compaction markers applied). */
export async function fullActiveMessages(store: SessionStore, sessionId: string): Promise<Message[]> {
  return activeMessages(await loadSession(store, sessionId));
}

// ---------------------------------------------------------------------------------------------------------------------

export interface MemorySessionStoreOptions {
  /** Clock for createdAt / updatedAt (tests). */
  now?: () => Date;
}

interface Held {
  session: StoredSession;
  /** JSON text of each entry (without index): stored data cannot be changed through a caller's objects. */
  entries: string[];
  snapshots: { atVersion: number; messages: string; marker: string | null; tokens: number | null; createdAt: string }[];
}

/**
 * A SessionStore in memory: for tests, short-lived agents, and as the reference the durable stores are held to.
 * Entries and snapshots are kept as JSON text, so what goes in and what comes out are copies, and what cannot be
 * stored durably (a BigInt, a cycle) is refused here too.
 */
export class MemorySessionStore implements SessionStore {
  private readonly sessions = new Map<string, Held>();
  private readonly now: () => Date;
  private closed = false;

  constructor(options: MemorySessionStoreOptions = {}) {
    this.now = options.now ?? (() => new Date());
  }

  async createSession(init: NewSession, entries: readonly Omit<Entry, 'index'>[] = []): Promise<StoredSession> {
    this.open();
    const id = init.id ?? randomUUID();
    checkSessionId(id);
    if (this.sessions.has(id)) throw sessionExists(id);
    const encoded = encodeEntries(entries);
    const at = this.now().toISOString();
    const session: StoredSession = {
      id,
      format: init.format,
      info: copy(init.info ?? {}, 'info'),
      version: 0,
      createdAt: at,
      updatedAt: at,
    };
    if (init.extra !== undefined) session.extra = copy(init.extra, 'extra');
    if (init.layout !== undefined) session.layout = copy(init.layout, 'layout');
    const held: Held = { session, entries: [...encoded], snapshots: [] };
    session.version = encoded.length;
    this.sessions.set(id, held);
    return structuredClone(session);
  }

  async createSessionFrom(
    init: NewSession,
    batches: AsyncIterable<readonly Entry[]> | Iterable<readonly Entry[]>,
    options: CreateFromOptions = {},
  ): Promise<StoredSession> {
    this.open();
    const id = init.id ?? randomUUID();
    checkSessionId(id);
    if (this.sessions.has(id)) throw sessionExists(id);
    // Nothing is visible until the end: the session is added only once every batch and `finish` have succeeded.
    const positions = new Positions();
    const entries: string[] = [];
    for await (const batch of batches) {
      if (!Array.isArray(batch)) throw new AbridgeError('INVALID_INPUT', 'batches: expected arrays of entries');
      for (const e of batch as readonly Entry[]) {
        positions.add(e?.index);
        entries[e.index] = encodeEntry(e, `entry ${e.index}`);
      }
    }
    const count = positions.complete();
    const tail = (await options.finish?.({ entries: count })) ?? {};
    this.open();
    if (this.sessions.has(id)) throw sessionExists(id);
    const session = await this.createSession({ ...init, ...tail, id });
    const held = this.held(id);
    held.entries = entries;
    held.session.version = session.version = count;
    return session;
  }

  async getSession(id: string): Promise<StoredSession | undefined> {
    this.open();
    const held = this.sessions.get(id);
    return held && structuredClone(held.session);
  }

  async updateInfo(sessionId: string, info: SessionInfo): Promise<void> {
    this.open();
    const held = this.held(sessionId);
    held.session.info = structuredClone(info);
    held.session.updatedAt = this.now().toISOString();
  }

  async listSessions(): Promise<StoredSession[]> {
    this.open();
    return [...this.sessions.values()].map((h) => structuredClone(h.session));
  }

  async append(
    sessionId: string,
    entries: readonly Omit<Entry, 'index'>[],
    options?: { expectedVersion?: number },
  ): Promise<{ version: number }> {
    this.open();
    const held = this.held(sessionId);
    checkExpectedVersion(options?.expectedVersion);
    const encoded = encodeEntries(entries);
    this.checkVersion(held, options?.expectedVersion);
    this.push(held, encoded);
    return { version: held.session.version };
  }

  async entries(sessionId: string, range?: { from?: number; to?: number }): Promise<Entry[]> {
    this.open();
    const held = this.held(sessionId);
    const { from, to } = resolveRange(range, held.entries.length);
    const out: Entry[] = [];
    for (let i = from; i < to; i++) out.push(decodeEntry(held.entries[i]!, i));
    return out;
  }

  async *entryPages(sessionId: string, options: EntryPagesOptions = {}): AsyncIterable<Entry[]> {
    this.open();
    const held = this.held(sessionId);
    // One consistent state: the entries as they are now (an append made while iterating is not seen).
    const { from, to } = resolveRange(options, held.entries.length);
    const texts = held.entries.slice(from, to);
    const size = pageSize(options.pageSize);
    for (let start = 0; start < texts.length; start += size) {
      const page: Entry[] = [];
      for (let i = start; i < Math.min(start + size, texts.length); i++) page.push(decodeEntry(texts[i]!, from + i));
      yield page;
    }
  }

  async recordCompaction(
    sessionId: string,
    entries: readonly Omit<Entry, 'index'>[],
    snapshot: Omit<SessionSnapshot, 'sessionId' | 'atVersion' | 'createdAt'>,
    options?: { expectedVersion?: number },
  ): Promise<{ version: number }> {
    this.open();
    const held = this.held(sessionId);
    checkExpectedVersion(options?.expectedVersion);
    const encoded = encodeEntries(entries);
    const snap = encodeSnapshot(snapshot);
    this.checkVersion(held, options?.expectedVersion);
    this.push(held, encoded);
    held.snapshots.push({ atVersion: held.session.version, ...snap, createdAt: this.now().toISOString() });
    return { version: held.session.version };
  }

  async latestSnapshot(sessionId: string): Promise<SessionSnapshot | undefined> {
    this.open();
    const held = this.held(sessionId);
    const s = held.snapshots[held.snapshots.length - 1];
    if (!s) return undefined;
    const out: SessionSnapshot = {
      sessionId,
      atVersion: s.atVersion,
      messages: JSON.parse(s.messages) as Message[],
      createdAt: s.createdAt,
    };
    if (s.marker !== null) out.marker = JSON.parse(s.marker) as SessionSnapshot['marker'];
    if (s.tokens !== null) out.tokens = s.tokens;
    return out;
  }

  async resume(sessionId: string): Promise<ResumedSession> {
    this.open();
    const held = this.held(sessionId);
    const snapshot = await this.latestSnapshot(sessionId);
    const after = await this.entries(sessionId, { from: snapshot?.atVersion ?? held.entries.length });
    return buildResumed(held.session.version, snapshot, after, () => fullActiveMessages(this, sessionId));
  }

  async close(): Promise<void> {
    this.closed = true;
  }

  private open(): void {
    if (this.closed) throw new AbridgeError('STORE_ERROR', 'this MemorySessionStore is closed');
  }

  private held(id: string): Held {
    const held = this.sessions.get(id);
    if (!held) throw sessionNotFound(id);
    return held;
  }

  private checkVersion(held: Held, expected: number | undefined): void {
    if (expected !== undefined && expected !== held.session.version)
      throw versionConflict(held.session.id, expected, held.session.version);
  }

  private push(held: Held, encoded: string[]): void {
    if (encoded.length === 0) return;
    for (const e of encoded) held.entries.push(e);
    held.session.version = held.entries.length;
    held.session.updatedAt = this.now().toISOString();
  }
}

function copy<T>(value: T, what: string): T {
  return JSON.parse(encodeJson(value, what)) as T;
}
