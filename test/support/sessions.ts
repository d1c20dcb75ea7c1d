import { expect } from 'vitest';
import { AbridgeError } from '../../src/errors.js';
import { SessionBuilder } from '../../src/model/session.js';
import type { FormatId, Message, Session } from '../../src/model/types.js';
import { activeMessages } from '../../src/model/view.js';

/** A session of the given format made of these messages (one entry each), as if read from it. */
export function sessionOf(format: FormatId, messages: readonly Message[], extra?: Record<string, unknown>): Session {
  const b = new SessionBuilder(format);
  for (const m of messages) b.add({ kind: 'message', message: m });
  if (extra) b.extra = extra;
  return b.build();
}

/** Tool calls the model sees (the compacted view: what a request built from the session must carry). */
export function conversationToolCalls(session: Session): number {
  return activeMessages(session)
    .flatMap((m) => m.parts)
    .filter((p) => p.type === 'tool-call').length;
}

/** Each bad document is refused with AbridgeError INVALID_INPUT naming the source and saying `expected`. */
export function expectInvalidInputs(
  read: (doc: unknown, source: string) => unknown,
  cases: readonly (readonly [unknown, string])[],
): void {
  for (const [doc, expected] of cases) {
    let err: unknown;
    try {
      read(doc, 'bad.json');
    } catch (e) {
      err = e;
    }
    expect(err, expected).toBeInstanceOf(AbridgeError);
    expect((err as AbridgeError).code).toBe('INVALID_INPUT');
    expect((err as AbridgeError).message).toContain('bad.json: ');
    expect((err as AbridgeError).message).toContain(expected);
  }
}
