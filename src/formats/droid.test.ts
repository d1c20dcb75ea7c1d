import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { activeMessages } from '../model/view.js';
import type { Message } from '../model/types.js';
import { detectFormat, sampleSource } from './detect.js';
import { droidFormat, droidSummaryText } from './droid.js';
import { inspectSession } from './inspect.js';
import { parseSession, readSession } from './read.js';

// Records in the shapes droid 0.2xx writes (see droid.ts for where they were learned): a session_start, the llm_only
// context message, hook runs (user_only, empty content), Anthropic blocks, results in a message of their own.
const jsonl = (records: unknown[]) => `${records.map((r) => JSON.stringify(r)).join('\n')}\n`;
let n = 0;
const at = () => `2026-09-22T20:42:${String(n++ % 60).padStart(2, '0')}.000Z`;
const start = (extra: Record<string, unknown> = {}) => ({
  type: 'session_start',
  id: 'd0a1b2c3-0000-4000-8000-000000000001',
  title: 'Fix the failing test',
  owner: 'unknown',
  version: 2,
  cwd: '/work/repo',
  hostId: '00000000-1111-4222-8333-444444444444',
  isSessionTitleManuallySet: false,
  sessionTitleAutoStage: 'first_message',
  ...extra,
});
const msg = (id: string, parentId: string | undefined, message: Record<string, unknown>, extra = {}) => ({
  type: 'message',
  id,
  ...(parentId ? { parentId } : {}),
  timestamp: at(),
  message,
  ...extra,
});
const hook = (id: string, parentId: string | undefined, event: string) =>
  msg(id, parentId, {
    role: 'user',
    content: [],
    visibility: 'user_only',
    hookEventName: event,
    hookCommands: [{ type: 'command', command: 'echo hook', timeout: 10 }],
    hookStatus: 'completed',
    hookResults: [{ exitCode: 0, stdout: '', stderr: '' }],
  });
const context = (id: string) =>
  msg(`context-${id}`, undefined, {
    role: 'user',
    content: [
      { type: 'text', text: '<system-reminder>\nUser system info (linux)\n% pwd\n/work/repo\n</system-reminder>' },
      { type: 'text', text: '<system-reminder>Current date: 2026-09-22.</system-reminder>' },
    ],
    visibility: 'llm_only',
  });
const user = (id: string, parentId: string | undefined, text: string) =>
  msg(id, parentId, { role: 'user', content: [{ type: 'text', text }], interactionMode: 'auto' });
const assistant = (id: string, parentId: string, content: unknown[], extra: Record<string, unknown> = {}) =>
  msg(id, parentId, {
    role: 'assistant',
    content,
    modelId: 'claude-sonnet-4-5-20250929',
    reasoningEffort: 'none',
    ...extra,
  });
const result = (id: string, parentId: string, callId: string, content: string, isError = false) =>
  msg(id, parentId, {
    role: 'user',
    content: [{ type: 'tool_result', tool_use_id: callId, is_error: isError, content }],
  });

const transcript = [
  start(),
  hook('h0', undefined, 'SessionStart'),
  context('u1'),
  user('u1', 'context-u1', 'Run the tests and fix what fails.'),
  assistant('a1', 'u1', [
    { type: 'thinking', thinking: 'Run them first.', signature: 'sig-1' },
    { type: 'tool_use', id: 'toolu_01', name: 'Execute', input: { command: 'npm test' } },
  ]),
  hook('h1', 'a1', 'PreToolUse'),
  hook('h2', 'a1', 'PostToolUse'),
  result('r1', 'a1', 'toolu_01', 'Error: Command failed (exit code: 1)\n1 failing', true),
  assistant('a2', 'r1', [{ type: 'text', text: 'One test fails; fixing it.' }]),
  { type: 'todo_state', id: 't1', timestamp: at(), todos: { todos: '1. fix test [in_progress]' }, messageIndex: 4 },
  hook('h3', 'a2', 'Stop'),
];

const text = (m: Message | undefined) => (m?.parts ?? []).map((p) => (p.type === 'text' ? p.text : '')).join('');

