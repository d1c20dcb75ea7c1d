/**
 * Pins a program keeps across compactions and resumes (the ContextManager's `pin`): a pinned message is known by its
 * content — its role and parts — since the entries of a working session are renumbered at each compaction, while a
 * pinned message reaches every later view verbatim. The set is recorded as a custom entry
 * `{type: 'custom', customType: 'abridge.pins', data: {messages: [fingerprint…]}}` (pi's custom record, which pi
 * ignores), the whole set each time: the last record wins.
 */
import { stableId } from '../model/ids.js';
import { argumentsText } from '../model/parts.js';
import type { Entry, Message } from '../model/types.js';

export const PINS_RECORD = 'abridge.pins';

const memo = new WeakMap<Message, string>();

/** A message's fingerprint: its role and parts (not its usage, timestamps or ids, which a checkpoint may drop). */
export function pinKey(m: Message): string {
  let key = memo.get(m);
  if (key === undefined) {
    key = stableId(JSON.stringify([m.role, m.parts]), 24);
    memo.set(m, key);
  }
  return key;
}

/** The custom entry recording the set of pinned messages. */
export function pinsRecord(keys: Iterable<string>): Omit<Entry, 'index' | 'id' | 'parentId' | 'timestamp'> {
  return {
    kind: 'custom',
    sourceType: 'custom',
    raw: { type: 'custom', customType: PINS_RECORD, data: { messages: [...keys].sort() } },
  };
}

/** The pinned set the entries record (the last record), or undefined when none does. */
export function recordedPins(entries: readonly Entry[]): Set<string> | undefined {
  let out: Set<string> | undefined;
  for (const e of entries) {
    if (e.kind !== 'custom') continue;
    const r = e.raw as { customType?: unknown; data?: { messages?: unknown } } | undefined;
    if (r?.customType !== PINS_RECORD || !Array.isArray(r.data?.messages)) continue;
    out = new Set(r.data.messages.filter((x): x is string => typeof x === 'string'));
  }
  return out;
}

/**
 * A message's text as a pin's pattern is matched against it (`--pin-match`, pi's `/pin <text>`): its text, its calls'
 * inputs and its results' text.
 */
export function pinnableText(m: Message): string {
  return m.parts
    .map((p) =>
      p.type === 'text'
        ? p.text
        : p.type === 'tool-call'
          ? argumentsText(p.arguments)
          : p.type === 'tool-result'
            ? p.content.map((c) => (c.type === 'text' ? c.text : '')).join('\n')
            : '',
    )
    .join('\n');
}
