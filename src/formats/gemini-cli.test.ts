import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { checkInvariants } from '../compaction/invariants.js';
import { activeView } from '../model/view.js';
import type { Message, Part, Session } from '../model/types.js';
import { detectFormat, sampleSource } from './detect.js';
import { geminiCliFormat } from './gemini-cli.js';
import { parseSession, readSession } from './read.js';

// ---------------------------------------------------------------------------------------------------------------------
// Synthetic fixtures (invented values, in the shape of Gemini CLI's ConversationRecord)

const T0 = Date.parse('2030-01-02T03:04:05.000Z');
const at = (s: number) => new Date(T0 + s * 1000).toISOString();

function conversation(messages: unknown[], extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    sessionId: 'sess-1234-abcd',
    projectHash: 'f'.repeat(64),
    startTime: at(0),
    lastUpdated: at(60),
    messages,
    ...extra,
  };
}

/** A user prompt, a response that calls two tools (one fails), a thought-only response, the final answer, UI notes. */
function wholeSession(): Record<string, unknown> {
  return conversation(
    [
      { id: 'm1', timestamp: at(1), type: 'user', content: [{ text: 'List the files.' }], displayContent: 'List' },
      {
        id: 'm2',
        timestamp: at(2),
        type: 'gemini',
        content: 'Looking.',
        model: 'gemini-2.5-pro',
        thoughts: [{ subject: 'Plan', description: 'Call ls.', timestamp: at(2) }],
        tokens: { input: 1000, output: 20, cached: 600, thoughts: 30, tool: 0, total: 1050 },
        toolCalls: [
          {
            id: 'call-ls',
            name: 'list_directory',
            args: { path: '.' },
            status: 'success',
            timestamp: at(3),
            result: [
              { functionResponse: { id: 'call-ls', name: 'list_directory', response: { output: 'a.ts\nb.ts' } } },
            ],
            resultDisplay: 'Listed 2 item(s).',
            displayName: 'ReadFolder',
          },
          {
            id: 'call-cat',
            name: 'read_file',
            args: { absolute_path: '/w/c.ts' },
            status: 'error',
            timestamp: at(3),
            result: [
              {
                functionResponse: { id: 'call-cat', name: 'read_file', response: { error: 'File not found: /w/c.ts' } },
              },
            ],
          },
        ],
      },
      { id: 'm3', timestamp: at(4), type: 'info', content: 'Switched to fallback model.' },
      { id: 'm4', timestamp: at(5), type: 'warning', content: 'Approaching the context limit.' },
      { id: 'm5', timestamp: at(6), type: 'error', content: 'Quota exceeded.' },
      {
        id: 'm6',
        timestamp: at(7),
        type: 'gemini',
        content: 'There are two files: a.ts and b.ts.',
        model: 'gemini-2.5-pro',
        thoughts: [],
        tokens: { input: 1200, output: 12, cached: 1000, thoughts: 0, tool: 0, total: 1212 },
      },
    ],
    { summary: 'List project files' },
  );
}

function parse(doc: unknown): Session {
  return parseSession(JSON.stringify(doc, null, 2), { format: 'gemini-cli', source: 'session.json' });
}
function messages(s: Session): Message[] {
  return s.entries.flatMap((e) => (e.message ? [e.message] : []));
}
function parts<T extends Part['type']>(s: Session, type: T): Extract<Part, { type: T }>[] {
  return messages(s).flatMap((m) => m.parts.filter((p): p is Extract<Part, { type: T }> => p.type === type));
}

describe('gemini-cli: detection', () => {
  it('detects a Gemini CLI session, pretty-printed as Gemini CLI writes it', () => {
    const detected = detectFormat(sampleSource(JSON.stringify(wholeSession(), null, 2), true));
    expect(detected).toMatchObject({ kind: 'supported', confidence: 0.95 });
    expect(detected.kind === 'supported' && detected.format.id).toBe('gemini-cli');
    expect(geminiCliFormat.detect({ head: '', document: wholeSession() })).toBe(0.95);
  });

  it('scores other transcripts 0', () => {
    const pi = { records: [{ type: 'session', version: 3, id: 's', timestamp: at(0), cwd: '/w' }] };
    const claudeCode = {
      records: [
        { type: 'user', sessionId: 's', uuid: 'u', message: { role: 'user', content: 'hi' }, timestamp: at(0) },
      ],
    };
    const sweAgent = { document: { history: [{ role: 'user', content: 'x' }], trajectory: [], info: {} } };
    const anthropic = { document: { model: 'claude-x', messages: [{ role: 'user', content: 'hi' }] } };
    for (const input of [pi, claudeCode, sweAgent, anthropic])
      expect(geminiCliFormat.detect({ head: '', ...input })).toBe(0);
    // The first record of the JSONL files newer versions write is metadata without messages: not this format.
    expect(geminiCliFormat.detect({ head: '', document: { sessionId: 's', projectHash: 'h' } })).toBe(0);
  });
});

