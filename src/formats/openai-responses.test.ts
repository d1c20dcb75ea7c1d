import { basename } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TextPart } from '../model/types.js';
import { startLoopback, type Loopback } from '../../test/support/loopback.js';
import { conversationToolCalls, sessionOf, expectInvalidInputs } from '../../test/support/sessions.js';
import { corpusAvailable, corpusFile, corpusFiles } from '../../test/support/corpus.js';
import {
  openaiResponsesFormat,
  openaiResponsesRequestProblems,
  responsesBodyOfSession,
  type ResponsesRequest,
} from './openai-responses.js';
import { parseSession, readSession } from './read.js';
import { writeSession } from './write.js';

// ---------------------------------------------------------------------------------------------------------------------
// Helpers: structural validity, sessions built from canonical messages, a loopback Responses API

type AnyItem = {
  type?: string;
  role?: string;
  content?: unknown;
  call_id?: string;
  output?: unknown;
  name?: string;
  arguments?: string;
};

/** Runtime structural checks beyond `openaiResponsesRequestProblems`: pairing and no empty content, spelled out. */
function expectValidResponses(body: ResponsesRequest | Record<string, unknown>): void {
  expect(openaiResponsesRequestProblems(body)).toEqual([]);
  const input = body.input as AnyItem[];
  expect(input.length).toBeGreaterThan(0);
  const calls = input.filter((i) => i.type === 'function_call').map((i) => i.call_id);
  const outputs = input.filter((i) => i.type === 'function_call_output').map((i) => i.call_id);
  expect([...outputs].sort()).toEqual([...calls].sort());
  expect(new Set(calls).size).toBe(calls.length);
  input.forEach((item, i) => {
    if (Array.isArray(item.content)) expect(item.content.length).toBeGreaterThan(0);
    // Each output comes after its call.
    if (item.type === 'function_call_output')
      expect(input.slice(0, i).some((c) => c.type === 'function_call' && c.call_id === item.call_id)).toBe(true);
  });
}

const text = (t: string): TextPart => ({ type: 'text', text: t });
const parse = (s: string) => JSON.parse(s) as Record<string, unknown> & { input: AnyItem[] };
const read = (doc: unknown, source = 'responses.json') =>
  parseSession(JSON.stringify(doc), { format: 'openai-responses', source });

let loopback: Loopback;
let baseURL = '';
const received: unknown[] = [];

beforeAll(async () => {
  loopback = await startLoopback(({ method, url, body }) => {
    if (method !== 'POST' || !(url === '/v1/responses'))
      return { status: 404, json: { error: { message: 'no route' } } };
    const b = body as Record<string, unknown>;
    received.push(b);
    const problems = openaiResponsesRequestProblems(b);
    if (problems.length)
      return {
        status: 400,
        json: { error: { message: problems.join('; '), type: 'invalid_request_error', param: 'input', code: null } },
      };
    const n = typeof b.input === 'string' ? 1 : (b.input as unknown[]).length;
    return {
      json: {
        id: 'resp_loopback',
        object: 'response',
        created_at: 1,
        model: b.model,
        status: 'completed',
        output: [
          {
            type: 'message',
            id: 'msg_loopback',
            role: 'assistant',
            status: 'completed',
            content: [{ type: 'output_text', text: `received ${n} items`, annotations: [] }],
          },
        ],
        usage: {
          input_tokens: 1,
          output_tokens: 1,
          total_tokens: 2,
          input_tokens_details: { cached_tokens: 0 },
          output_tokens_details: { reasoning_tokens: 0 },
        },
      },
    };
  });
  baseURL = `${loopback.baseURL}/v1`;
});

afterAll(() => loopback.close());

const client = () => new OpenAI({ apiKey: 'test', baseURL, maxRetries: 0 });

// ---------------------------------------------------------------------------------------------------------------------
// Fixtures

const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8/58BAwAI/AL+hc2rNAAAAABJRU5ErkJggg==';
const PDF = 'JVBERi0xLjQKJcfsj6IKMSAwIG9iago8PD4+CmVuZG9iagp0cmFpbGVyCjw8Pj4KJSVFT0YK';

