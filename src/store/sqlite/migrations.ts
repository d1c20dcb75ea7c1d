import { AbridgeError } from '../../errors.js';
import type { SqliteDatabase } from './driver.js';

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

/**
 * The schema, as numbered migrations applied in order, each once, recorded in `schema_migrations`. Never edit a
 * released migration: add the next one.
 */
export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'sessions, entries, session_snapshots, tool_result_blobs',
    sql: `
      CREATE TABLE sessions (
        id         TEXT PRIMARY KEY,
        format     TEXT NOT NULL,
        info       TEXT NOT NULL,           -- JSON SessionInfo
        extra      TEXT,                    -- JSON, format-specific data for writing back
        layout     TEXT,                    -- JSON { finalNewline?, trailingBlankLines? }
        version    INTEGER NOT NULL DEFAULT 0 CHECK (version >= 0),
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
      );
      CREATE TABLE entries (
        session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        seq        INTEGER NOT NULL CHECK (seq >= 0),
        entry      TEXT NOT NULL,           -- JSON Entry without its index (the index is seq)
        PRIMARY KEY (session_id, seq)
      );
      CREATE TABLE session_snapshots (
        id         INTEGER PRIMARY KEY,
        session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        at_version INTEGER NOT NULL,
        messages   TEXT NOT NULL,           -- JSON Message[]
        marker     TEXT,                    -- JSON CompactionMarker
        tokens     REAL,
        created_at TEXT NOT NULL
      );
      CREATE INDEX session_snapshots_latest ON session_snapshots (session_id, at_version, id);
      CREATE TABLE tool_result_blobs (
        ref_id     TEXT PRIMARY KEY,
        text       TEXT NOT NULL,
        bytes      INTEGER NOT NULL,
        chars      INTEGER NOT NULL,
        lines      INTEGER NOT NULL,
        tool       TEXT,
        call_id    TEXT,
        session_id TEXT,
        entry      INTEGER,
        created_at TEXT NOT NULL
      );
    `,
  },
];

export const SCHEMA_VERSION = MIGRATIONS[MIGRATIONS.length - 1]!.version;

/**
 * Brings the database to SCHEMA_VERSION in one IMMEDIATE transaction (processes opening it at once wait for each
 * other; the first migrates, the others find it done). A database from a newer abridge is refused.
 */
export function migrate(
  db: SqliteDatabase,
  where: string,
  now: () => Date = () => new Date(),
): { from: number; to: number } {
  return db
    .transaction(() => {
      db.exec(
        'CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)',
      );
      const current =
        (db.prepare('SELECT MAX(version) AS v FROM schema_migrations').get() as { v: number | null }).v ?? 0;
      if (current > SCHEMA_VERSION) {
        throw new AbridgeError(
          'STORE_ERROR',
          `${where}: the database schema is at version ${current}, newer than this abridge knows (${SCHEMA_VERSION}); upgrade abridge to use it`,
        );
      }
      const record = db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)');
      for (const m of MIGRATIONS) {
        if (m.version <= current) continue;
        db.exec(m.sql);
        record.run(m.version, m.name, now().toISOString());
      }
      return { from: current, to: SCHEMA_VERSION };
    })
    .immediate();
}

/**
 * For a read-only connection: the schema version recorded in the database, checked against this abridge's, without
 * writing anything. A database without abridge's tables, or older or newer than this abridge, is STORE_ERROR saying
 * what to do.
 */
export function checkSchemaReadOnly(db: SqliteDatabase, where: string): number {
  const table = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'").get();
  if (!table)
    throw new AbridgeError(
      'STORE_ERROR',
      `${where}: not an abridge store (no schema_migrations table); opened read-only, nothing was created`,
    );
  const current = (db.prepare('SELECT MAX(version) AS v FROM schema_migrations').get() as { v: number | null }).v ?? 0;
  if (current > SCHEMA_VERSION) {
    throw new AbridgeError(
      'STORE_ERROR',
      `${where}: the database schema is at version ${current}, newer than this abridge knows (${SCHEMA_VERSION}); upgrade abridge to use it`,
    );
  }
  if (current < SCHEMA_VERSION) {
    throw new AbridgeError(
      'STORE_ERROR',
      `${where}: the database schema is at version ${current}, older than this abridge's (${SCHEMA_VERSION}), and it was opened read-only; open it once with write access (e.g. abridge import) to migrate it`,
    );
  }
  return current;
}