describe('droid format', () => {
  it('detects Droid sessions by their session_start header, and nothing else', () => {
    expect(droidFormat.detect({ records: transcript as Record<string, unknown>[], head: '' })).toBeGreaterThan(0.9);
    const detected = detectFormat(sampleSource(jsonl(transcript), true));
    expect(detected.kind === 'supported' && detected.format.id).toBe('droid');
    // pi's records have the same message envelope under a `session` header: not ours.
    const pi = [
      { type: 'session', version: 3, id: 'p', timestamp: '2026-01-01T00:00:00.000Z', cwd: '/r' },
      {
        type: 'message',
        id: 'm1',
        parentId: null,
        timestamp: '2026-01-01T00:00:01.000Z',
        message: { role: 'user', content: 'hi' },
      },
    ];
    expect(droidFormat.detect({ records: pi, head: '' })).toBe(0);
    // Another tool's `session_start` event log.
    expect(
      droidFormat.detect({
        records: [
          { type: 'session_start', session_id: 's' },
          { type: 'set', reps: 3 },
        ],
        head: '',
      }),
    ).toBe(0);
  });

  it('reads the conversation Droid sends: the llm_only context, turns, calls paired with results; hooks left out', () => {
    const s = parseSession(jsonl(transcript));
    expect(s.format).toBe('droid');
    expect(s.problems).toEqual([]);
    expect(s.info).toMatchObject({
      id: 'd0a1b2c3-0000-4000-8000-000000000001',
      cwd: '/work/repo',
      title: 'Fix the failing test',
      version: 2,
    });
    const view = activeMessages(s);
    expect(view.map((m) => m.role)).toEqual(['user', 'user', 'assistant', 'tool', 'assistant']);
    expect(view[0]!.synthetic).toBe(true);
    expect(text(view[0])).toContain('User system info');
    expect(view[1]!.synthetic).toBeUndefined();
    expect(text(view[1])).toBe('Run the tests and fix what fails.');
    expect(view[2]!.model).toBe('claude-sonnet-4-5-20250929');
    expect(view[2]!.parts).toEqual([
      { type: 'thinking', text: 'Run them first.', signature: 'sig-1' },
      { type: 'tool-call', id: 'toolu_01', name: 'Execute', arguments: { command: 'npm test' } },
    ]);
    expect(view[3]!.parts[0]).toMatchObject({ type: 'tool-result', callId: 'toolu_01', isError: true });
    // Hooks and the todo list are kept as entries (written back as they were), not messages.
    const kinds = s.entries.filter((e) => !e.message).map((e) => e.sourceType);
    expect(kinds).toEqual([
      'session_start',
      'message/hook',
      'message/hook',
      'message/hook',
      'todo_state',
      'message/hook',
    ]);
  });

  it('inspect: messages, tool calls paired with their results, the model', () => {
    const report = inspectSession(parseSession(jsonl(transcript)), 'droid.jsonl', 1);
    expect(report.format).toBe('droid');
    expect(report.session).toMatchObject({ id: 'd0a1b2c3-0000-4000-8000-000000000001', cwd: '/work/repo' });
    const json = JSON.stringify(report);
    expect(json).toContain('claude-sonnet-4-5-20250929');
    expect(report.problems).toEqual([]);
  });

  it('an automatic compaction with an anchor keeps the messages after the anchor, behind the summary', () => {
    const rows = [
      start(),
      user('u1', undefined, 'first'),
      assistant('a1', 'u1', [{ type: 'text', text: 'one' }]),
      user('u2', 'a1', 'second'),
      assistant('a2', 'u2', [{ type: 'text', text: 'two' }]),
      {
        type: 'compaction_state',
        id: 'c',
        timestamp: at(),
        summaryText: 'We talked twice.',
        summaryTokens: 5,
        summaryKind: 'llm_summary',
        anchorMessage: { id: 'a1', index: 1 },
        removedCount: 2,
      },
      user('u3', 'a2', 'third'),
    ];
    const s = parseSession(jsonl(rows));
    expect(s.problems).toEqual([]);
    const view = activeMessages(s);
    expect(view.map(text).slice(1)).toEqual(['second', 'two', 'third']);
    const summary = view[0]!.parts[0]!;
    expect(summary.type === 'compaction' && summary.marker).toMatchObject({
      source: 'droid',
      summary: droidSummaryText('We talked twice.'),
      firstKeptEntryId: 'a1',
      trigger: 'llm_summary',
    });
  });

  it('a /compress session starts with the summary and the system info, then its own turns', () => {
    const rows = [
      start({ parent: 'a44ad01e-aa38-4c34-9e46-48c5b5ed649a' }),
      {
        type: 'compaction_state',
        id: 'c',
        timestamp: at(),
        summaryText: 'Earlier: asked for the codename.',
        summaryTokens: 8,
        summaryKind: 'llm_summary',
        removedCount: 14,
        systemInfo: { osName: 'linux' },
        systemInfoText: '<system-reminder>\n\nUser system info (linux)\n</system-reminder>',
      },
      hook('h0', undefined, 'SessionStart'),
      { ...context('u1'), compactionSummaryId: 'c' },
      { ...user('u1', 'context-u1', 'What was my previous question?'), compactionSummaryId: 'c' },
      assistant('a1', 'u1', [{ type: 'text', text: 'You asked for the codename.' }]),
    ];
    const s = parseSession(jsonl(rows));
    expect(s.problems).toEqual([]);
    const view = activeMessages(s);
    expect(view.map((m) => m.role)).toEqual(['user', 'user', 'user', 'assistant']);
    expect(view[0]!.parts.map((p) => p.type)).toEqual(['compaction', 'text']);
    expect(text(view[0])).toContain('User system info');
    expect(text(view[2])).toBe('What was my previous question?');
  });

  it('refuses bad records with the line and what was expected, and reads on', () => {
    const rows = [
      start(),
      user('u1', undefined, 'hi'),
      { type: 'message', id: 'x', message: { role: 'robot', content: [] } },
      { type: 'message', id: 'y', message: { role: 'user', content: 42 } },
      { type: 'compaction_state', id: 'c', anchorMessage: { id: 'nope' } },
      { type: 'telepathy' },
      { hello: 'world' },
    ];
    const s = parseSession(jsonl(rows), { format: 'droid' });
    expect(s.problems.map((p) => p.line)).toEqual([3, 4, 5, 6, 7]);
    expect(s.problems[0]!.message).toMatch(/line 3: .*\{role: "user" \| "assistant", content\}/);
    expect(s.problems[1]!.message).toMatch(/line 4: .*message\.content/);
    expect(s.problems[2]!.message).toMatch(/line 5: .*summaryText/);
    expect(s.problems[3]!.message).toMatch(/line 6: unknown Droid record type "telepathy"/);
    expect(s.problems[4]!.message).toMatch(/line 7: expected a Droid session record/);
    expect(activeMessages(s).map(text)).toEqual(['hi']);
  });

  it('reads a session from a file with readSession', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'abridge-droid-'));
    try {
      const path = join(dir, 'd0a1b2c3-0000-4000-8000-000000000001.jsonl');
      writeFileSync(path, jsonl(transcript));
      const s = await readSession(path);
      expect(s.format).toBe('droid');
      expect(activeMessages(s)).toHaveLength(5);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
