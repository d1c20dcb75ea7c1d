import type { Pool, PoolClient, PoolConfig } from 'pg';
import { AbridgeError, isMissingPackage, redactConnectionStrings } from '../../errors.js';

type PgModule = typeof import('pg');

let loaded: Promise<PgModule> | undefined;

/** Loads `pg` (an optional peer dependency) on first use; a missing package is AbridgeError('MISSING_DEPENDENCY'). */
export function loadPg(): Promise<PgModule> {
  loaded ??= import('pg').then(
    (mod) => ((mod as unknown as { default?: PgModule }).default ?? mod) as PgModule,
    (err: unknown) => {
      loaded = undefined;
      throw isMissingPg(err) ? new AbridgeError('MISSING_DEPENDENCY', 'install pg to use the PostgreSQL store') : err;
    },
  );
  return loaded;
}

/** True when `err` (or an error it wraps) says the `pg` package is not installed. */
export function isMissingPg(err: unknown): boolean {
  return isMissingPackage(err, 'pg');
}

export async function createPool(config: PoolConfig): Promise<Pool> {
  const pg = await loadPg();
  const pool = new pg.Pool(config);
  // An idle client losing its connection (server restart, network) must not crash the process: the pool drops it and
  // the next query opens a new one.
  pool.on('error', () => {});
  return pool;
}

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

/** Validates a schema name (letters, digits, underscores; at most 63 characters) and quotes it for SQL. */
export function quoteSchema(schema: unknown): string {
  if (typeof schema !== 'string' || !IDENTIFIER.test(schema)) {
    throw new AbridgeError(
      'INVALID_INPUT',
      `Invalid PostgreSQL schema name ${JSON.stringify(schema) ?? String(schema)}: expected a letter or underscore, then letters, digits or underscores (at most 63 characters).`,
    );
  }
  return `"${schema}"`;
}

/** The connection string without its passwords (URL credentials, `?password=`, `sslpassword=`, key=value), for messages. */
export function redactUrl(url: string): string {
  return redactConnectionStrings(url);
}

/** Wraps a driver or server error as STORE_ERROR naming what was being done; AbridgeErrors pass through. */
export function storeError(what: string, err: unknown): AbridgeError {
  if (err instanceof AbridgeError) return err;
  const e = err as { message?: unknown; code?: unknown };
  const code = typeof e?.code === 'string' ? ` [${e.code}]` : '';
  const wrapped = new AbridgeError(
    'STORE_ERROR',
    `PostgreSQL store: ${what} failed: ${String(e?.message ?? err)}${code}`,
  );
  (wrapped as { cause?: unknown }).cause = err;
  return wrapped;
}

/**
 * Runs `fn` in a transaction on one pooled connection: COMMIT when it returns, ROLLBACK when it throws. A connection
 * whose ROLLBACK fails is destroyed rather than returned to the pool.
 */
export async function inTransaction<T>(
  pool: Pool,
  fn: (client: PoolClient) => Promise<T>,
  begin = 'BEGIN',
): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query(begin);
    const out = await fn(client);
    await client.query('COMMIT');
    client.release();
    return out;
  } catch (err) {
    let destroy: Error | boolean = false;
    try {
      await client.query('ROLLBACK');
    } catch (rollbackErr) {
      destroy = rollbackErr instanceof Error ? rollbackErr : true;
    }
    client.release(destroy);
    throw err;
  }
}
