/**
 * The wire, with the official clients: `toRequest` bodies sent through `@anthropic-ai/sdk` and `openai` to a loopback
 * server (the server sees exactly the body abridge made, and the API's structural rules hold for it), the replies read
 * back with `fromResponse` (exact usage), and the providers' overflow answers thrown by the SDKs — and by the AI SDK,
 * bare and inside a RetryError — recognized by `contextOverflow`. Over a compacted real transcript and over generated
 * conversations with parallel tool calls, missing and reordered results, signed / unsigned / redacted thinking, images.
 */
import { createAnthropic } from '@ai-sdk/anthropic';
import { createOpenAI } from '@ai-sdk/openai';
import Anthropic from '@anthropic-ai/sdk';
import { generateText } from 'ai';
import fc from 'fast-check';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compact } from '../compaction/compact.js';
import { anthropicRequestProblems } from '../formats/anthropic.js';
import { openaiChatRequestProblems } from '../formats/openai-chat.js';
import { openaiResponsesRequestProblems } from '../formats/openai-responses.js';
import { parseSession, readSession } from '../formats/read.js';
import type { Message, Part, ToolResultPart } from '../model/types.js';
import { activeMessages } from '../model/view.js';
import { corpusAvailable, corpusFile } from '../../test/support/corpus.js';
import { startLoopback, type Loopback, type LoopbackReply, type LoopbackRequest } from '../../test/support/loopback.js';
import { ANTHROPIC_MESSAGE, CHAT_COMPLETION, PNG, RESPONSES_RESPONSE } from '../../test/support/provider-responses.js';
import { fromAnthropicMessage, toAnthropicRequest } from './anthropic.js';
import {
  fromOpenAIChatCompletion,
  fromOpenAIResponse,
  toOpenAIChatRequest,
  toOpenAIResponsesRequest,
} from './openai.js';
import {
  contextOverflow,
  fromResponse,
  toRequest,
  type RequestOptions,
  type RequestProvider,
} from '../formats/wire.js';

// ---------------------------------------------------------------------------------------------------------------------
// Generated conversations

const words = fc.lorem({ maxCount: 12 });
const idStyle = fc.constantFrom('toolu', 'pi', 'long', 'openai');

interface UserSpec {
  kind: 'user';
  text: string;
  image: boolean;
}
interface StepSpec {
  kind: 'step';
  text: string | null;
  thinking: { text: string; signature: 'anthropic' | 'none' | 'redacted' } | null;
  calls: {
    name: string;
    args: Record<string, string>;
    result: { text: string; image: boolean; isError: boolean } | null;
  }[];
  reverseResults: boolean;
  idStyle: string;
}

const userSpec: fc.Arbitrary<UserSpec> = fc.record({
  kind: fc.constant('user' as const),
  text: words,
  image: fc.boolean(),
});
const stepSpec: fc.Arbitrary<StepSpec> = fc.record({
  kind: fc.constant('step' as const),
  text: fc.option(words),
  thinking: fc.option(
    fc.record({ text: words, signature: fc.constantFrom('anthropic' as const, 'none' as const, 'redacted' as const) }),
  ),
  calls: fc.array(
    fc.record({
      name: fc.constantFrom('read', 'bash', 'grep', 'mcp__fs__read_file', 'web.search'),
      args: fc.dictionary(fc.constantFrom('path', 'command', 'pattern'), words, { maxKeys: 2 }),
      result: fc.option(fc.record({ text: words, image: fc.boolean(), isError: fc.boolean() }), { freq: 6 }),
    }),
    { maxLength: 4 },
  ),
  reverseResults: fc.boolean(),
  idStyle,
});
const conversationSpec = fc.tuple(
  userSpec,
  fc.array(fc.oneof({ arbitrary: stepSpec, weight: 3 }, { arbitrary: userSpec, weight: 1 }), {
    minLength: 1,
    maxLength: 8,
  }),
);

