import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkInvariants } from '../compaction/invariants.js';
import type { Message, Part, Session } from '../model/types.js';
import { activeView } from '../model/view.js';
import { CORPUS_DIR, corpusAvailable, corpusFiles } from '../../test/support/corpus.js';
import { anthropicBodyOfSession } from './anthropic.js';
import { copilotCliFormat } from './copilot-cli.js';
import { detectFormat, sampleSource } from './detect.js';
import { parseSession, readSession } from './read.js';

// ---------------------------------------------------------------------------------------------------------------------
// Synthetic fixtures (invented values, in the shape of Copilot CLI 1.0 events)

const T0 = Date.parse('2030-01-02T03:04:05.000Z');
let n = 0;
function ev(type: string, data: unknown, extra: Record<string, unknown> = {}): Record<string, unknown> {
  n++;
  return {
    type,
    data,
    id: `ev-${n}`,
    timestamp: new Date(T0 + 1000 * n).toISOString(),
    parentId: n === 1 ? null : `ev-${n - 1}`,
    ...extra,
  };
}
function jsonl(records: unknown[]): string {
  return `${records.map((r) => (typeof r === 'string' ? r : JSON.stringify(r))).join('\n')}\n`;
}
function parse(records: unknown[]): Session {
  return parseSession(jsonl(records), { format: 'copilot-cli', source: 'events.jsonl' });
}
function messages(s: Session): Message[] {
  return s.entries.flatMap((e) => (e.message ? [e.message] : []));
}
function parts<T extends Part['type']>(s: Session, type: T): Extract<Part, { type: T }>[] {
  return messages(s).flatMap((m) => m.parts.filter((p): p is Extract<Part, { type: T }> => p.type === type));
}

const start = () =>
  ev('session.start', {
    sessionId: 'sess-1',
    version: 1,
    producer: 'copilot-agent',
    copilotVersion: '9.9.9',
    startTime: '2030-01-02T03:00:00.000Z',
    context: { cwd: '/work/demo', gitRoot: '/work/demo', branch: 'main' },
  });
const model = (id: string) => ev('session.model_change', { newModel: id });
const system = (text: string) => ev('system.message', { role: 'system', content: text });
const user = (text: string, extra: Record<string, unknown> = {}) =>
  ev('user.message', {
    content: text,
    transformedContent: `<current_datetime>2030-01-02T03:04:05Z</current_datetime>\n\n${text}\n\n<system_reminder>\nx\n</system_reminder>`,
    attachments: [],
    ...extra,
  });
const turnStart = (turn: string) => ev('assistant.turn_start', { turnId: turn });
const turnEnd = (turn: string) => ev('assistant.turn_end', { turnId: turn });
const call = (id: string, name: string, args: unknown) => ({ toolCallId: id, name, arguments: args, type: 'function' });
const assistant = (data: Record<string, unknown>) =>
  ev('assistant.message', { messageId: `msg-${n + 1}`, content: '', toolRequests: [], ...data });
const toolStart = (id: string, name: string) => ev('tool.execution_start', { toolCallId: id, toolName: name });
const done = (id: string, content: string, detailed = content) =>
  ev('tool.execution_complete', { toolCallId: id, success: true, result: { content, detailedContent: detailed } });
const failed = (id: string, message: string) =>
  ev('tool.execution_complete', { toolCallId: id, success: false, error: { message, code: 'failure' } });

/** A whole turn: a question, a response with reasoning and two parallel calls, their results, then the answer. */
function wholeTurn(): unknown[] {
  n = 0;
  return [
    start(),
    model('model-a'),
    ev('hook.start', { hookInvocationId: 'h1', hookType: 'userPromptSubmitted', input: { prompt: 'List src.' } }),
    ev('hook.end', { hookInvocationId: 'h1', hookType: 'userPromptSubmitted', success: true }),
    system('You are a test agent.'),
    user('List src and read a.ts.'),
    turnStart('0'),
    assistant({
      model: 'model-a',
      reasoningText: 'Two independent reads.',
      reasoningOpaque: 'sig-123',
      toolRequests: [call('call-1', 'bash', { command: 'ls src' }), call('call-2', 'view', { path: 'src/a.ts' })],
      outputTokens: 42,
      apiCallId: 'resp-1',
    }),
    toolStart('call-1', 'bash'),
    toolStart('call-2', 'view'),
    ev('permission.requested', { requestId: 'p1', permissionRequest: { kind: 'shell', toolCallId: 'call-1' } }),
    ev('permission.completed', { requestId: 'p1', result: { kind: 'approved' } }),
    done('call-2', '1. export const a = 1;', 'export const a = 1;'),
    done('call-1', 'a.ts\nb.ts\n<exited with exit code 0>'),
    turnEnd('0'),
    turnStart('1'),
    assistant({ model: 'model-a', content: 'src has a.ts and b.ts; a.ts exports a = 1.', apiCallId: 'resp-2' }),
    turnEnd('1'),
  ];
}

