import { basename } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TextPart } from '../model/types.js';
import { startLoopback, type Loopback } from '../../test/support/loopback.js';
import { conversationToolCalls, sessionOf, expectInvalidInputs } from '../../test/support/sessions.js';
import { corpusAvailable, corpusFile, corpusFiles } from '../../test/support/corpus.js';
import { openaiChatFormat, openaiChatRequestProblems, chatBodyOfSession, type ChatRequest } from './openai-chat.js';
import { parseSession, readSession } from './read.js';
import { writeSession } from './write.js';

// ---------------------------------------------------------------------------------------------------------------------
// Helpers: structural validity, sessions built from canonical messages, a loopback Chat Completions API

type AnyMessage = {
  role: string;
  content?: unknown;
  tool_calls?: { id: string; function: { name: string; arguments: string } }[];
  tool_call_id?: string;
};

/** Runtime structural checks beyond `openaiChatRequestProblems`: pairing and no empty content, spelled out. */
function expectValidChat(body: ChatRequest | Record<string, unknown>): void {
  expect(openaiChatRequestProblems(body)).toEqual([]);
  const messages = body.messages as AnyMessage[];
  expect(messages.length).toBeGreaterThan(0);
  messages.forEach((m, i) => {
    if (Array.isArray(m.content)) expect(m.content.length).toBeGreaterThan(0);
    if (m.role === 'assistant' && m.tool_calls) {
      // Tool messages answering exactly these calls follow right away.
      const answers = messages
        .slice(i + 1, i + 1 + m.tool_calls.length)
        .map((t) => (t.role === 'tool' ? t.tool_call_id : undefined));
      expect(answers.sort()).toEqual(m.tool_calls.map((c) => c.id).sort());
      for (const c of m.tool_calls) expect(c.id.length).toBeLessThanOrEqual(40);
    }
  });
}

const text = (t: string): TextPart => ({ type: 'text', text: t });
const parse = (s: string) => JSON.parse(s) as Record<string, unknown> & { messages: AnyMessage[] };
const read = (doc: unknown, source = 'chat.json') =>
  parseSession(JSON.stringify(doc), { format: 'openai-chat', source });

let loopback: Loopback;
let baseURL = '';
const received: unknown[] = [];