function buildConversation([first, rest]: [UserSpec, (UserSpec | StepSpec)[]]): Message[] {
  const out: Message[] = [{ role: 'system', parts: [{ type: 'text', text: 'Follow the project rules.' }] }];
  let n = 0;
  const user = (u: UserSpec): Message => ({
    role: 'user',
    parts: [
      { type: 'text', text: u.text || 'go on' },
      ...(u.image ? [{ type: 'image', mediaType: 'image/png', data: PNG, byteSize: 70 } as Part] : []),
    ],
  });
  out.push(user(first));
  for (const s of rest) {
    if (s.kind === 'user') {
      out.push(user(s));
      continue;
    }
    const parts: Part[] = [];
    if (s.thinking) {
      if (s.thinking.signature === 'anthropic')
        parts.push({ type: 'thinking', text: s.thinking.text, signature: `Eq${n}sig` });
      else if (s.thinking.signature === 'redacted')
        parts.push({ type: 'thinking', text: '', signature: `UmVk${n}`, redacted: true });
      else parts.push({ type: 'thinking', text: s.thinking.text });
    }
    if (s.text !== null) parts.push({ type: 'text', text: s.text });
    const results: ToolResultPart[] = [];
    for (const c of s.calls) {
      const k = n++;
      const id =
        s.idStyle === 'pi'
          ? `call_${k}|fc_${'x'.repeat(40)}${k}`
          : s.idStyle === 'long'
            ? `tool-${'y'.repeat(70)}-${k}`
            : s.idStyle === 'openai'
              ? `call_${k}`
              : `toolu_0${k}`;
      parts.push({ type: 'tool-call', id, name: c.name, arguments: c.args });
      if (c.result) {
        const content: ToolResultPart['content'] = [{ type: 'text', text: c.result.text }];
        if (c.result.image) content.push({ type: 'image', mediaType: 'image/png', data: PNG, byteSize: 70 });
        results.push({ type: 'tool-result', callId: id, toolName: c.name, content, isError: c.result.isError });
      }
    }
    out.push({ role: 'assistant', provider: 'anthropic', model: 'claude-sonnet-4-5', parts });
    if (results.length) out.push({ role: 'tool', parts: s.reverseResults ? results.reverse() : results });
  }
  return out;
}

const OPTIONS: Omit<RequestOptions, 'providerTools'> = {
  model: 'claude-sonnet-4-6',
  maxOutputTokens: 4096,
  system: [{ text: 'You are a careful coding agent.', cache: true }],
  tools: [
    {
      name: 'read',
      description: 'Read a file',
      inputSchema: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
    },
  ],
  cacheTools: true,
  cacheConversation: true,
};

function problems(provider: RequestProvider, body: unknown): string[] {
  if (provider === 'anthropic') return anthropicRequestProblems(body);
  if (provider === 'openai-chat') return openaiChatRequestProblems(body);
  return openaiResponsesRequestProblems(body);
}

function toolCallsIn(provider: RequestProvider, body: Record<string, unknown>): number {
  const s = JSON.stringify(provider === 'openai-responses' ? body.input : body.messages);
  return (
    s.match(
      provider === 'anthropic'
        ? /"type":"tool_use"/g
        : provider === 'openai-chat'
          ? /"type":"function"/g
          : /"type":"function_call"/g,
    ) ?? []
  ).length;
}

const PROVIDERS: RequestProvider[] = ['anthropic', 'openai-chat', 'openai-responses'];
const RUNS = Number(process.env.ABRIDGE_PROPERTY_RUNS ?? 200);

describe('generated conversations: every body is one the API accepts, with every call paired', () => {
  it(`${RUNS} conversations × 3 providers`, () => {
    fc.assert(
      fc.property(conversationSpec, (spec) => {
        const messages = buildConversation(spec);
        const calls = messages.flatMap((m) => m.parts).filter((p) => p.type === 'tool-call').length;
        for (const provider of PROVIDERS) {
          const body = toRequest(messages, provider, OPTIONS) as Record<string, unknown>;
          expect(problems(provider, body), provider).toEqual([]);
          expect(toolCallsIn(provider, body), provider).toBe(calls);
        }
        const anthropic = toRequest(messages, 'anthropic', OPTIONS);
        const breakpoints = JSON.stringify(anthropic).split('"cache_control"').length - 1;
        expect(breakpoints).toBeLessThanOrEqual(4);
        // Anthropic gets back exactly the signed thinking.
        const signed = messages.flatMap((m) => m.parts).filter((p) => p.type === 'thinking' && p.signature).length;
        expect(
          anthropic.messages
            .flatMap((m): { type: string }[] => m.content)
            .filter((b) => b.type === 'thinking' || b.type === 'redacted_thinking').length,
        ).toBe(signed);
      }),
      { numRuns: RUNS, seed: 20261124 },
    );
  });
});