describe('copilot-cli: detection', () => {
  it('detects Copilot CLI events, and only them', () => {
    const detected = detectFormat(sampleSource(jsonl(wholeTurn()), true));
    expect(detected).toMatchObject({ kind: 'supported', confidence: 0.95 });
    expect(detected.kind === 'supported' && detected.format.id).toBe('copilot-cli');

    const codexLike = sampleSource(
      jsonl([{ timestamp: '2030-01-01T00:00:00Z', type: 'session_meta', payload: { id: 'x' } }]),
      true,
    );
    expect(copilotCliFormat.detect(codexLike)).toBe(0);
    // Dotted types with data, but no event only Copilot writes.
    const dottedOnly = sampleSource(
      jsonl([
        { type: 'a.b', data: {} },
        { type: 'c.d', data: {} },
      ]),
      true,
    );
    expect(copilotCliFormat.detect(dottedOnly)).toBe(0);
  });
});

describe('copilot-cli: a whole turn', () => {
  const s = parse(wholeTurn());

  it('reads the session info from session.start and every event as one entry, raw kept', () => {
    expect(s.format).toBe('copilot-cli');
    expect(s.problems).toEqual([]);
    expect(s.info).toEqual({
      id: 'sess-1',
      cwd: '/work/demo',
      version: 1,
      startedAt: Date.parse('2030-01-02T03:00:00.000Z'),
    });
    expect(s.extra).toEqual({ copilotVersion: '9.9.9' });
    expect(s.entries).toHaveLength(18);
    expect(s.entries.map((e) => e.line)).toEqual(Array.from({ length: 18 }, (_, i) => i + 1));
    expect(s.entries.every((e) => e.raw !== undefined && e.id === (e.raw as { id: string }).id)).toBe(true);
    expect(s.entries.every((e) => e.parentId === undefined)).toBe(true);
    expect(s.entries.map((e) => e.message?.role ?? e.kind)).toEqual([
      'header',
      'model-change',
      'event',
      'event',
      'system',
      'user',
      'event',
      'assistant',
      'event',
      'event',
      'event',
      'event',
      'tool',
      'tool',
      'event',
      'event',
      'assistant',
      'event',
    ]);
    expect(s.entries[1]!.model).toEqual({ id: 'model-a' });
    expect(s.entries[6]!.timestamp).toBe(T0 + 7000);
  });

  it('gives the model what it saw: system prompt, transformed user text, reasoning, calls, results', () => {
    const [sys, usr, first, r2, r1, last] = messages(s);
    expect(sys).toEqual({
      role: 'system',
      parts: [{ type: 'text', text: 'You are a test agent.' }],
      timestamp: T0 + 5000,
    });
    expect(usr!.parts).toEqual([
      {
        type: 'text',
        text: '<current_datetime>2030-01-02T03:04:05Z</current_datetime>\n\nList src and read a.ts.\n\n<system_reminder>\nx\n</system_reminder>',
      },
    ]);
    expect(usr!.synthetic).toBeUndefined();
    expect(first).toEqual({
      role: 'assistant',
      parts: [
        { type: 'thinking', text: 'Two independent reads.', signature: 'sig-123' },
        { type: 'tool-call', id: 'call-1', name: 'bash', arguments: { command: 'ls src' } },
        { type: 'tool-call', id: 'call-2', name: 'view', arguments: { path: 'src/a.ts' } },
      ],
      model: 'model-a',
      responseId: 'resp-1',
      timestamp: T0 + 8000,
    });
    // outputTokens alone says nothing of the prompt: no usage.
    expect(first!.usage).toBeUndefined();
    // Results in the order written, each naming its call; the model's text, not the UI's.
    expect(r2!.parts).toEqual([
      {
        type: 'tool-result',
        callId: 'call-2',
        toolName: 'view',
        content: [{ type: 'text', text: '1. export const a = 1;' }],
        isError: false,
      },
    ]);
    expect(r1!.parts[0]).toMatchObject({ callId: 'call-1', toolName: 'bash', isError: false });
    expect(last!.parts).toEqual([{ type: 'text', text: 'src has a.ts and b.ts; a.ts exports a = 1.' }]);
    expect(last!.responseId).toBe('resp-2');
    expect(checkInvariants(activeView(s))).toEqual([]);
  });

  it('takes the model from session events when the message names none, and messageId as the response id', () => {
    n = 0;
    const s2 = parse([
      start(),
      model('model-b'),
      user('hi'),
      ev('assistant.message', { messageId: 'm-9', content: 'hello' }),
    ]);
    expect(messages(s2)[1]).toMatchObject({ role: 'assistant', model: 'model-b', responseId: 'm-9' });
  });
});

