import { basename } from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Message, TextPart } from '../model/types.js';
import { startLoopback, type Loopback } from '../../test/support/loopback.js';
import { conversationToolCalls, sessionOf, expectInvalidInputs } from '../../test/support/sessions.js';
import { corpusAvailable, corpusFile, corpusFiles } from '../../test/support/corpus.js';
import {
  anthropicFormat,
  anthropicRequestProblems,
  anthropicBodyOfSession,
  type AnthropicRequest,
} from './anthropic.js';
import { parseSession, readSession } from './read.js';
import { writeSession } from './write.js';
import { CLINE_SYSTEM_PROMPT_TOKENS } from '../defaults.js';
import { harnessPrefixTokens } from '../tokens/defaults.js';

// ---------------------------------------------------------------------------------------------------------------------
// Helpers: structural validity, sessions built from canonical messages, a loopback Messages API

/** Runtime structural checks beyond `anthropicRequestProblems`: alternation, pairing and no empty content, spelled out. */
function expectValidAnthropic(body: AnthropicRequest | Record<string, unknown>): void {
  expect(anthropicRequestProblems(body)).toEqual([]);
  const messages = body.messages as { role: string; content: string | Record<string, unknown>[] }[];
  expect(messages.length).toBeGreaterThan(0);
  expect(messages[0]!.role).toBe('user');
  messages.forEach((m, i) => {
    if (i > 0) expect(m.role).not.toBe(messages[i - 1]!.role);
    if (Array.isArray(m.content)) expect(m.content.length).toBeGreaterThan(0);
    const uses = Array.isArray(m.content) ? m.content.filter((b) => b.type === 'tool_use').map((b) => b.id) : [];
    if (uses.length) {
      const next = messages[i + 1]!;
      // Each call answered at the start of the next message, in the order the results were written (the API asks for
      // no order; Claude Code sends them as written).
      const lead = (next.content as Record<string, unknown>[])
        .slice(0, uses.length)
        .map((b) => (b.type === 'tool_result' ? b.tool_use_id : undefined));
      expect([...lead].sort()).toEqual([...uses].sort());
    }
  });
}

const text = (t: string): TextPart => ({ type: 'text', text: t });
const parse = (s: string) =>
  JSON.parse(s) as Record<string, unknown> & { messages: { role: string; content: Record<string, unknown>[] }[] };
const read = (doc: unknown, source = 'req.json') => parseSession(JSON.stringify(doc), { format: 'anthropic', source });

let loopback: Loopback;
let baseURL = '';
const received: unknown[] = [];

beforeAll(async () => {
  loopback = await startLoopback(({ method, url, body }) => {
    if (method !== 'POST' || !url.startsWith('/v1/messages'))
      return { status: 404, json: { type: 'error', error: { type: 'not_found_error', message: 'no route' } } };
    const b = body as Record<string, unknown>;
    received.push(b);
    const problems = anthropicRequestProblems(b);
    if (problems.length)
      return {
        status: 400,
        json: { type: 'error', error: { type: 'invalid_request_error', message: problems.join('; ') } },
      };
    return {
      json: {
        id: 'msg_loopback',
        type: 'message',
        role: 'assistant',
        model: b.model,
        content: [{ type: 'text', text: `received ${(b.messages as unknown[]).length} messages` }],
        stop_reason: 'end_turn',
        stop_sequence: null,
        usage: { input_tokens: 1, output_tokens: 1 },
      },
    };
  });
  baseURL = loopback.baseURL;
});

afterAll(() => loopback.close());

const client = () => new Anthropic({ apiKey: 'test', baseURL, maxRetries: 0 });

// ---------------------------------------------------------------------------------------------------------------------
// Fixtures

const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8/58BAwAI/AL+hc2rNAAAAABJRU5ErkJggg==';
const PDF = 'JVBERi0xLjQKJcfsj6IKMSAwIG9iago8PD4+CmVuZG9iagp0cmFpbGVyCjw8Pj4KJSVFT0YK';

