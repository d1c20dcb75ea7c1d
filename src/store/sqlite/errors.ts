import { AbridgeError } from '../../errors.js';

/**
 * Runs `fn`, turning a database error (busy past the timeout, disk full, corrupt or read-only file…) into
 * AbridgeError('STORE_ERROR') naming the database; AbridgeErrors pass through.
 */
export function storeGuard(where: string): <T>(what: string, fn: () => T) => T {
  return (what, fn) => {
    try {
      return fn();
    } catch (err) {
      if (err instanceof AbridgeError) throw err;
      throw storeError(where, what, err);
    }
  };
}

export function storeError(where: string, what: string, err: unknown): AbridgeError {
  const code = (err as { code?: unknown } | null)?.code;
  const message = err instanceof Error ? err.message : String(err);
  const out = new AbridgeError(
    'STORE_ERROR',
    `${where}: ${what}: ${message}${typeof code === 'string' && !message.includes(code) ? ` (${code})` : ''}`,
  );
  (out as { cause?: unknown }).cause = err;
  return out;
}
