import { describe, expect, it } from 'vitest';
import type { Message } from '../model/types.js';
import type { ViewItem } from '../model/view.js';
import { unitsOf } from './turns.js';

const item = (entry: number, message: Message): ViewItem => ({ entry, message });
const asst = (responseId: string | undefined, text: string): Message => ({
  role: 'assistant',
  parts: [{ type: 'text', text }],
  ...(responseId ? { responseId } : {}),
});
const result = (callId: string): Message => ({
  role: 'tool',
  parts: [{ type: 'tool-result', callId, content: [], isError: false }],
});

describe('unitsOf', () => {
  it('keeps the records of one response in one step, results interleaved or not (Claude Code writes a block per record)', () => {
    const view = [
      item(0, { role: 'user', parts: [{ type: 'text', text: 'go' }] }),
      item(1, asst('msg_1', 'thinking it over')),
      item(2, asst('msg_1', 'call a')),
      item(3, result('a')),
      item(4, asst('msg_1', 'call b')),
      item(5, result('b')),
      item(6, asst('msg_2', 'next')),
      item(7, asst(undefined, 'no id')),
      item(8, asst(undefined, 'no id either')),
    ];
    expect(unitsOf(view).map((u) => [u.kind, u.start, u.end])).toEqual([
      ['user', 0, 1],
      ['step', 1, 6],
      ['step', 6, 7],
      ['step', 7, 8],
      ['step', 8, 9],
    ]);
  });
});