beforeAll(async () => {
  loopback = await startLoopback(({ method, url, body }) => {
    if (method !== 'POST' || !(url === '/v1/chat/completions'))
      return { status: 404, json: { error: { message: 'no route' } } };
    const b = body as Record<string, unknown>;
    received.push(b);
    const problems = openaiChatRequestProblems(b);
    if (problems.length)
      return {
        status: 400,
        json: { error: { message: problems.join('; '), type: 'invalid_request_error', param: 'messages', code: null } },
      };
    return {
      json: {
        id: 'chatcmpl-loopback',
        object: 'chat.completion',
        created: 1,
        model: b.model,
        choices: [
          {
            index: 0,
            message: {
              role: 'assistant',
              content: `received ${(b.messages as unknown[]).length} messages`,
              refusal: null,
            },
            finish_reason: 'stop',
            logprobs: null,
          },
        ],
        usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
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

const CHAT = {
  model: 'gpt-4o',
  temperature: 0,
  tools: [
    {
      type: 'function',
      function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } },
    },
  ],
  tool_choice: 'auto',
  messages: [
    { role: 'system', content: 'You are helpful.' },
    { role: 'developer', content: [{ type: 'text', text: 'Answer in French.' }] },
    {
      role: 'user',
      content: [
        { type: 'text', text: 'Weather here?' },
        { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG}`, detail: 'low' } },
        { type: 'image_url', image_url: { url: 'https://example.com/x.jpg' } },
        { type: 'input_audio', input_audio: { data: 'UklGRiQAAABXQVZF', format: 'wav' } },
        { type: 'file', file: { file_data: `data:application/pdf;base64,${PDF}`, filename: 'a.pdf' } },
      ],
    },
    {
      role: 'assistant',
      content: null,
      tool_calls: [
        { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
        { id: 'call_2', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Lyon"}' } },
      ],
    },
    { role: 'tool', tool_call_id: 'call_1', content: '18C' },
    { role: 'tool', tool_call_id: 'call_2', content: [{ type: 'text', text: '21C' }] },
    { role: 'assistant', content: [{ type: 'text', text: 'Paris 18C, Lyon 21C.' }] },
    { role: 'user', content: 'Merci' },
  ],
} satisfies OpenAI.ChatCompletionCreateParamsNonStreaming;

/** Fields outside the official types: `reasoning_content` (DeepSeek, vLLM) and the legacy function calling. */
const EXTENDED = {
  model: 'deepseek-reasoner',
  messages: [
    { role: 'user', content: 'What is 2+2?' },
    {
      role: 'assistant',
      reasoning_content: 'Simple arithmetic.',
      content: null,
      function_call: { name: 'calc', arguments: '{"expr":"2+2"}' },
    },
    { role: 'function', name: 'calc', content: '4' },
    { role: 'assistant', content: 'It is 4.' },
  ],
};

// ---------------------------------------------------------------------------------------------------------------------

describe('OpenAI Chat reader', () => {
  const s = read(CHAT);

  it("reads a bare array of its messages, tool calls and results kept; a plain array stays the AI SDK's", () => {
    const history = [
      { role: 'system', content: 'You are helpful.' },
      { role: 'user', content: 'List the files.' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'ls', arguments: '{"path":"."}' } }],
      },
      { role: 'tool', tool_call_id: 'call_1', content: 'a.ts\nb.ts' },
      { role: 'assistant', content: 'Two files.' },
    ];
    // It was taken for the AI SDK's ModelMessage[] before, and refused on the assistant's null content.
    const read = parseSession(JSON.stringify(history));
    expect(read.format).toBe('openai-chat');
    const parts = read.entries.flatMap((e) => e.message?.parts ?? []);
    expect(parts.filter((p) => p.type === 'tool-call').map((p) => p.type === 'tool-call' && [p.id, p.name])).toEqual([
      ['call_1', 'ls'],
    ]);
    expect(parts.filter((p) => p.type === 'tool-result')).toHaveLength(1);
    // Messages that name no format: the AI SDK's reading, as before.
    const plain = [
      { role: 'user', content: 'hi' },
      { role: 'assistant', content: 'hello' },
    ];
    expect(parseSession(JSON.stringify(plain)).format).toBe('ai-sdk');
    expect(openaiChatFormat.detect({ head: '', document: plain })).toBe(0);
  });

  it('is detected from its content', () => {
    expect(parseSession(JSON.stringify(CHAT)).format).toBe('openai-chat');
    expect(parseSession(JSON.stringify(EXTENDED)).format).toBe('openai-chat');
    // A system message and a question: nothing but Chat's plain shape, which the AI SDK's shares.
    const plain = {
      model: 'gpt-x',
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Hi' },
      ],
    };
    expect(parseSession(JSON.stringify(plain)).format).toBe('openai-chat');
    expect(
      openaiChatFormat.detect({
        head: '',
        document: {
          model: 'claude',
          max_tokens: 5,
          system: [{ type: 'text', text: 'x' }],
          messages: [{ role: 'user', content: [{ type: 'tool_result', tool_use_id: 'a' }] }],
        },
      }),
    ).toBeLessThan(0.5);
  });

  it('maps roles and parts', () => {
    expect(s.entries.map((e) => [e.message?.role, e.sourceType])).toEqual([
      ['system', 'system'],
      ['system', 'developer'],
      ['user', 'user'],
      ['assistant', 'assistant'],
      ['tool', 'tool'],
      ['tool', 'tool'],
      ['assistant', 'assistant'],
      ['user', 'user'],
    ]);
    const user = s.entries[2]!.message!.parts;
    expect(user[0]).toEqual(text('Weather here?'));
    expect(user[1]).toEqual({ type: 'image', mediaType: 'image/png', data: PNG, byteSize: 70 });
    expect(user[2]).toEqual({ type: 'image', url: 'https://example.com/x.jpg' });
    expect(user[3]).toEqual({ type: 'file', mediaType: 'audio/wav', data: 'UklGRiQAAABXQVZF', byteSize: 12 });
    expect(user[4]).toEqual({ type: 'file', name: 'a.pdf', mediaType: 'application/pdf', data: PDF, byteSize: 54 });
    expect(s.entries[3]!.message!.parts).toEqual([
      { type: 'tool-call', id: 'call_1', name: 'get_weather', arguments: { city: 'Paris' } },
      { type: 'tool-call', id: 'call_2', name: 'get_weather', arguments: { city: 'Lyon' } },
    ]);
    expect(s.entries[5]!.message!.parts).toEqual([
      { type: 'tool-result', callId: 'call_2', toolName: 'get_weather', content: [text('21C')], isError: false },
    ]);
    expect(s.entries[0]!.raw).toEqual(CHAT.messages[0]);
    expect(Object.keys(s.extra!.request as object).sort()).toEqual(['model', 'temperature', 'tool_choice', 'tools']);
  });

  it('reads reasoning_content as thinking and pairs legacy function calls', () => {
    const e = read(EXTENDED);
    const assistant = e.entries[1]!.message!.parts;
    expect(assistant[0]).toEqual({ type: 'thinking', text: 'Simple arithmetic.' });
    expect(assistant[1]).toEqual({
      type: 'tool-call',
      id: 'function_call_1',
      name: 'calc',
      arguments: { expr: '2+2' },
    });
    expect(e.entries[2]!.message).toEqual({
      role: 'tool',
      parts: [
        { type: 'tool-result', callId: 'function_call_1', toolName: 'calc', content: [text('4')], isError: false },
      ],
    });
  });

  it('names the source and the JSON path of bad input', () => {
    const cases: [unknown, string][] = [
      ['just text', '(document)'],
      [{ model: 'm' }, 'messages: expected an array'],
      [
        { messages: [{ role: 'robot', content: 'x' }] },
        'messages[0].role: expected "system", "developer", "user", "assistant", "tool" or "function", got the string "robot"',
      ],
      [
        { messages: [{ role: 'user', content: [{ type: 'text', text: 'a' }, { text: 'b' }] }] },
        'messages[0].content[1]: expected a content part object',
      ],
      [
        { messages: [{ role: 'user', content: [{ type: 'image_url', image_url: {} }] }] },
        'messages[0].content[0].image_url.url: expected a string',
      ],
      [
        {
          messages: [
            { role: 'user', content: 'x' },
            { role: 'assistant', content: null, tool_calls: [{ id: 'c', type: 'function' }] },
          ],
        },
        'messages[1].tool_calls[0].function: expected an object',
      ],
      [{ messages: [{ role: 'tool', content: 'x' }] }, 'messages[0].tool_call_id: expected a string, got nothing'],
      [{ messages: [{ role: 'user', content: 42 }] }, 'messages[0].content: expected a string or an array'],
    ];
    expectInvalidInputs(read, cases);
  });
});

describe('OpenAI Chat writer', () => {
  it('writes a session read from this format back as the same body, and reads it back alike', () => {
    for (const doc of [CHAT, EXTENDED]) {
      const s = read(doc);
      const written = writeSession(s);
      expect(JSON.parse(written)).toEqual(doc);
      expect(parseSession(written, { format: 'openai-chat' }).entries.map((e) => e.message)).toEqual(
        s.entries.map((e) => e.message),
      );
    }
  });

  it('keeps a body valid when entries are added or removed after reading', () => {
    const s = read(CHAT);
    s.entries.push({
      index: s.entries.length,
      kind: 'message',
      message: {
        role: 'user',
        parts: [{ type: 'compaction', marker: { number: 1, summary: 'Summary so far.', source: 'abridge' } }],
      },
    });
    const added = parse(writeSession(s));
    expectValidChat(added);
    expect(added.messages[added.messages.length - 1]).toEqual({ role: 'user', content: 'Summary so far.' });
    expect(added.tools).toEqual(CHAT.tools);

    const cut = read(CHAT);
    cut.entries = cut.entries.filter((e) => e.index !== 3); // the assistant message with the calls
    const converted = parse(writeSession(cut));
    expectValidChat(converted);
    expect(converted.temperature).toBe(0);
    expect(JSON.stringify(converted.messages)).toContain('[result of tool call call_1 (get_weather)]');
  });

  it('converts a session from another format', () => {
    const longId = `toolu_${'x'.repeat(60)}`;
    const s = sessionOf('claude-code', [
      { role: 'user', parts: [text('Look'), { type: 'image', mediaType: 'image/png', data: PNG }] },
      {
        role: 'assistant',
        model: 'claude-opus-4-6',
        parts: [
          { type: 'thinking', text: 'hmm', signature: 'S' },
          text('Taking a screenshot.'),
          { type: 'tool-call', id: 'call_a|fc_b', name: 'screenshot', arguments: {} },
        ],
      },
      {
        role: 'assistant',
        model: 'claude-opus-4-6',
        parts: [{ type: 'tool-call', id: longId, name: 'bash', arguments: { command: 'ls' } }],
      },
      {
        role: 'tool',
        parts: [
          {
            type: 'tool-result',
            callId: 'call_a|fc_b',
            content: [text('captured'), { type: 'image', mediaType: 'image/png', data: PNG }],
            isError: false,
          },
        ],
      },
      { role: 'system', parts: [text('Late system note.')] },
      { role: 'assistant', model: 'claude-opus-4-6', parts: [{ type: 'thinking', text: 'only thinking' }] },
      {
        role: 'user',
        parts: [
          {
            type: 'file',
            name: 'notes.txt',
            mediaType: 'text/plain',
            data: Buffer.from('hello notes').toString('base64'),
          },
        ],
      },
    ]);
    const body = chatBodyOfSession(s);
    // Type-level proof: the converted body is a Chat Completions request as the official SDK types it.
    const typed: OpenAI.ChatCompletionCreateParamsNonStreaming = body;
    expect(typed.model).toBe('claude-opus-4-6');
    expectValidChat(body);
    const calls = (body.messages[2] as AnyMessage).tool_calls!;
    expect(body.messages.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'tool', 'tool', 'user', 'user']);
    expect(body.messages[0]).toEqual({ role: 'system', content: 'Late system note.' });
    expect(body.messages[2]).toMatchObject({ role: 'assistant', content: 'Taking a screenshot.' });
    expect(calls.map((c) => c.id)).toEqual(['call_a', expect.stringMatching(/^call_[0-9a-f]{24}$/)]);
    expect(calls[1]!.function).toEqual({ name: 'bash', arguments: '{"command":"ls"}' });
    expect(body.messages[3]).toEqual({
      role: 'tool',
      tool_call_id: 'call_a',
      content: 'captured\n[image (image/png) in the next user message]',
    });
    expect(body.messages[4]).toEqual({ role: 'tool', tool_call_id: calls[1]!.id, content: '[no result recorded]' });
    // Tool messages take text only: the screenshot follows as a user message.
    expect(body.messages[5]).toEqual({
      role: 'user',
      content: [
        { type: 'text', text: 'Images returned by the tool calls above:' },
        { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG}` } },
      ],
    });
    expect(body.messages[6]).toEqual({ role: 'user', content: 'notes.txt:\nhello notes' });
  });

  it('has validity checks that catch what the API rejects', () => {
    const ok = { model: 'm', messages: [{ role: 'user', content: 'hi' }] };
    expect(openaiChatRequestProblems(ok)).toEqual([]);
    const bad = (messages: unknown[]) => openaiChatRequestProblems({ ...ok, messages }).join();
    const call = {
      role: 'assistant',
      content: null,
      tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{}' } }],
    };
    expect(bad([{ role: 'user', content: 'x' }, call, { role: 'user', content: 'y' }])).toMatch(
      /not answered by tool messages right after/,
    );
    expect(
      bad([
        { role: 'user', content: 'x' },
        { role: 'tool', tool_call_id: 'c1', content: 'r' },
      ]),
    ).toMatch(/not right after an assistant message/);
    expect(bad([{ role: 'user', content: 'x' }, call])).toMatch(/not answered/);
    expect(bad([{ role: 'user', content: [] }])).toMatch(/empty array/);
    expect(bad([{ role: 'assistant', content: null }])).toMatch(/neither content nor tool_calls/);
    expect(bad([{ role: 'user', content: [{ type: 'input_text', text: 'x' }] }])).toMatch(/not allowed/);
  });
});

