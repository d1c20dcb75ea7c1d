import { describe, expect, it } from 'vitest';
import { activeBranch } from '../model/branch.js';
import { parseSession } from './read.js';
import { writeSession } from './write.js';

const jsonl = (records: unknown[]) => `${records.map((r) => JSON.stringify(r)).join('\n')}\n`;
let n = 0;
const rec = (type: string, uuid: string, parentUuid: string | null, rest: Record<string, unknown> = {}) => ({
  parentUuid,
  isSidechain: false,
  userType: 'external',
  cwd: '/repo',
  sessionId: 'S',
  version: '2.1.0',
  type,
  uuid,
  timestamp: `2026-01-01T00:00:${String(n++ % 60).padStart(2, '0')}.000Z`,
  ...rest,
});
const usage = { input_tokens: 5, cache_creation_input_tokens: 100, cache_read_input_tokens: 2000, output_tokens: 50 };
const asst = (id: string, content: unknown[]) => ({
  message: {
    id,
    type: 'message',
    role: 'assistant',
    model: 'claude-opus-4-6',
    content,
    stop_reason: null,
    stop_sequence: null,
    usage,
  },
});

const transcript = [
  { type: 'file-history-snapshot', messageId: 'x', snapshot: {}, isSnapshotUpdate: false },
  rec('user', 'u1', null, { message: { role: 'user', content: 'run both checks' } }),
  rec('assistant', 'a1', 'u1', asst('msg_1', [{ type: 'thinking', thinking: 'two tools', signature: 'SIG' }])),
  rec(
    'assistant',
    'a2',
    'a1',
    asst('msg_1', [{ type: 'tool_use', id: 't1', name: 'Bash', input: { command: 'npm test' } }]),
  ),
  rec('progress', 'p1', 'a2', { data: { type: 'bash_progress' }, toolUseID: 't1', parentToolUseID: 't1' }),
  rec(
    'assistant',
    'a3',
    'p1',
    asst('msg_1', [{ type: 'tool_use', id: 't2', name: 'Bash', input: { command: 'npm run lint' } }]),
  ),
  rec('user', 'r1', 'a2', {
    message: { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: 'ok', is_error: false }] },
    toolUseResult: {},
  }),
  rec('user', 'r2', 'a3', {
    message: {
      role: 'user',
      content: [
        { type: 'tool_result', tool_use_id: 't2', content: [{ type: 'text', text: '3 errors' }], is_error: true },
        { type: 'text', text: '[Request interrupted by user]' },
      ],
    },
  }),
  rec('system', 'cb', null, {
    logicalParentUuid: 'r2',
    subtype: 'compact_boundary',
    content: 'Conversation compacted',
    isMeta: false,
    level: 'info',
    compactMetadata: { trigger: 'manual', preTokens: 150000 },
  }),
  rec('user', 'cs', 'cb', {
    isCompactSummary: true,
    isVisibleInTranscriptOnly: true,
    message: { role: 'user', content: 'Summary: checks ran; lint has 3 errors.' },
  }),
  rec('assistant', 'a4', 'cs', { ...asst('msg_2', [{ type: 'text', text: 'Fixing lint.' }]), isSidechain: false }),
  rec('user', 's1', null, { isSidechain: true, message: { role: 'user', content: 'subagent task' } }),
];

describe('Claude Code reader', () => {
  const s = parseSession(jsonl(transcript));

  it('is detected and read without problems', () => {
    expect(s.format).toBe('claude-code');
    expect(s.problems).toEqual([]);
    expect(s.info).toMatchObject({ id: 'S', cwd: '/repo' });
  });

  it('reads usage, response ids and content blocks', () => {
    const a2 = s.entries.find((e) => e.id === 'a2')!.message!;
    expect(a2.usage).toEqual({ input: 5, output: 50, cacheRead: 2000, cacheWrite: 100 });
    expect(a2.responseId).toBe('msg_1');
    expect(a2.parts).toEqual([{ type: 'tool-call', id: 't1', name: 'Bash', arguments: { command: 'npm test' } }]);
    expect(s.entries.find((e) => e.id === 'a1')!.message!.parts).toEqual([
      { type: 'thinking', text: 'two tools', signature: 'SIG' },
    ]);
  });

  it('splits a user record holding tool results and text into a tool message then a user message', () => {
    const i = s.entries.findIndex((e) => e.id === 'r2');
    expect(s.entries[i]!.message).toMatchObject({
      role: 'tool',
      parts: [{ type: 'tool-result', callId: 't2', isError: true, content: [{ type: 'text', text: '3 errors' }] }],
    });
    expect(s.entries[i + 1]).toMatchObject({
      fromSameRecord: true,
      message: { role: 'user', parts: [{ type: 'text', text: '[Request interrupted by user]' }] },
    });
  });

  it('joins compact_boundary and its summary into one marker', () => {
    const b = s.entries.find((e) => e.kind === 'compaction')!;
    expect(b.compaction).toMatchObject({
      number: 1,
      summary: 'Summary: checks ran; lint has 3 errors.',
      tokensBefore: 150000,
      trigger: 'manual',
      source: 'claude-code',
    });
    const r2 = s.entries.find((e) => e.id === 'r2')!;
    expect(b.compaction!.archived).toEqual({ fromEntry: 0, toEntry: r2.index });
  });

  it('active branch crosses the compaction, keeps parallel calls and results, leaves out sidechains', () => {
    const roles = activeBranch(s)
      .filter((e) => e.message)
      .map((e) => `${e.id ?? '+'}:${e.message!.role}`);
    expect(roles).toEqual([
      'u1:user',
      'a1:assistant',
      'a2:assistant',
      'a3:assistant',
      'r1:tool',
      'r2:tool',
      '+:user',
      'cs:user',
      'a4:assistant',
    ]);
    const after = activeBranch(s, { throughCompactions: false })
      .filter((e) => e.message)
      .map((e) => e.id);
    expect(after).toEqual(['cs', 'a4']);
  });

  it('writes back byte-identically', () => {
    expect(writeSession(s)).toBe(jsonl(transcript));
  });

  it('converts to pi and back without losing messages', () => {
    const pi = parseSession(writeSession(s, 'pi'));
    expect(pi.format).toBe('pi');
    const texts = (x: typeof s) =>
      activeBranch(x)
        .filter((e) => e.message && e.message.role !== 'system')
        .flatMap((e) =>
          e.message!.parts.map((p) =>
            p.type === 'text'
              ? p.text
              : p.type === 'tool-call'
                ? p.id
                : p.type === 'tool-result'
                  ? `=${p.callId}`
                  : p.type,
          ),
        );
    expect(texts(pi)).toEqual(texts(s).filter(() => true));
  });
});