describe('copilot-cli: failures, gaps and bad input', () => {
  it('reads a failed tool as an error result carrying the error message', () => {
    n = 0;
    const s = parse([
      start(),
      user('read x'),
      assistant({ toolRequests: [call('c1', 'view', { path: 'x' })] }),
      failed('c1', 'Path does not exist'),
    ]);
    expect(parts(s, 'tool-result')).toEqual([
      {
        type: 'tool-result',
        callId: 'c1',
        toolName: 'view',
        content: [{ type: 'text', text: 'Path does not exist' }],
        isError: true,
      },
    ]);
    expect(s.problems).toEqual([]);
  });

  it('keeps a call never answered (the session ended mid-call) without inventing a result', () => {
    n = 0;
    const s = parse([
      start(),
      user('run it'),
      turnStart('0'),
      assistant({ toolRequests: [call('c1', 'bash', { command: 'sleep 999' })] }),
      toolStart('c1', 'bash'),
    ]);
    expect(parts(s, 'tool-call').map((c) => c.id)).toEqual(['c1']);
    expect(parts(s, 'tool-result')).toEqual([]);
    expect(s.problems).toEqual([]);
    // The final assistant message may have open calls; a request for it closes them with an error result.
    expect(checkInvariants(activeView(s))).toEqual([]);
    const request = anthropicBodyOfSession(s);
    const last = request.messages[request.messages.length - 1]!;
    expect(last.role).toBe('user');
    expect(JSON.stringify(last.content)).toContain('"tool_use_id":"c1"');
  });

  it('reports a result with no call, a second result, an unknown type and lines that are not records', () => {
    n = 0;
    const records = [
      start(),
      user('go'),
      assistant({ toolRequests: [call('c1', 'bash', {})] }),
      done('c1', 'ok'),
      done('c1', 'again'),
      done('ghost', 'from nowhere'),
      ev('session.hologram', { x: 1 }),
      '{"type": "user.message", "data": ]}',
      '[1, 2]',
      { type: 'user.message', id: 'x' },
    ];
    const s = parse(records);
    expect(s.problems.map((p) => [p.line, p.kind])).toEqual([
      [5, 'invalid-entry'],
      [6, 'invalid-entry'],
      [7, 'unknown-entry-type'],
      [8, 'invalid-json'],
      [9, 'not-an-object'],
      [10, 'invalid-entry'],
    ]);
    expect(s.problems[0]!.message).toContain('"c1"');
    expect(s.problems[0]!.message).toContain('a second result');
    expect(s.problems[1]!.message).toContain('no earlier assistant message made that call');
    expect(s.problems[2]!.message).toMatch(/line 7: unknown Copilot CLI event type "session.hologram" \(expected/);
    expect(s.problems[5]!.message).toContain('no "data" object');
    // Every line is still an entry; none of the bad ones carries a message.
    expect(s.entries.map((e) => e.kind)).toEqual([
      'header',
      'message',
      'message',
      'message',
      'event',
      'event',
      'unknown',
      'unknown',
      'unknown',
      'unknown',
    ]);
    expect(s.entries[7]!.rawText).toBe(records[7]);
    expect(parts(s, 'tool-result').map((r) => r.callId)).toEqual(['c1']);
  });
});

describe('copilot-cli: what Copilot injects', () => {
  it('puts a skill injected between two results after both, keeping the event at its place', () => {
    n = 0;
    const s = parse([
      start(),
      user('use the skill'),
      assistant({ toolRequests: [call('c1', 'skill', { skill: 'demo' }), call('c2', 'bash', {})] }),
      done('c1', 'Skill "demo" loaded successfully. Follow the instructions in the skill context.', 'whole file'),
      ev('skill.invoked', { name: 'demo', path: '/s/SKILL.md', content: '# Demo skill\nDo X.' }),
      done('c2', 'ok'),
      turnEnd('0'),
    ]);
    expect(s.entries.map((e) => [e.kind, e.sourceType, e.message?.role])).toEqual([
      ['header', 'session.start', undefined],
      ['message', 'user.message', 'user'],
      ['message', 'assistant.message', 'assistant'],
      ['message', 'tool.execution_complete', 'tool'],
      ['event', 'skill.invoked', undefined],
      ['message', 'tool.execution_complete', 'tool'],
      ['message', 'skill.invoked', 'user'],
      ['event', 'assistant.turn_end', undefined],
    ]);
    expect(s.entries[6]!.message).toEqual({
      role: 'user',
      parts: [{ type: 'text', text: '# Demo skill\nDo X.' }],
      synthetic: true,
      timestamp: T0 + 5000,
    });
    expect(s.entries[6]!.line).toBe(6);
    expect(s.entries[6]!.raw).toBeUndefined();
    expect(parts(s, 'tool-result')[0]!.content).toEqual([
      { type: 'text', text: 'Skill "demo" loaded successfully. Follow the instructions in the skill context.' },
    ]);
    expect(checkInvariants(activeView(s))).toEqual([]);
  });

  it('gives a system notification to the model as a synthetic user message', () => {
    n = 0;
    const text = '<system_notification>\nShell command "x" (shellId: 3) has completed.\n</system_notification>';
    const s = parse([
      start(),
      user('wait for it'),
      turnStart('1'),
      ev('system.notification', { content: text, kind: { type: 'shell_completed', shellId: '3' } }),
    ]);
    expect(messages(s)[1]).toEqual({
      role: 'user',
      parts: [{ type: 'text', text }],
      synthetic: true,
      timestamp: T0 + 4000,
    });
  });

  it('counts a system prompt recorded again once', () => {
    n = 0;
    const s = parse([start(), system('P'), user('a'), system('P'), user('b')]);
    expect(messages(s).map((m) => m.role)).toEqual(['system', 'user', 'user']);
    expect(s.entries[3]).toMatchObject({ kind: 'event', sourceType: 'system.message' });
  });

  it('reads images the model got from a tool and from the user', () => {
    n = 0;
    const s = parse([
      start(),
      ev('session.binary_asset', {
        assetId: 'sha256:aa',
        byteLength: 3,
        data: 'AAAA',
        mimeType: 'image/png',
        type: 'image',
      }),
      user('look', {
        attachments: [
          { type: 'blob', assetId: 'sha256:aa', mimeType: 'image/png', displayName: 'p.png' },
          { type: 'file', path: '/a.ts', displayName: 'a.ts' },
        ],
      }),
      assistant({ toolRequests: [call('c1', 'screenshot', {})] }),
      ev('tool.execution_complete', {
        toolCallId: 'c1',
        success: true,
        result: {
          content: 'Took a screenshot.',
          binaryResultsForLlm: [{ type: 'image', data: 'BBBB', mimeType: 'image/jpeg' }],
        },
      }),
    ]);
    expect(messages(s)[0]!.parts.slice(1)).toEqual([
      { type: 'image', mediaType: 'image/png', data: 'AAAA', byteSize: 3 },
    ]);
    expect(parts(s, 'tool-result')[0]!.content).toEqual([
      { type: 'text', text: 'Took a screenshot.' },
      { type: 'image', mediaType: 'image/jpeg', data: 'BBBB', byteSize: 3 },
    ]);
  });

  it("keeps a subagent's events on a sidechain, paired apart from the main agent's open call", () => {
    n = 0;
    const sub = { agentId: 'agent-7' };
    const s = parse([
      start(),
      user('delegate'),
      assistant({ toolRequests: [call('task-1', 'task', { prompt: 'look around' })] }),
      ev('user.message', { content: 'look around' }, sub),
      ev('assistant.message', { messageId: 'sm1', content: '', toolRequests: [call('s1', 'bash', {})] }, sub),
      ev('tool.execution_complete', { toolCallId: 's1', success: true, result: { content: 'found' } }, sub),
      done('task-1', 'The subagent found it.'),
    ]);
    expect(s.problems).toEqual([]);
    expect(s.entries.filter((e) => e.sidechain).map((e) => e.message?.role)).toEqual(['user', 'assistant', 'tool']);
    expect(parts(s, 'tool-result').map((r) => [r.callId, r.toolName])).toEqual([
      ['s1', 'bash'],
      ['task-1', 'task'],
    ]);
    expect(checkInvariants(activeView(s))).toEqual([]);
  });
});

describe('copilot-cli: usage and compaction', () => {
  const metrics = (count: number) => ({
    'model-a': {
      requests: { count, cost: 0 },
      usage: { inputTokens: 1500, outputTokens: 30, cacheReadTokens: 1200, cacheWriteTokens: 100, reasoningTokens: 5 },
    },
  });

  it("puts a one-request shutdown report's usage on that response, and no sum on any", () => {
    n = 0;
    const one = parse([
      start(),
      user('hi'),
      assistant({ content: 'ho', outputTokens: 30 }),
      ev('session.shutdown', { modelMetrics: metrics(1) }),
    ]);
    expect(messages(one)[1]!.usage).toEqual({ input: 200, output: 30, cacheRead: 1200, cacheWrite: 100, reasoning: 5 });
    n = 0;
    const two = parse([
      start(),
      user('hi'),
      assistant({ content: 'ho' }),
      user('again'),
      assistant({ content: 'ho' }),
      ev('session.shutdown', { modelMetrics: metrics(2) }),
    ]);
    expect(messages(two).filter((m) => m.usage)).toEqual([]);
  });

  it('ties an assistant.usage event to its response by apiCallId', () => {
    n = 0;
    const s = parse([
      start(),
      user('hi'),
      assistant({ content: 'ho', apiCallId: 'r-1' }),
      ev('assistant.usage', {
        model: 'model-a',
        apiCallId: 'r-1',
        inputTokens: 900,
        outputTokens: 12,
        cacheReadTokens: 800,
      }),
    ]);
    expect(messages(s)[1]!.usage).toEqual({ input: 100, output: 12, cacheRead: 800, cacheWrite: 0 });
    expect(s.entries[3]!.usage).toEqual(messages(s)[1]!.usage);
  });

  it("reads Copilot's compaction as a marker: the summary replaces the history up to where compaction began", () => {
    n = 0;
    const s = parse([
      start(),
      system('P'),
      user('first task'),
      assistant({ content: 'done 1' }),
      ev('session.compaction_start', { conversationTokens: 9000 }),
      user('second task'),
      assistant({ content: 'done 2' }),
      ev('session.compaction_complete', {
        success: true,
        summaryContent: 'The user asked for a first task; it is done.',
        preCompactionTokens: 9000,
        postCompactionTokens: 800,
        trigger: 'auto',
      }),
      user('third task'),
    ]);
    const marker = s.entries[7]!.compaction!;
    expect(marker).toEqual({
      number: 1,
      summary: 'The user asked for a first task; it is done.',
      source: 'copilot-cli',
      tokensBefore: 9000,
      tokensAfter: 800,
      trigger: 'auto',
      firstKeptEntry: 5,
    });
    expect(s.entries[7]!.message).toEqual({
      role: 'user',
      parts: [{ type: 'compaction', marker }],
      synthetic: true,
      timestamp: T0 + 8000,
    });
    // The conversation after it. (The system prompt is left out: view.ts archives it with the rest of what came before.)
    const view = activeView(s).filter((v) => v.message.role !== 'system');
    expect(view.map((v) => v.covers ?? v.entry)).toEqual([{ fromEntry: 0, toEntry: 4 }, 5, 6, 8]);
  });
});

// ---------------------------------------------------------------------------------------------------------------------
// The real transcripts

/** The fields of the raw events the corpus checks count with (all optional: each event type has some of them). */
interface RawEvent {
  type: string;
  data: {
    sessionId?: string;
    content?: string;
    reasoningText?: string;
    reasoningOpaque?: string;
    toolRequests?: unknown[];
    toolCallId?: string;
    success?: boolean;
    result?: { content?: string };
    error?: { message?: string };
    modelMetrics?: Record<string, { requests?: { count?: number } }>;
  };
}

function rawEvents(file: string): RawEvent[] {
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as RawEvent);
}

