/**
 * The fake provider against the official SDKs (their own parsing: `stream()` helpers, `finalMessage()`,
 * `finalChatCompletion()`, `finalResponse()`) and the AI SDK 6 providers (`generateText` / `streamText` with tools),
 * every refusal through the SDK's error classes, the bill and the caching numbers.
 */
import { createAnthropic } from '@ai-sdk/anthropic';
import { createOpenAI } from '@ai-sdk/openai';
import Anthropic from '@anthropic-ai/sdk';
import { APICallError, generateText, stepCountIs, streamText, tool } from 'ai';
import OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { bash, readFile } from '../../examples/workspace.js';
import {
  o200k,
  SCRIPT_COMMANDS,
  SCRIPT_PATHS,
  signThinking,
  startFakeProvider,
  type FakeProvider,
  type FakeProviderOptions,
} from './fake-provider.js';

const MODEL = 'claude-sonnet-4-6';
const open: FakeProvider[] = [];
async function fake(options: Partial<FakeProviderOptions> = {}): Promise<FakeProvider> {
  const f = await startFakeProvider({ window: 200_000, ...options });
  open.push(f);
  return f;
}
afterEach(async () => {
  while (open.length) await open.pop()!.close();
});

const anthropicClient = (f: FakeProvider) =>
  new Anthropic({ baseURL: f.baseURL, apiKey: 'sk-ant-test', maxRetries: 0, timeout: 60_000 });
const openaiClient = (f: FakeProvider) => new OpenAI({ baseURL: f.v1URL, apiKey: 'sk-test', maxRetries: 0 });

const anthropicTools: Anthropic.Tool[] = [
  {
    name: 'read_file',
    description: 'Read a file of the workspace',
    input_schema: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
  },
  {
    name: 'bash',
    description: 'Run a shell command',
    input_schema: { type: 'object', properties: { command: { type: 'string' } }, required: ['command'] },
  },
];
const chatTools: OpenAI.Chat.ChatCompletionTool[] = anthropicTools.map((t) => ({
  type: 'function',
  function: { name: t.name, description: t.description!, parameters: t.input_schema as Record<string, unknown> },
}));
const responsesTools: OpenAI.Responses.FunctionTool[] = anthropicTools.map((t) => ({
  type: 'function',
  name: t.name,
  description: t.description!,
  parameters: t.input_schema as Record<string, unknown>,
  strict: false,
}));

function runTool(name: string, input: Record<string, unknown>): { output: string; isError: boolean } {
  return name === 'read_file' ? readFile(String(input.path)) : bash(String(input.command));
}

async function expectRejects(
  p: Promise<unknown>,
  cls: new (...a: never[]) => Error,
  status: number,
  message: string,
): Promise<Record<string, unknown>> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(cls);
  expect((err as { status?: number }).status).toBe(status);
  expect((err as Error).message).toContain(message);
  return err as Record<string, unknown>;
}

const lastRefusal = (f: FakeProvider) => f.requests.at(-1)!.refused;