const RESP = {
  model: 'gpt-5',
  instructions: 'You are a coding agent.',
  reasoning: { effort: 'medium', summary: 'auto' },
  store: false,
  include: ['reasoning.encrypted_content'],
  tools: [
    {
      type: 'function',
      name: 'shell',
      parameters: { type: 'object', properties: { cmd: { type: 'string' } } },
      strict: false,
    },
    { type: 'custom', name: 'apply_patch' },
  ],
  input: [
    { role: 'developer', content: 'Use the shell.' },
    {
      type: 'message',
      role: 'user',
      content: [
        { type: 'input_text', text: 'What is in here?' },
        { type: 'input_image', detail: 'auto', image_url: `data:image/png;base64,${PNG}` },
        { type: 'input_file', filename: 'spec.pdf', file_data: `data:application/pdf;base64,${PDF}` },
      ],
    },
    {
      type: 'reasoning',
      id: 'rs_1',
      summary: [{ type: 'summary_text', text: 'List the directory.' }],
      encrypted_content: 'gAAAA-enc',
    },
    { type: 'function_call', call_id: 'call_1', name: 'shell', arguments: '{"cmd":"ls"}' },
    { type: 'function_call_output', call_id: 'call_1', output: 'a.txt\nb.txt' },
    { type: 'custom_tool_call', call_id: 'call_2', name: 'apply_patch', input: '*** Begin Patch' },
    { type: 'custom_tool_call_output', call_id: 'call_2', output: 'patched' },
    { type: 'web_search_call', id: 'ws_1', status: 'completed', action: { type: 'search', query: 'docs' } },
    {
      type: 'message',
      id: 'msg_1',
      role: 'assistant',
      status: 'completed',
      content: [{ type: 'output_text', text: 'Two files.', annotations: [] }],
    },
    { type: 'item_reference', id: 'msg_0' },
    { role: 'user', content: 'thanks' },
  ],
} satisfies OpenAI.Responses.ResponseCreateParamsNonStreaming;

// ---------------------------------------------------------------------------------------------------------------------

