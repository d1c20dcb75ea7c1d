import { AbridgeError } from '../errors.js';
import {
  describeText,
  makeSlice,
  normalizeRange,
  resultNotFound,
  ContentAddressedStore,
  sliceLines,
  validateRefId,
  type ResultSlice,
  type StoredResult,
  type StoredResultMeta,
} from './result-store.js';

export interface MemoryResultStoreOptions {
  /**
   * Upper bound on the UTF-8 bytes of stored text. Past it, the least recently used results
   * (a put or a read counts as use) are evicted. The result just put is never evicted by its own put,
   * so a single result larger than maxBytes is kept, alone.
   */
  maxBytes?: number;
  /** Clock for createdAt (tests). */
  now?: () => Date;
}

interface Entry {
  text: string;
  meta: StoredResult;
  /** Insertion order, for list(). */
  seq: number;
}

/** A ResultStore in a Map: for tests, short-lived agents, and as the reference for the others' behaviour. */
export class MemoryResultStore extends ContentAddressedStore {
  readonly maxBytes: number | undefined;
  /** Least recently used first (Map iteration order; a use moves an entry to the end). */
  private readonly entries = new Map<string, Entry>();
  private readonly evicted = new Set<string>();
  private readonly now: () => Date;
  private seq = 0;
  private totalBytes = 0;

  constructor(options: MemoryResultStoreOptions = {}) {
    super();
    const { maxBytes } = options;
    if (maxBytes !== undefined && (!Number.isSafeInteger(maxBytes) || maxBytes <= 0)) {
      throw new AbridgeError(
        'INVALID_INPUT',
        `Invalid maxBytes ${maxBytes}: expected a positive integer (bytes of stored text).`,
      );
    }
    this.maxBytes = maxBytes;
    this.now = options.now ?? (() => new Date());
  }

  /** UTF-8 bytes of the text currently held. */
  get bytes(): number {
    return this.totalBytes;
  }

  get size(): number {
    return this.entries.size;
  }

  async putWithRef(refId: string, text: string, meta?: StoredResultMeta): Promise<StoredResult> {
    validateRefId(refId);
    const existing = this.entries.get(refId);
    if (existing) {
      this.touch(refId, existing);
      return { ...existing.meta };
    }
    const stored = describeText(text, meta, this.now(), refId);
    this.entries.set(refId, { text, meta: stored, seq: this.seq++ });
    this.evicted.delete(refId);
    this.totalBytes += stored.bytes;
    this.evict(refId);
    return { ...stored };
  }

  async read(refId: string, range?: { offset?: number; limit?: number }): Promise<ResultSlice> {
    validateRefId(refId);
    const { offset, limit } = normalizeRange(range);
    const entry = this.get(refId);
    this.touch(refId, entry);
    return makeSlice(entry.meta, sliceLines(entry.text, offset, limit), offset, limit);
  }

  async stat(refId: string): Promise<StoredResult | undefined> {
    validateRefId(refId);
    const entry = this.entries.get(refId);
    return entry && { ...entry.meta };
  }

  async list(): Promise<StoredResult[]> {
    return [...this.entries.values()].sort((a, b) => a.seq - b.seq).map((e) => ({ ...e.meta }));
  }

  private get(refId: string): Entry {
    const entry = this.entries.get(refId);
    if (entry) return entry;
    if (this.evicted.has(refId)) {
      throw new AbridgeError(
        'RESULT_NOT_FOUND',
        `The result with ref_id "${refId}" was evicted from the in-memory result store (it keeps at most ${this.maxBytes?.toLocaleString('en-US')} bytes, least recently used first) and is no longer available; run the tool again to get it.`,
      );
    }
    throw resultNotFound(refId, 'the in-memory result store');
  }

  private touch(refId: string, entry: Entry): void {
    this.entries.delete(refId);
    this.entries.set(refId, entry);
  }

  private evict(keep: string): void {
    if (this.maxBytes === undefined) return;
    for (const [refId, entry] of this.entries) {
      if (this.totalBytes <= this.maxBytes) return;
      if (refId === keep) continue;
      this.entries.delete(refId);
      this.evicted.add(refId);
      this.totalBytes -= entry.meta.bytes;
    }
  }
}