describe('Anthropic Messages through @anthropic-ai/sdk', () => {
  it('answers with a tool call and a text, and reports the recorded bill', async () => {
    const f = await fake();
    const msg = await anthropicClient(f).messages.create({
      model: MODEL,
      max_tokens: 4000,
      system: 'You are a coding agent.',
      tools: anthropicTools,
      messages: [{ role: 'user', content: 'Fix the failing test.' }],
    });
    expect(msg.stop_reason).toBe('tool_use');
    expect(msg.content.map((b) => b.type)).toEqual(['text', 'tool_use']);
    const call = msg.content[1] as Anthropic.ToolUseBlock;
    expect(call).toMatchObject({ name: 'read_file', input: { path: SCRIPT_PATHS[0] } });
    expect(call.id).toMatch(/^toolu_01[0-9A-Za-z]{22}$/);
    const rec = f.requests[0]!;
    expect(rec.refused).toBeUndefined();
    expect(msg.usage.input_tokens).toBe(rec.usage!.uncachedInputTokens);
    expect(msg.usage.input_tokens).toBe(rec.promptTokens);
    expect(msg.usage.output_tokens).toBe(rec.usage!.outputTokens);
  });

  it('streams the same content: text_delta, input_json_delta and usage in message_delta, parsed by MessageStream', async () => {
    const f = await fake();
    const params = {
      model: MODEL,
      max_tokens: 4000,
      tools: anthropicTools,
      messages: [{ role: 'user' as const, content: 'Fix the failing test.' }],
    };
    const plain = await anthropicClient(f).messages.create(params);
    const stream = anthropicClient(f).messages.stream(params);
    const types: string[] = [];
    stream.on('streamEvent', (e) => types.push(e.type === 'content_block_delta' ? e.delta.type : e.type));
    const streamed = await stream.finalMessage();
    expect(types).toContain('input_json_delta');
    expect(types).toContain('text_delta');
    expect(types.at(-1)).toBe('message_stop');
    const strip = (m: Anthropic.Message) => m.content.map((b) => (b.type === 'tool_use' ? { ...b, id: '' } : b));
    expect(strip(streamed)).toEqual(strip(plain));
    expect(streamed.stop_reason).toBe('tool_use');
    expect(streamed.usage.output_tokens).toBe(f.requests[1]!.usage!.outputTokens);
    expect(streamed.usage.input_tokens).toBe(f.requests[1]!.usage!.uncachedInputTokens);
  });

  it('runs a whole agent loop against the workspace: tool turns, then a final answer, nothing refused', async () => {
    const f = await fake({ script: { toolTurns: 5, marker: 'Fix the failing test' } });
    const client = anthropicClient(f);
    const messages: Anthropic.MessageParam[] = [{ role: 'user', content: 'Go.' }];
    for (let i = 0; i < 10; i++) {
      const msg = await client.messages
        .stream({
          model: MODEL,
          max_tokens: 8000,
          system: 'Task: Fix the failing test.',
          tools: anthropicTools,
          messages,
        })
        .finalMessage();
      messages.push({ role: 'assistant', content: msg.content });
      if (msg.stop_reason !== 'tool_use') break;
      const results = msg.content
        .filter((b): b is Anthropic.ToolUseBlock => b.type === 'tool_use')
        .map((b) => {
          const r = runTool(b.name, b.input as Record<string, unknown>);
          return { type: 'tool_result' as const, tool_use_id: b.id, content: r.output, is_error: r.isError };
        });
      messages.push({ role: 'user', content: results });
    }
    expect(f.requests.filter((r) => r.refused)).toEqual([]);
    expect(f.requests.map((r) => r.assistantTurns)).toEqual([0, 1, 2, 3, 4, 5]);
    expect(f.requests.every((r) => r.markerInSystem === true)).toBe(true);
    expect(f.requests.at(-1)!.answer!.toolCalls).toBeUndefined();
    // Turn 2 (the third request) answers with two parallel calls.
    expect(f.requests[2]!.answer!.toolCalls!.map((c) => c.name)).toEqual(['read_file', 'bash']);
    // The prompt grows with every 20-40 KB tool result.
    const prompts = f.requests.map((r) => r.promptTokens!);
    for (let i = 1; i < prompts.length; i++) expect(prompts[i]!).toBeGreaterThan(prompts[i - 1]! + 4000);
  });

  it('refuses a naive agent (no context management) once its history outgrows a 40,000-token window', async () => {
    const f = await fake({ window: 40_000, maxOutputTokens: 64_000, script: { toolTurns: 50 } });
    const client = anthropicClient(f);
    const messages: Anthropic.MessageParam[] = [{ role: 'user', content: 'Fix the failing test.' }];
    let error: unknown;
    for (let i = 0; i < 50 && !error; i++) {
      try {
        const msg = await client.messages.create({ model: MODEL, max_tokens: 8000, tools: anthropicTools, messages });
        messages.push({ role: 'assistant', content: msg.content });
        const calls = msg.content.filter((b): b is Anthropic.ToolUseBlock => b.type === 'tool_use');
        messages.push({
          role: 'user',
          content: calls.map((b) => ({
            type: 'tool_result' as const,
            tool_use_id: b.id,
            content: runTool(b.name, b.input as Record<string, unknown>).output,
          })),
        });
      } catch (e) {
        error = e;
      }
    }
    expect(error).toBeInstanceOf(Anthropic.BadRequestError);
    const refused = f.requests.filter((r) => r.refused);
    expect(refused.length).toBe(1);
    expect(refused[0]!.index).toBeGreaterThanOrEqual(2);
    expect(refused[0]!.index).toBeLessThanOrEqual(6);
    expect(refused[0]!.refused!.message).toMatch(
      /^(input length and `max_tokens` exceed context limit: \d+ \+ 8000 > 40000|prompt is too long: \d+ tokens > 40000 maximum)/,
    );
  });

  it('emits signed thinking when thinking is enabled, accepts it back, and refuses it altered or unsigned', async () => {
    const f = await fake();
    const client = anthropicClient(f);
    const base = {
      model: MODEL,
      max_tokens: 8000,
      thinking: { type: 'enabled' as const, budget_tokens: 2000 },
      tools: anthropicTools,
    };
    const first = await client.messages
      .stream({ ...base, messages: [{ role: 'user', content: 'Fix it.' }] })
      .finalMessage();
    expect(first.content[0]!.type).toBe('thinking');
    const thinking = first.content[0] as Anthropic.ThinkingBlock;
    expect(thinking.signature).toBe(signThinking(thinking.thinking));
    const call = first.content.find((b): b is Anthropic.ToolUseBlock => b.type === 'tool_use')!;
    const next = (content: Anthropic.ContentBlockParam[]): Anthropic.MessageParam[] => [
      { role: 'user', content: 'Fix it.' },
      { role: 'assistant', content },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id, content: 'ok' }] },
    ];
    const ok = await client.messages.create({
      ...base,
      messages: next(first.content as Anthropic.ContentBlockParam[]),
    });
    expect(ok.content[0]!.type).toBe('thinking');
    // Thinking of the current tool-use loop is billed as input.
    const withThinking = f.requests[1]!.promptTokens!;

    const altered = [
      { ...thinking, thinking: thinking.thinking + ' (edited)' },
      ...first.content.slice(1),
    ] as Anthropic.ContentBlockParam[];
    await expectRejects(
      client.messages.create({ ...base, messages: next(altered) }),
      Anthropic.BadRequestError,
      400,
      'messages.1.content.0: Invalid `signature` in `thinking` block',
    );
    const unsigned = [
      { type: 'thinking', thinking: thinking.thinking },
      ...first.content.slice(1),
    ] as Anthropic.ContentBlockParam[];
    await expectRejects(
      client.messages.create({ ...base, messages: next(unsigned) }),
      Anthropic.BadRequestError,
      400,
      'messages.1.content.0.thinking.signature: Field required',
    );
    const dropped = first.content.slice(1) as Anthropic.ContentBlockParam[];
    await expectRejects(
      client.messages.create({ ...base, messages: next(dropped) }),
      Anthropic.BadRequestError,
      400,
      'messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found `text`. When `thinking` is enabled, a final `assistant` message must start with a thinking block',
    );
    // Without thinking enabled, the same history without the thinking block is fine and bills less.
    const { thinking: _t, ...noThinking } = base;
    await client.messages.create({ ...noThinking, messages: next(dropped) });
    expect(f.requests.at(-1)!.promptTokens!).toBeLessThan(withThinking);
  });

  it('serves count_tokens with the same count as the bill', async () => {
    const f = await fake();
    const params = {
      model: MODEL,
      system: 'You are a coding agent.',
      tools: anthropicTools,
      messages: [{ role: 'user' as const, content: 'Fix the failing test.' }],
    };
    const counted = await anthropicClient(f).messages.countTokens(params);
    await anthropicClient(f).messages.create({ ...params, max_tokens: 100 });
    expect(counted.input_tokens).toBe(f.requests[1]!.promptTokens);
  });
});