describe('OpenAI Responses reader', () => {
  const s = read(RESP);

  it('is detected from its content', () => {
    expect(parseSession(JSON.stringify(RESP)).format).toBe('openai-responses');
    expect(parseSession(JSON.stringify({ model: 'gpt-5', input: 'Hello' })).format).toBe('openai-responses');
    expect(
      openaiResponsesFormat.detect({
        head: '',
        document: { model: 'gpt-4o', messages: [{ role: 'user', content: 'x' }] },
      }),
    ).toBe(0);
  });

  it('maps instructions, messages and items', () => {
    expect(s.entries.map((e) => [e.kind, e.message?.role, e.sourceType])).toEqual([
      ['message', 'system', 'instructions'],
      ['message', 'system', 'message'],
      ['message', 'user', 'message'],
      ['message', 'assistant', 'reasoning'],
      ['message', 'assistant', 'function_call'],
      ['message', 'tool', 'function_call_output'],
      ['message', 'assistant', 'custom_tool_call'],
      ['message', 'tool', 'custom_tool_call_output'],
      ['message', 'assistant', 'web_search_call'],
      ['message', 'assistant', 'message'],
      ['event', undefined, 'item_reference'],
      ['message', 'user', 'message'],
    ]);
    expect(s.entries[0]!.message!.parts).toEqual([text('You are a coding agent.')]);
    const user = s.entries[2]!.message!.parts;
    expect(user[1]).toEqual({ type: 'image', mediaType: 'image/png', data: PNG, byteSize: 70 });
    expect(user[2]).toEqual({ type: 'file', name: 'spec.pdf', mediaType: 'application/pdf', data: PDF, byteSize: 54 });
    expect(s.entries[3]!.message!.parts).toEqual([
      { type: 'thinking', text: 'List the directory.', signature: 'gAAAA-enc' },
    ]);
    expect(s.entries[4]!.message!.parts).toEqual([
      { type: 'tool-call', id: 'call_1', name: 'shell', arguments: { cmd: 'ls' } },
    ]);
    expect(s.entries[5]!.message!.parts).toEqual([
      { type: 'tool-result', callId: 'call_1', toolName: 'shell', content: [text('a.txt\nb.txt')], isError: false },
    ]);
    expect(s.entries[6]!.message!.parts).toEqual([
      { type: 'tool-call', id: 'call_2', name: 'apply_patch', arguments: '*** Begin Patch' },
    ]);
    expect(s.entries[8]!.message!.parts).toEqual([
      { type: 'tool-call', id: 'ws_1', name: 'web_search', arguments: { action: { type: 'search', query: 'docs' } } },
      { type: 'tool-result', callId: 'ws_1', toolName: 'web_search', content: [], isError: false },
    ]);
    expect(s.entries[9]!.message!.parts).toEqual([text('Two files.')]);
    expect(Object.keys(s.extra!.request as object).sort()).toEqual(['include', 'model', 'reasoning', 'store', 'tools']);
    expect(s.problems).toEqual([]);
  });

  it('keeps an unknown item as an entry and reports it', () => {
    const u = read(
      {
        model: 'm',
        input: [
          { type: 'mystery_item', x: 1 },
          { role: 'user', content: 'hi' },
        ],
      },
      'u.json',
    );
    expect(u.entries.map((e) => e.kind)).toEqual(['unknown', 'message']);
    expect(u.problems.map((p) => p.message)).toEqual([
      'u.json: input[0]: unknown item type "mystery_item"; kept as is',
    ]);
    expect(JSON.parse(writeSession(u))).toEqual({
      model: 'm',
      input: [
        { type: 'mystery_item', x: 1 },
        { role: 'user', content: 'hi' },
      ],
    });
  });

  it('names the source and the JSON path of bad input', () => {
    const cases: [unknown, string][] = [
      [[], '(document)'],
      [{ model: 'm', input: 5 }, 'input: expected a string or an array of input items, got the number 5'],
      [{ model: 'm', instructions: ['x'], input: 'y' }, 'instructions: expected a string'],
      [
        { model: 'm', input: [{ content: 'no role' }] },
        'input[0]: expected an input item with a string "type" or a message "role"',
      ],
      [
        {
          model: 'm',
          input: [
            { role: 'user', content: 'a' },
            { type: 'function_call', name: 'f', arguments: '{}' },
          ],
        },
        'input[1].call_id: expected a string, got nothing',
      ],
      [
        { model: 'm', input: [{ role: 'user', content: [{ text: 'untyped' }] }] },
        'input[0].content[0]: expected a content part object',
      ],
      [
        { model: 'm', input: [{ role: 'critic', content: 'x' }] },
        'input[0].role: expected "user", "assistant", "system" or "developer"',
      ],
    ];
    expectInvalidInputs(read, cases);
  });
});

