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
  | 'CONTEXT_OVERFLOW'
  | 'SUMMARIZER_FAILED'
  | 'PROVIDER_ERROR'
  | 'INTERNAL';

export interface AbridgeErrorOptions<D extends object = Readonly<Record<string, unknown>>> {
  /** The error this one reports (a driver's, a file system's, an SDK's). */
  cause?: unknown;
  /** What a program needs to act on the error, as fields (CONFLICT: `{sessionId, expected, actual}`). */
  details?: D;
}

/** An error meant for a person: the message names the input and what was expected. */
export class AbridgeError<D extends object = Readonly<Record<string, unknown>>> extends Error {
  override readonly name = 'AbridgeError';
  declare readonly details?: D;
  constructor(
    readonly code: AbridgeErrorCode,
    message: string,
    options: AbridgeErrorOptions<D> = {},
  ) {
    super(message, options.cause !== undefined ? { cause: options.cause } : undefined);
    if (options.details !== undefined) this.details = options.details;
    // Node's own convention (`TypeError [ERR_INVALID_ARG_TYPE]: …`): the code on the line an uncaught error prints.
    if (this.stack?.startsWith(`${this.name}:`))
      this.stack = `${this.name} [${code}]${this.stack.slice(this.name.length)}`;
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