/** A request using every block type, typed by the official SDK (a fixture the API would take). */
const FULL = {
  model: 'claude-haiku-4-5',
  max_tokens: 2048,
  stop_sequences: ['END'],
  metadata: { user_id: 'u-1' },
  thinking: { type: 'enabled', budget_tokens: 1024 },
  tools: [
    {
      name: 'read_file',
      description: 'Read a file',
      input_schema: { type: 'object', properties: { path: { type: 'string' } } },
    },
    { type: 'web_search_20250305', name: 'web_search' },
  ],
  tool_choice: { type: 'auto' },
  system: [
    { type: 'text', text: 'You are terse.' },
    { type: 'text', text: 'Project rules follow.', cache_control: { type: 'ephemeral' } },
  ],
  messages: [
    {
      role: 'user',
      content: [
        { type: 'text', text: 'Look at these.' },
        { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } },
        { type: 'image', source: { type: 'url', url: 'https://example.com/cat.jpg' } },
        { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: PDF }, title: 'spec.pdf' },
        { type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'plain notes' }, title: 'notes' },
      ],
    },
    {
      role: 'assistant',
      content: [
        { type: 'thinking', thinking: 'Need the file and the web.', signature: 'sig-1' },
        { type: 'redacted_thinking', data: 'opaque-redacted' },
        { type: 'text', text: 'Reading.' },
        { type: 'tool_use', id: 'toolu_1', name: 'read_file', input: { path: 'a.ts' } },
        { type: 'tool_use', id: 'toolu_2', name: 'read_file', input: { path: 'b.ts' } },
      ],
    },
    {
      role: 'user',
      content: [
        { type: 'tool_result', tool_use_id: 'toolu_1', content: 'export const a = 1;' },
        {
          type: 'tool_result',
          tool_use_id: 'toolu_2',
          content: [
            { type: 'text', text: 'ENOENT' },
            { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } },
          ],
          is_error: true,
        },
        { type: 'text', text: 'b.ts was deleted, search instead.' },
      ],
    },
    {
      role: 'assistant',
      content: [
        { type: 'server_tool_use', id: 'srvtoolu_1', name: 'web_search', input: { query: 'b.ts history' } },
        {
          type: 'web_search_tool_result',
          tool_use_id: 'srvtoolu_1',
          content: [
            { type: 'web_search_result', title: 'History', url: 'https://example.com/h', encrypted_content: 'enc' },
          ],
        },
        { type: 'text', text: 'Found it.' },
      ],
    },
    { role: 'user', content: 'Thanks.' },
  ],
} satisfies Anthropic.MessageCreateParamsNonStreaming;

// ---------------------------------------------------------------------------------------------------------------------

