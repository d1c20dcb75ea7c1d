import { AbridgeError, isMissingPackage } from '../errors.js';

/**
 * MISSING_DEPENDENCY when `err` (or an error it wraps, as test runners and bundlers do) says `pkg` is not installed;
 * `err` itself otherwise.
 */
export function missingSdk(err: unknown, pkg: string, purpose: string): unknown {
  return isMissingPackage(err, pkg)
    ? new AbridgeError('MISSING_DEPENDENCY', `install ${pkg} to use ${purpose} (npm install ${pkg})`)
    : err;
}

/** Loads an optional SDK, with MISSING_DEPENDENCY naming the package when it is not installed. */
export async function importSdk<T>(load: () => Promise<T>, pkg: string, purpose: string): Promise<T> {
  try {
    return await load();
  } catch (err) {
    throw missingSdk(err, pkg, purpose);
  }
}

/** The client options abridge passes to an SDK: only those given (an explicit undefined would override its default). */
export function clientConfig(o: { apiKey?: string; baseURL?: string; maxRetries?: number; timeout?: number }): {
  apiKey?: string;
  baseURL?: string;
  maxRetries?: number;
  timeout?: number;
} {
  const config: { apiKey?: string; baseURL?: string; maxRetries?: number; timeout?: number } = {};
  if (o.apiKey !== undefined) config.apiKey = o.apiKey;
  if (o.baseURL !== undefined) config.baseURL = o.baseURL;
  if (o.maxRetries !== undefined) config.maxRetries = o.maxRetries;
  if (o.timeout !== undefined) config.timeout = o.timeout;
  return config;
}
