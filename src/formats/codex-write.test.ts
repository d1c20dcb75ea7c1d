/**
 * The Codex rollout writer without the CLI (codex-resume.test.ts runs the CLI on what it writes): another agent's
 * session written as a rollout reads back as the same messages; a rollout read as Codex is written back byte for byte,
 * with abridge's compaction added as a `compacted` record whose replacement history is the compacted view, which the
 * reader expands into exactly that view.
 */
import { describe, expect, it } from 'vitest';
import { compact } from '../compaction/compact.js';
import { MemoryResultStore } from '../compaction/memory-result-store.js';
import { ExtractiveSummarizer } from '../compaction/summarizers/extractive.js';
import { compactionText } from '../model/parts.js';
import type { Message, Session } from '../model/types.js';
import { activeMessages } from '../model/view.js';
import { codexItems } from './codex-write.js';
import { parseSession } from './read.js';
import { writeSession } from './write.js';

const PNG = 'iVBORw0KGgo=';
const T0 = Date.parse('2026-03-01T10:00:00.000Z');

function session(messages: Message[]): Session {
  return {
    format: 'pi',
    info: { id: '0199aaaa-bbbb-7ccc-8ddd-eeeeffff0000', cwd: '/w', startedAt: T0 },
    entries: messages.map((message, index) => ({ index, kind: 'message', message, timestamp: T0 + index * 1000 })),
    problems: [],
  };
}

/** Messages as the model reads them: a summary as its text, a result without what only abridge notes of it. */
const readable = (ms: readonly Message[]) =>
  ms.map((m) => ({
    role: m.role,
    parts: m.parts.map((p) =>
      p.type === 'tool-result'
        ? { type: p.type, callId: p.callId, content: p.content }
        : p.type === 'compaction'
          ? { type: 'text', text: compactionText(p.marker) }
          : p,
    ),
  }));

