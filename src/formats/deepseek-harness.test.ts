import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { replaySession } from '../analysis/replay.js';
import { checkInvariants } from '../compaction/invariants.js';
import type { Message, Part, Session, ToolResultPart } from '../model/types.js';
import { activeMessages, activeView } from '../model/view.js';
import { CORPUS_DIR, corpusFile } from '../../test/support/corpus.js';
import { deepSeekHarnessFormat } from './deepseek-harness.js';
import { detectFormat, sampleSource } from './detect.js';
import { piFormat } from './pi.js';
import { parseSession, readSession } from './read.js';

const jsonl = (records: unknown[]) => `${records.map((r) => JSON.stringify(r)).join('\n')}\n`;

// A small log in the harness' v0 vocabulary (invented values), built event by event with contiguous seqs.
let seq = 0;
const T0 = 1_900_000_000_000;
const ev = (type: string, data: Record<string, unknown>, extra: Record<string, unknown> = {}) => {
  const s = seq++;
  return { type, seq: s, time: T0 + s, data, ...extra };
};
const append = { surfaceOp: 'append' };
const text = (t: string) => ({ type: 'text', text: t });

const SYSTEM = 'You are a test agent.\n\nWork in /w.\n\nBash runs under the "read-only" sandbox.';
const BASH = { name: 'bash', description: 'Run a command.', parameters: { type: 'object', properties: {} } };
const READ = { name: 'read', description: 'Read a file.', parameters: { type: 'object', properties: {} } };
const WRITE = { name: 'write', description: 'Write a file.', parameters: { type: 'object', properties: {} } };

function transcript(): Record<string, unknown>[] {
  seq = 0;
  const chunk = (turn: number, step: number, c: Record<string, unknown>) =>
    ev('assistant/chunk', { turn, step, chunk: c });
  return [
    { type: 'session', version: 0, id: 'ds-1', createdAt: T0 - 1000, cwd: '/w', delegationDepth: 0 },
    ev('turn/start', { turn: 1, trigger: { kind: 'message', source: { kind: 'user' } } }),
    ev('user/message', { content: [text('list the files')], source: { kind: 'user' } }, append),
    ev('step/start', { turn: 1, step: 1 }),
    ev('request/header', {
      header: { config: { model: 'deepseek-test' }, system: SYSTEM, tools: [BASH, READ] },
      reason: 'initial',
    }),
    chunk(1, 1, { type: 'block-start', index: 0, blockType: 'reasoning' }),
    chunk(1, 1, { type: 'reasoning-delta', index: 0, text: 'I will list.' }),
    chunk(1, 1, { type: 'block-start', index: 1, blockType: 'tool-call' }),
    chunk(1, 1, { type: 'tool-call-delta', index: 1, argumentsDelta: '{"command":"ls"}' }),
    chunk(1, 1, { type: 'block-end', index: 0, block: { type: 'reasoning', text: 'I will list.' } }),
    chunk(1, 1, {
      type: 'block-end',
      index: 1,
      block: { type: 'tool-call', id: 'call_1', name: 'bash', arguments: '{"command":"ls"}' },
    }),
    chunk(1, 1, {
      type: 'usage',
      usage: { inputTokens: 900, outputTokens: 40, cacheReadTokens: 0, reasoningTokens: 10 },
    }),
    chunk(1, 1, { type: 'finish', reason: { kind: 'tool-calls' } }),
    ev(
      'assistant/message',
      {
        turn: 1,
        step: 1,
        content: [
          { type: 'reasoning', text: 'I will list.' },
          { type: 'tool-call', id: 'call_1', name: 'bash', arguments: '{"command":"ls"}' },
          { type: 'tool-call', id: 'call_2', name: 'read', arguments: '{"path":"/w/missing"}' },
        ],
        usage: { inputTokens: 900, outputTokens: 40, cacheReadTokens: 0, reasoningTokens: 10 },
      },
      { ...append, sourceEventSeqs: [5, 6, 7, 8, 9, 10, 11, 12] },
    ),
    ev('tool/call', { turn: 1, step: 1, callId: 'call_1', name: 'bash', arguments: '{"command":"ls"}' }),
    ev('tool/call', { turn: 1, step: 1, callId: 'call_2', name: 'read', arguments: '{"path":"/w/missing"}' }),
    ev('approval/asked', { id: 'ap-1', toolName: 'bash', callId: 'call_1', reason: 'escalate' }),
    ev('approval/decided', { id: 'ap-1', outcome: 'allowed-once' }),
    ev('tool/result', { turn: 1, step: 1, callId: 'call_1', content: [], isError: false }, append),
    ev(
      'tool/result',
      { turn: 1, step: 1, callId: 'call_2', content: [text('Error: '), text('no such file')], isError: true },
      append,
    ),
    ev('step/end', { turn: 1, step: 1 }),
    ev('step/start', { turn: 1, step: 2 }),
    ev(
      'assistant/message',
      {
        turn: 1,
        step: 2,
        content: [{ type: 'reasoning', text: 'Nothing to show.' }, text('The folder is '), text('empty.')],
        usage: { inputTokens: 60, outputTokens: 12, cacheReadTokens: 896, reasoningTokens: 4 },
      },
      append,
    ),
    ev('step/end', { turn: 1, step: 2 }),
    ev('turn/end', { turn: 1, reason: { kind: 'completed' } }),
    // Turn 2: the user switches the sandbox; the plugin tells the model, and the system prompt and tools change.
    ev('turn/start', { turn: 2, trigger: { kind: 'message', source: { kind: 'user' } } }),
    ev('bash/sandbox-mode', { mode: 'workspace-write' }),
    ev('user/message', { content: [text('now write it')], source: { kind: 'user' } }, append),
    ev(
      'user/message',
      {
        content: [text('The bash sandbox mode changed to "workspace-write".')],
        source: { kind: 'plugin', plugin: 'tool-bash' },
      },
      append,
    ),
    ev('step/start', { turn: 2, step: 1 }),
    ev('request/header-delta', {
      system: { keepStart: 4, keepEnd: 0, insert: ['Bash runs under the "workspace-write" sandbox.'] },
      tools: { added: [WRITE], removed: ['read'], changed: [] },
      config: { model: 'deepseek-test-2' },
    }),
    ev(
      'assistant/message',
      {
        turn: 2,
        step: 1,
        content: [text('Done.')],
        usage: { inputTokens: 1100, outputTokens: 3, cacheReadTokens: 0, cacheWriteTokens: 0 },
      },
      append,
    ),
    ev('step/end', { turn: 2, step: 1 }),
    ev('turn/end', { turn: 2, reason: { kind: 'completed' } }),
  ];
}

