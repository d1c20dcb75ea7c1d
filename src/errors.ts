export type AbridgeErrorCode =
  | 'FILE_NOT_FOUND'
  | 'FILE_UNREADABLE'
  | 'FILE_UNWRITABLE'
  | 'FILE_LOCKED'
  | 'INPUT_TIMEOUT'
  | 'UNRECOGNIZED_FORMAT'
  | 'UNSUPPORTED_FORMAT'
  | 'UNKNOWN_FORMAT_ID'
  | 'NOT_WRITABLE_FORMAT'
  | 'INVALID_INPUT'
  | 'INVALID_CONFIG'
  | 'INVALID_CATALOG'
  | 'RESULT_NOT_FOUND'
  | 'STORE_ERROR'
  | 'MISSING_DEPENDENCY'
  | 'SESSION_NOT_FOUND'
  | 'SESSION_EXISTS'
  | 'CONFLICT'
  | 'CONTEXT_OVERFLOW';

/** An error meant for a person: the message names the input and what was expected. */
export class AbridgeError extends Error {
  override readonly name = 'AbridgeError';
  constructor(
    readonly code: AbridgeErrorCode,
    message: string,
  ) {
    super(message);
  }
}

/**
 * Whether `err` (or an error it wraps, as test runners and bundlers do) says that the package `pkg` itself is not
 * installed — not a package it imports in turn, whose message names `pkg` only in a path.
 */
export function isMissingPackage(err: unknown, pkg: string): boolean {
  const name = pkg.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
  const names = new RegExp(`['"]${name}['"/]|Failed to load url ${name}(?![\\w-])`);
  for (
    let e = err as { code?: unknown; message?: unknown; cause?: unknown } | undefined, depth = 0;
    e && depth < 5;
    e = e.cause as typeof e, depth++
  ) {
    const notFound =
      e.code === 'ERR_MODULE_NOT_FOUND' ||
      e.code === 'MODULE_NOT_FOUND' ||
      /Cannot find (package|module)|Failed to load url/.test(String(e.message));
    if (notFound && names.test(String(e.message))) return true;
  }
  return false;
}
