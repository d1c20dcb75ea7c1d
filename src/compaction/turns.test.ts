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

const call = (id: string): Message => ({
  role: 'assistant',
  parts: [{ type: 'tool-call', id, name: 'exec_command', arguments: { cmd: `echo ${id}` } }],
});

describe('unitsOf', () => {
  it('keeps calls recorded one message each in the step of their results (Codex writes parallel calls so)', () => {
    const view = [
      item(0, { role: 'user', parts: [{ type: 'text', text: 'go' }] }),
      item(1, call('c1')),
      item(2, call('c2')),
      item(3, call('c3')),
      item(4, result('c1')),
      item(5, result('c3')),
      item(6, result('c2')),
      item(7, asst(undefined, 'all three ran')),
      // A call never answered does not draw the next messages into its step.
      item(8, call('lost')),
      item(9, call('c4')),
      item(10, result('c4')),
      item(11, asst(undefined, 'done')),
      // An id that comes again in a later turn: each call is answered by the first result after it.
      item(12, call('c1')),
      item(13, result('c1')),
      item(14, asst(undefined, 'again')),
    ];
    expect(unitsOf(view).map((u) => [u.kind, u.start, u.end])).toEqual([
      ['user', 0, 1],
      ['step', 1, 7],
      ['step', 7, 8],
      ['step', 8, 9],
      ['step', 9, 11],
      ['step', 11, 12],
      ['step', 12, 14],
      ['step', 14, 15],
    ]);
  });

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