const messages = (s: Session): Message[] => s.entries.flatMap((e) => (e.message ? [e.message] : []));
const partsOf = <T extends Part['type']>(ms: Message[], type: T) =>
  ms.flatMap((m) => m.parts.filter((p): p is Extract<Part, { type: T }> => p.type === type));
const textOf = (m: Message | undefined) => (m?.parts ?? []).map((p) => (p.type === 'text' ? p.text : '')).join('');
const read = (records: unknown[]) => parseSession(jsonl(records), { format: 'deepseek-harness' });

describe('deepseek-harness format', () => {
  it('detects a harness log high, from its header or from its events alone', () => {
    const records = transcript();
    expect(deepSeekHarnessFormat.detect({ records, head: '' })).toBeGreaterThanOrEqual(0.95);
    const detected = detectFormat(sampleSource(jsonl(records), true));
    expect(detected.kind === 'supported' && detected.format.id).toBe('deepseek-harness');
    // A log whose header line is gone.
    expect(deepSeekHarnessFormat.detect({ records: records.slice(1), head: '' })).toBeGreaterThan(0.5);
    expect(piFormat.detect({ records, head: '' })).toBe(0);
  });

  it('leaves pi sessions and other event logs alone although pi opens with {type: "session"} too', () => {
    const piLike = [
      { type: 'session', version: 3, id: 'p1', timestamp: '2030-01-01T00:00:00.000Z', cwd: '/w' },
      { type: 'message', id: 'a', parentId: null, timestamp: '2030-01-01T00:00:01.000Z', message: { role: 'user' } },
    ];
    expect(deepSeekHarnessFormat.detect({ records: piLike, head: '' })).toBe(0);
    // A pi header with fields like this harness' still has pi's ISO timestamp.
    const piWithExtras = [{ ...piLike[0], createdAt: T0, delegationDepth: 0 }, piLike[1]!];
    expect(deepSeekHarnessFormat.detect({ records: piWithExtras, head: '' })).toBe(0);
    const again = detectFormat(sampleSource(jsonl(piWithExtras), true));
    expect(again.kind === 'supported' && again.format.id).toBe('pi');
    // This header followed by records of another shape.
    const headerOnly = [
      { type: 'session', version: 0, id: 'd2', createdAt: T0, cwd: '/w', delegationDepth: 0 },
      { type: 'message', id: 'a', parentId: null, message: { role: 'user', content: 'hi' } },
      { type: 'message', id: 'b', parentId: 'a', message: { role: 'assistant', content: [] } },
    ];
    expect(deepSeekHarnessFormat.detect({ records: headerOnly, head: '' })).toBe(0);
    // Copilot CLI's dotted events with ids and ISO timestamps.
    const copilot = [
      { type: 'session.start', id: 'e1', timestamp: '2030-01-01T00:00:00.000Z', data: { sessionId: 's' } },
      { type: 'user.message', id: 'e2', timestamp: '2030-01-01T00:00:01.000Z', data: { content: 'hi' } },
    ];
    expect(deepSeekHarnessFormat.detect({ records: copilot, head: '' })).toBe(0);
  });

  it('reads the messages the harness derives: system first, calls with ids, results paired by id', () => {
    const s = read(transcript());
    expect(s.problems).toEqual([]);
    expect(s.info).toEqual({ id: 'ds-1', cwd: '/w', version: 0, startedAt: T0 - 1000 });
    const view = activeMessages(s);
    expect(view.map((m) => m.role)).toEqual([
      'system',
      'user',
      'assistant',
      'tool',
      'tool',
      'assistant',
      'user',
      'user',
      'assistant',
    ]);
    expect(textOf(view[1])).toBe('list the files');
    expect(view[1]!.synthetic).toBeUndefined();
    // The first user message is logged before the header: its record stays in place, its message follows the system.
    const userRecord = s.entries.find((e) => e.sourceType === 'user/message' && e.raw)!;
    expect(userRecord.kind).toBe('event');
    expect(s.entries.find((e) => e.message === view[1])!.index).toBeGreaterThan(
      s.entries.find((e) => e.message === view[0])!.index,
    );

    // A response with calls: its reasoning goes back as thinking, then the calls with their ids and parsed arguments.
    expect(view[2]!.parts).toEqual([
      { type: 'thinking', text: 'I will list.' },
      { type: 'tool-call', id: 'call_1', name: 'bash', arguments: { command: 'ls' } },
      { type: 'tool-call', id: 'call_2', name: 'read', arguments: { path: '/w/missing' } },
    ]);
    const results = partsOf(view, 'tool-result');
    expect(results.map((r) => [r.callId, r.toolName, r.isError])).toEqual([
      ['call_1', 'bash', false],
      ['call_2', 'read', true],
    ]);
    // An empty result is sent as "(no output)"; text blocks are joined as the wire joins them.
    expect(results.map((r) => (r.content[0] as { text: string }).text)).toEqual(['(no output)', 'Error: no such file']);

    // A response without calls: its reasoning is not sent back; its text blocks are one text.
    expect(view[5]!.parts).toEqual([{ type: 'text', text: 'The folder is empty.' }]);
    // The plugin's notice is harness text.
    expect(textOf(view[7])).toContain('sandbox mode changed');
    expect(view[7]!.synthetic).toBe(true);
    expect(checkInvariants(activeView(s))).toEqual([]);
  });

  it('records the system prompt and tools of the request header, and applies its deltas', () => {
    const s = read(transcript());
    const systems = messages(s).filter((m) => m.role === 'system');
    // One system message: the model sees the prompt in force, not every version of it.
    expect(systems).toHaveLength(1);
    expect(textOf(systems[0])).toBe(
      'You are a test agent.\n\nWork in /w.\n\nBash runs under the "workspace-write" sandbox.',
    );
    // The delta's tools: `read` removed, `write` appended.
    expect(s.extra?.request).toEqual({ model: 'deepseek-test-2', tools: [BASH, WRITE] });
    // Its config: a model change, and the next response is that model's.
    const change = s.entries.find((e) => e.kind === 'model-change');
    expect(change?.sourceType).toBe('request/header-delta');
    expect(change?.model).toEqual({ id: 'deepseek-test-2' });
    expect(
      messages(s)
        .filter((m) => m.role === 'assistant')
        .map((m) => m.model),
    ).toEqual(['deepseek-test', 'deepseek-test', 'deepseek-test-2']);

    // Before the delta the prompt was the snapshot's (a log that ends there).
    const upToTurn1 = transcript().filter((r) => typeof r.seq !== 'number' || (r.seq as number) < 27);
    const before = read(upToTurn1);
    expect(textOf(messages(before).find((m) => m.role === 'system'))).toBe(SYSTEM);
    expect(before.extra?.request).toEqual({ model: 'deepseek-test', tools: [BASH, READ] });
  });

  it('normalizes usage: input without the cache reads, output with the reasoning', () => {
    const s = read(transcript());
    expect(messages(s).flatMap((m) => (m.usage ? [m.usage] : []))).toEqual([
      { input: 900, output: 40, cacheRead: 0, cacheWrite: 0, reasoning: 10 },
      { input: 60, output: 12, cacheRead: 896, cacheWrite: 0, reasoning: 4 },
      { input: 1100, output: 3, cacheRead: 0, cacheWrite: 0 },
    ]);
    // Each response is one request for the replay.
    expect(replaySession(s).map((r) => r.reported)).toEqual([900, 956, 1100]);
  });

  it('keeps the streaming chunks as events: the assembled assistant/message is the response, once', () => {
    const s = read(transcript());
    const chunks = s.entries.filter((e) => e.sourceType === 'assistant/chunk');
    expect(chunks).toHaveLength(8);
    expect(chunks.every((e) => e.kind === 'event' && !e.message && !e.usage)).toBe(true);
    expect(messages(s).filter((m) => m.role === 'assistant')).toHaveLength(3);
    expect(partsOf(messages(s), 'tool-call')).toHaveLength(2);
    // Approval, sandbox and tool/call records are not model context.
    for (const type of ['approval/asked', 'approval/decided', 'bash/sandbox-mode', 'tool/call'])
      expect(s.entries.filter((e) => e.sourceType === type).every((e) => e.kind === 'event' && !e.message)).toBe(true);
  });

  it('reports malformed lines and records with their line and what was expected', () => {
    const records = transcript();
    const lines = jsonl(records).split('\n');
    lines[5] = '{"type":"assistant/chunk","seq":'; // line 6: cut short
    lines.splice(8, 0, JSON.stringify({ type: 'tool/result', time: T0, data: {} })); // line 9: no seq
    const bad = [
      ev('tool/result', { turn: 1, step: 2, callId: 'call_9', content: [text('?')], isError: false }, append),
      ev('assistant/message', { turn: 1, step: 3, content: 'not blocks' }, append),
    ].map((r) => JSON.stringify(r));
    const s = parseSession(`${[...lines.slice(0, -1), ...bad].join('\n')}\n`, { format: 'deepseek-harness' });
    const n = lines.length - 1; // the bad records are lines n + 1 and n + 2
    expect(s.problems.map((p) => p.line)).toEqual([6, 9, n + 1, n + 2]);
    expect(s.problems[0]!.kind).toBe('truncated-line');
    expect(s.problems[1]!.message).toMatch(/^line 9: expected a DeepSeek harness event \{type, seq, time, data/);
    expect(s.problems[2]!.message).toMatch(
      new RegExp(`^line ${n + 1}: tool/result for call "call_9" .*no earlier assistant message made that call`),
    );
    expect(s.problems[3]!.message).toMatch(new RegExp(`^line ${n + 2}: assistant/message without a "content" list`));
    // Reading went on: the same messages, and the bad result is no message.
    expect(activeMessages(s)).toHaveLength(9);
    expect(checkInvariants(activeView(s))).toEqual([]);
    // A delta before any snapshot.
    seq = 0;
    const orphan = read([ev('request/header-delta', { system: { keepStart: 0, keepEnd: 0, insert: ['x'] } })]);
    expect(orphan.problems[0]!.message).toMatch(/^line 1: request\/header-delta before any request\/header snapshot/);
  });

  it('reads a compaction (a message replacing the head of the history) as a marker the system prompt survives', () => {
    const records = transcript();
    // The compaction plugin's summary replaces the surface from the first user message to the second response.
    const firstUser = records.find((r) => r.type === 'user/message')!.seq as number;
    const secondResponse = records.filter((r) => r.type === 'assistant/message')[1]!.seq as number;
    const tail = records.splice(records.length - 1);
    seq = records.length - 1;
    records.push(
      ev('compact/start', { turn: 2 }),
      ev(
        'user/message',
        { content: [text('<summary>Listed /w: empty.</summary>')], source: { kind: 'plugin', plugin: 'compact' } },
        { surfaceOp: { op: 'replace', start: firstUser, end: secondResponse }, sourceEventSeqs: [] },
      ),
      ev('compact/end', { turn: 2 }),
      ...tail.map((r) => ({ ...r, seq: seq++ })),
    );
    const s = read(records);
    expect(s.problems).toEqual([]);
    const marker = s.entries.find((e) => e.kind === 'compaction')!;
    expect(marker.compaction).toMatchObject({ number: 1, summary: '<summary>Listed /w: empty.</summary>' });
    const view = activeMessages(s);
    expect(view.map((m) => m.role)).toEqual(['user', 'user', 'user', 'assistant', 'system']);
    expect(view[0]!.parts[0]!.type).toBe('compaction');
    expect(textOf(view[1])).toBe('now write it');
    expect(textOf(view[4])).toContain('"workspace-write" sandbox');
    expect(messages(s).filter((m) => m.role === 'system')).toHaveLength(2);
  });

  it('wraps context and steering messages as the harness renders them', () => {
    const records = transcript();
    const end = records.pop()!;
    seq = records.length - 1;
    records.push(
      ev(
        'context/message',
        { content: [text('AGENTS.md says hi')], source: { kind: 'plugin', plugin: 'agents' } },
        append,
      ),
      ev('context/message', { content: [text('raw note')], source: { kind: 'plugin' }, envelope: 'raw' }, append),
      ev('steering/message', { turn: 2, content: [text('stop')], source: { kind: 'user' } }, append),
      { ...end, seq: seq++ },
    );
    const view = activeMessages(read(records));
    expect(view.slice(-3).map((m) => [textOf(m), m.synthetic])).toEqual([
      ['<context source="plugin">AGENTS.md says hi</context>', true],
      ['raw note', true],
      ['<steering source="user">stop</steering>', undefined],
    ]);
  });

  it("reads later builds' message wrappers and packed chunk rows", () => {
    seq = 0;
    const s = read([
      { type: 'session', version: 0, id: 'ds-2', createdAt: T0, cwd: '/w', delegationDepth: 0 },
      ev('turn/start', { turn: 1 }),
      ev('step/start', { turn: 1, step: 1 }),
      ev('user/message', { content: [text('run it')], source: { kind: 'user' }, role: 'user', id: 'm1' }, append),
      ev('request/header', {
        header: {
          config: { provider: 'deepseek-official', model: 'deepseek-v4-flash' },
          system: SYSTEM,
          tools: [BASH],
        },
        reason: 'initial',
      }),
      { type: 'text-chunks', seq0: 5, time0: T0, data: { turn: 1, step: 1, index: 0, dt: [0], texts: ['x'] } },
      {
        ...ev(
          'assistant/message',
          {
            turn: 1,
            step: 1,
            message: {
              role: 'assistant',
              content: [{ type: 'tool-call', id: 'c1', name: 'bash', arguments: '{}' }],
              source: { kind: 'model', provider: 'deepseek-official', model: 'deepseek-v4-flash' },
            },
            usage: { inputTokens: 10, outputTokens: 5, cacheReadTokens: 2800 },
          },
          append,
        ),
        seq: 6,
      },
      ev(
        'tool/result',
        {
          turn: 1,
          step: 1,
          message: {
            role: 'user',
            source: { kind: 'tool', callId: 'c1' },
            content: [{ type: 'tool-result', toolCallId: 'c1', content: [text('ok')], isError: false }],
          },
        },
        append,
      ),
    ]);
    expect(s.problems).toEqual([]);
    const view = activeMessages(s);
    expect(view.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'tool']);
    expect(view[2]).toMatchObject({ model: 'deepseek-v4-flash', provider: 'deepseek-official' });
    expect((view[3]!.parts[0] as ToolResultPart).content).toEqual([text('ok')]);
  });
});

