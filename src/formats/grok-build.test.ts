import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { activeMessages, activeView } from '../model/view.js';
import type { Message } from '../model/types.js';
import { detectFormat, sampleSource } from './detect.js';
import { grokBuildFormat } from './grok-build.js';
import { inspectTranscript } from './inspect.js';
import { parseSession, readSession } from './read.js';

// Rows shaped as grok writes chat_history.jsonl, learned from the captures in inference-sh/agentprotocol
// (transcript/grok/testdata/home/.grok/sessions/%2Ftmp%2Fharness-test-grok-<n>/<id>/chat_history.jsonl): a session
// starts with the system prompt, the <user_info> block (no synthetic_reason, no prompt_index) and reminders; a prompt
// is framed in <user_query> and numbered; an assistant row's content is a string, its calls flat with JSON-text
// arguments, `model_id` on most; a result has no error flag. Shortened, the texts our own.
const jsonl = (rows: unknown[]) => `${rows.map((r) => JSON.stringify(r)).join('\n')}\n`;
const system = { type: 'system', content: 'You are Grok released by xAI. You are an interactive CLI tool.' };
const userInfo = (extra: Record<string, unknown> = {}) => ({
  type: 'user',
  content: [
    {
      type: 'text',
      text: "<user_info>\nOS Version: linux\nShell: /bin/sh\nWorkspace Path: /work/repo\nToday's date: 2026-09-22\n</user_info>\n\n<rules>\n</rules>",
    },
  ],
  ...extra,
});
const reminder = {
  type: 'user',
  content: [{ type: 'text', text: '<system-reminder>\nThe following workflows are available:\n</system-reminder>' }],
  synthetic_reason: 'system_reminder',
};
const prompt = (text: string, index?: number) => ({
  type: 'user',
  content: [{ type: 'text', text: `<user_query>\n${text}\n</user_query>` }],
  ...(index !== undefined ? { prompt_index: index } : {}),
});
const reply = (content: string, extra: Record<string, unknown> = { model_id: 'grok-code-fast-1' }) => ({
  type: 'assistant',
  content,
  ...extra,
});

const transcript = [
  system,
  userInfo(),
  reminder,
  prompt('What is the project codename? Reply ONLY the codename.', 0),
  reply('', {
    tool_calls: [{ id: 'call_1', name: 'read_file', arguments: '{"target_file":"README.md"}' }],
    model_id: 'grok-code-fast-1',
  }),
  { type: 'tool_result', tool_call_id: 'call_1', content: '1→CODENAME-7' },
  reply('CODENAME-7'),
];

const text = (m: Message | undefined) => (m?.parts ?? []).map((p) => (p.type === 'text' ? p.text : '')).join('');