describe('OpenAI SDK on a loopback server (chat completions)', () => {
  it('sends a converted session and the same-format body through the official client', async () => {
    const converted = chatBodyOfSession(
      sessionOf('pi', [
        { role: 'user', parts: [text('list files')] },
        {
          role: 'assistant',
          model: 'gpt-4.1',
          parts: [{ type: 'tool-call', id: 'c1', name: 'bash', arguments: { command: 'ls' } }],
        },
        { role: 'tool', parts: [{ type: 'tool-result', callId: 'c1', content: [text('a b')], isError: false }] },
      ]),
    );
    const before = received.length;
    const reply = await client().chat.completions.create(converted);
    expect(reply.choices[0]!.message.content).toBe('received 3 messages');
    expect(received[before]).toEqual(converted);

    const same = parse(writeSession(read(CHAT))) as unknown as OpenAI.ChatCompletionCreateParamsNonStreaming;
    const reply2 = await client().chat.completions.create(same);
    expect(reply2.choices[0]!.message.content).toBe('received 8 messages');
    expect(received[before + 1]).toEqual(CHAT);
  });

  it('is refused by the server when the body is invalid', async () => {
    await expect(
      client().chat.completions.create({
        model: 'm',
        messages: [{ role: 'tool', tool_call_id: 'x', content: 'orphan' }],
      }),
    ).rejects.toBeInstanceOf(OpenAI.BadRequestError);
  });

  it.runIf(corpusAvailable())('sends converted corpus transcripts', async () => {
    for (const file of [
      corpusFile('pi', 'japer-technology__forgejo-society__issue-5.jsonl'),
      corpusFile('claude-code', 'marot__spotter__tool_heavy.jsonl'),
    ]) {
      const s = await readSession(file).catch(() => undefined);
      if (!s) continue;
      const body = parse(writeSession(s, 'openai-chat')) as unknown as OpenAI.ChatCompletionCreateParamsNonStreaming;
      const reply = await client().chat.completions.create(body);
      expect(reply.choices[0]!.message.content).toBe(`received ${body.messages.length} messages`);
    }
  });
});