// ---------------------------------------------------------------------------------------------------------------------
// The real sample

const SAMPLE = corpusFile('other', 'HarleyCoops__deepseek-Entire.io__live-mode-switching-2026-07-07.session.jsonl');

describe.skipIf(!existsSync(SAMPLE))(
  existsSync(SAMPLE) ? 'deepseek-harness corpus' : `deepseek-harness corpus (skipped: no sample in ${CORPUS_DIR})`,
  () => {
    it('reads the live-mode-switching session as the harness folds it', async () => {
      const raw = readFileSync(SAMPLE, 'utf8')
        .split('\n')
        .filter((l) => l.trim() !== '')
        .map((l) => JSON.parse(l) as { type: string; data?: Record<string, unknown> });
      const s = await readSession(SAMPLE);
      expect(s.format).toBe('deepseek-harness');
      expect(s.problems).toEqual([]);
      expect(s.info).toMatchObject({ id: 'ed16a7e7-a76f-459f-b889-d4c424d66ef6', version: 0 });
      // Every record is an entry, plus the first user message placed after the system prompt.
      expect(raw).toHaveLength(2212);
      expect(s.entries).toHaveLength(2213);

      const view = activeMessages(s);
      const count = (role: string) => view.filter((m) => m.role === role).length;
      expect([count('system'), count('user'), count('assistant'), count('tool')]).toEqual([1, 13, 21, 12]);
      expect(view[0]!.role).toBe('system');
      // Four of the user messages are the approval and bash plugins announcing a mode change.
      expect(view.filter((m) => m.role === 'user' && m.synthetic)).toHaveLength(4);
      // The 2,074 chunks are no messages.
      expect(raw.filter((r) => r.type === 'assistant/chunk')).toHaveLength(2074);
      expect(s.entries.filter((e) => e.sourceType === 'assistant/chunk' && e.message)).toHaveLength(0);

      // All 12 calls answered, by id; the three rejected escalations are errors.
      const calls = partsOf(view, 'tool-call');
      const results = partsOf(view, 'tool-result');
      expect(calls).toHaveLength(12);
      expect(results.map((r) => r.callId)).toEqual(calls.map((c) => c.id));
      expect(results.every((r) => r.toolName === 'bash')).toBe(true);
      expect(results.filter((r) => r.isError)).toHaveLength(3);
      expect(checkInvariants(activeView(s))).toEqual([]);
      // Reasoning goes back only beside calls: on the 12 responses that made one.
      expect(view.filter((m) => m.parts.some((p) => p.type === 'thinking'))).toHaveLength(12);

      // The prompt after the four header deltas, and the three tools.
      const system = textOf(view[0]);
      expect(system).toContain('Bash commands run under the "danger-full-access" file sandbox.');
      expect(system).not.toContain('read-only');
      expect(system).not.toContain('Approval prompts are disabled');
      const request = s.extra?.request as { model: string; tools: { name: string }[] };
      expect(request.model).toBe('deepseek-v4-flash');
      expect(request.tools.map((t) => t.name)).toEqual(['bash', 'bash_output', 'bash_kill']);

      // Usage on each of the 21 responses; the first and the one after the sandbox switch to danger-full-access.
      const usages = view.flatMap((m) => (m.usage ? [m.usage] : []));
      expect(usages).toHaveLength(21);
      expect(usages[0]).toEqual({ input: 1133, output: 50, cacheRead: 0, cacheWrite: 0, reasoning: 16 });
      expect(usages[1]).toEqual({ input: 150, output: 129, cacheRead: 1024, cacheWrite: 0, reasoning: 50 });
      expect(usages.at(-2)).toEqual({ input: 3757, output: 123, cacheRead: 0, cacheWrite: 0, reasoning: 24 });
      expect(replaySession(s)).toHaveLength(21);
    });
  },
);