describe('OpenAI Responses writer', () => {
  it('writes a session read from this format back as the same body, and reads it back alike', () => {
    for (const doc of [RESP, { model: 'gpt-5', instructions: 'Hi.', input: 'Just a string' }]) {
      const s = read(doc);
      const written = writeSession(s);
      expect(JSON.parse(written)).toEqual(doc);
      expect(parseSession(written, { format: 'openai-responses' }).entries.map((e) => e.message)).toEqual(
        s.entries.map((e) => e.message),
      );
    }
  });

  it('keeps a body valid when entries are added or removed after reading', () => {
    const s = read(RESP);
    s.entries.push({
      index: s.entries.length,
      kind: 'message',
      message: {
        role: 'user',
        parts: [{ type: 'compaction', marker: { number: 1, summary: 'Summary so far.', source: 'abridge' } }],
      },
    });
    const added = parse(writeSession(s));
    expect(openaiResponsesRequestProblems(added)).toEqual([]);
    expect(added.input[added.input.length - 1]).toEqual({ type: 'message', role: 'user', content: 'Summary so far.' });
    expect(added.store).toBe(false);

    const cut = read(RESP);
    cut.entries = cut.entries.filter((e) => e.sourceType !== 'function_call'); // outputs lose their calls
    const converted = parse(writeSession(cut));
    expectValidResponses(converted);
    expect(converted.instructions).toBe('You are a coding agent.\n\nUse the shell.');
    expect(JSON.stringify(converted.input)).toContain('[result of tool call call_1 (shell)]');
  });

  it('converts a session from another format', () => {
    const s = sessionOf('pi', [
      { role: 'system', parts: [text('Be brief.')] },
      {
        role: 'user',
        parts: [
          text('Check this'),
          { type: 'file', name: 'a.pdf', mediaType: 'application/pdf', data: PDF },
          { type: 'image', mediaType: 'image/png', byteSize: 10 },
        ],
      },
      {
        role: 'assistant',
        model: 'gpt-5',
        parts: [
          { type: 'thinking', text: 'hmm', signature: '{"id":"rs_9"}' },
          text('Looking.'),
          { type: 'tool-call', id: 'call_x|fc_y', name: 'screenshot', arguments: {} },
          text('And also:'),
          { type: 'tool-call', id: 'call_z', name: 'ls', arguments: { dir: '.' } },
        ],
      },
      {
        role: 'tool',
        parts: [
          {
            type: 'tool-result',
            callId: 'call_x|fc_y',
            content: [text('shot'), { type: 'image', mediaType: 'image/png', data: PNG }],
            isError: false,
          },
        ],
      },
    ]);
    const body = responsesBodyOfSession(s);
    // Type-level proof: the converted body is a Responses request as the official SDK types it.
    const typed: OpenAI.Responses.ResponseCreateParamsNonStreaming = body;
    expect(typed.model).toBe('gpt-5');
    expectValidResponses(body);
    expect(body.instructions).toBe('Be brief.');
    expect(body.input).toEqual([
      {
        type: 'message',
        role: 'user',
        content: [
          { type: 'input_text', text: 'Check this' },
          { type: 'input_file', file_data: `data:application/pdf;base64,${PDF}`, filename: 'a.pdf' },
          { type: 'input_text', text: '[image (image/png, 10 bytes) not included]' },
        ],
      },
      { type: 'message', role: 'assistant', content: 'Looking.' },
      { type: 'function_call', call_id: 'call_x', name: 'screenshot', arguments: '{}' },
      { type: 'message', role: 'assistant', content: 'And also:' },
      { type: 'function_call', call_id: 'call_z', name: 'ls', arguments: '{"dir":"."}' },
      {
        type: 'function_call_output',
        call_id: 'call_x',
        output: [
          { type: 'input_text', text: 'shot' },
          { type: 'input_image', detail: 'auto', image_url: `data:image/png;base64,${PNG}` },
        ],
      },
      { type: 'function_call_output', call_id: 'call_z', output: '[no result recorded]' },
    ]);
  });

  it('has validity checks that catch what the API rejects', () => {
    const ok = { model: 'm', input: [{ role: 'user', content: 'hi' }] };
    expect(openaiResponsesRequestProblems(ok)).toEqual([]);
    const bad = (input: unknown[]) => openaiResponsesRequestProblems({ model: 'm', input }).join();
    expect(bad([{ type: 'function_call', call_id: 'c', name: 'f', arguments: '{}' }])).toMatch(/has no output/);
    expect(bad([{ type: 'function_call_output', call_id: 'c', output: 'x' }])).toMatch(/no earlier function_call/);
    expect(
      bad([
        { role: 'user', content: 'x' },
        { type: 'reasoning', id: 'rs', summary: [] },
      ]),
    ).toMatch(/reasoning item without/);
    expect(bad([{ role: 'assistant', content: [{ type: 'input_text', text: 'x' }] }])).toMatch(
      /not allowed in a assistant message/,
    );
    expect(bad([{ role: 'user', content: [] }])).toMatch(/empty array/);
    expect(openaiResponsesRequestProblems({ input: 'x' }).join()).toMatch(/model: missing/);
  });
});

