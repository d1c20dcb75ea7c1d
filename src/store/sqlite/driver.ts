import type BetterSqlite3 from 'better-sqlite3';
import { AbridgeError } from '../../errors.js';

/** A better-sqlite3 connection. */
export type SqliteDatabase = BetterSqlite3.Database;
/** The better-sqlite3 module's export: `new Driver(path, options)` opens a database. */
export type SqliteDriver = typeof BetterSqlite3;

export const MISSING_MESSAGE = 'install better-sqlite3 to use the SQLite store';

let loaded: Promise<SqliteDriver> | undefined;

/**
 * Loads better-sqlite3 (an optional peer dependency) on first use. A missing module is
 * AbridgeError('MISSING_DEPENDENCY', 'install better-sqlite3 to use the SQLite store'). `importer` is for tests.
 */
export function loadSqliteDriver(importer?: () => Promise<unknown>): Promise<SqliteDriver> {
  if (importer) return load(importer);
  loaded ??= load(() => import('better-sqlite3')).catch((err: unknown) => {
    loaded = undefined;
    throw err;
  });
  return loaded;
}

async function load(importer: () => Promise<unknown>): Promise<SqliteDriver> {
  let mod: unknown;
  try {
    mod = await importer();
  } catch (err) {
    if (isModuleNotFound(err))
      throw new AbridgeError('MISSING_DEPENDENCY', `${MISSING_MESSAGE} (npm install better-sqlite3)`);
    throw nativeLoadError(err);
  }
  const driver = (mod as { default?: unknown }).default ?? mod;
  if (typeof driver !== 'function')
    throw new AbridgeError(
      'MISSING_DEPENDENCY',
      `${MISSING_MESSAGE}: the installed better-sqlite3 exports no Database constructor`,
    );
  return driver as SqliteDriver;
}

export function isModuleNotFound(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND';
}

/** True for the errors better-sqlite3 throws when its native addon cannot be loaded (not built, built for another Node). */
export function isNativeLoadError(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  const message = err instanceof Error ? err.message : String(err);
  return (
    code === 'ERR_DLOPEN_FAILED' ||
    /Could not locate the bindings file|NODE_MODULE_VERSION|better_sqlite3\.node|invalid ELF header/.test(message)
  );
}

export function nativeLoadError(err: unknown): AbridgeError {
  const message = err instanceof Error ? err.message.split('\n')[0] : String(err);
  return new AbridgeError(
    'MISSING_DEPENDENCY',
    `${MISSING_MESSAGE}: better-sqlite3 is installed but could not be loaded (${message}); reinstall it for this Node.js (npm rebuild better-sqlite3)`,
  );
}
