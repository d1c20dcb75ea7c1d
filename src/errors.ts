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

/**
 * An error meant for a person: the message names the input and what was expected. The password of any connection
 * string in it is hidden (see redactConnectionStrings): a store's URL or a driver's message may carry one.
 */
export class AbridgeError<D extends object = Readonly<Record<string, unknown>>> extends Error {
  override readonly name = 'AbridgeError';
  declare readonly details?: D;
  constructor(
    readonly code: AbridgeErrorCode,
    message: string,
    options: AbridgeErrorOptions<D> = {},
  ) {
    super(redactConnectionStrings(message), options.cause !== undefined ? { cause: options.cause } : undefined);
    if (options.details !== undefined) this.details = options.details;
    // Node's own convention (`TypeError [ERR_INVALID_ARG_TYPE]: …`): the code on the line an uncaught error prints.
    if (this.stack?.startsWith(`${this.name}:`))
      this.stack = `${this.name} [${code}]${this.stack.slice(this.name.length)}`;
  }
}
/**
 * Connection strings in messages (a store's `--db`, a driver's error): every password they carry hidden as `***`,
 * whatever it looks like (a short or word-like password is still a password here), in each form a database client
 * takes:
 *
 * - URL credentials: `postgres://user:PASSWORD@host/db` (the password runs to the last `@` before the path);
 * - URL query parameters: `postgresql://host/db?password=P`, `&sslpassword=P`, `?sslkey_password=P`, `;password=P`
 *   (JDBC), and tokens and secrets passed the same way;
 * - key=value strings: `host=db user=app password=P`, `password='a b'` (libpq quoting), `Password=P;` (ADO/ODBC).
 *
 * Every pattern is a bounded run after a literal, so the time is linear in the text.
 */

/** Parameter names whose value is a credential. */
const PARAMS = String.raw`password|passwd|pwd|pass|sslpassword|sslkey_?password|secret|client_secret|token|access_token|auth_token|api_?key`;

const USERINFO = /(:\/\/[^\s:/?#@"'`]{0,128}):([^\s/"'`]{0,256})@/g;
const QUERY = new RegExp(String.raw`([?&;](?:${PARAMS})=)([^&#;\s"'\x60]{1,4096})`, 'gi');
const KEY_VALUE = new RegExp(
  String.raw`((?:^|[\s;,(])(?:password|passwd|pwd|sslpassword|sslkey_?password)\s{0,4}=\s{0,4})('(?:[^'\\\n]|\\.){0,4096}'|[^\s;'"\x60)]{1,4096})`,
  'gi',
);

/** `text` with the password of every connection string in it replaced by `***`. */
export function redactConnectionStrings(text: string): string {
  if (!text.includes('=') && !text.includes('://')) return text;
  return text
    .replace(USERINFO, (_m, head: string) => `${head}:***@`)
    .replace(QUERY, (m, head: string, v: string) => (v === '***' ? m : `${head}***`))
    .replace(KEY_VALUE, (m, head: string, v: string) => (v === '***' ? m : `${head}***`));
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