describe('Anthropic reader', () => {
  const s = read(FULL);

  it('is detected from its content', () => {
    expect(parseSession(JSON.stringify(FULL)).format).toBe('anthropic');
    expect(anthropicFormat.detect({ head: '', document: FULL })).toBeGreaterThanOrEqual(0.9);
    // An OpenAI Chat body is not taken for an Anthropic one.
    expect(
      anthropicFormat.detect({
        head: '',
        document: {
          model: 'gpt-4o',
          messages: [
            { role: 'system', content: 'x' },
            { role: 'user', content: 'y' },
          ],
        },
      }),
    ).toBeLessThan(0.5);
  });

  it("reads a bare array of its messages (Cline's and Roo Code's api_conversation_history.json), calls and results kept", () => {
    const history = [
      { role: 'user', content: [{ type: 'text', text: '<task>\nFix the failing test\n</task>' }] },
      {
        role: 'assistant',
        content: [{ type: 'tool_use', id: 'toolu_01', name: 'read_file', input: { path: 'src/a.ts' } }],
      },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'toolu_01', content: 'export const a = 1;' },
          { type: 'text', text: '<environment_details>\n…\n</environment_details>' },
        ],
      },
      { role: 'assistant', content: [{ type: 'text', text: 'Done.' }] },
    ];
    const read = parseSession(JSON.stringify(history));
    // It was taken for the AI SDK's ModelMessage[] before, and its tool_use and tool_result blocks were lost.
    expect(read.format).toBe('anthropic');
    const parts = read.entries.flatMap((e) => e.message?.parts ?? []);
    expect(parts.filter((p) => p.type === 'tool-call').map((p) => p.type === 'tool-call' && [p.id, p.name])).toEqual([
      ['toolu_01', 'read_file'],
    ]);
    expect(
      parts.flatMap((p) =>
        p.type === 'tool-result' ? [[p.callId, p.content[0]?.type === 'text' && p.content[0].text]] : [],
      ),
    ).toEqual([['toolu_01', 'export const a = 1;']]);
    // What abridge sends from it is a request body.
    expect(JSON.parse(writeSession(read, 'anthropic')).messages).toHaveLength(4);
    // Cline's system prompt is not in the file: its size is counted as the unrecorded prefix; a request body has its own.
    expect(read.extra?.harness).toBe('cline');
    expect(harnessPrefixTokens(read)).toBe(CLINE_SYSTEM_PROMPT_TOKENS);
    expect(harnessPrefixTokens(parseSession(JSON.stringify({ model: 'm', max_tokens: 10, messages: history })))).toBe(
      0,
    );
  });

  it('puts the system prompt first and splits tool results into a tool message right after the calls', () => {
    expect(s.entries.map((e) => [e.message?.role, e.sourceType, e.fromSameRecord === true])).toEqual([
      ['system', 'system', false],
      ['user', 'user', false],
      ['assistant', 'assistant', false],
      ['tool', 'user/tool_result', false],
      ['user', 'user', true],
      ['assistant', 'assistant', false],
      ['user', 'user', false],
    ]);
    expect(s.entries[0]!.message!.parts).toEqual([text('You are terse.'), text('Project rules follow.')]);
    // Both entries of the split message keep the original object.
    expect(s.entries[3]!.raw).toEqual(FULL.messages[2]);
    expect(s.entries[4]!.raw).toBe(s.entries[3]!.raw);
    expect(s.entries[4]!.message!.parts).toEqual([text('b.ts was deleted, search instead.')]);
  });

  it('maps every block type', () => {
    const user = s.entries[1]!.message!.parts;
    expect(user[1]).toEqual({ type: 'image', mediaType: 'image/png', data: PNG, byteSize: 70 });
    expect(user[2]).toEqual({ type: 'image', url: 'https://example.com/cat.jpg' });
    expect(user[3]).toMatchObject({ type: 'file', mediaType: 'application/pdf', name: 'spec.pdf', data: PDF });
    expect(user[4]).toMatchObject({ type: 'file', mediaType: 'text/plain', name: 'notes', byteSize: 11 });
    const assistant = s.entries[2]!.message!.parts;
    expect(assistant[0]).toEqual({ type: 'thinking', text: 'Need the file and the web.', signature: 'sig-1' });
    expect(assistant[1]).toEqual({ type: 'thinking', text: '', signature: 'opaque-redacted', redacted: true });
    expect(assistant[3]).toEqual({ type: 'tool-call', id: 'toolu_1', name: 'read_file', arguments: { path: 'a.ts' } });
    const results = s.entries[3]!.message!.parts;
    expect(results[0]).toEqual({
      type: 'tool-result',
      callId: 'toolu_1',
      toolName: 'read_file',
      content: [text('export const a = 1;')],
      isError: false,
    });
    expect(results[1]).toMatchObject({
      type: 'tool-result',
      callId: 'toolu_2',
      isError: true,
      content: [text('ENOENT'), { type: 'image', data: PNG }],
    });
    const server = s.entries[5]!.message!.parts;
    expect(server[0]).toEqual({
      type: 'tool-call',
      id: 'srvtoolu_1',
      name: 'web_search',
      arguments: { query: 'b.ts history' },
    });
    expect(server[1]).toEqual({
      type: 'tool-result',
      callId: 'srvtoolu_1',
      toolName: 'web_search',
      content: [text('History — https://example.com/h')],
      isError: false,
    });
  });

  it('keeps the other request fields in extra.request and nothing in info', () => {
    expect(Object.keys(s.extra!.request as object).sort()).toEqual([
      'max_tokens',
      'metadata',
      'model',
      'stop_sequences',
      'thinking',
      'tool_choice',
      'tools',
    ]);
    expect(s.info).toEqual({});
  });

  it('names the source and the JSON path of bad input', () => {
    const cases: [unknown, string][] = [
      ['a string', '(document)'],
      [[{ role: 'user', content: 'hi' }, 2], '[1]: expected a message object'],
      [{ model: 'm', max_tokens: 1 }, 'messages: expected an array'],
      [{ messages: ['hi'] }, 'messages[0]: expected a message object'],
      [
        { messages: [{ role: 'bot', content: 'x' }] },
        'messages[0].role: expected "user" or "assistant", got the string "bot"',
      ],
      [{ messages: [{ role: 'user', content: 7 }] }, 'messages[0].content: expected a string or an array'],
      [
        {
          messages: [
            { role: 'user', content: 'a' },
            { role: 'assistant', content: [{ type: 'text', text: 'ok' }, { text: 'no type' }] },
          ],
        },
        'messages[1].content[1]: expected a content block object',
      ],
      [
        { messages: [{ role: 'assistant', content: [{ type: 'tool_use', name: 'x', input: {} }] }] },
        'messages[0].content[0].id: expected a string, got nothing',
      ],
      [
        { messages: [{ role: 'user', content: [{ type: 'tool_result', tool_use_id: 't', content: 5 }] }] },
        'messages[0].content[0].content: expected a string or an array',
      ],
      [{ system: [{ type: 'image' }], messages: [] }, 'system[0]: expected a text block'],
    ];
    expectInvalidInputs(read, cases);
  });
});