describe('Claude Code reader: local commands', () => {
  it('reads a local command record as the user message Claude Code sends, and writes it back as it was', () => {
    const source = jsonl([
      rec('user', 'u0', null, { message: { role: 'user', content: 'hi' } }),
      rec('system', 'lc', 'u0', {
        subtype: 'local_command',
        content: '<command-name>/model</command-name>',
        level: 'info',
        isMeta: false,
      }),
    ]);
    const s = parseSession(source);
    expect(s.entries.find((e) => e.id === 'lc')!.message).toMatchObject({
      role: 'user',
      synthetic: true,
      parts: [{ type: 'text', text: '<command-name>/model</command-name>' }],
    });
    expect(writeSession(s)).toBe(source);
  });

  it('sends a response whose blocks a result was written between as one message, results as written, as Claude Code does', () => {
    // Claude Code runs a response's first call while the next block streams: block, its result, block, its result —
    // and a sibling call whose result hangs off the other block. On resume it sends each response as one message.
    const source = jsonl([
      rec('user', 'u0', null, { message: { role: 'user', content: 'look around' } }),
      rec(
        'assistant',
        'b1',
        'u0',
        asst('msg_A', [{ type: 'tool_use', id: 'k', name: 'WebSearch', input: { q: 'x' } }]),
      ),
      rec('assistant', 'b2', 'b1', asst('msg_A', [{ type: 'tool_use', id: 'n', name: 'Glob', input: { p: '*' } }])),
      rec('user', 'rn', 'b2', {
        message: { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'n', content: 'app.js' }] },
      }),
      rec('user', 'rk', 'b1', {
        message: { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'k', content: 'results' }] },
      }),
      rec('assistant', 'c1', 'rk', asst('msg_B', [{ type: 'tool_use', id: 's', name: 'Read', input: { f: 'a' } }])),
      rec('user', 'rs', 'c1', {
        message: {
          role: 'user',
          content: [{ type: 'tool_result', tool_use_id: 's', content: 'A', is_error: false }],
        },
      }),
      rec('assistant', 'c2', 'rs', asst('msg_B', [{ type: 'tool_use', id: 'x', name: 'Read', input: { f: 'b' } }])),
      rec('user', 'rx', 'c2', {
        message: { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'x', content: 'B' }] },
      }),
      rec('user', 'u1', 'rx', { message: { role: 'user', content: 'go on' } }),
    ]);
    const body = JSON.parse(writeSession(parseSession(source), 'anthropic')) as { messages: unknown[] };
    expect(body.messages).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'look around' }] },
      {
        role: 'assistant',
        content: [
          { type: 'tool_use', id: 'k', name: 'WebSearch', input: { q: 'x' } },
          { type: 'tool_use', id: 'n', name: 'Glob', input: { p: '*' } },
        ],
      },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'n', content: 'app.js' },
          { type: 'tool_result', tool_use_id: 'k', content: 'results' },
        ],
      },
      {
        role: 'assistant',
        content: [
          { type: 'tool_use', id: 's', name: 'Read', input: { f: 'a' } },
          { type: 'tool_use', id: 'x', name: 'Read', input: { f: 'b' } },
        ],
      },
      {
        role: 'user',
        content: [
          // Written `is_error: false` is sent as written: the request is the agent's, to the token.
          { type: 'tool_result', tool_use_id: 's', content: 'A', is_error: false },
          { type: 'tool_result', tool_use_id: 'x', content: 'B' },
          { type: 'text', text: 'go on' },
        ],
      },
    ]);
  });
});
