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