describe('Anthropic writer', () => {
  it('writes a session read from this format back as the same body', () => {
    const s = read(FULL);
    const out = parse(writeSession(s));
    expect(out).toEqual(FULL);
  });

  it('reads back what it wrote to the same messages', () => {
    const s = read(FULL);
    const again = parseSession(writeSession(s), { format: 'anthropic' });
    expect(again.entries.map((e) => e.message)).toEqual(s.entries.map((e) => e.message));
  });

  it('keeps a body valid when entries are added after reading', () => {
    const s = read(FULL);
    s.entries.push({
      index: s.entries.length,
      kind: 'message',
      message: {
        role: 'user',
        parts: [{ type: 'compaction', marker: { number: 1, summary: 'Earlier: read two files.', source: 'abridge' } }],
      },
    });
    const out = parse(writeSession(s));
    expectValidAnthropic(out);
    expect(out.tools).toEqual(FULL.tools);
    const last = out.messages[out.messages.length - 1]!;
    expect(last.role).toBe('user');
    expect(last.content.map((b) => b.text)).toEqual(['Thanks.', 'Earlier: read two files.']);
  });

  it('converts instead when an edit leaves tool results without their calls', () => {
    const s = read(FULL);
    s.entries = s.entries.filter((e) => e.index !== 2); // drop the assistant message with the calls
    const out = parse(writeSession(s));
    expectValidAnthropic(out);
    expect(out.tool_choice).toEqual(FULL.tool_choice);
    expect(JSON.stringify(out.messages)).toContain('[result of tool call toolu_1 (read_file)]');
  });

  it('converts a session from another format by the API rules', () => {
    const s = sessionOf('pi', [
      { role: 'system', parts: [text('Be brief.')] },
      { role: 'assistant', parts: [text('Hello, I am ready.')], model: 'claude-opus-4-1' },
      { role: 'user', parts: [text('  '), text('Fix it'), { type: 'image', mediaType: 'image/png', byteSize: 2048 }] },
      {
        role: 'assistant',
        model: 'claude-haiku-4-5',
        provider: 'anthropic',
        parts: [
          { type: 'thinking', text: 'unsigned musing' },
          { type: 'thinking', text: 'signed plan', signature: 'SIG' },
          { type: 'thinking', text: 'openai reasoning', signature: '{"id":"rs_1","type":"reasoning"}' },
          { type: 'tool-call', id: 'call_a|fc_1', name: 'bash', arguments: { command: 'ls' } },
          { type: 'tool-call', id: 'call_b', name: 'bash', arguments: 'not json' },
          { type: 'tool-call', id: 'call_c', name: 'read', arguments: { path: 'x' } },
        ],
      },
      {
        role: 'tool',
        parts: [{ type: 'tool-result', callId: 'call_a|fc_1', content: [text('a.txt')], isError: false }],
      },
      { role: 'tool', parts: [{ type: 'tool-result', callId: 'call_b', content: [text('oops')], isError: true }] },
      {
        role: 'tool',
        parts: [
          { type: 'tool-result', callId: 'call_zzz', toolName: 'ghost', content: [text('stray')], isError: false },
        ],
      },
      {
        role: 'user',
        parts: [{ type: 'compaction', marker: { number: 1, summary: 'Summary of before.', source: 'pi' } }],
      },
      { role: 'assistant', parts: [text('Done.  \n')], model: 'claude-haiku-4-5' },
    ]);
    const body = anthropicBodyOfSession(s);
    // Type-level proof: the converted body is a Messages API request as the official SDK types it.
    const typed: Anthropic.MessageCreateParamsNonStreaming = body;
    expect(typed.model).toBe('claude-haiku-4-5');
    expectValidAnthropic(body);
    expect(body.max_tokens).toBe(4096);
    expect(body.system).toBe('Be brief.');
    expect(body.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user', 'assistant', 'user', 'assistant']);
    expect(body.messages[0]!.content).toEqual([{ type: 'text', text: '(conversation start)' }]);
    // Blank text dropped; an image without data becomes a placeholder.
    expect(body.messages[2]!.content).toEqual([
      { type: 'text', text: 'Fix it' },
      { type: 'text', text: '[image (image/png, 2048 bytes) not included]' },
    ]);
    const calls = body.messages[3]!.content;
    expect(calls.map((b) => b.type)).toEqual(['thinking', 'tool_use', 'tool_use', 'tool_use']);
    expect(calls[0]).toEqual({ type: 'thinking', thinking: 'signed plan', signature: 'SIG' });
    expect(calls[1]).toEqual({ type: 'tool_use', id: 'call_a', name: 'bash', input: { command: 'ls' } });
    expect(calls[2]).toEqual({ type: 'tool_use', id: 'call_b', name: 'bash', input: { arguments: 'not json' } });
    // Consecutive tool messages merge into one user message; the missing result is an error; the stray one is text.
    expect(body.messages[4]!.content).toEqual([
      { type: 'tool_result', tool_use_id: 'call_a', content: 'a.txt' },
      { type: 'tool_result', tool_use_id: 'call_b', content: 'oops', is_error: true },
      { type: 'tool_result', tool_use_id: 'call_c', content: '[no result recorded]', is_error: true },
      { type: 'text', text: '[result of tool call call_zzz (ghost)]\nstray' },
      { type: 'text', text: 'Summary of before.' },
    ]);
    // The final assistant message (a prefill) may not end with whitespace.
    expect(body.messages[5]!.content).toEqual([{ type: 'text', text: 'Done.' }]);
  });

  it('takes the model from the last assistant message, else extra.request.model, else a named placeholder', () => {
    const msgs: Message[] = [{ role: 'user', parts: [text('hi')] }];
    expect(anthropicBodyOfSession(sessionOf('pi', msgs)).model).toBe('unknown-model');
    expect(anthropicBodyOfSession(sessionOf('openai-chat', msgs, { request: { model: 'gpt-4o' } })).model).toBe(
      'gpt-4o',
    );
    expect(
      anthropicBodyOfSession(
        sessionOf('pi', [...msgs, { role: 'assistant', parts: [text('yo')], model: '<synthetic>' }], {
          request: { model: 'm2' },
        }),
      ).model,
    ).toBe('m2');
    // An empty session is still a valid request.
    expectValidAnthropic(anthropicBodyOfSession(sessionOf('pi', [])));
  });

  it('has validity checks that catch what the API rejects', () => {
    const ok = { model: 'm', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] };
    expect(anthropicRequestProblems(ok)).toEqual([]);
    const bad = (messages: unknown[]) => anthropicRequestProblems({ ...ok, messages });
    expect(
      bad([
        { role: 'user', content: 'a' },
        { role: 'user', content: 'b' },
      ]).join(),
    ).toMatch(/alternate/);
    expect(bad([{ role: 'assistant', content: 'a' }]).join()).toMatch(/starting with user/);
    expect(bad([{ role: 'user', content: [] }]).join()).toMatch(/content: empty/);
    expect(
      bad([
        { role: 'user', content: 'a' },
        { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'x', input: {} }] },
        { role: 'user', content: 'no result' },
      ]).join(),
    ).toMatch(/no tool_result for tool_use t1/);
    expect(bad([{ role: 'user', content: [{ type: 'tool_result', tool_use_id: 'zz', content: 'x' }] }]).join()).toMatch(
      /did not call/,
    );
    expect(
      bad([
        { role: 'user', content: 'a' },
        {
          role: 'assistant',
          content: [
            { type: 'thinking', thinking: 'x' },
            { type: 'text', text: 'y' },
          ],
        },
      ]).join(),
    ).toMatch(/without signature/);
    expect(
      bad([
        { role: 'user', content: 'a' },
        { role: 'assistant', content: 'trailing ' },
      ]).join(),
    ).toMatch(/whitespace/);
    expect(anthropicRequestProblems({ messages: [{ role: 'user', content: 'x' }] }).join()).toMatch(
      /model: missing.*max_tokens/,
    );
  });
});