describe('Anthropic refusals (real status, type and message)', () => {
  const user = (content: string): Anthropic.MessageParam => ({ role: 'user', content });
  const big = 'lorem ipsum dolor sit amet '.repeat(4000); // ~16k o200k tokens

  async function refused(f: FakeProvider, body: Record<string, unknown>, message: string | RegExp): Promise<void> {
    const err = await anthropicClient(f)
      .messages.create({
        model: MODEL,
        max_tokens: 1000,
        messages: [user('hi')],
        ...body,
      } as unknown as Anthropic.MessageCreateParamsNonStreaming)
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(err).toBeInstanceOf(Anthropic.BadRequestError);
    const e = err as InstanceType<typeof Anthropic.BadRequestError>;
    expect(e.status).toBe(400);
    const body400 = e.error as { type: string; error: { type: string; message: string } };
    expect(body400.type).toBe('error');
    expect(body400.error.type).toBe('invalid_request_error');
    if (typeof message === 'string') expect(body400.error.message).toBe(message);
    else expect(body400.error.message).toMatch(message);
    expect(lastRefusal(f)).toEqual({ status: 400, type: 'invalid_request_error', message: body400.error.message });
  }

  it('prompt alone over the window: prompt is too long', async () => {
    const f = await fake({ window: 10_000 });
    await refused(f, { messages: [user(big)] }, /^prompt is too long: \d+ tokens > 10000 maximum$/);
    expect(f.requests[0]!.promptTokens!).toBeGreaterThan(10_000);
  });

  it('prompt + max_tokens over the window: input length and `max_tokens` exceed context limit', async () => {
    const f = await fake({ window: 40_000 });
    await refused(
      f,
      { messages: [user(big)], max_tokens: 30_000 },
      /^input length and `max_tokens` exceed context limit: \d+ \+ 30000 > 40000, decrease input length or `max_tokens` and try again$/,
    );
    const p = f.requests[0]!.promptTokens!;
    expect(p + 30_000).toBeGreaterThan(40_000);
    expect(p).toBeLessThan(40_000);
  });

  it('max_tokens above the model cap', async () => {
    const f = await fake({ maxOutputTokens: 64_000, modelName: 'claude-sonnet-4-5-20250929' });
    await refused(
      f,
      { max_tokens: 100_000 },
      'max_tokens: 100000 > 64000, which is the maximum allowed number of output tokens for claude-sonnet-4-5-20250929',
    );
  });

  it('tool_use without its tool_result, and a tool_result without its tool_use', async () => {
    const f = await fake();
    const call = { type: 'tool_use', id: 'toolu_01A', name: 'bash', input: { command: 'ls' } };
    await refused(
      f,
      { tools: anthropicTools, messages: [user('go'), { role: 'assistant', content: [call] }, user('and?')] },
      'messages.2: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_01A. Each `tool_use` block must have a corresponding `tool_result` block in the next message.',
    );
    await refused(
      f,
      {
        tools: anthropicTools,
        messages: [
          user('go'),
          { role: 'assistant', content: [call] },
          {
            role: 'user',
            content: [
              { type: 'text', text: 'first' },
              { type: 'tool_result', tool_use_id: 'toolu_01A', content: 'x' },
            ],
          },
        ],
      },
      /^messages\.2: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_01A\./,
    );
    await refused(
      f,
      {
        tools: anthropicTools,
        messages: [
          user('go'),
          { role: 'assistant', content: 'ok' },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_01B', content: 'x' }] },
        ],
      },
      'messages.2.content.0: unexpected `tool_use_id` found in `tool_result` blocks: toolu_01B. Each `tool_result` block must have a corresponding `tool_use` block in the previous message.',
    );
    await refused(
      f,
      {
        messages: [
          user('go'),
          { role: 'assistant', content: [call] },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_01A', content: 'x' }] },
        ],
      },
      'Requests which include `tool_use` or `tool_result` blocks must define tools.',
    );
  });

  it('empty and whitespace-only text, empty content, first message not user, no messages', async () => {
    const f = await fake();
    await refused(
      f,
      { messages: [{ role: 'user', content: [{ type: 'text', text: '' }] }] },
      'messages: text content blocks must be non-empty',
    );
    await refused(
      f,
      { messages: [{ role: 'user', content: [{ type: 'text', text: ' \n ' }] }] },
      'messages: text content blocks must contain non-whitespace text',
    );
    await refused(
      f,
      { messages: [user('a'), { role: 'assistant', content: [] }, user('b')] },
      'messages.1: all messages must have non-empty content except for the optional final assistant message',
    );
    await refused(
      f,
      { messages: [{ role: 'assistant', content: 'hello' }, user('hi')] },
      'messages: first message must use the "user" role',
    );
    await refused(f, { messages: [] }, 'messages: at least one message is required');
  });

  it('more than 4 cache_control breakpoints, missing max_tokens, unknown fields', async () => {
    const f = await fake();
    const cc = { type: 'ephemeral' };
    await refused(
      f,
      {
        system: [1, 2, 3].map((i) => ({ type: 'text', text: `part ${i}`, cache_control: cc })),
        messages: [
          {
            role: 'user',
            content: [
              { type: 'text', text: 'a', cache_control: cc },
              { type: 'text', text: 'b', cache_control: cc },
            ],
          },
        ],
      },
      'A maximum of 4 blocks with cache_control may be provided. Found 5.',
    );
    await refused(f, { max_tokens: undefined }, 'max_tokens: Field required');
    await refused(f, { abridge_view: 1 }, 'abridge_view: Extra inputs are not permitted');
    await refused(
      f,
      { messages: [{ role: 'user', content: [{ type: 'text', text: 'a', id: 'p1' }] }] },
      'messages.0.content.0.text.id: Extra inputs are not permitted',
    );
  });

  it('refuses without an API key (401 authentication_error)', async () => {
    const f = await fake();
    const res = await fetch(`${f.baseURL}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({ model: MODEL, max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(res.status).toBe(401);
    expect(await res.json()).toMatchObject({ type: 'error', error: { type: 'authentication_error' } });
  });
});

describe('OpenAI Chat Completions through openai', () => {
  it('answers non-streaming and streaming alike; usage in the last chunk with include_usage', async () => {
    const f = await fake();
    const client = openaiClient(f);
    const params = {
      model: 'gpt-4.1',
      messages: [{ role: 'user' as const, content: 'Fix the failing test.' }],
      tools: chatTools,
    };
    const plain = await client.chat.completions.create(params);
    expect(plain.choices[0]!.finish_reason).toBe('tool_calls');
    const call = plain.choices[0]!.message.tool_calls![0]!;
    expect(call.type === 'function' && call.function).toMatchObject({
      name: 'read_file',
      arguments: JSON.stringify({ path: SCRIPT_PATHS[0] }),
    });
    expect(plain.usage).toMatchObject({
      prompt_tokens: f.requests[0]!.promptTokens,
      prompt_tokens_details: { cached_tokens: 0 },
    });

    const stream = client.chat.completions.stream({ ...params, stream_options: { include_usage: true } });
    const chunks: OpenAI.Chat.ChatCompletionChunk[] = [];
    stream.on('chunk', (c) => chunks.push(c));
    const final = await stream.finalChatCompletion();
    expect(final.choices[0]!.message.tool_calls!.map((c) => c.type === 'function' && c.function)).toEqual(
      plain.choices[0]!.message.tool_calls!.map((c) => c.type === 'function' && c.function),
    );
    expect(final.choices[0]!.message.content).toBe(plain.choices[0]!.message.content);
    expect(chunks.at(-1)!.choices).toEqual([]);
    expect(chunks.at(-1)!.usage!.completion_tokens).toBe(f.requests[1]!.usage!.outputTokens);
    expect(chunks.slice(0, -1).every((c) => c.usage === null)).toBe(true);
  });

  it('refuses overflow, broken pairing, the output cap and empty messages with the real bodies', async () => {
    const f = await fake({ window: 20_000, maxOutputTokens: 16_384 });
    const client = openaiClient(f);
    const big = 'lorem ipsum dolor sit amet '.repeat(3000);
    const overflow = await expectRejects(
      client.chat.completions.create({
        model: 'gpt-4.1',
        messages: [{ role: 'user', content: big }],
        max_tokens: 10_000,
      }),
      OpenAI.BadRequestError,
      400,
      "This model's maximum context length is 20000 tokens. However, you requested",
    );
    expect(overflow).toMatchObject({
      code: 'context_length_exceeded',
      param: 'messages',
      type: 'invalid_request_error',
    });
    const r0 = f.requests[0]!;
    expect(r0.refused).toMatchObject({ code: 'context_length_exceeded', param: 'messages' });
    expect(r0.refused!.message).toBe(
      `This model's maximum context length is 20000 tokens. However, you requested ${r0.promptTokens! + 10_000} tokens (${r0.promptTokens} in the messages, 10000 in the completion). Please reduce the length of the messages or completion.`,
    );
    await expectRejects(
      client.chat.completions.create({ model: 'gpt-4.1', messages: [{ role: 'user', content: big + big + big }] }),
      OpenAI.BadRequestError,
      400,
      'However, your messages resulted in',
    );
    const assistant: OpenAI.Chat.ChatCompletionMessageParam = {
      role: 'assistant',
      content: null,
      tool_calls: [
        { id: 'call_A', type: 'function', function: { name: 'bash', arguments: '{"command":"ls"}' } },
        { id: 'call_B', type: 'function', function: { name: 'bash', arguments: '{"command":"pwd"}' } },
      ],
    };
    await expectRejects(
      client.chat.completions.create({
        model: 'gpt-4.1',
        tools: chatTools,
        messages: [{ role: 'user', content: 'go' }, assistant, { role: 'tool', tool_call_id: 'call_A', content: 'x' }],
      }),
      OpenAI.BadRequestError,
      400,
      "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: call_B",
    );
    await expectRejects(
      client.chat.completions.create({
        model: 'gpt-4.1',
        tools: chatTools,
        messages: [
          { role: 'user', content: 'go' },
          { role: 'tool', tool_call_id: 'call_A', content: 'x' },
        ],
      }),
      OpenAI.BadRequestError,
      400,
      "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.",
    );
    await expectRejects(
      client.chat.completions.create({
        model: 'gpt-4.1',
        messages: [{ role: 'user', content: 'hi' }],
        max_tokens: 32_000,
      }),
      OpenAI.BadRequestError,
      400,
      'max_tokens is too large: 32000. This model supports at most 16384 completion tokens, whereas you provided 32000.',
    );
    await expectRejects(
      client.chat.completions.create({ model: 'gpt-4.1', messages: [] }),
      OpenAI.BadRequestError,
      400,
      "[] is too short - 'messages'",
    );
    expect(f.requests.every((r) => r.refused?.status === 400)).toBe(true);
  });
});

