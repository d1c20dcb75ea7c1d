/**
 * `chatParams` / `responsesParams` with `{stream: true}`: the body abridge built goes to the official SDK's streaming
 * helpers (`.stream(…)`) and to `create(…)` answering a stream, against the loopback fake provider (SSE), and what
 * the stream assembles reads back with its usage — the bill `ContextManager.record` anchors on.
 */
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeProvider, type FakeProvider } from '../../test/support/fake-provider.js';
import { toRequest, type ChatRequestBody, type ResponsesRequestBody } from '../formats/wire.js';
import type { Message } from '../model/types.js';
import { chatParams, fromOpenAIChatCompletion, fromOpenAIResponse, responsesParams } from './openai.js';

const MESSAGES: Message[] = [{ role: 'user', parts: [{ type: 'text', text: 'List the files of the project.' }] }];
const TOOLS = [{ name: 'bash', description: 'Run a command', inputSchema: { type: 'object' } }];

describe('streaming bodies through the openai SDK (loopback, SSE)', () => {
  let server: FakeProvider;
  let client: OpenAI;
  beforeAll(async () => {
    server = await startFakeProvider({ window: 40_000, maxOutputTokens: 8_000 });
    client = new OpenAI({ baseURL: server.v1URL, apiKey: 'sk-test', maxRetries: 0 });
  });
  afterAll(async () => {
    await server?.close();
  });

  const chat = (): ChatRequestBody =>
    toRequest(MESSAGES, 'openai-chat', { model: 'gpt-5', maxOutputTokens: 1024, system: 'Be brief.', tools: TOOLS });
  const responses = (): ResponsesRequestBody =>
    toRequest(MESSAGES, 'openai-responses', {
      model: 'gpt-5',
      maxOutputTokens: 1024,
      system: 'Be brief.',
      tools: TOOLS,
    });

  it('chatParams(request, {stream: true}) asks for a stream and its usage; without it, the body is unchanged', () => {
    const body = chatParams(chat(), { stream: true });
    expect(body.stream).toBe(true);
    expect(body.stream_options).toEqual({ include_usage: true });
    const plain = chatParams(chat());
    expect('stream' in plain).toBe(false);
    expect('stream_options' in plain).toBe(false);
    expect(chatParams(chat(), { stream: false })).toEqual(plain);
    // A request's own stream_options are kept.
    const own = chatParams({ ...chat(), stream_options: { include_usage: false } } as ChatRequestBody, {
      stream: true,
    });
    expect(own.stream_options).toEqual({ include_usage: false });
    const r = responsesParams(responses(), { stream: true });
    expect(r.stream).toBe(true);
    expect('stream_options' in r).toBe(false);
    expect('stream' in responsesParams(responses())).toBe(false);
  });

  it('chat.completions.stream(chatParams(request, {stream: true})) assembles a completion with its usage', async () => {
    const completion = await client.chat.completions.stream(chatParams(chat(), { stream: true })).finalChatCompletion();
    const read = fromOpenAIChatCompletion(completion);
    expect(read.message.role).toBe('assistant');
    expect(read.usage?.input).toBeGreaterThan(0);
    expect(server.requests.at(-1)?.refused).toBeUndefined();
  });

  it('chat.completions.create(chatParams(request, {stream: true})) answers chunks, the last with the usage', async () => {
    let usage: OpenAI.CompletionUsage | undefined;
    for await (const chunk of await client.chat.completions.create(chatParams(chat(), { stream: true })))
      usage = chunk.usage ?? usage;
    expect(usage?.prompt_tokens).toBeGreaterThan(0);
  });

  it('responses.stream(responsesParams(request, {stream: true})) and create(…, {stream: true}) carry the usage', async () => {
    const response = await client.responses.stream(responsesParams(responses(), { stream: true })).finalResponse();
    const read = fromOpenAIResponse(response);
    expect(read.message.role).toBe('assistant');
    expect(read.usage?.input).toBeGreaterThan(0);
    let completed: OpenAI.Responses.Response | undefined;
    for await (const event of await client.responses.create(responsesParams(responses(), { stream: true })))
      if (event.type === 'response.completed') completed = event.response;
    expect(completed?.usage?.input_tokens).toBeGreaterThan(0);
    expect(server.requests.filter((r) => r.refused)).toEqual([]);
  });
});