describe('across formats', () => {
  it('an Anthropic request written as Chat Completions reads back with the same calls and texts', () => {
    const anthropic = {
      model: 'claude-sonnet-4-5',
      max_tokens: 100,
      system: 'Be kind.',
      messages: [
        { role: 'user', content: 'hi' },
        {
          role: 'assistant',
          content: [
            { type: 'text', text: 'Checking.' },
            { type: 'tool_use', id: 'toolu_1', name: 'look', input: { q: 1 } },
          ],
        },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 'toolu_1', content: 'seen' },
            { type: 'text', text: 'and?' },
          ],
        },
      ],
    };
    const s = parseSession(JSON.stringify(anthropic), { format: 'anthropic' });
    const back = parseSession(writeSession(s, 'openai-chat'));
    expect(back.format).toBe('openai-chat');
    expect(back.entries.map((e) => e.message)).toEqual([
      { role: 'system', parts: [text('Be kind.')] },
      { role: 'user', parts: [text('hi')] },
      {
        role: 'assistant',
        parts: [text('Checking.'), { type: 'tool-call', id: 'toolu_1', name: 'look', arguments: { q: 1 } }],
      },
      {
        role: 'tool',
        parts: [{ type: 'tool-result', callId: 'toolu_1', toolName: 'look', content: [text('seen')], isError: false }],
      },
      { role: 'user', parts: [text('and?')] },
    ]);
    expect((JSON.parse(writeSession(s, 'openai-chat')) as { model: string }).model).toBe('claude-sonnet-4-5');
  });
});

// ---------------------------------------------------------------------------------------------------------------------

const run = corpusAvailable() ? describe : describe.skip;

run('corpus transcripts written as Chat Completions requests', () => {
  // pi and Claude Code, and the agents whose transcripts abridge reads but does not write (a request body is how
  // their compacted context reaches a model).
  for (const folder of ['pi', 'claude-code', 'openhands', 'other']) {
    for (const file of corpusFiles(folder).filter((f) => !f.endsWith('.md'))) {
      const name = `${folder}/${basename(file)}`;
      it(name, async () => {
        const s = await readSession(file);
        const body = parse(writeSession(s, 'openai-chat'));
        expectValidChat(body);
        const calls = conversationToolCalls(s);
        expect(body.messages.flatMap((m) => m.tool_calls ?? []).length).toBe(calls);
        expect(body.messages.filter((m) => m.role === 'tool').length).toBe(calls);
        const again = parseSession(JSON.stringify(body));
        expect(again.format).toBe('openai-chat');
      });
    }
  }
});
