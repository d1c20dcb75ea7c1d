import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { activeMessages } from '../model/view.js';
import type { Message, Part } from '../model/types.js';
import { detectFormat, sampleSource } from './detect.js';
import { claudeCodeFormat } from './claude-code.js';
import { qwenCodeFormat } from './qwen-code.js';
import { parseSession, readSession } from './read.js';

const jsonl = (records: unknown[]) => `${records.map((r) => JSON.stringify(r)).join('\n')}\n`;
let n = 0;
const rec = (type: string, uuid: string, parentUuid: string | null, rest: Record<string, unknown> = {}) => ({
  uuid,
  parentUuid,
  sessionId: 'qwen-session-1',
  timestamp: `2026-02-01T00:00:${String(n++ % 60).padStart(2, '0')}.000Z`,
  type,
  cwd: '/repo',
  version: '0.9.0',
  gitBranch: 'main',
  ...rest,
});
const user = (uuid: string, parent: string | null, text: string) =>
  rec('user', uuid, parent, { message: { role: 'user', parts: [{ text }] } });
const model = (uuid: string, parent: string | null, parts: unknown[], usageMetadata?: unknown) =>
  rec('assistant', uuid, parent, {
    model: 'qwen3-coder-plus',
    message: { role: 'model', parts },
    ...(usageMetadata ? { usageMetadata } : {}),
  });
const result = (uuid: string, parent: string | null, id: string, name: string, response: unknown, status = 'success') =>
  rec('tool_result', uuid, parent, {
    message: { role: 'user', parts: [{ functionResponse: { id, name, response } }] },
    toolCallResult: { callId: id, status },
  });

const usage = {
  promptTokenCount: 1200,
  cachedContentTokenCount: 1000,
  candidatesTokenCount: 80,
  thoughtsTokenCount: 20,
  totalTokenCount: 1300,
};

const transcript = [
  user('u1', null, 'list the files and read the readme'),
  model(
    'a1',
    'u1',
    [
      { text: 'I should list first.', thought: true },
      { text: 'Listing.' },
      { functionCall: { id: 'call_1', name: 'list_directory', args: { path: '.' } } },
      { functionCall: { id: 'call_2', name: 'read_file', args: { absolute_path: '/repo/NOPE.md' } } },
    ],
    usage,
  ),
  result('t1', 'a1', 'call_1', 'list_directory', { output: 'README.md\nsrc' }),
  result('t2', 't1', 'call_2', 'read_file', { error: 'File not found: /repo/NOPE.md' }, 'error'),
  model('a2', 't2', [{ text: 'There is a README.md and a src folder.' }], {
    promptTokenCount: 1400,
    candidatesTokenCount: 12,
  }),
  rec('system', 's1', 'a2', { subtype: 'ui_telemetry', systemPayload: { uiEvent: { 'event.name': 'x' } } }),
];

const parts = (m: Message | undefined): Part[] => m?.parts ?? [];