describe('gemini-cli: reading', () => {
  const s = parse(wholeSession());

  it('reads the session info', () => {
    expect(s.format).toBe('gemini-cli');
    expect(s.info).toEqual({ id: 'sess-1234-abcd', startedAt: T0, title: 'List project files' });
    expect(s.extra).toEqual({ projectHash: 'f'.repeat(64), lastUpdated: at(60) });
    expect(s.problems).toEqual([]);
  });

  it('reads user and model text, leaving thoughts out of the model context', () => {
    const ms = messages(s);
    expect(ms.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
    expect(ms[0]!.parts).toEqual([{ type: 'text', text: 'List the files.' }]);
    expect(ms[1]!.parts[0]).toEqual({ type: 'text', text: 'Looking.' });
    expect(ms[1]!.model).toBe('gemini-2.5-pro');
    expect(ms[3]!.parts).toEqual([{ type: 'text', text: 'There are two files: a.ts and b.ts.' }]);
    expect(parts(s, 'thinking')).toEqual([]);
    // The thoughts are still in the record.
    expect((s.entries[1]!.raw as { thoughts: unknown[] }).thoughts).toHaveLength(1);
  });

  it('pairs each tool call with its result, from the functionResponse sent back', () => {
    expect(parts(s, 'tool-call')).toEqual([
      { type: 'tool-call', id: 'call-ls', name: 'list_directory', arguments: { path: '.' } },
      { type: 'tool-call', id: 'call-cat', name: 'read_file', arguments: { absolute_path: '/w/c.ts' } },
    ]);
    expect(parts(s, 'tool-result')).toEqual([
      {
        type: 'tool-result',
        callId: 'call-ls',
        toolName: 'list_directory',
        content: [{ type: 'text', text: 'a.ts\nb.ts' }],
        isError: false,
      },
      {
        type: 'tool-result',
        callId: 'call-cat',
        toolName: 'read_file',
        content: [{ type: 'text', text: 'File not found: /w/c.ts' }],
        isError: true,
      },
    ]);
    // `resultDisplay` is what the UI showed, not what the model got.
    expect(JSON.stringify(messages(s))).not.toContain('Listed 2 item(s).');
    const results = s.entries[2]!;
    expect(results).toMatchObject({ fromSameRecord: true, timestamp: T0 + 3000, sourceType: 'gemini/toolCalls' });
    expect(checkInvariants(activeView(s))).toEqual([]);
  });

  it('keeps info, warning and error records out of the model context', () => {
    const ui = s.entries.filter((e) => ['info', 'warning', 'error'].includes(e.sourceType ?? ''));
    expect(ui.map((e) => [e.kind, e.id, e.message])).toEqual([
      ['event', 'm3', undefined],
      ['event', 'm4', undefined],
      ['event', 'm5', undefined],
    ]);
    expect(JSON.stringify(messages(s))).not.toMatch(/fallback|context limit|Quota/);
  });

  it('normalizes usage: prompt tokens include the cached ones, output the thoughts', () => {
    const [first, , , last] = messages(s);
    expect(first!.usage).toBeUndefined();
    // input 1000 of which 600 cached; output 20 candidates + 30 thoughts.
    expect(messages(s)[1]!.usage).toEqual({ input: 400, output: 50, cacheRead: 600, cacheWrite: 0, reasoning: 30 });
    expect(last!.usage).toEqual({ input: 200, output: 12, cacheRead: 1000, cacheWrite: 0 });
    expect(messages(s)[1]!.responseId).toBe('m2');
  });
});

describe('gemini-cli: older and odd shapes', () => {
  it('reads early string content, string results and results with sibling media', () => {
    const s = parse(
      conversation([
        { id: 'u', timestamp: at(1), type: 'user', content: 'Describe the image.' },
        {
          id: 'g',
          timestamp: at(2),
          type: 'gemini',
          content: '',
          toolCalls: [
            { id: 'c1', name: 'run_shell_command', args: { command: 'ls' }, status: 'success', result: 'x.png' },
            {
              id: 'c2',
              name: 'read_file',
              args: { absolute_path: '/w/x.png' },
              status: 'success',
              result: [
                {
                  functionResponse: {
                    id: 'c2',
                    name: 'read_file',
                    response: { output: 'Binary content of type image/png was processed.' },
                  },
                },
                { inlineData: { mimeType: 'image/png', data: 'iVBORw0KGgo=' } },
              ],
            },
            // Never answered: no result was sent.
            { id: 'c3', name: 'glob', args: { pattern: '*' }, status: 'cancelled', result: null },
          ],
        },
      ]),
    );
    expect(messages(s)[0]!.parts).toEqual([{ type: 'text', text: 'Describe the image.' }]);
    expect(messages(s)[1]!.parts.map((p) => p.type)).toEqual(['tool-call', 'tool-call', 'tool-call']);
    const results = parts(s, 'tool-result');
    expect(results.map((r) => r.callId)).toEqual(['c1', 'c2']);
    expect(results[0]!.content).toEqual([{ type: 'text', text: 'x.png' }]);
    expect(results[1]!.content).toEqual([
      { type: 'text', text: 'Binary content of type image/png was processed.' },
      { type: 'image', mediaType: 'image/png', data: 'iVBORw0KGgo=', byteSize: 8 },
    ]);
  });

  it('reads a thought-only response as an event carrying its usage', () => {
    const s = parse(
      conversation([
        { id: 'u', timestamp: at(1), type: 'user', content: [{ text: 'Hi' }] },
        {
          id: 'g',
          timestamp: at(2),
          type: 'gemini',
          content: '',
          thoughts: [{ subject: 'Hmm', description: '…', timestamp: at(2) }],
          tokens: { input: 50, output: 0, cached: 0, thoughts: 10, total: 60 },
        },
      ]),
    );
    expect(messages(s).map((m) => m.role)).toEqual(['user']);
    expect(s.entries[1]).toMatchObject({
      kind: 'event',
      sourceType: 'gemini',
      usage: { input: 50, output: 10, cacheRead: 0, cacheWrite: 0, reasoning: 10 },
    });
  });

  it('reports a malformed record as a problem naming its index and what was expected', () => {
    const s = parse(
      conversation([
        { id: 'u', timestamp: at(1), type: 'user', content: 'Hi' },
        'not a record',
        { id: 'x', timestamp: at(2), type: 'tool', content: 'Hi' },
        { id: 'g', timestamp: at(3), type: 'gemini', content: 'Hello', toolCalls: [{ id: 'c', args: {} }] },
        { id: 'h', timestamp: at(4), type: 'gemini', content: 'Again', toolCalls: 'nope' },
      ]),
    );
    expect(s.problems.map((p) => [p.line, p.kind])).toEqual([
      [2, 'not-an-object'],
      [3, 'unknown-entry-type'],
      [4, 'invalid-entry'],
      [5, 'invalid-entry'],
    ]);
    expect(s.problems[0]!.message).toMatch(/messages\[1\] is not an object \(expected a message record/);
    expect(s.problems[1]!.message).toMatch(/messages\[2\] has unknown type "tool" \(expected "user", "gemini"/);
    expect(s.problems[2]!.message).toMatch(/messages\[3\] toolCalls\[0\] is not a tool call record \(expected/);
    expect(s.problems[3]!.message).toMatch(/messages\[4\] has "toolCalls" that is not an array/);
    expect(messages(s).map((m) => m.parts)).toEqual([
      [{ type: 'text', text: 'Hi' }],
      [{ type: 'text', text: 'Hello' }],
      [{ type: 'text', text: 'Again' }],
    ]);
    expect(s.entries.map((e) => e.kind)).toEqual(['message', 'unknown', 'unknown', 'message', 'message']);
  });

  it('refuses a document that is not a session', () => {
    expect(() => parse({ sessionId: 's' })).toThrow(
      /not a Gemini CLI session: expected a JSON object with a "messages"/,
    );
  });
});

describe('gemini-cli: session logs (.jsonl, from April 2026)', () => {
  const meta = {
    sessionId: 'sess-log',
    projectHash: 'e'.repeat(64),
    startTime: at(0),
    lastUpdated: at(0),
    kind: 'main',
  };
  const user = (id: string, text: string, t: number) => ({ id, timestamp: at(t), type: 'user', content: [{ text }] });
  const answer = (id: string, text: string, t: number, extra: Record<string, unknown> = {}) => ({
    id,
    timestamp: at(t),
    type: 'gemini',
    content: text,
    model: 'gemini-3-pro-preview',
    ...extra,
  });
  const call = (result?: unknown) => ({
    id: 'call-1',
    name: 'run_shell_command',
    args: { command: 'npm test' },
    status: result === undefined ? 'executing' : 'success',
    timestamp: at(3),
    ...(result === undefined ? {} : { result }),
  });
  const log = (records: unknown[]) => `${records.map((r) => JSON.stringify(r)).join('\n')}\n`;
  const parseLog = (text: string) => parseSession(text, { source: 'session.jsonl' });

  it('folds updates as Gemini CLI does: a message written again replaces itself in place, $set merges metadata', () => {
    const done = [{ functionResponse: { id: 'call-1', name: 'run_shell_command', response: { output: '3 passed' } } }];
    const s = parseLog(
      log([
        meta,
        user('u1', 'Run the tests.', 1),
        answer('g1', 'Running them.', 2, { toolCalls: [call()] }),
        // The same response, written again once its call finished and its usage arrived.
        answer('g1', 'Running them.', 2, {
          toolCalls: [call(done)],
          tokens: { input: 900, output: 10, cached: 0, thoughts: 0, tool: 0, total: 910 },
        }),
        answer('g2', 'All 3 pass.', 4),
        { $set: { summary: 'Run the test suite', lastUpdated: at(5) } },
      ]),
    );
    expect(s.format).toBe('gemini-cli');
    expect(s.info).toEqual({ id: 'sess-log', startedAt: T0, title: 'Run the test suite' });
    expect(s.problems).toEqual([]);
    expect(messages(s).map((m) => [m.role, m.parts.map((p) => p.type).join(',')])).toEqual([
      ['user', 'text'],
      ['assistant', 'text,tool-call'],
      ['tool', 'tool-result'],
      ['assistant', 'text'],
    ]);
    expect(parts(s, 'tool-result')[0]).toMatchObject({
      callId: 'call-1',
      content: [{ type: 'text', text: '3 passed' }],
    });
    expect(messages(s)[1]!.usage).toEqual({ input: 900, output: 10, cacheRead: 0, cacheWrite: 0 });
    expect(checkInvariants(activeView(s))).toEqual([]);
  });

  it('a rewind drops its message and every later one; a $set of messages replaces them all', () => {
    const rewound = parseLog(
      log([
        meta,
        user('u1', 'First try.', 1),
        answer('g1', 'Answer one.', 2),
        user('u2', 'No, the other file.', 3),
        answer('g2', 'Answer two.', 4),
        { $rewindTo: 'u2' },
        user('u3', 'Use b.ts instead.', 5),
      ]),
    );
    expect(messages(rewound).map((m) => (m.parts[0] as { text: string }).text)).toEqual([
      'First try.',
      'Answer one.',
      'Use b.ts instead.',
    ]);
    const checkpoint = parseLog(
      log([
        meta,
        user('u1', 'Old.', 1),
        { $set: { messages: [user('u9', 'Checkpointed.', 2)] } },
        answer('g9', 'Ok.', 3),
      ]),
    );
    expect(messages(checkpoint).map((m) => (m.parts[0] as { text: string }).text)).toEqual(['Checkpointed.', 'Ok.']);
  });

  it('is detected from its metadata line, or from its records when the metadata line is missing', () => {
    const text = log([meta, user('u1', 'Hi.', 1), answer('g1', 'Hello.', 2)]);
    const detected = detectFormat(sampleSource(text, true));
    expect(detected.kind === 'supported' && detected.format.id).toBe('gemini-cli');
    expect(detected).toMatchObject({ confidence: 0.95 });
    const headless = detectFormat(sampleSource(log([user('u1', 'Hi.', 1), answer('g1', 'Hello.', 2)]), true));
    expect(headless.kind === 'supported' && headless.format.id).toBe('gemini-cli');
    // A log that holds only its metadata so far: an empty session, not an error.
    expect(parseLog(log([meta])).entries).toEqual([]);
    // Claude Code's user records (type "user", a uuid and a message) are not Gemini CLI's.
    const claude = { type: 'user', uuid: 'u', sessionId: 's', message: { role: 'user', content: 'hi' } };
    expect(geminiCliFormat.detect({ head: '', records: [claude, claude] })).toBe(0);
  });

  it('a line that is not JSON or not a record of the log is a problem naming its line; the rest is read', () => {
    const s = parseLog(
      `${JSON.stringify(meta)}\n${JSON.stringify(user('u1', 'Hi.', 1))}\n{"id": "g1", "type": "gem\n${JSON.stringify({ note: 'x' })}\n${JSON.stringify({ id: 'x1', timestamp: at(2), type: 'tool' })}\n`,
    );
    expect(s.problems.map((p) => [p.line, p.kind])).toEqual([
      [3, 'invalid-json'],
      [4, 'unknown-entry-type'],
      [5, 'unknown-entry-type'],
    ]);
    expect(s.problems[0]!.message).toBe(
      'session.jsonl: line 3 is not valid JSON (expected one record of a Gemini CLI session log); skipped, as Gemini CLI skips it',
    );
    expect(s.problems[2]!.message).toMatch(/^session\.jsonl: line 5 \(a message record\) has unknown type "tool"/);
    expect(messages(s)).toHaveLength(1);
  });

  it('a file of neither shape is refused, naming both', () => {
    expect(() => parseSession('not json\nat all\n', { format: 'gemini-cli', source: 'x.jsonl' })).toThrow(
      /x\.jsonl: not a Gemini CLI session: expected one JSON object with a "messages" array, or a session log/,
    );
  });
});

describe('gemini-cli: a saved chat (Gemini API Content[], /chat save checkpoints)', () => {
  const checkpoint = [
    { role: 'user', parts: [{ text: 'Which files are there?' }] },
    {
      role: 'model',
      parts: [
        { text: 'Let me look.', thought: true },
        { text: 'Listing them.' },
        { functionCall: { name: 'list_directory', args: { path: '.' } } },
        { functionCall: { name: 'read_file', args: { absolute_path: '/w/a.ts' } } },
      ],
    },
    {
      role: 'user',
      parts: [
        { functionResponse: { name: 'list_directory', response: { output: 'a.ts' } } },
        { functionResponse: { name: 'read_file', response: { error: 'File not found: /w/a.ts' } } },
      ],
    },
    { role: 'model', parts: [{ text: 'Only a.ts, and it cannot be read.' }] },
    'stray',
  ];

  it('is detected, and read as what GeminiChat sends: thoughts out, each response paired with its call', () => {
    const detected = detectFormat(sampleSource(JSON.stringify(checkpoint.slice(0, 4), null, 2), true));
    expect(detected.kind === 'supported' && detected.format.id).toBe('gemini-cli');
    const s = parseSession(JSON.stringify(checkpoint), { format: 'gemini-cli', source: 'checkpoint-x.json' });
    expect(messages(s).map((m) => [m.role, m.parts.map((p) => p.type).join(',')])).toEqual([
      ['user', 'text'],
      ['assistant', 'text,tool-call,tool-call'],
      ['tool', 'tool-result,tool-result'],
      ['assistant', 'text'],
    ]);
    const calls = parts(s, 'tool-call');
    expect(parts(s, 'tool-result').map((r) => [r.callId, r.toolName, r.isError])).toEqual([
      [calls[0]!.id, 'list_directory', false],
      [calls[1]!.id, 'read_file', true],
    ]);
    expect(checkInvariants(activeView(s))).toEqual([]);
    expect(s.problems.map((p) => p.message)).toEqual([
      'checkpoint-x.json: [4] is not a Gemini Content (expected {"role": "user" or "model", "parts": [...]}); kept as is',
    ]);
  });

  it('is not claimed for other arrays of messages', () => {
    const aiSdk = [{ role: 'user', content: 'hi' }];
    const anthropic = [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }];
    for (const document of [aiSdk, anthropic, []]) expect(geminiCliFormat.detect({ head: '', document })).toBe(0);
  });
});

describe('gemini-cli: readSession', () => {
  const dir = mkdtempSync(join(tmpdir(), 'abridge-gemini-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('reads a session file, detecting its format', async () => {
    const file = join(dir, 'session-2030-01-02T03-04-sess1234.json');
    writeFileSync(file, JSON.stringify(wholeSession(), null, 2));
    const s = await readSession(file);
    expect(s.format).toBe('gemini-cli');
    expect(s.entries).toHaveLength(7);
    s.entries.forEach((e, i) => expect(e.index).toBe(i));
    expect(messages(s).map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
    expect(parts(s, 'tool-result').map((r) => [r.callId, r.isError])).toEqual([
      ['call-ls', false],
      ['call-cat', true],
    ]);
  });
});