describe('generated conversations: encoding is stable through abridge’s own readers', () => {
  it(`${RUNS} conversations: encode → read the body → encode again gives the same messages`, () => {
    const strip = (v: unknown) =>
      JSON.parse(JSON.stringify(v).replace(/,"cache_control":\{"type":"ephemeral"\}/g, '')) as unknown;
    fc.assert(
      fc.property(conversationSpec, (spec) => {
        const messages = buildConversation(spec);
        for (const provider of PROVIDERS) {
          const key = provider === 'openai-responses' ? 'input' : 'messages';
          const body = toRequest(messages, provider, OPTIONS) as Record<string, unknown>;
          const reencode = (b: Record<string, unknown>) =>
            toRequest(activeMessages(parseSession(JSON.stringify(b), { format: provider })), provider, {
              ...OPTIONS,
              system: undefined,
            }) as Record<string, unknown>;
          const again = reencode(body);
          const systemless = (v: unknown) =>
            provider === 'openai-chat' ? (v as { role: string }[]).filter((m) => m.role !== 'system') : v;
          if (provider === 'openai-chat') {
            // Chat forwards tool-result images in a user message of their own, which reading merges with the user text
            // after it: one normalization, then a fixed point.
            expect(systemless(strip(reencode(again)[key])), provider).toEqual(systemless(strip(again[key])));
          } else expect(strip(again[key]), provider).toEqual(strip(body[key]));
        }
      }),
      { numRuns: RUNS, seed: 424242 },
    );
  });
});

// ---------------------------------------------------------------------------------------------------------------------
// Through the SDKs

type Mode =
  | { kind: 'ok' }
  | { kind: 'overflow'; status: number; body: unknown }
  | { kind: 'fail-then-overflow'; body: unknown };

let server: Loopback;
let mode: Mode = { kind: 'ok' };
let served = 0;

function reply(req: LoopbackRequest): LoopbackReply {
  served++;
  if (mode.kind === 'overflow') return { status: mode.status, json: mode.body };
  if (mode.kind === 'fail-then-overflow')
    return served === 1
      ? { status: 500, json: { type: 'error', error: { type: 'api_error', message: 'Internal server error' } } }
      : { status: 400, json: mode.body };
  if (req.url.endsWith('/messages')) return { json: ANTHROPIC_MESSAGE };
  if (req.url.endsWith('/chat/completions')) return { json: CHAT_COMPLETION };
  if (req.url.endsWith('/responses')) return { json: RESPONSES_RESPONSE };
  return { status: 404, json: { error: { message: `no route ${req.url}` } } };
}

beforeAll(async () => {
  server = await startLoopback(reply);
});
afterAll(async () => {
  await server.close();
});

function clients() {
  return {
    anthropic: new Anthropic({ apiKey: 'sk-ant-test', baseURL: server.baseURL, maxRetries: 0 }),
    openai: new OpenAI({ apiKey: 'sk-test', baseURL: `${server.baseURL}/v1`, maxRetries: 0 }),
  };
}

/** Sends the three bodies through the SDKs; returns what the server received and what the SDKs returned, read back. */
async function roundTrip(messages: readonly Message[]) {
  mode = { kind: 'ok' };
  const { anthropic, openai } = clients();
  const from = server.requests.length;
  const bodies = {
    anthropic: toAnthropicRequest(messages, OPTIONS),
    chat: toOpenAIChatRequest(messages, { ...OPTIONS, model: 'gpt-5' }),
    responses: toOpenAIResponsesRequest(messages, {
      ...OPTIONS,
      model: 'gpt-5',
      extra: { store: false, include: ['reasoning.encrypted_content'] },
    }),
  };
  const replies = {
    anthropic: fromAnthropicMessage(await anthropic.messages.create(bodies.anthropic)),
    chat: fromOpenAIChatCompletion(await openai.chat.completions.create(bodies.chat)),
    responses: fromOpenAIResponse(await openai.responses.create(bodies.responses)),
  };
  const received = server.requests.slice(from);
  return { bodies, replies, received };
}

async function expectRoundTrip(messages: readonly Message[]) {
  const { bodies, replies, received } = await roundTrip(messages);
  expect(received.map((r) => `${r.method} ${r.url}`)).toEqual([
    'POST /v1/messages',
    'POST /v1/chat/completions',
    'POST /v1/responses',
  ]);
  // The server got exactly the body abridge made (the SDK adds nothing to it and drops nothing), valid for the API.
  expect(received[0]!.body).toEqual(JSON.parse(JSON.stringify(bodies.anthropic)));
  expect(received[1]!.body).toEqual(JSON.parse(JSON.stringify(bodies.chat)));
  expect(received[2]!.body).toEqual(JSON.parse(JSON.stringify(bodies.responses)));
  expect(anthropicRequestProblems(received[0]!.body)).toEqual([]);
  expect(openaiChatRequestProblems(received[1]!.body)).toEqual([]);
  expect(openaiResponsesRequestProblems(received[2]!.body)).toEqual([]);
  // The replies, through the SDKs' objects, read back as from the raw JSON; usage exact.
  expect(replies.anthropic).toEqual(fromResponse('anthropic', ANTHROPIC_MESSAGE));
  expect(replies.anthropic.usage).toEqual({ input: 12, output: 318, cacheRead: 48_210, cacheWrite: 1_953 });
  expect(replies.chat.usage).toEqual({ input: 86, output: 187, cacheRead: 1_920, cacheWrite: 0, reasoning: 128 });
  expect(replies.responses.usage).toEqual({
    input: 1_134,
    output: 412,
    cacheRead: 4_096,
    cacheWrite: 0,
    reasoning: 256,
  });
  return received;
}