describe('qwen-code format', () => {
  it('detects Qwen Code recordings, and not Claude Code records', () => {
    const records = transcript as Record<string, unknown>[];
    expect(qwenCodeFormat.detect({ records, head: '' })).toBeGreaterThan(0.95);
    const detected = detectFormat(sampleSource(jsonl(transcript), true));
    expect(detected.kind === 'supported' && detected.format.id).toBe('qwen-code');
    // Only user/assistant/system records (no tool results): linked like Claude Code's, but Gemini Contents — Claude
    // Code's detect leaves them (it claimed them at 0.95 before).
    const plain = [user('u1', null, 'hi'), model('a1', 'u1', [{ text: 'hello' }])];
    const plainDetected = detectFormat(sampleSource(jsonl(plain), true));
    expect(plainDetected.kind === 'supported' && plainDetected.format.id).toBe('qwen-code');
    expect(claudeCodeFormat.detect({ records: plain as Record<string, unknown>[], head: '' })).toBe(0);
    const claude = {
      parentUuid: null,
      isSidechain: false,
      userType: 'external',
      cwd: '/repo',
      sessionId: 'S',
      version: '2.1.0',
      type: 'user',
      uuid: 'c1',
      timestamp: '2026-01-01T00:00:00.000Z',
      message: { role: 'user', content: 'hello' },
    };
    expect(qwenCodeFormat.detect({ records: [claude], head: '' })).toBe(0);
    expect(claudeCodeFormat.detect({ records: [claude], head: '' })).toBeGreaterThan(0.9);
  });

  it('reads user text, assistant text and calls, tool results paired with their calls, errors flagged', () => {
    const s = parseSession(jsonl(transcript));
    expect(s.format).toBe('qwen-code');
    expect(s.problems).toEqual([]);
    expect(s.info).toMatchObject({ id: 'qwen-session-1', cwd: '/repo' });
    const view = activeMessages(s);
    expect(view.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'tool', 'assistant']);
    expect(parts(view[0])).toEqual([{ type: 'text', text: 'list the files and read the readme' }]);
    const a1 = view[1]!;
    expect(a1.model).toBe('qwen3-coder-plus');
    expect(parts(a1).map((p) => p.type)).toEqual(['thinking', 'text', 'tool-call', 'tool-call']);
    expect(parts(a1)[2]).toEqual({ type: 'tool-call', id: 'call_1', name: 'list_directory', arguments: { path: '.' } });
    expect(parts(view[2])).toEqual([
      {
        type: 'tool-result',
        callId: 'call_1',
        toolName: 'list_directory',
        content: [{ type: 'text', text: 'README.md\nsrc' }],
        isError: false,
      },
    ]);
    const failed = parts(view[3])[0]!;
    expect(failed).toMatchObject({ type: 'tool-result', callId: 'call_2', isError: true });
    expect(failed.type === 'tool-result' && failed.content).toEqual([
      { type: 'text', text: 'File not found: /repo/NOPE.md' },
    ]);
  });

  it('keeps thought parts as thinking (Qwen Code sends them back as reasoning_content)', () => {
    const s = parseSession(jsonl(transcript));
    const thinking = parts(activeMessages(s)[1]).find((p) => p.type === 'thinking');
    expect(thinking).toEqual({ type: 'thinking', text: 'I should list first.' });
  });

  it('reads usage: prompt minus cached as input, thoughts in output', () => {
    const s = parseSession(jsonl(transcript));
    const view = activeMessages(s);
    expect(view[1]!.usage).toEqual({ input: 200, cacheRead: 1000, cacheWrite: 0, output: 100, reasoning: 20 });
    expect(view[4]!.usage).toEqual({ input: 1400, cacheRead: 0, cacheWrite: 0, output: 12 });
  });

  it('follows the active branch from the last record after a rewind', () => {
    const forked = [
      user('u1', null, 'first question'),
      model('a1', 'u1', [{ text: 'first answer' }]),
      user('u2', 'a1', 'abandoned follow-up'),
      model('a2', 'u2', [{ text: 'abandoned answer' }]),
      // Rewound to a1: a second child of a1.
      user('u3', 'a1', 'better follow-up'),
      model('a3', 'u3', [{ text: 'better answer' }]),
    ];
    const texts = activeMessages(parseSession(jsonl(forked))).map((m) =>
      m.parts.map((p) => (p.type === 'text' ? p.text : '')).join(''),
    );
    expect(texts).toEqual(['first question', 'first answer', 'better follow-up', 'better answer']);
  });

  it('after a chat_compression record, the model sees its compressed history and what follows', () => {
    const compressed = [
      user('u1', null, 'old question'),
      model('a1', 'u1', [{ text: 'old answer' }]),
      rec('system', 'c1', 'a1', {
        subtype: 'chat_compression',
        systemPayload: {
          info: { originalTokenCount: 50000, newTokenCount: 3000, compressionStatus: 1 },
          compressedHistory: [
            { role: 'user', parts: [{ text: '<state_snapshot>we talked</state_snapshot>' }] },
            { role: 'model', parts: [{ text: 'Got it. Thanks for the additional context!' }] },
            { role: 'user', parts: [{ text: 'kept tail question' }] },
          ],
        },
      }),
      model('a2', 'c1', [{ text: 'answer after compression' }]),
      user('u2', 'a2', 'next'),
    ];
    const s = parseSession(jsonl(compressed));
    expect(s.problems).toEqual([]);
    const view = activeMessages(s);
    expect(view.map((m) => m.role)).toEqual(['user', 'assistant', 'user', 'assistant', 'user']);
    const summary = parts(view[0])[0]!;
    expect(summary.type).toBe('compaction');
    if (summary.type === 'compaction') {
      expect(summary.marker).toMatchObject({
        summary: '<state_snapshot>we talked</state_snapshot>',
        source: 'qwen-code',
        tokensBefore: 50000,
        tokensAfter: 3000,
      });
    }
    const texts = view.slice(1).map((m) => m.parts.map((p) => (p.type === 'text' ? p.text : '')).join(''));
    expect(texts).toEqual([
      'Got it. Thanks for the additional context!',
      'kept tail question',
      'answer after compression',
      'next',
    ]);
    expect(JSON.stringify(view)).not.toContain('old question');
  });

  it('reports a malformed record with its line and what was expected', () => {
    const bad = [
      user('u1', null, 'hi'),
      rec('assistant', 'a1', 'u1', { message: { role: 'model', content: 'not parts' } }),
      { hello: 'world' },
    ];
    const s = parseSession(jsonl(bad), { format: 'qwen-code' });
    expect(s.problems).toHaveLength(2);
    expect(s.problems[0]!.line).toBe(2);
    expect(s.problems[0]!.message).toMatch(/line 2: .*Gemini Content \{role, parts/);
    expect(s.problems[1]!.line).toBe(3);
    expect(s.problems[1]!.message).toMatch(/line 3: expected a Qwen Code ChatRecord/);
  });

  it('reads a recording from a file with readSession', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'abridge-qwen-'));
    try {
      const path = join(dir, 'c3a1b2c4-0000-4000-8000-000000000001.jsonl');
      writeFileSync(path, jsonl(transcript));
      const s = await readSession(path);
      expect(s.format).toBe('qwen-code');
      expect(activeMessages(s)).toHaveLength(5);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