describe('OpenAI Responses through openai', () => {
  it('answers non-streaming and streaming alike (ResponseStream validates every event) and continues by previous_response_id', async () => {
    const f = await fake();
    const client = openaiClient(f);
    const params = {
      model: 'gpt-4.1',
      instructions: 'You are a coding agent.',
      input: 'Fix the failing test.',
      tools: responsesTools,
    };
    const plain = await client.responses.create(params);
    const calls = plain.output.filter((o) => o.type === 'function_call');
    expect(calls.map((c) => c.type === 'function_call' && [c.name, c.arguments])).toEqual([
      ['read_file', JSON.stringify({ path: SCRIPT_PATHS[0] })],
    ]);
    expect(plain.usage).toMatchObject({
      input_tokens: f.requests[0]!.promptTokens,
      input_tokens_details: { cached_tokens: 0 },
      output_tokens_details: { reasoning_tokens: 0 },
    });

    const stream = client.responses.stream(params);
    const types: string[] = [];
    stream.on('event', (e) => types.push(e.type));
    const final = await stream.finalResponse();
    expect(types).toEqual(
      expect.arrayContaining([
        'response.created',
        'response.output_item.added',
        'response.output_text.delta',
        'response.function_call_arguments.delta',
        'response.output_item.done',
        'response.completed',
      ]),
    );
    expect(final.output_text).toBe(plain.output_text);

    const call = calls[0]!;
    if (call.type !== 'function_call') throw new Error('expected a function call');
    const next = await client.responses.create({
      model: 'gpt-4.1',
      tools: responsesTools,
      previous_response_id: plain.id,
      input: [{ type: 'function_call_output', call_id: call.call_id, output: readFile(SCRIPT_PATHS[0]!).output }],
    });
    expect(next.output.some((o) => o.type === 'function_call')).toBe(true);
    expect(f.requests[2]!.assistantTurns).toBe(1);
    expect(f.requests[2]!.promptTokens!).toBeGreaterThan(f.requests[0]!.promptTokens! + 4000);
  });

  it('refuses overflow, calls without outputs, outputs without calls and unknown parameters', async () => {
    const f = await fake({ window: 20_000, maxOutputTokens: 4_000 });
    const client = openaiClient(f);
    const overflow = await expectRejects(
      client.responses.create({ model: 'gpt-4.1', input: 'lorem ipsum dolor sit amet '.repeat(4000) }),
      OpenAI.BadRequestError,
      400,
      'Your input exceeds the context window of this model. Please adjust your input and try again.',
    );
    expect(overflow).toMatchObject({ code: 'context_length_exceeded', param: 'input', type: 'invalid_request_error' });
    expect(f.requests[0]!.refused).toMatchObject({
      code: 'context_length_exceeded',
      param: 'input',
      type: 'invalid_request_error',
    });
    await expectRejects(
      client.responses.create({
        model: 'gpt-4.1',
        tools: responsesTools,
        input: [
          { role: 'user', content: 'go' },
          { type: 'function_call', call_id: 'call_X', name: 'bash', arguments: '{}' },
        ],
      }),
      OpenAI.BadRequestError,
      400,
      'No tool output found for function call call_X.',
    );
    await expectRejects(
      client.responses.create({
        model: 'gpt-4.1',
        tools: responsesTools,
        input: [
          { role: 'user', content: 'go' },
          { type: 'function_call_output', call_id: 'call_Y', output: 'x' },
        ],
      }),
      OpenAI.BadRequestError,
      400,
      'No tool call found for function call output with call_id call_Y.',
    );
    await expectRejects(
      client.responses.create({
        model: 'gpt-4.1',
        input: 'hi',
        abridge: true,
      } as unknown as OpenAI.Responses.ResponseCreateParamsNonStreaming),
      OpenAI.BadRequestError,
      400,
      "Unknown parameter: 'abridge'.",
    );
  });
});