describe('toRequest bodies through the official SDK clients (loopback)', () => {
  it('generated conversations with parallel calls, thinking and images', async () => {
    for (const spec of fc.sample(conversationSpec, { numRuns: 6, seed: 7 }))
      await expectRoundTrip(buildConversation(spec));
  });

  (corpusAvailable() ? it : it.skip)(
    'a real transcript compacted to a tenth: the request carries the compacted view',
    async () => {
      const session = await readSession(
        corpusFile(
          'pi',
          'anuragsinghbhandari__gitclaw__2026-02-12T13-04-21-117Z_b6e6bf81-1bc7-46a2-b959-05f29abc1d69.jsonl',
        ),
      );
      const full = activeMessages(session);
      const fullSize = JSON.stringify(toAnthropicRequest(full, OPTIONS)).length;
      const probe = await compact(session, { target: Number.MAX_SAFE_INTEGER, strategies: [] });
      const r = await compact(session, { target: Math.round(probe.beforeTokens / 10) });
      expect(r.marker).toBeDefined();
      const view = activeMessages(session);
      const received = await expectRoundTrip(view);
      const sent = received[0]!.text.length;
      expect(sent / fullSize).toBeLessThan(0.25);
      // The summary is in the request; the archived history is not.
      expect(received[0]!.text).toContain(JSON.stringify(r.marker!.summary.slice(0, 120)).slice(1, -1));
      for (const req of received) expect(req.text.length).toBeLessThan(fullSize / 4);
    },
  );

  it('the reply continues the conversation: fromResponse messages go back in the next request', async () => {
    const first: Message[] = [{ role: 'user', parts: [{ type: 'text', text: 'Fix the parser.' }] }];
    const { replies } = await roundTrip(first);
    const results = (m: Message): Message => ({
      role: 'tool',
      parts: m.parts
        .filter((p) => p.type === 'tool-call')
        .map((p) => ({
          type: 'tool-result',
          callId: p.type === 'tool-call' ? p.id : '',
          content: [{ type: 'text', text: 'ok' }],
          isError: false,
        })),
    });
    await expectRoundTrip([...first, replies.anthropic.message, results(replies.anthropic.message)]);
    await expectRoundTrip([...first, replies.responses.message, results(replies.responses.message)]);
    const next = toRequest(
      [...first, replies.responses.message, results(replies.responses.message)],
      'openai-responses',
      { model: 'gpt-5', maxOutputTokens: 100 },
    );
    expect(next.input.map((i) => i.type)).toEqual([
      'message',
      'reasoning',
      'message',
      'function_call',
      'function_call_output',
    ]);
  });
});

// ---------------------------------------------------------------------------------------------------------------------
// Overflow errors as the SDKs throw them

const ANTHROPIC_TOO_LONG = {
  type: 'error',
  error: { type: 'invalid_request_error', message: 'prompt is too long: 215000 tokens > 200000 maximum' },
};
const ANTHROPIC_WITH_MAX = {
  type: 'error',
  error: {
    type: 'invalid_request_error',
    message:
      'input length and `max_tokens` exceed context limit: 187254 + 21333 > 200000, decrease input length or `max_tokens` and try again',
  },
};
const CHAT_TOO_LONG = {
  error: {
    message:
      "This model's maximum context length is 128000 tokens. However, you requested 140012 tokens (131820 in the messages, 8192 in the completion). Please reduce the length of the messages or completion.",
    type: 'invalid_request_error',
    param: 'messages',
    code: 'context_length_exceeded',
  },
};
const RESPONSES_TOO_LONG = {
  error: {
    message: 'Your input exceeds the context window of this model. Please adjust your input and try again.',
    type: 'invalid_request_error',
    param: 'input',
    code: 'context_length_exceeded',
  },
};

async function thrown(f: () => Promise<unknown>): Promise<unknown> {
  try {
    await f();
  } catch (err) {
    return err;
  }
  throw new Error('expected the call to throw');
}

