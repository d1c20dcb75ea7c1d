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
} from '../../compaction/result-store.js';
import type { SqliteDatabase } from './driver.js';
import { storeGuard } from './errors.js';

interface BlobRow {
  ref_id: string;
  bytes: number;
  chars: number;
  lines: number;
  tool: string | null;
  call_id: string | null;
  session_id: string | null;
  entry: number | null;
  created_at: string;
}

const META = 'ref_id, bytes, chars, lines, tool, call_id, session_id, entry, created_at';

export interface SqliteResultStoreOptions {
  /** Clock for createdAt (tests). */
  now?: () => Date;
  /** How messages name the database (default: its file name). */
  where?: string;
}

/**
 * A ResultStore in the `tool_result_blobs` table of an abridge SQLite database (see openSqliteStore). Same behavior
 * as MemoryResultStore without eviction: content-addressed (the same text is stored once and keeps its first
 * metadata), line slices, list oldest first. Several processes can share the database.
 */
export class SqliteResultStore extends ContentAddressedStore {
  private readonly now: () => Date;
  private readonly where: string;
  private readonly stmts;
  private readonly guard: <T>(what: string, fn: () => T) => T;

  constructor(db: SqliteDatabase, options: SqliteResultStoreOptions = {}) {
    super();
    this.now = options.now ?? (() => new Date());
    this.where = options.where ?? `the SQLite store at ${db.name}`;
    this.guard = storeGuard(this.where);
    this.stmts = {
      insert: db.prepare(
        'INSERT OR IGNORE INTO tool_result_blobs (ref_id, text, bytes, chars, lines, tool, call_id, session_id, entry, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
      ),
      meta: db.prepare<[string], BlobRow>(`SELECT ${META} FROM tool_result_blobs WHERE ref_id = ?`),
      text: db.prepare<[string], string>('SELECT text FROM tool_result_blobs WHERE ref_id = ?').pluck(),
      list: db.prepare<[], BlobRow>(`SELECT ${META} FROM tool_result_blobs ORDER BY rowid`),
    };
  }

  async putWithRef(refId: string, text: string, meta?: StoredResultMeta): Promise<StoredResult> {
    validateRefId(refId);
    return this.guard('cannot store a result', () => {
      const existing = this.stmts.meta.get(refId);
      if (existing) return toResult(existing);
      const d = describeText(text, meta, this.now(), refId);
      this.stmts.insert.run(
        d.refId,
        text,
        d.bytes,
        d.chars,
        d.lines,
        d.tool ?? null,
        d.callId ?? null,
        d.sessionId ?? null,
        d.entry ?? null,
        d.createdAt,
      );
      // Another process may have stored the same content first: the stored row is the answer.
      return toResult(this.stmts.meta.get(refId)!);
    });
  }

  async read(refId: string, range?: { offset?: number; limit?: number }): Promise<ResultSlice> {
    validateRefId(refId);
    const { offset, limit } = normalizeRange(range);
    return this.guard(`cannot read result ${refId}`, () => {
      const row = this.stmts.meta.get(refId);
      if (!row) throw resultNotFound(refId, this.where);
      const stored = toResult(row);
      if (limit === 0 || offset >= stored.lines) return makeSlice(stored, '', offset, limit);
      const text = this.stmts.text.get(refId) ?? '';
      return makeSlice(stored, sliceLines(text, offset, limit), offset, limit);
    });
  }

  async stat(refId: string): Promise<StoredResult | undefined> {
    validateRefId(refId);
    return this.guard(`cannot read result ${refId}`, () => {
      const row = this.stmts.meta.get(refId);
      return row && toResult(row);
    });
  }

  async list(): Promise<StoredResult[]> {
    return this.guard('cannot list results', () => this.stmts.list.all().map(toResult));
  }
}

function toResult(row: BlobRow): StoredResult {
  const out: StoredResult = {
    refId: row.ref_id,
    bytes: row.bytes,
    chars: row.chars,
    lines: row.lines,
    createdAt: row.created_at,
  };
  if (row.tool !== null) out.tool = row.tool;
  if (row.call_id !== null) out.callId = row.call_id;
  if (row.session_id !== null) out.sessionId = row.session_id;
  if (row.entry !== null) out.entry = row.entry;
  return out;
}