describe('AI SDK 6 (generateText / streamText with tools)', () => {
  const tools = {
    read_file: tool({
      description: 'Read a file',
      inputSchema: z.object({ path: z.string() }),
      execute: async ({ path }) => readFile(path).output,
    }),
    bash: tool({
      description: 'Run a shell command',
      inputSchema: z.object({ command: z.string() }),
      execute: async ({ command }) => bash(command).output,
    }),
  };
  const prompt = 'Fix the failing test.';

  const providers = {
    anthropic: (f: FakeProvider) => createAnthropic({ baseURL: f.v1URL, apiKey: 'sk-ant-test' })(MODEL),
    'openai chat': (f: FakeProvider) => createOpenAI({ baseURL: f.v1URL, apiKey: 'sk-test' }).chat('gpt-4.1'),
    'openai responses': (f: FakeProvider) => createOpenAI({ baseURL: f.v1URL, apiKey: 'sk-test' }).responses('gpt-4.1'),
  };

  for (const [name, model] of Object.entries(providers)) {
    it(`${name}: generateText and streamText run tool steps to a final answer, nothing refused, usage as billed`, async () => {
      const f = await fake({ window: 400_000, script: { toolTurns: 2 } });
      const gen = await generateText({
        model: model(f),
        system: 'Task: fix it.',
        prompt,
        tools,
        stopWhen: stepCountIs(5),
        maxOutputTokens: 4000,
        maxRetries: 0,
      });
      expect(gen.steps.length).toBe(3);
      expect(gen.steps[0]!.toolCalls.map((c) => c.toolName)).toEqual(['read_file']);
      expect(gen.text).toMatch(/^Done\./);
      expect(f.requests.map((r) => r.refused)).toEqual([undefined, undefined, undefined]);
      expect(gen.totalUsage.inputTokens).toBe(f.requests.reduce((s, r) => s + r.usage!.promptTokens, 0));
      expect(gen.totalUsage.outputTokens).toBe(f.requests.reduce((s, r) => s + r.usage!.outputTokens, 0));

      const st = streamText({
        model: model(f),
        system: 'Task: fix it.',
        prompt,
        tools,
        stopWhen: stepCountIs(5),
        maxOutputTokens: 4000,
        maxRetries: 0,
      });
      const text = await st.text;
      expect(text).toBe(gen.text);
      expect((await st.steps).length).toBe(3);
      expect(f.requests.slice(3).every((r) => r.stream && !r.refused)).toBe(true);
      expect((await st.totalUsage).inputTokens).toBe(
        f.requests.slice(3).reduce((s, r) => s + r.usage!.promptTokens, 0),
      );
    });
  }

  it('anthropic: the provider default max_tokens (64,000 for Sonnet 4.5) overflows a 40,000-token window', async () => {
    const f = await fake({ window: 40_000 });
    const err = await generateText({
      model: createAnthropic({ baseURL: f.v1URL, apiKey: 'k' })('claude-sonnet-4-5'),
      prompt,
      maxRetries: 0,
    }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(APICallError.isInstance(err)).toBe(true);
    expect((err as APICallError).statusCode).toBe(400);
    expect(f.requests[0]!.maxOutputTokens).toBe(64_000);
    expect(f.requests[0]!.refused!.message).toMatch(
      /^input length and `max_tokens` exceed context limit: \d+ \+ 64000 > 40000/,
    );
  });
});

describe('output limits', () => {
  it('a max output below the answer cuts it: max_tokens / length / incomplete, output billed at the cap, no tool call', async () => {
    const f = await fake();
    const msg = await anthropicClient(f).messages.create({
      model: MODEL,
      max_tokens: 5,
      tools: anthropicTools,
      messages: [{ role: 'user', content: 'go' }],
    });
    expect(msg.stop_reason).toBe('max_tokens');
    expect(msg.content.map((b) => b.type)).toEqual(['text']);
    expect(msg.usage.output_tokens).toBe(5);
    const chat = await openaiClient(f).chat.completions.create({
      model: 'gpt-4.1',
      max_tokens: 5,
      tools: chatTools,
      messages: [{ role: 'user', content: 'go' }],
    });
    expect(chat.choices[0]!.finish_reason).toBe('length');
    expect(chat.usage!.completion_tokens).toBe(5);
    const stream = openaiClient(f).responses.stream({
      model: 'gpt-4.1',
      max_output_tokens: 16,
      tools: responsesTools,
      input: 'go',
    });
    const res = await stream.finalResponse();
    expect(res.status).toBe('incomplete');
    expect(res.incomplete_details).toEqual({ reason: 'max_output_tokens' });
    expect(res.output.map((o) => o.type)).toEqual(['message']);
    expect(res.usage!.output_tokens).toBe(16);
    await expectRejects(
      openaiClient(f).responses.create({ model: 'gpt-4.1', max_output_tokens: 8, input: 'go' }),
      OpenAI.BadRequestError,
      400,
      "Invalid 'max_output_tokens': integer below minimum value. Expected a value >= 16, but got 8 instead.",
    );
  });

  it('empty arrays the OpenAI APIs refuse: tool_calls [] on Chat, input [] on Responses', async () => {
    const f = await fake();
    await expectRejects(
      openaiClient(f).chat.completions.create({
        model: 'gpt-4.1',
        tools: chatTools,
        messages: [
          { role: 'user', content: 'go' },
          { role: 'assistant', content: 'ok', tool_calls: [] },
          { role: 'user', content: 'go on' },
        ],
      }),
      OpenAI.BadRequestError,
      400,
      "Invalid 'messages[1].tool_calls': empty array. Expected an array with minimum length 1, but got an empty array instead.",
    );
    expect(f.requests[0]!.refused).toMatchObject({ code: 'empty_array', param: 'messages[1].tool_calls' });
    await expectRejects(
      openaiClient(f).responses.create({ model: 'gpt-4.1', input: [] }),
      OpenAI.BadRequestError,
      400,
      "Invalid 'input': empty array.",
    );
  });
});

describe('billing and caching', () => {
  const system = 'You are a careful coding agent working in a TypeScript repository. '.repeat(120); // ~1.7k tokens
  const turn = (i: number): Anthropic.MessageParam[] => [
    {
      role: 'assistant',
      content: [
        {
          type: 'tool_use',
          id: `toolu_${i}`,
          name: 'bash',
          input: { command: SCRIPT_COMMANDS[i % SCRIPT_COMMANDS.length] },
        },
      ],
    },
    {
      role: 'user',
      content: [
        {
          type: 'tool_result',
          tool_use_id: `toolu_${i}`,
          content: bash(SCRIPT_COMMANDS[i % SCRIPT_COMMANDS.length]!).output.slice(0, 4000),
        },
      ],
    },
  ];

  it('is deterministic and within a sane ratio of a plain o200k count, scaled by tokenRatio', async () => {
    const text = readFile('src/server/router.ts').output;
    const params = { model: MODEL, max_tokens: 100, messages: [{ role: 'user' as const, content: text }] };
    const a = await fake();
    await anthropicClient(a).messages.create(params);
    await anthropicClient(a).messages.create(params);
    const b = await fake();
    await anthropicClient(b).messages.create(params);
    const counts = [...a.requests, ...b.requests].map((r) => r.promptTokens!);
    expect(new Set(counts).size).toBe(1);
    const plain = o200k(text);
    expect(counts[0]! / plain).toBeGreaterThan(1.1);
    expect(counts[0]! / plain).toBeLessThan(1.2);
    const c = await fake({ tokenRatio: 1 });
    await anthropicClient(c).messages.create(params);
    expect(c.requests[0]!.promptTokens! - plain).toBeGreaterThan(0);
    expect(c.requests[0]!.promptTokens! - plain).toBeLessThan(20);
    // OpenAI wires default to ratio 1.0: the cookbook framing only.
    const d = await fake();
    await openaiClient(d).chat.completions.create({ model: 'gpt-4.1', messages: [{ role: 'user', content: text }] });
    expect(d.requests[0]!.promptTokens).toBe(plain + 6);
  });

  it('bills images by their documented rules, from their real dimensions', async () => {
    // A PNG signature and IHDR chunk are all the dimensions need: 1000×500.
    const png = Buffer.alloc(33);
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]).copy(png, 0);
    png.writeUInt32BE(13, 8);
    png.write('IHDR', 12, 'latin1');
    png.writeUInt32BE(1000, 16);
    png.writeUInt32BE(500, 20);
    png.writeUInt8(8, 24);
    png.writeUInt8(6, 25);
    const data = png.toString('base64');
    const f = await fake();
    const client = anthropicClient(f);
    const text = { type: 'text' as const, text: 'What is in this screenshot?' };
    await client.messages.create({ model: MODEL, max_tokens: 10, messages: [{ role: 'user', content: [text] }] });
    await client.messages.create({
      model: MODEL,
      max_tokens: 10,
      messages: [
        { role: 'user', content: [{ type: 'image', source: { type: 'base64', media_type: 'image/png', data } }, text] },
      ],
    });
    // Anthropic: width × height / 750 = 667, plus the block framing (2).
    expect(f.requests[1]!.promptTokens! - f.requests[0]!.promptTokens!).toBe(667 + 2);
    await expectRejects(
      client.messages.create({
        model: MODEL,
        max_tokens: 10,
        messages: [
          {
            role: 'user',
            content: [
              { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'bm90IGFuIGltYWdl' } },
              text,
            ],
          },
        ],
      }),
      Anthropic.BadRequestError,
      400,
      'messages.0.content.0.image.source.base64.data: Could not process image',
    );
    const o = openaiClient(f);
    await o.chat.completions.create({
      model: 'gpt-4.1',
      messages: [{ role: 'user', content: [{ type: 'text', text: text.text }] }],
    });
    await o.chat.completions.create({
      model: 'gpt-4.1',
      messages: [
        {
          role: 'user',
          content: [
            { type: 'image_url', image_url: { url: `data:image/png;base64,${data}` } },
            { type: 'text', text: text.text },
          ],
        },
      ],
    });
    // OpenAI (high detail): 2 × 1 tiles of 512 px → 85 + 2 · 170.
    expect(f.requests[4]!.promptTokens! - f.requests[3]!.promptTokens!).toBe(85 + 340);
  });

  it('Anthropic: a breakpoint writes the prefix, the next request reads it and writes only what it adds', async () => {
    const f = await fake();
    const client = anthropicClient(f);
    const cc = { type: 'ephemeral' as const };
    const withBreakpoint = (messages: Anthropic.MessageParam[]): Anthropic.MessageParam[] => {
      const copy = structuredClone(messages);
      const last = copy.at(-1)!;
      const blocks = typeof last.content === 'string' ? [{ type: 'text' as const, text: last.content }] : last.content;
      (blocks.at(-1) as { cache_control?: unknown }).cache_control = cc;
      last.content = blocks;
      return copy;
    };
    const history: Anthropic.MessageParam[] = [{ role: 'user', content: 'Fix the failing test.' }];
    const params = () => ({
      model: MODEL,
      max_tokens: 1000,
      tools: anthropicTools,
      system: [{ type: 'text' as const, text: system, cache_control: cc }],
      messages: withBreakpoint(history),
    });

    const r1 = await client.messages.create(params());
    const u1 = f.requests[0]!.usage!;
    expect(r1.usage.cache_read_input_tokens).toBe(0);
    expect(u1.cacheWriteTokens).toBe(u1.promptTokens - u1.uncachedInputTokens);
    expect(u1.uncachedInputTokens).toBe(0); // the breakpoint is on the last block: the whole prompt is written
    history.push(...turn(1));
    await client.messages.create(params());
    const u2 = f.requests[1]!.usage!;
    // Read: everything up to the previous breakpoint (the first request's whole prompt).
    expect(u2.cacheReadTokens).toBe(u1.cacheWriteTokens);
    expect(u2.cacheWriteTokens).toBe(u2.promptTokens - u2.cacheReadTokens - u2.uncachedInputTokens);
    expect(u2.cacheWriteTokens).toBeGreaterThan(500);
    // The same request again reads it all.
    await client.messages.create(params());
    const u3 = f.requests[2]!.usage!;
    expect(u3.cacheReadTokens).toBe(u2.cacheReadTokens + u2.cacheWriteTokens);
    expect(u3.cacheWriteTokens).toBe(0);
    // A changed system prompt invalidates everything after it.
    await client.messages.create({
      ...params(),
      system: [{ type: 'text', text: system + ' Changed.', cache_control: cc }],
    });
    expect(f.requests[3]!.usage!.cacheReadTokens).toBe(0);
    // Below the minimum cacheable length nothing is written.
    const small = await fake();
    await anthropicClient(small).messages.create({
      model: MODEL,
      max_tokens: 10,
      system: [{ type: 'text', text: 'short', cache_control: cc }],
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(small.requests[0]!.usage!.cacheWriteTokens).toBe(0);
  });

  it('OpenAI: automatic prefix caching above 1,024 tokens in 128-token steps', async () => {
    const f = await fake();
    const client = openaiClient(f);
    const messages: OpenAI.Chat.ChatCompletionMessageParam[] = [
      { role: 'system', content: system },
      { role: 'user', content: 'Fix the failing test.' },
    ];
    await client.chat.completions.create({ model: 'gpt-4.1', messages });
    const first = f.requests[0]!;
    expect(first.usage!.cacheReadTokens).toBe(0);
    const second = await client.chat.completions.create({
      model: 'gpt-4.1',
      messages: [...messages, { role: 'assistant', content: 'Looking.' }, { role: 'user', content: 'Go on.' }],
    });
    const cached = second.usage!.prompt_tokens_details!.cached_tokens!;
    expect(cached).toBeGreaterThanOrEqual(1024);
    expect((cached - 1024) % 128).toBe(0);
    // The common prefix is the system and first user messages: at most the first prompt minus its reply priming.
    expect(cached).toBeLessThanOrEqual(first.promptTokens! - 3);
    expect(cached).toBeGreaterThan(first.promptTokens! - 3 - 128);
    await client.chat.completions.create({ model: 'gpt-4.1', messages: [{ role: 'user', content: 'short' }] });
    await client.chat.completions.create({ model: 'gpt-4.1', messages: [{ role: 'user', content: 'short' }] });
    expect(f.requests[3]!.usage!.cacheReadTokens).toBe(0);
  });
});