describe('grok-build format', () => {
  it('detects chat_history.jsonl, and not the formats whose records share its types', () => {
    expect(detectFormat(sampleSource(jsonl(transcript), true))).toMatchObject({
      kind: 'supported',
      format: grokBuildFormat,
    });
    // Claude Code and Qwen Code records are typed user / assistant / system / tool_result too, under a `message`.
    const claude = [
      { type: 'user', uuid: 'u1', sessionId: 's', message: { role: 'user', content: '<user_query>x</user_query>' } },
      { type: 'assistant', uuid: 'a1', parentUuid: 'u1', sessionId: 's', message: { role: 'assistant', content: [] } },
    ];
    expect(grokBuildFormat.detect({ records: claude, head: '' })).toBe(0);
    const qwen = [
      { uuid: 'q1', parentUuid: null, sessionId: 's', timestamp: 't', type: 'user', message: { role: 'user' } },
      { uuid: 'q2', parentUuid: 'q1', sessionId: 's', timestamp: 't', type: 'tool_result', message: {} },
    ];
    expect(grokBuildFormat.detect({ records: qwen, head: '' })).toBe(0);
    // Bare chat rows with nothing of grok's are not taken; kimi-cli's records are not grok's rows.
    expect(grokBuildFormat.detect({ records: [{ role: 'user', content: 'hi' }], head: '' })).toBe(0);
    const kimi = [
      { role: '_checkpoint', id: 0 },
      { role: 'user', content: '<user_query>hi</user_query>' },
      { role: '_usage', token_count: 10 },
    ];
    expect(grokBuildFormat.detect({ records: kimi, head: '' })).toBe(0);
    expect(parseSession(jsonl(kimi)).format).toBe('kimi-cli');
  });

  it('reads what grok gives the model: the prompt, the harness context, calls paired with results', () => {
    const s = parseSession(jsonl(transcript));
    expect(s.format).toBe('grok-build');
    expect(s.problems).toEqual([]);
    expect(s.info).toEqual({ cwd: '/work/repo' });
    const view = activeMessages(s);
    expect(view.map((m) => m.role)).toEqual(['system', 'user', 'user', 'user', 'assistant', 'tool', 'assistant']);
    expect(view.map((m) => m.synthetic ?? false)).toEqual([false, true, true, false, false, false, false]);
    // The prompt as sent, frame and all.
    expect(text(view[3])).toBe('<user_query>\nWhat is the project codename? Reply ONLY the codename.\n</user_query>');
    expect(view[4]).toEqual({
      role: 'assistant',
      parts: [{ type: 'tool-call', id: 'call_1', name: 'read_file', arguments: { target_file: 'README.md' } }],
      model: 'grok-code-fast-1',
    });
    expect(view[5]!.parts).toEqual([
      { type: 'tool-result', callId: 'call_1', content: [{ type: 'text', text: '1→CODENAME-7' }], isError: false },
    ]);
    expect(view[6]).toEqual({
      role: 'assistant',
      parts: [{ type: 'text', text: 'CODENAME-7' }],
      model: 'grok-code-fast-1',
    });
  });

  // harness-test-grok-2119806780/…/chat_history.jsonl: /compact over ACP. grok rebuilt the file: the system prompt,
  // the <user_info> copy (compaction_meta), the last query re-pushed without its index, the summary (compaction_meta),
  // the reminders again, then the next prompt.
  const compacted = [
    system,
    userInfo({ synthetic_reason: 'compaction_meta' }),
    prompt('What was my previous question?'),
    {
      type: 'user',
      content: [
        {
          type: 'text',
          text: 'This session is being continued from a previous conversation that ran out of context.\n\nSummary:\nThe user asked for the codename; it was read from README.md.',
        },
      ],
      synthetic_reason: 'compaction_meta',
    },
    reminder,
    prompt('What was my previous question?', 5),
    reply('You asked for the project codename.'),
  ];

  it('a compaction: the summary row is the marker; what grok rebuilt before it stays in view', () => {
    const s = parseSession(jsonl(compacted));
    expect(s.problems).toEqual([]);
    const view = activeView(s);
    // Every row is in view, the summary (no entry of its own in the view: it stands for what it replaced) in its place.
    expect(view.map((v) => v.entry)).toEqual([0, 1, 2, undefined, 4, 5, 6]);
    expect(s.entries[3]!.kind).toBe('compaction');
    expect(s.entries[3]!.compaction).toEqual({
      number: 1,
      summary:
        'This session is being continued from a previous conversation that ran out of context.\n\nSummary:\nThe user asked for the codename; it was read from README.md.',
      source: 'grok-build',
      firstKeptEntry: 0,
    });
    expect(view[3]!.message.parts.map((p) => p.type)).toEqual(['compaction']);
    // The <user_info> copy is context, not the summary.
    expect(s.entries[1]!.kind).toBe('message');
    expect(s.entries[1]!.message!.synthetic).toBe(true);
    expect(text(view[6]!.message)).toBe('You asked for the project codename.');
  });

  it('the older compaction (grok of 2026-09-22): the summary alone, marked the same way', () => {
    // harness-test-grok-2300667411/…/chat_history.jsonl.
    const rows = [
      system,
      {
        type: 'user',
        content: [{ type: 'text', text: 'Earlier: a codename.\n\nResume the prior task using the summary above.' }],
        synthetic_reason: 'compaction_meta',
      },
      prompt('What was my previous question?', 5),
      reply('A codename.', {}),
    ];
    const s = parseSession(jsonl(rows));
    expect(s.entries.map((e) => e.kind)).toEqual(['message', 'compaction', 'message', 'message']);
    expect(activeMessages(s).map((m) => m.role)).toEqual(['system', 'user', 'user', 'assistant']);
    expect(activeMessages(s)[3]!.model).toBeUndefined();
  });

  it('a stream sees the compaction as its row passes', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'abridge-grok-'));
    try {
      const path = join(dir, 'chat_history.jsonl');
      writeFileSync(path, jsonl(compacted));
      const report = await inspectTranscript(path);
      expect(report.format).toBe('grok-build');
      expect(report.compactions).toMatchObject([{ number: 1, source: 'grok-build', entry: 3, line: 4 }]);
      expect(report.session.cwd).toBe('/work/repo');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('images beside a prompt and a result; reasoning and server-run searches; legacy Chat rows', () => {
    const png = 'iVBORw0KGgoAAAANSUhEUg==';
    // harness-test-grok-3546040497: a pasted image as an `image` part with a data URL, a read image in `images`.
    const s = parseSession(
      jsonl([
        system,
        {
          type: 'user',
          content: [
            { type: 'text', text: '<user_query>\nWhat is in this image?\n</user_query>' },
            { type: 'image', url: `data:image/png;base64,${png}` },
          ],
          prompt_index: 0,
        },
        reply('', { tool_calls: [{ id: 'c1', name: 'read_file', arguments: '{"target_file":"pic.png"}' }] }),
        {
          type: 'tool_result',
          tool_call_id: 'c1',
          content: 'Read image file: pic.png',
          images: [{ type: 'image', url: `data:image/png;base64,${png}` }],
        },
        // The shapes grok's storage tests write, as agentprotocol's rows_test.go quotes them (storage/jsonl/tests.rs).
        { type: 'reasoning', id: 'rs_1', summary: [{ type: 'summary_text', text: 'Let me think...' }] },
        {
          type: 'backend_tool_call',
          kind: {
            tool_type: 'web_search',
            id: 'ws_1',
            status: 'completed',
            action: { type: 'search', query: 'cats', sources: [{ type: 'url', url: 'https://cats.example' }] },
          },
        },
        { type: 'reasoning', id: 'rs_2', summary: [], encrypted_content: 'e1' },
        reply('Cats.'),
      ]),
    );
    expect(s.problems).toEqual([]);
    const view = activeMessages(s);
    const image = { type: 'image', mediaType: 'image/png', data: png, byteSize: 16 };
    expect(view[1]!.parts[1]).toEqual(image);
    expect(view[3]!.parts[0]).toMatchObject({ type: 'tool-result', callId: 'c1', content: [{ type: 'text' }, image] });
    expect(view.slice(4).map((m) => [m.role, m.parts[0]!.type])).toEqual([
      ['assistant', 'thinking'],
      ['assistant', 'tool-call'],
      ['tool', 'tool-result'],
      ['assistant', 'thinking'],
      ['assistant', 'text'],
    ]);
    expect(view[4]!.parts[0]).toEqual({ type: 'thinking', text: 'Let me think...' });
    expect(view[6]!.parts[0]).toEqual({
      type: 'tool-result',
      callId: 'ws_1',
      toolName: 'web_search',
      content: [{ type: 'text', text: 'https://cats.example' }],
      isError: false,
    });
    expect(view[7]!.parts[0]).toEqual({ type: 'thinking', text: '', signature: 'e1', redacted: true });

    // Before chat_format_version 1: Chat Completions rows, reasoning on the message.
    const legacy = parseSession(
      jsonl([
        { role: 'system', content: 'You are Grok.' },
        { role: 'user', content: [{ type: 'text', text: '<user_query>\nread it\n</user_query>' }] },
        {
          role: 'assistant',
          content: '',
          tool_calls: [
            { id: 'c1', type: 'function', function: { name: 'read_file', arguments: '{"target_file":"a"}' } },
          ],
          reasoning_content: 'thinking',
        },
        { role: 'tool', content: 'body', tool_call_id: 'c1' },
        { role: 'assistant', content: 'done' },
      ]),
    );
    expect(legacy.format).toBe('grok-build');
    expect(activeMessages(legacy).map((m) => m.parts.map((p) => p.type))).toEqual([
      ['text'],
      ['text'],
      ['thinking', 'tool-call'],
      ['tool-result'],
      ['text'],
    ]);
    expect(activeMessages(legacy)[2]!.parts[1]).toEqual({
      type: 'tool-call',
      id: 'c1',
      name: 'read_file',
      arguments: { target_file: 'a' },
    });
  });

  it('refuses bad rows with the line and what was expected, and reads on', () => {
    const rows = `${[
      JSON.stringify(system),
      JSON.stringify(prompt('hi', 0)),
      JSON.stringify({ type: 'telepathy', content: 'x' }),
      JSON.stringify({ content: 'no type' }),
      JSON.stringify({ type: 'tool_result', content: 'orphan' }),
      JSON.stringify({ type: 'user', content: 42 }),
      '{"type":"assistant","content":"cut',
      JSON.stringify(reply('still reading')),
    ].join('\n')}\n`;
    const s = parseSession(rows, { format: 'grok-build' });
    expect(s.problems.map((p) => [p.line, p.kind])).toEqual([
      [3, 'unknown-entry-type'],
      [4, 'invalid-entry'],
      [5, 'invalid-entry'],
      [6, 'invalid-entry'],
      [7, 'truncated-line'],
    ]);
    expect(s.problems[0]!.message).toMatch(/line 3: unknown Grok Build chat history row "telepathy"/);
    expect(s.problems[1]!.message).toMatch(/line 4: expected a Grok Build chat history row/);
    expect(s.problems[2]!.message).toMatch(/line 5: .*tool_call_id/);
    expect(s.problems[3]!.message).toMatch(/line 6: .*"content" is neither a list of parts nor a string/);
    expect(activeMessages(s).map(text)).toEqual([system.content, '<user_query>\nhi\n</user_query>', 'still reading']);
  });

  it('reads a session from a file with readSession', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'abridge-grok-'));
    try {
      const path = join(dir, 'chat_history.jsonl');
      writeFileSync(path, jsonl(transcript));
      const s = await readSession(path);
      expect(s.format).toBe('grok-build');
      expect(activeMessages(s)).toHaveLength(7);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
