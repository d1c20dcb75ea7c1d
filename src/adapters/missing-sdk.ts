import { AbridgeError } from '../errors.js';

/**
 * MISSING_DEPENDENCY when `err` (or an error it wraps, as test runners and bundlers do) says `pkg` is not installed;
 * `err` itself otherwise.
 */
export function missingSdk(err: unknown, pkg: string, purpose: string): unknown {
  for (
    let e = err as { code?: unknown; message?: unknown; cause?: unknown } | undefined, depth = 0;
    e && depth < 5;
    e = e.cause as typeof e, depth++
  ) {
    const notFound =
      e.code === 'ERR_MODULE_NOT_FOUND' ||
      e.code === 'MODULE_NOT_FOUND' ||
      /Cannot find (package|module)|Failed to load url/.test(String(e.message));
    if (notFound && String(e.message).includes(pkg))
      return new AbridgeError('MISSING_DEPENDENCY', `install ${pkg} to use ${purpose} (npm install ${pkg})`);
  }
  return err;
}