describe('Anthropic SDK on a loopback server', () => {
  it('sends a converted session and the same-format body through the official client', async () => {
    const converted = anthropicBodyOfSession(
      sessionOf('pi', [
        { role: 'user', parts: [text('list files')] },
        {
          role: 'assistant',
          model: 'claude-haiku-4-5',
          parts: [{ type: 'tool-call', id: 'c1', name: 'bash', arguments: { command: 'ls' } }],
        },
        { role: 'tool', parts: [{ type: 'tool-result', callId: 'c1', content: [text('a b')], isError: false }] },
      ]),
    );
    const before = received.length;
    const reply = await client().messages.create(converted);
    expect(reply.content).toEqual([{ type: 'text', text: 'received 3 messages' }]);
    expect(received[before]).toEqual(converted);

    const same = parse(writeSession(read(FULL))) as unknown as Anthropic.MessageCreateParamsNonStreaming;
    const reply2 = await client().messages.create(same);
    expect(reply2.model).toBe('claude-haiku-4-5');
    expect(received[before + 1]).toEqual(FULL);
  });

  it('is refused by the server when the body is invalid', async () => {
    const invalid = { model: 'm', max_tokens: 5, messages: [{ role: 'assistant' as const, content: 'first' }] };
    await expect(client().messages.create(invalid)).rejects.toBeInstanceOf(Anthropic.BadRequestError);
  });

  it.runIf(corpusAvailable())('sends converted corpus transcripts', async () => {
    for (const file of [
      corpusFile(
        'pi',
        'japer-technology__github-claw__2026-02-20T12-32-37-832Z_fd67ceb3-8afa-47d5-853e-c1ceedcecfb8.jsonl',
      ),
      corpusFile('claude-code', 'marot__spotter__short.jsonl'),
    ]) {
      const s = await readSession(file).catch(() => undefined);
      if (!s) continue;
      const body = parse(writeSession(s, 'anthropic')) as unknown as Anthropic.MessageCreateParamsNonStreaming;
      const reply = await client().messages.create(body);
      expect(reply.content[0]).toEqual({ type: 'text', text: `received ${body.messages.length} messages` });
    }
  });
});

