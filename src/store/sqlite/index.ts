/**
 * `abridge-context/sqlite`: session and result stores in a SQLite database. Needs the optional peer dependency better-sqlite3
 * (`npm install better-sqlite3`); without it, openSqliteStore fails with AbridgeError('MISSING_DEPENDENCY').
 */
export { openSqliteStore, SqliteSessionStore, type SqliteStoreOptions } from './session-store.js';
export { SqliteResultStore, type SqliteResultStoreOptions } from './result-store.js';
export { SCHEMA_VERSION as SQLITE_SCHEMA_VERSION } from './migrations.js';
