import { createHash } from 'node:crypto';

/** A deterministic hex id of `length` characters (1…64) derived from `seed`: writers give new records stable ids. */
export function stableId(seed: string, length: number): string {
  return createHash('sha256').update(seed).digest('hex').slice(0, length);
}