describe('contextOverflow on what the SDKs throw', () => {
  const messages: Message[] = [{ role: 'user', parts: [{ type: 'text', text: 'hello' }] }];

  it('Anthropic SDK BadRequestError: both overflow messages, numbers extracted', async () => {
    const { anthropic } = clients();
    mode = { kind: 'overflow', status: 400, body: ANTHROPIC_TOO_LONG };
    const e1 = await thrown(() => anthropic.messages.create(toAnthropicRequest(messages, OPTIONS)));
    expect(e1).toBeInstanceOf(Anthropic.BadRequestError);
    expect(contextOverflow(e1)).toEqual({
      provider: 'anthropic',
      status: 400,
      message: 'prompt is too long: 215000 tokens > 200000 maximum',
      promptTokens: 215_000,
      limit: 200_000,
    });
    mode = { kind: 'overflow', status: 400, body: ANTHROPIC_WITH_MAX };
    const e2 = await thrown(() => anthropic.messages.create(toAnthropicRequest(messages, OPTIONS)));
    expect(contextOverflow(e2)).toMatchObject({
      provider: 'anthropic',
      status: 400,
      promptTokens: 187_254,
      maxTokens: 21_333,
      limit: 200_000,
    });
    // Not every 400 is an overflow.
    mode = {
      kind: 'overflow',
      status: 400,
      body: {
        type: 'error',
        error: {
          type: 'invalid_request_error',
          message: 'messages.1.content.0.tool_use.id: String should match pattern',
        },
      },
    };
    expect(
      contextOverflow(await thrown(() => anthropic.messages.create(toAnthropicRequest(messages, OPTIONS)))),
    ).toBeUndefined();
  });

  it('OpenAI SDK BadRequestError: Chat Completions and Responses', async () => {
    const { openai } = clients();
    mode = { kind: 'overflow', status: 400, body: CHAT_TOO_LONG };
    const e1 = await thrown(() =>
      openai.chat.completions.create(toOpenAIChatRequest(messages, { model: 'gpt-4o', maxOutputTokens: 8192 })),
    );
    expect(e1).toBeInstanceOf(OpenAI.BadRequestError);
    expect((e1 as InstanceType<typeof OpenAI.BadRequestError>).code).toBe('context_length_exceeded');
    expect(contextOverflow(e1)).toEqual({
      provider: 'openai',
      status: 400,
      message: CHAT_TOO_LONG.error.message,
      limit: 128_000,
      promptTokens: 131_820,
      maxTokens: 8_192,
    });
    mode = { kind: 'overflow', status: 400, body: RESPONSES_TOO_LONG };
    const e2 = await thrown(() =>
      openai.responses.create(toOpenAIResponsesRequest(messages, { model: 'gpt-5', maxOutputTokens: 8192 })),
    );
    expect(contextOverflow(e2)).toEqual({ provider: 'openai', status: 400, message: RESPONSES_TOO_LONG.error.message });
  });

  it('AI SDK APICallError (Anthropic and OpenAI providers), and RetryError wrapping it', async () => {
    mode = { kind: 'overflow', status: 400, body: ANTHROPIC_TOO_LONG };
    const claude = createAnthropic({ apiKey: 'sk-ant-test', baseURL: `${server.baseURL}/v1` });
    const e1 = await thrown(() => generateText({ model: claude('claude-sonnet-4-6'), prompt: 'hello', maxRetries: 0 }));
    expect((e1 as { name?: string }).name).toBe('AI_APICallError');
    expect(contextOverflow(e1)).toMatchObject({
      provider: 'anthropic',
      status: 400,
      promptTokens: 215_000,
      limit: 200_000,
    });

    mode = { kind: 'overflow', status: 400, body: RESPONSES_TOO_LONG };
    const gpt = createOpenAI({ apiKey: 'sk-test', baseURL: `${server.baseURL}/v1` });
    const e2 = await thrown(() => generateText({ model: gpt.responses('gpt-5'), prompt: 'hello', maxRetries: 0 }));
    expect(contextOverflow(e2)).toMatchObject({ provider: 'openai', status: 400 });

    // A 500 first (retried), then the overflow (not retryable): the AI SDK throws a RetryError around both.
    served = 0;
    mode = { kind: 'fail-then-overflow', body: CHAT_TOO_LONG };
    const e3 = await thrown(() => generateText({ model: gpt.chat('gpt-4o'), prompt: 'hello', maxRetries: 1 }));
    expect((e3 as { name?: string }).name).toBe('AI_RetryError');
    expect(contextOverflow(e3)).toMatchObject({
      provider: 'openai',
      status: 400,
      limit: 128_000,
      promptTokens: 131_820,
    });
  });
});
