import { describe, expect, it } from 'vitest';
import { activeMessages } from '../model/view.js';
import type { Message } from '../model/types.js';
import { claudeCodeFormat } from './claude-code.js';
import { cursorFormat } from './cursor.js';
import { detectFormat, sampleSource } from './detect.js';
import { inspectSession } from './inspect.js';
import { parseSession } from './read.js';

// Lines in the shape cursor-agent writes to agent-transcripts/<id>/<id>.jsonl (see cursor.ts): bare role + message,
// calls without ids, no results, a turn_ended line per turn.
const jsonl = (records: unknown[]) => `${records.map((r) => JSON.stringify(r)).join('\n')}\n`;
const line = (role: string, content: unknown) => ({ role, message: { content } });
const transcript = [
  line('user', [{ type: 'text', text: '<user_query>\nWhat does README.md say?\n</user_query>' }]),
  line('assistant', [{ type: 'tool_use', name: 'Read', input: { path: 'README.md' } }]),
  line('assistant', [{ type: 'text', text: 'It describes the project.' }]),
  { type: 'turn_ended', status: 'success' },
  line('user', [{ type: 'text', text: 'And the tests?' }]),
  line('assistant', [
    { type: 'tool_use', name: 'Glob', input: { pattern: '**/*.test.ts' } },
    { type: 'tool_use', name: 'Read', input: { path: 'a.test.ts' } },
  ]),
  line('assistant', [{ type: 'text', text: 'There is one test file.' }]),
  { type: 'turn_ended', status: 'success' },
];
const text = (m: Message | undefined) => (m?.parts ?? []).map((p) => (p.type === 'text' ? p.text : '')).join('');

describe('cursor format', () => {
  it('detects bare {role, message: {content}} lines, and leaves Claude Code records alone', () => {
    expect(cursorFormat.detect({ records: transcript as Record<string, unknown>[], head: '' })).toBeGreaterThan(0.8);
    const detected = detectFormat(sampleSource(jsonl(transcript), true));
    expect(detected.kind === 'supported' && detected.format.id).toBe('cursor');
    const claude = [
      {
        parentUuid: null,
        isSidechain: false,
        type: 'user',
        uuid: 'c1',
        sessionId: 'S',
        timestamp: '2026-01-01T00:00:00.000Z',
        message: { role: 'user', content: 'hello' },
      },
      {
        parentUuid: 'c1',
        type: 'assistant',
        uuid: 'c2',
        sessionId: 'S',
        timestamp: '2026-01-01T00:00:01.000Z',
        message: { role: 'assistant', content: [{ type: 'text', text: 'hi' }] },
      },
    ];
    expect(cursorFormat.detect({ records: claude, head: '' })).toBe(0);
    expect(claudeCodeFormat.detect({ records: transcript as Record<string, unknown>[], head: '' })).toBe(0);
    // Chat Completions messages as JSONL have a role but no `message` object.
    expect(
      cursorFormat.detect({
        records: [
          { role: 'user', content: 'hi' },
          { role: 'assistant', content: 'yo' },
        ],
        head: '',
      }),
    ).toBe(0);
  });

  it('reads turns and calls (ids made from the line), and says once that the results are not recorded', () => {
    const s = parseSession(jsonl(transcript));
    expect(s.format).toBe('cursor');
    const view = activeMessages(s);
    expect(view.map((m) => m.role)).toEqual(['user', 'assistant', 'assistant', 'user', 'assistant', 'assistant']);
    expect(text(view[0])).toContain('What does README.md say?');
    expect(view[1]!.parts).toEqual([
      { type: 'tool-call', id: 'cursor-call-2-0', name: 'Read', arguments: { path: 'README.md' } },
    ]);
    expect(view[4]!.parts.map((p) => p.type === 'tool-call' && p.id)).toEqual(['cursor-call-6-0', 'cursor-call-6-1']);
    // The same ids on a second read.
    expect(activeMessages(parseSession(jsonl(transcript)))[1]!.parts).toEqual(view[1]!.parts);
    expect(s.problems).toHaveLength(1);
    expect(s.problems[0]!.message).toMatch(/3 tool call\(s\) but none of their results/);
    const report = inspectSession(s, 'cursor.jsonl', 1);
    expect(report.format).toBe('cursor');
  });

  it('reads tool_result blocks should a version write them', () => {
    const rows = [
      line('user', 'go'),
      line('assistant', [{ type: 'tool_use', id: 'c1', name: 'Read', input: {} }]),
      line('user', [{ type: 'tool_result', tool_use_id: 'c1', content: 'body', is_error: false }]),
    ];
    const s = parseSession(jsonl(rows), { format: 'cursor' });
    expect(s.problems).toEqual([]);
    expect(activeMessages(s).map((m) => m.role)).toEqual(['user', 'assistant', 'tool']);
  });

  it('refuses bad lines with the line and what was expected', () => {
    const rows = [
      line('user', 'hi'),
      { role: 'wizard', message: { content: 'x' } },
      { role: 'user', message: 'flat' },
      { type: 'checkpoint' },
      { hello: 'world' },
    ];
    const s = parseSession(jsonl(rows), { format: 'cursor' });
    expect(s.problems.map((p) => p.line)).toEqual([2, 3, 4, 5]);
    expect(s.problems[0]!.message).toMatch(/line 2: Cursor transcript line needs "role" user, assistant or system/);
    expect(s.problems[2]!.message).toMatch(/line 4: unknown Cursor transcript record type "checkpoint"/);
    expect(s.problems[3]!.message).toMatch(/line 5: expected a Cursor transcript line/);
    expect(activeMessages(s).map(text)).toEqual(['hi']);
  });
});