// ---------------------------------------------------------------------------------------------------------------------

const run = corpusAvailable() ? describe : describe.skip;

run('corpus transcripts written as Anthropic requests', () => {
  // pi and Claude Code, and the agents whose transcripts abridge reads but does not write (a request body is how
  // their compacted context reaches a model).
  for (const folder of ['pi', 'claude-code', 'openhands', 'other']) {
    for (const file of corpusFiles(folder).filter((f) => !f.endsWith('.md'))) {
      const name = `${folder}/${basename(file)}`;
      it(name, async () => {
        const s = await readSession(file);
        const body = parse(writeSession(s, 'anthropic'));
        expectValidAnthropic(body);
        // No tool call is lost: the calls on the conversation's path all come out as tool_use blocks.
        const calls = conversationToolCalls(s);
        const uses = body.messages
          .flatMap((m) => (Array.isArray(m.content) ? m.content : []))
          .filter((b) => b.type === 'tool_use').length;
        expect(uses).toBe(calls);
        expect(body.model).not.toBe('');
        // And it reads back as an Anthropic request with the same number of tool calls.
        const again = parseSession(JSON.stringify(body));
        expect(again.format).toBe('anthropic');
        expect(again.entries.flatMap((e) => e.message?.parts ?? []).filter((p) => p.type === 'tool-call').length).toBe(
          calls,
        );
      });
    }
  }
});