describe('OpenAI SDK on a loopback server (responses)', () => {
  it('sends a converted session and the same-format body through the official client', async () => {
    const converted = responsesBodyOfSession(
      sessionOf('claude-code', [
        { role: 'user', parts: [text('list files')] },
        {
          role: 'assistant',
          model: 'claude-opus-4-6',
          parts: [{ type: 'tool-call', id: 'toolu_1', name: 'Bash', arguments: { command: 'ls' } }],
        },
        { role: 'tool', parts: [{ type: 'tool-result', callId: 'toolu_1', content: [text('a b')], isError: false }] },
      ]),
    );
    const before = received.length;
    const reply = await client().responses.create(converted);
    expect(reply.output_text).toBe('received 3 items');
    expect(received[before]).toEqual(converted);

    const same = parse(writeSession(read(RESP))) as unknown as OpenAI.Responses.ResponseCreateParamsNonStreaming;
    const reply2 = await client().responses.create(same);
    expect(reply2.output_text).toBe('received 11 items');
    expect(received[before + 1]).toEqual(RESP);
  });

  it('is refused by the server when the body is invalid', async () => {
    await expect(
      client().responses.create({
        model: 'm',
        input: [{ type: 'function_call_output', call_id: 'x', output: 'orphan' }],
      }),
    ).rejects.toBeInstanceOf(OpenAI.BadRequestError);
  });

  it.runIf(corpusAvailable())('sends converted corpus transcripts', async () => {
    for (const file of [
      corpusFile(
        'pi',
        'japer-technology__japer-technology.github.io__2026-03-16T00-13-02-740Z_34d80d0d-1d7d-49b2-ac39-83e82cff39f9.jsonl',
      ),
      corpusFile('claude-code', 'marot__spotter__subagent.jsonl'),
    ]) {
      const s = await readSession(file).catch(() => undefined);
      if (!s) continue;
      const body = parse(
        writeSession(s, 'openai-responses'),
      ) as unknown as OpenAI.Responses.ResponseCreateParamsNonStreaming & { input: unknown[] };
      const reply = await client().responses.create(body);
      expect(reply.output_text).toBe(`received ${body.input.length} items`);
    }
  });
});

describe('across formats', () => {
  it('a Chat Completions request written as a Responses request reads back with the same calls and texts', () => {
    const chat = {
      model: 'gpt-4o',
      messages: [
        { role: 'system', content: 'Be kind.' },
        { role: 'user', content: 'hi' },
        {
          role: 'assistant',
          content: 'Checking.',
          tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'look', arguments: '{"q":1}' } }],
        },
        { role: 'tool', tool_call_id: 'call_1', content: 'seen' },
        { role: 'assistant', content: 'Seen.' },
      ],
    };
    const s = parseSession(JSON.stringify(chat), { format: 'openai-chat' });
    const written = writeSession(s, 'openai-responses');
    const back = parseSession(written);
    expect(back.format).toBe('openai-responses');
    expect(back.entries.map((e) => e.message)).toEqual([
      { role: 'system', parts: [text('Be kind.')] },
      { role: 'user', parts: [text('hi')] },
      { role: 'assistant', parts: [text('Checking.')] },
      { role: 'assistant', parts: [{ type: 'tool-call', id: 'call_1', name: 'look', arguments: { q: 1 } }] },
      {
        role: 'tool',
        parts: [{ type: 'tool-result', callId: 'call_1', toolName: 'look', content: [text('seen')], isError: false }],
      },
      { role: 'assistant', parts: [text('Seen.')] },
    ]);
    expect((JSON.parse(written) as { model: string }).model).toBe('gpt-4o');
  });
});

// ---------------------------------------------------------------------------------------------------------------------

const run = corpusAvailable() ? describe : describe.skip;

run('corpus transcripts written as Responses requests', () => {
  for (const folder of ['pi', 'claude-code']) {
    for (const file of corpusFiles(folder)) {
      const name = `${folder}/${basename(file)}`;
      it(name, async () => {
        const s = await readSession(file);
        const body = parse(writeSession(s, 'openai-responses'));
        expectValidResponses(body);
        const calls = conversationToolCalls(s);
        expect(body.input.filter((i) => i.type === 'function_call').length).toBe(calls);
        const again = parseSession(JSON.stringify(body));
        expect(again.format).toBe('openai-responses');
      });
    }
  }
});