/** Copilot CLI files of the corpus's mixed folder: JSONL whose first event is `session.start`. */
const copilotFiles = corpusFiles('other').filter((f) => {
  if (!f.endsWith('.jsonl')) return false;
  const first = readFileSync(f, 'utf8').split('\n', 1)[0]!;
  try {
    return (JSON.parse(first) as { type?: unknown }).type === 'session.start';
  } catch {
    return false;
  }
});

describe.skipIf(!corpusAvailable())(
  corpusAvailable() ? 'copilot-cli corpus' : `copilot-cli corpus (skipped: no corpus at ${CORPUS_DIR})`,
  () => {
    it('has the five Copilot CLI transcripts', () => {
      expect(copilotFiles.length).toBeGreaterThanOrEqual(5);
    });

    it.each(copilotFiles.map((f) => [basename(f), f]))('%s', async (_name, file) => {
      const raw = rawEvents(file);
      const s = await readSession(file);
      expect(s.format).toBe('copilot-cli');
      expect(s.problems).toEqual([]);
      expect(s.info.id).toBe(raw[0]!.data.sessionId);

      const of = (type: string) => raw.filter((r) => r.type === type);
      const byRole = (role: string) =>
        messages(s).filter((m) => m.role === role && !m.parts.some((p) => p.type === 'compaction'));
      const derived = s.entries.filter((e) => e.fromSameRecord).length;
      expect(s.entries).toHaveLength(raw.length + derived);
      expect(byRole('system')).toHaveLength(new Set(of('system.message').map((r) => r.data.content)).size);
      expect(byRole('user')).toHaveLength(
        of('user.message').length + of('skill.invoked').length + of('system.notification').length,
      );
      expect(byRole('assistant')).toHaveLength(of('assistant.message').length);
      expect(parts(s, 'tool-call')).toHaveLength(
        of('assistant.message').reduce((k, r) => k + (r.data.toolRequests?.length ?? 0), 0),
      );

      // One result per completion, each after its call, carrying what the model got (content, or the error).
      const results = parts(s, 'tool-result');
      expect(results).toHaveLength(of('tool.execution_complete').length);
      expect(results.map((r) => (r.content[0] as { text: string }).text)).toEqual(
        of('tool.execution_complete').map((r) => r.data.result?.content ?? r.data.error?.message),
      );
      expect(results.filter((r) => r.isError)).toHaveLength(
        of('tool.execution_complete').filter((r) => !r.data.success).length,
      );
      const seen = new Set<string>();
      for (const m of messages(s)) {
        for (const p of m.parts) {
          if (p.type === 'tool-call') seen.add(p.id);
          if (p.type === 'tool-result') expect(seen.has(p.callId)).toBe(true);
        }
      }

      // What the model sees breaks no pairing rule but those the file itself holds: calls whose execution never
      // completed (the process ended), and responses with nothing recorded in them.
      const completed = new Set(of('tool.execution_complete').map((r) => r.data.toolCallId));
      const neverCompleted = of('tool.execution_start').filter((r) => !completed.has(r.data.toolCallId)).length;
      const empty = of('assistant.message').filter(
        (r) => !r.data.content && !r.data.reasoningText && !r.data.reasoningOpaque && !r.data.toolRequests?.length,
      ).length;
      const violations = checkInvariants(activeView(s));
      expect(violations.filter((v) => v.kind === 'call-without-result')).toHaveLength(neverCompleted);
      expect(violations.filter((v) => v.kind === 'empty-message')).toHaveLength(empty);
      expect(violations).toHaveLength(neverCompleted + empty);

      // Usage only where a shutdown report covers exactly one request.
      const single = of('session.shutdown').filter((r) => {
        const models = Object.values(r.data.modelMetrics ?? {});
        return models.length === 1 && models[0]!.requests?.count === 1;
      }).length;
      expect(messages(s).filter((m) => m.usage)).toHaveLength(single);
    });

    it('finds what the corpus is known to hold', async () => {
      const sessions = await Promise.all(copilotFiles.map((f) => readSession(f)));
      const all = sessions.flatMap(messages);
      expect(all.filter((m) => m.role === 'system')).toHaveLength(2);
      expect(sessions.flatMap((s) => parts(s, 'tool-result')).filter((r) => r.isError).length).toBeGreaterThanOrEqual(
        3,
      );
      expect(sessions.flatMap((s) => parts(s, 'thinking')).length).toBeGreaterThan(40);
      // The skill injected between two results of one response comes after both.
      expect(
        sessions.flatMap((s) => s.entries).filter((e) => e.fromSameRecord && e.sourceType === 'skill.invoked'),
      ).toHaveLength(1);
      expect(
        all.filter(
          (m) => m.synthetic && m.parts.some((p) => p.type === 'text' && p.text.startsWith('<system_notification>')),
        ),
      ).toHaveLength(1);
      expect(all.filter((m) => m.usage).map((m) => m.usage)).toEqual([
        { input: 686, output: 30, cacheRead: 14848, cacheWrite: 0, reasoning: 15 },
      ]);
    });
  },
);