describe('codex rollout writer', () => {
  it('writes another agent session as a rollout that reads back as the same messages', () => {
    const shellLike = JSON.stringify({ output: 'not a shell output', metadata: { exit_code: 0 } });
    const messages: Message[] = [
      {
        role: 'user',
        parts: [
          { type: 'text', text: 'look at this' },
          { type: 'image', mediaType: 'image/png', data: PNG },
        ],
      },
      {
        role: 'assistant',
        parts: [
          { type: 'text', text: 'Reading.' },
          { type: 'tool-call', id: 'call_1', name: 'read', arguments: { path: 'a.ts' } },
          { type: 'tool-call', id: 'call_2', name: 'read', arguments: { path: 'b.json' } },
        ],
      },
      {
        role: 'tool',
        parts: [
          {
            type: 'tool-result',
            callId: 'call_1',
            content: [{ type: 'text', text: 'export const a = 1;' }],
            isError: false,
          },
        ],
      },
      // A result whose text looks like an older Codex shell output must stay that text.
      {
        role: 'tool',
        parts: [
          { type: 'tool-result', callId: 'call_2', content: [{ type: 'text', text: shellLike }], isError: false },
        ],
      },
      { role: 'assistant', parts: [{ type: 'text', text: 'Done.' }] },
    ];
    const text = writeSession(session(messages), 'codex');
    const lines = text
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l) as { type: string; payload: { type?: string } });
    expect(lines[0]).toMatchObject({
      type: 'session_meta',
      payload: { id: '0199aaaa-bbbb-7ccc-8ddd-eeeeffff0000', cwd: '/w' },
    });
    expect(lines.slice(1).map((l) => l.payload.type)).toEqual([
      'message',
      'message',
      'function_call',
      'function_call',
      'function_call_output',
      'function_call_output',
      'message',
    ]);
    const back = parseSession(text, { format: 'codex' });
    expect(back.problems).toEqual([]);
    expect(back.info).toMatchObject({ id: '0199aaaa-bbbb-7ccc-8ddd-eeeeffff0000', cwd: '/w', startedAt: T0 });
    const got = activeMessages(back);
    // One assistant message a response item, as Codex records them.
    expect(readable(got).map((m) => m.role)).toEqual([
      'user',
      'assistant',
      'assistant',
      'assistant',
      'tool',
      'tool',
      'assistant',
    ]);
    expect(got[0]!.parts).toEqual([
      { type: 'text', text: 'look at this' },
      { type: 'image', mediaType: 'image/png', data: PNG, byteSize: 8 },
    ]);
    expect(got.flatMap((m) => m.parts.filter((p) => p.type === 'tool-call'))).toEqual([
      { type: 'tool-call', id: 'call_1', name: 'read', arguments: { path: 'a.ts' } },
      { type: 'tool-call', id: 'call_2', name: 'read', arguments: { path: 'b.json' } },
    ]);
    expect(readable(got.slice(4, 6)).map((m) => m.parts[0])).toEqual([
      { type: 'tool-result', callId: 'call_1', content: [{ type: 'text', text: 'export const a = 1;' }] },
      { type: 'tool-result', callId: 'call_2', content: [{ type: 'text', text: shellLike }] },
    ]);
  });

  it('leaves out what OpenAI cannot take back: another provider thinking, whitespace-only text', () => {
    const items = codexItems(
      {
        role: 'assistant',
        parts: [
          { type: 'thinking', text: 'hmm', signature: 'anthropic-signature' },
          { type: 'text', text: '\n\n' },
          { type: 'text', text: 'ok' },
        ],
      },
      { reasoning: false },
    );
    expect(items).toEqual([{ type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'ok' }] }]);
  });

  it('writes a rollout back byte for byte, and abridge compaction as the compacted view Codex will send', async () => {
    const lines: { timestamp: string; type: string; payload: Record<string, unknown> }[] = [
      {
        timestamp: '2026-03-01T10:00:00.000Z',
        type: 'session_meta',
        payload: {
          id: '0199aaaa-bbbb-7ccc-8ddd-eeeeffff0001',
          timestamp: '2026-03-01T10:00:00.000Z',
          cwd: '/w',
          cli_version: '0.171.0',
          model_provider: 'openai',
          base_instructions: { text: 'You are Codex.' },
        },
      },
      { timestamp: '2026-03-01T10:00:01.000Z', type: 'turn_context', payload: { model: 'gpt-5.5', cwd: '/w' } },
    ];
    let t = 2;
    const at = () => `2026-03-01T10:00:${String(t++).padStart(2, '0')}.000Z`;
    const item = (payload: Record<string, unknown>) => ({ timestamp: at(), type: 'response_item', payload });
    lines.push(item({ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'fix the parser' }] }));
    for (let i = 0; i < 8; i++) {
      lines.push(
        item({
          type: 'function_call',
          name: 'shell',
          arguments: JSON.stringify({ command: ['cat', `f${i}.ts`] }),
          call_id: `call_${i}`,
        }),
      );
      lines.push(
        item({ type: 'function_call_output', call_id: `call_${i}`, output: `file ${i}\n${'x'.repeat(3000)}` }),
      );
    }
    // The last step is cut off: its call has no output yet.
    lines.push(item({ type: 'function_call', name: 'shell', arguments: '{"command":["make"]}', call_id: 'call_last' }));
    const original = `${lines.map((l) => JSON.stringify(l)).join('\n')}\n`;
    const s = parseSession(original, { format: 'codex' });
    expect(writeSession(s, 'codex')).toBe(original);

    const r = await compact(s, {
      target: 2_000,
      force: true,
      summarizer: new ExtractiveSummarizer(),
      store: new MemoryResultStore(),
    });
    expect(r.entry).toBeDefined();
    const view = activeMessages(s).filter((m) => m.role !== 'system');
    const text = writeSession(s, 'codex');
    expect(text.startsWith(original)).toBe(true);
    const added = text
      .slice(original.length)
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l) as { type: string; payload: { replacement_history: Record<string, unknown>[] } });
    expect(added).toHaveLength(1);
    expect(added[0]!.type).toBe('compacted');
    const history = added[0]!.payload.replacement_history;
    // Codex answers a call without output `aborted` when it loads a history: written so, the file says it.
    expect(history.slice(-2)).toEqual([
      { type: 'function_call', name: 'shell', arguments: '{"command":["make"]}', call_id: 'call_last' },
      { type: 'function_call_output', call_id: 'call_last', output: 'aborted' },
    ]);
    const back = parseSession(text, { format: 'codex' });
    const got = activeMessages(back).filter((m) => m.role !== 'system');
    expect(readable(got.slice(0, -1))).toEqual(readable(view));
    // The summary is known as one again (its text is the record's `message`).
    expect(got.filter((m) => m.parts.some((p) => p.type === 'compaction'))).toHaveLength(1);
    expect(readable(got.slice(-1))).toEqual([
      {
        role: 'tool',
        parts: [{ type: 'tool-result', callId: 'call_last', content: [{ type: 'text', text: 'aborted' }] }],
      },
    ]);
    // Read back and written again, nothing changes.
    expect(writeSession(back, 'codex')).toBe(text);
  });
});
