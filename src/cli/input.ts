import { AbridgeError } from '../errors.js';
import { isStdinPath } from '../formats/stream-input.js';

/**
 * Read options every command gives readSession: the wait for standard input or a FIFO, from ABRIDGE_INPUT_TIMEOUT
 * (seconds; default 10).
 */
export function inputOptions(env: NodeJS.ProcessEnv = process.env): { inputTimeoutMs?: number } {
  const v = env.ABRIDGE_INPUT_TIMEOUT;
  if (v === undefined || v === '') return {};
  const s = Number(v);
  if (!Number.isFinite(s) || s <= 0)
    throw new AbridgeError('INVALID_CONFIG', `ABRIDGE_INPUT_TIMEOUT: expected a number of seconds > 0, got "${v}"`);
  return { inputTimeoutMs: Math.round(s * 1000) };
}

export { isStdinPath };

/** `--instance`: of a file holding several sessions, which to read. */
export const INSTANCE_OPTION = [
  '--instance <id>',
  'of a file holding several sessions (OpenHands output: one per benchmark instance), the one to read (default: the first)',
] as const;

/** The read options a command's `--format` and `--instance` flags give. */
export function sourceOptions(opts: { format?: string; instance?: string }): { format?: string; instance?: string } {
  return {
    ...(opts.format ? { format: opts.format } : {}),
    ...(opts.instance !== undefined ? { instance: opts.instance } : {}),
  };
}
