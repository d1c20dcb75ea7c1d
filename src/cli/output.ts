import { realpathSync } from 'node:fs';
import { resolve } from 'node:path';
import { AbridgeError } from '../errors.js';

/** The file a path names once symbolic links are resolved (the path itself when it does not exist yet). */
export function sameFileKey(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return resolve(path);
  }
}

/** True when writing `out` would overwrite `input` (the same file after resolving links). */
export function isSameFile(input: string, out: string): boolean {
  return sameFileKey(input) === sameFileKey(out);
}

/**
 * Refuses an `--out` that names the input itself: a failed or interrupted write must never be able to cost the
 * transcript, and replacing it is a decision to state (`--in-place`).
 */
export function refuseOutOverInput(input: string, out: string | undefined, flag = '--out'): void {
  if (out !== undefined && isSameFile(input, out)) {
    throw new AbridgeError(
      'INVALID_INPUT',
      `${flag} ${out} is the input file itself; to replace the transcript, use --in-place (atomic, under a lock) instead`,
    );
  }
}

export interface FileLockOptions {
  /** How long to wait for another abridge holding the lock, in ms (default 60,000). */
  waitMs?: number;
  /** A lock not refreshed for this long (its holder died) is taken over, in ms (default 10,000). */
  staleMs?: number;
}

/**
 * Runs `fn` holding an exclusive lock on `file` (a `<file>.lock` folder, refreshed while held; a lock whose holder
 * died goes stale and is taken over): two `--in-place` runs on one transcript queue instead of interleaving. Waits
 * up to `waitMs` for another holder, then fails with AbridgeError('FILE_LOCKED').
 */
export async function withFileLock<T>(
  file: string,
  fn: (assertHeld: () => void) => Promise<T>,
  options: FileLockOptions = {},
): Promise<T> {
  const waitMs = options.waitMs ?? 60_000;
  const staleMs = options.staleMs ?? 10_000;
  let release: () => Promise<void>;
  let compromised: Error | undefined;
  // Loaded when a file is written, not at every start of the CLI.
  const { default: lockfile } = await import('proper-lockfile');
  try {
    release = await lockfile.lock(file, {
      realpath: true,
      stale: staleMs,
      // The lock could not be refreshed (the process stalled past `stale`, someone removed it): writing now could
      // interleave with another holder, so the write is refused instead of the default (throwing from a timer).
      onCompromised: (err) => {
        compromised = err;
      },
      retries: { retries: Math.max(0, Math.ceil(waitMs / 200)), minTimeout: 50, maxTimeout: 200, factor: 1.3 },
    });
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ELOCKED')
      throw new AbridgeError(
        'FILE_LOCKED',
        `${file}: another abridge is changing this file (lock ${file}.lock); try again when it is done`,
      );
    if (code === 'ENOENT') throw new AbridgeError('FILE_NOT_FOUND', `${file}: no such file`);
    throw new AbridgeError(
      'FILE_UNWRITABLE',
      `${file}: cannot take the lock ${file}.lock (${code ?? (err instanceof Error ? err.message : String(err))})`,
    );
  }
  const assertHeld = () => {
    if (compromised)
      throw new AbridgeError(
        'FILE_LOCKED',
        `${file}: the lock ${file}.lock was lost while abridge held it (${compromised.message}); the file was not written`,
      );
  };
  try {
    return await fn(assertHeld);
  } finally {
    await release().catch(() => undefined);
  }
}