describe('the scripted model', () => {
  it('records whether the marker is in the system prompt, and lets a hook answer', async () => {
    const f = await fake({
      script: {
        marker: 'TASK-42',
        answer: (ctx) =>
          ctx.messages.length === 1 && ctx.system.includes('special')
            ? { text: `hook saw ${ctx.tools.length} tools` }
            : undefined,
      },
    });
    const client = anthropicClient(f);
    const special = await client.messages.create({
      model: MODEL,
      max_tokens: 100,
      system: 'special TASK-42',
      tools: anthropicTools,
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(special.content).toEqual([{ type: 'text', text: 'hook saw 2 tools' }]);
    await client.messages.create({
      model: MODEL,
      max_tokens: 100,
      system: 'no marker here',
      tools: anthropicTools,
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(f.requests.map((r) => r.markerInSystem)).toEqual([true, false]);
  });

  it('calls only tools the request defines, with the argument name their schema declares', async () => {
    const f = await fake();
    const msg = await anthropicClient(f).messages.create({
      model: MODEL,
      max_tokens: 100,
      tools: [
        { name: 'bash', input_schema: { type: 'object', properties: { cmd: { type: 'string' } }, required: ['cmd'] } },
      ],
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(msg.content.filter((b) => b.type === 'tool_use').map((b) => b.type === 'tool_use' && b.input)).toEqual([
      { cmd: SCRIPT_COMMANDS[0] },
    ]);
    const none = await anthropicClient(f).messages.create({
      model: MODEL,
      max_tokens: 100,
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(none.stop_reason).toBe('end_turn');
  });
});
