/**
 * `abridge-context/postgres`: SessionStore and ResultStore in PostgreSQL, for many workers sharing sessions.
 *
 *   import { openPostgresStore } from 'abridge-context/postgres';
 *   const store = await openPostgresStore(process.env.DATABASE_URL!, { schema: 'abridge' });
 *   await store.append(sessionId, entries, { expectedVersion });
 *   const refs = store.results; // the ResultStore for offloaded tool results
 *   await store.close();
 *
 * Needs the `pg` package (an optional peer dependency): without it, opening a store rejects with
 * AbridgeError('MISSING_DEPENDENCY').
 */
import type { PoolConfig } from 'pg';
import { AbridgeError } from '../../errors.js';
import { createPool, quoteSchema, redactUrl, storeError } from './connection.js';
import { checkSchema, migrate } from './migrations.js';
import { PostgresSessionStore, type PostgresStoreHooks } from './session-store.js';

export { PostgresSessionStore, type PostgresSessionStoreConfig, type PostgresStoreHooks } from './session-store.js';
export { PostgresResultStore, type PostgresResultStoreConfig } from './result-store.js';
export { SCHEMA_VERSION as POSTGRES_SCHEMA_VERSION } from './migrations.js';

export const DEFAULT_SCHEMA = 'abridge';

export interface PostgresStoreOptions {
  /**
   * The schema holding the store's tables; created (with the tables) if missing. Default "abridge". Separate schemas
   * keep separate stores in one database (e.g. parallel test runs).
   */
  schema?: string;
  /** Options for the pg.Pool (`max` connections, timeouts, ssl…); the URL is the connection string. */
  pool?: Omit<PoolConfig, 'connectionString'>;
  /** Clock for createdAt/updatedAt (tests). */
  now?: () => Date;
  /** Test hooks (see PostgresStoreHooks). */
  hooks?: PostgresStoreHooks;
  /**
   * Create or migrate the schema when opening (default true). false: only check that the schema exists at this
   * abridge's version (STORE_ERROR otherwise), writing nothing: for a database user with read rights only.
   */
  migrate?: boolean;
}

/**
 * Connects to `url` (a `postgres://user:password@host:port/database` connection string), creates the schema and its
 * tables or migrates them to this version, and returns the store; `store.results` is its ResultStore. `close()` ends
 * the connection pool.
 */
export async function openPostgresStore(
  url: string,
  options: PostgresStoreOptions = {},
): Promise<PostgresSessionStore> {
  if (typeof url !== 'string' || url === '') {
    throw new AbridgeError(
      'INVALID_INPUT',
      'openPostgresStore: expected a connection string such as postgres://user:password@localhost:5432/database',
    );
  }
  const schema = options.schema ?? DEFAULT_SCHEMA;
  const quoted = quoteSchema(schema);
  const pool = await createPool({ ...options.pool, connectionString: url });
  try {
    if (options.migrate === false) await checkSchema(pool, schema, quoted);
    else await migrate(pool, schema, quoted);
  } catch (err) {
    await pool.end().catch(() => {});
    throw storeError(
      `opening ${redactUrl(url)} (${options.migrate === false ? 'checking' : 'creating or migrating'} schema "${schema}")`,
      err,
    );
  }
  const config: ConstructorParameters<typeof PostgresSessionStore>[0] = { pool, schema, quoted };
  if (options.now) config.now = options.now;
  if (options.hooks) config.hooks = options.hooks;
  return new PostgresSessionStore(config);
}
