import { AbridgeError } from '../../errors.js';
import type { Pool } from 'pg';
import {
  describeText,
  makeSlice,
  normalizeRange,
  resultNotFound,
  sliceLines,
  ContentAddressedStore,
  validateRefId,
  type ResultSlice,
  type StoredResult,
  type StoredResultMeta,
} from '../../compaction/result-store.js';
import { storeError } from './connection.js';

export interface PostgresResultStoreConfig {
  pool: Pool;
  schema: string;
  quoted: string;
  now?: () => Date;
}

interface BlobRow {
  ref_id: string;
  bytes: number;
  chars: number;
  lines: number;
  tool: string | null;
  call_id: string | null;
  session_id: string | null;
  entry: number | null;
  created_at: Date;
}

const META_COLUMNS = 'ref_id, bytes, chars, lines, tool, call_id, session_id, entry, created_at';

/**
 * A ResultStore in PostgreSQL (table `tool_result_blobs` of the store's schema), shared by every worker using the
 * database. The text is kept as its UTF-8 bytes (BYTEA: any text, NUL characters included) with its metadata; the
 * first put of some content wins and later puts of the same content return its metadata, also when workers put it at
 * the same time. Get one as `store.results` of `openPostgresStore(...)`; it uses the store's connection pool.
 */
export class PostgresResultStore extends ContentAddressedStore {
  readonly schema: string;
  private readonly pool: Pool;
  private readonly s: string;
  private readonly now: () => Date;

  constructor(config: PostgresResultStoreConfig) {
    super();
    this.pool = config.pool;
    this.schema = config.schema;
    this.s = config.quoted;
    this.now = config.now ?? (() => new Date());
  }

  async putWithRef(refId: string, text: string, meta?: StoredResultMeta): Promise<StoredResult> {
    validateRefId(refId);
    try {
      const existing = await this.stat(refId);
      if (existing) return existing;
      const stored = describeText(text, meta, this.now(), refId);
      const { rows } = await this.pool.query<BlobRow>(
        `INSERT INTO ${this.s}.tool_result_blobs (ref_id, body, bytes, chars, lines, tool, call_id, session_id, entry, created_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
         ON CONFLICT (ref_id) DO NOTHING
         RETURNING ${META_COLUMNS}`,
        [
          refId,
          Buffer.from(text, 'utf8'),
          stored.bytes,
          stored.chars,
          stored.lines,
          stored.tool ?? null,
          stored.callId ?? null,
          stored.sessionId ?? null,
          stored.entry ?? null,
          new Date(stored.createdAt),
        ],
      );
      if (rows[0]) return toStoredResult(rows[0]);
      // Another worker put the same content between our stat and insert: theirs is the first put.
      const first = await this.stat(refId);
      if (first) return first;
      throw new AbridgeError('STORE_ERROR', `result ${refId} neither inserted nor found`);
    } catch (err) {
      throw storeError(`storing result ${refId}`, err);
    }
  }

  async read(refId: string, range?: { offset?: number; limit?: number }): Promise<ResultSlice> {
    validateRefId(refId);
    const { offset, limit } = normalizeRange(range);
    let row: (BlobRow & { body: Buffer | null }) | undefined;
    try {
      // The text is fetched only when the slice has lines in it.
      const { rows } = await this.pool.query<BlobRow & { body: Buffer | null }>(
        `SELECT ${META_COLUMNS}, CASE WHEN $2::integer < lines AND $3::integer > 0 THEN body END AS body
         FROM ${this.s}.tool_result_blobs WHERE ref_id = $1`,
        [refId, offset, limit],
      );
      row = rows[0];
    } catch (err) {
      throw storeError(`reading result ${refId}`, err);
    }
    if (!row) throw resultNotFound(refId, this.where());
    const stored = toStoredResult(row);
    const text = row.body ? sliceLines(row.body.toString('utf8'), offset, limit) : '';
    return makeSlice(stored, text, offset, limit);
  }

  async stat(refId: string): Promise<StoredResult | undefined> {
    validateRefId(refId);
    try {
      const { rows } = await this.pool.query<BlobRow>(
        `SELECT ${META_COLUMNS} FROM ${this.s}.tool_result_blobs WHERE ref_id = $1`,
        [refId],
      );
      return rows[0] && toStoredResult(rows[0]);
    } catch (err) {
      throw storeError(`reading the metadata of result ${refId}`, err);
    }
  }

  async list(): Promise<StoredResult[]> {
    try {
      const { rows } = await this.pool.query<BlobRow>(
        `SELECT ${META_COLUMNS} FROM ${this.s}.tool_result_blobs ORDER BY ord`,
      );
      return rows.map(toStoredResult);
    } catch (err) {
      throw storeError('listing results', err);
    }
  }

  private where(): string {
    return `the PostgreSQL result store (schema "${this.schema}")`;
  }
}

function toStoredResult(r: BlobRow): StoredResult {
  const out: StoredResult = {
    refId: r.ref_id,
    bytes: r.bytes,
    chars: r.chars,
    lines: r.lines,
    createdAt: r.created_at.toISOString(),
  };
  if (r.tool !== null) out.tool = r.tool;
  if (r.call_id !== null) out.callId = r.call_id;
  if (r.session_id !== null) out.sessionId = r.session_id;
  if (r.entry !== null) out.entry = r.entry;
  return out;
}
