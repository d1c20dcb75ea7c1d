import type { Pool } from 'pg';
import { AbridgeError } from '../../errors.js';
import { inTransaction } from './connection.js';

export interface Migration {
  version: number;
  name: string;
  /** SQL for a schema whose quoted name is `s`. */
  sql: (s: string) => string;
}

/**
 * The schema, as numbered steps. A step once released is never edited: changes are new steps. JSON is stored as TEXT
 * (not JSONB, which reorders keys and drops duplicates) so entries come back as the exact text that was stored and a
 * transcript exported again is the same bytes.
 */
export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'sessions, entries, session_snapshots, tool_result_blobs',
    sql: (s) => `
      CREATE TABLE ${s}.sessions (
        id          text PRIMARY KEY,
        ord         bigint GENERATED ALWAYS AS IDENTITY,
        format      text NOT NULL,
        info        text NOT NULL,
        extra       text,
        layout      text,
        version     integer NOT NULL DEFAULT 0 CHECK (version >= 0),
        created_at  timestamptz NOT NULL,
        updated_at  timestamptz NOT NULL
      );
      CREATE INDEX sessions_ord ON ${s}.sessions (ord);

      CREATE TABLE ${s}.entries (
        session_id  text NOT NULL REFERENCES ${s}.sessions (id) ON DELETE CASCADE,
        seq         integer NOT NULL CHECK (seq >= 0),
        entry       text NOT NULL,
        PRIMARY KEY (session_id, seq)
      );

      CREATE TABLE ${s}.session_snapshots (
        session_id  text NOT NULL REFERENCES ${s}.sessions (id) ON DELETE CASCADE,
        at_version  integer NOT NULL CHECK (at_version >= 0),
        messages    text NOT NULL,
        marker      text,
        tokens      double precision,
        created_at  timestamptz NOT NULL,
        PRIMARY KEY (session_id, at_version)
      );

      CREATE TABLE ${s}.tool_result_blobs (
        ref_id      text PRIMARY KEY,
        ord         bigint GENERATED ALWAYS AS IDENTITY,
        body        bytea NOT NULL,
        bytes       integer NOT NULL,
        chars       integer NOT NULL,
        lines       integer NOT NULL,
        tool        text,
        call_id     text,
        session_id  text,
        entry       integer,
        created_at  timestamptz NOT NULL
      );
      CREATE INDEX tool_result_blobs_ord ON ${s}.tool_result_blobs (ord);
    `,
  },
];

export const SCHEMA_VERSION = MIGRATIONS[MIGRATIONS.length - 1]!.version;

/**
 * Brings schema `s` (quoted) up to date: creates it if missing, then applies the steps not yet in schema_migrations,
 * all in one transaction under an advisory lock, so workers starting together migrate once and wait for each other.
 * A schema migrated by a newer abridge is STORE_ERROR (this version would not know its tables); driver and server
 * errors are thrown as they are.
 */
export async function migrate(pool: Pool, schema: string, s: string): Promise<number> {
  return inTransaction(pool, async (client) => {
    await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`abridge:migrate:${schema}`]);
    // Checked first: CREATE SCHEMA needs the CREATE privilege on the database even when the schema exists.
    const exists = await client.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [schema]);
    if (!exists.rowCount) await client.query(`CREATE SCHEMA IF NOT EXISTS ${s}`);
    await client.query(
      `CREATE TABLE IF NOT EXISTS ${s}.schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`,
    );
    const { rows } = await client.query<{ version: number }>(
      `SELECT version FROM ${s}.schema_migrations ORDER BY version`,
    );
    const applied = new Set(rows.map((r) => r.version));
    const newest = rows.length ? rows[rows.length - 1]!.version : 0;
    if (newest > SCHEMA_VERSION) {
      throw new AbridgeError(
        'STORE_ERROR',
        `PostgreSQL store: schema "${schema}" is at version ${newest}, newer than this abridge knows (${SCHEMA_VERSION}): upgrade abridge.`,
      );
    }
    for (const m of MIGRATIONS) {
      if (applied.has(m.version)) continue;
      await client.query(m.sql(s));
      await client.query(`INSERT INTO ${s}.schema_migrations (version, name) VALUES ($1, $2)`, [m.version, m.name]);
    }
    return SCHEMA_VERSION;
  });
}

/**
 * Checks, reading only, that schema `s` holds abridge's tables at SCHEMA_VERSION: for opening without the rights to
 * create or migrate. Missing, older or newer is STORE_ERROR saying what to do.
 */
export async function checkSchema(pool: Pool, schema: string, s: string): Promise<number> {
  const exists = await pool.query(`SELECT 1 FROM pg_tables WHERE schemaname = $1 AND tablename = 'schema_migrations'`, [
    schema,
  ]);
  if (!exists.rowCount) {
    throw new AbridgeError(
      'STORE_ERROR',
      `PostgreSQL store: schema "${schema}" holds no abridge store (no schema_migrations table); opened without migrating, nothing was created`,
    );
  }
  const { rows } = await pool.query<{ v: number | null }>(`SELECT MAX(version) AS v FROM ${s}.schema_migrations`);
  const current = rows[0]?.v ?? 0;
  if (current > SCHEMA_VERSION) {
    throw new AbridgeError(
      'STORE_ERROR',
      `PostgreSQL store: schema "${schema}" is at version ${current}, newer than this abridge knows (${SCHEMA_VERSION}): upgrade abridge.`,
    );
  }
  if (current < SCHEMA_VERSION) {
    throw new AbridgeError(
      'STORE_ERROR',
      `PostgreSQL store: schema "${schema}" is at version ${current}, older than this abridge's (${SCHEMA_VERSION}), and it was opened without migrating: open it once as a user who may migrate it (e.g. abridge import).`,
    );
  }
  return current;
}
