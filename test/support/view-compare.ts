/** Comparing what two message lists give a model to read, whatever wrote them. */
import { isDeepStrictEqual } from 'node:util';
import type { Message, Part } from '../../src/model/types.js';

export interface Readable {
  role: string;
  parts: Part[];
}

/**
 * A message reduced to what the model reads: role and parts, a compaction part as the text abridge sends for it, and
 * no metadata (usage, timestamps, model). `unwrap` takes off text a client adds around a summary (pi's wrappers).
 */
export function readable(m: Message, unwrap: (text: string) => string = (t) => t): Readable {
  const parts = m.parts.map((p): Part => {
    if (p.type === 'compaction') return { type: 'text', text: p.marker.summary };
    if (p.type === 'text') return { type: 'text', text: unwrap(p.text) };
    return p;
  });
  return { role: m.role, parts };
}

/** Messages with something to read (pi drops a bash execution excluded with `!!`; abridge keeps it, empty). */
export function comparable(messages: readonly Message[], unwrap?: (text: string) => string): Readable[] {
  return messages.filter((m) => m.parts.length > 0).map((m) => readable(m, unwrap));
}

/** Index of the first message that differs, or -1 when both lists read the same. */
export function firstDifference(
  a: readonly Message[],
  b: readonly Message[],
  unwrap?: (text: string) => string,
): number {
  const x = comparable(a, unwrap);
  const y = comparable(b, unwrap);
  for (let i = 0; i < Math.max(x.length, y.length); i++) if (!isDeepStrictEqual(x[i], y[i])) return i;
  return -1;
}
