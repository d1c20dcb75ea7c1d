import { ChatAnthropic } from '@langchain/anthropic';
import { AIMessage, HumanMessage, SystemMessage, ToolMessage } from '@langchain/core/messages';
import { describe, expect, it } from 'vitest';
import type { AnthropicRequestBody, ChatRequestBody } from '../formats/wire.js';
import { fingerprint, fromAnthropicBody, fromChatBody, fromLangChain, usageOf } from './langchain-messages.js';

const classes = { HumanMessage, AIMessage, ToolMessage, SystemMessage };

/** What ChatAnthropic sends for these messages: its request body, caught before it leaves the process. */
async function sentBy(system: SystemMessage, messages: unknown[]): Promise<Record<string, unknown>> {
  let body: Record<string, unknown> = {};
  const model = new ChatAnthropic({
    model: 'claude-sonnet-4-6',
    apiKey: 'sk-ant-test',
    maxRetries: 0,
    clientOptions: {
      fetch: async (_url: unknown, init?: { body?: unknown }) => {
        body = JSON.parse(String(init?.body));
        const reply = {
          id: 'msg_1',
          type: 'message',
          role: 'assistant',
          model: 'claude-sonnet-4-6',
          content: [{ type: 'text', text: 'ok' }],
          stop_reason: 'end_turn',
          stop_sequence: null,
          usage: { input_tokens: 10, output_tokens: 1 },
        };
        return new Response(JSON.stringify(reply), { status: 200, headers: { 'content-type': 'application/json' } });
      },
    },
  });
  await model.invoke([system, ...(messages as HumanMessage[])]);
  return body;
}

describe('an Anthropic body as LangChain messages', () => {
  const body: AnthropicRequestBody = {
    model: 'claude-sonnet-4-6',
    max_tokens: 4096,
    system: [{ type: 'text', text: 'You are a coding agent.', cache_control: { type: 'ephemeral' } }],
    messages: [
      {
        role: 'user',
        content: [
          { type: 'text', text: 'Look at this.' },
          { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } },
        ],
      },
      {
        role: 'assistant',
        content: [
          { type: 'thinking', thinking: 'The router first.', signature: 'EqSig' },
          { type: 'text', text: 'Reading it.' },
          { type: 'tool_use', id: 'toolu_1', name: 'read_file', input: { path: 'src/router.ts' } },
          { type: 'tool_use', id: 'toolu_2', name: 'bash', input: { command: 'npm test' } },
        ],
      },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'toolu_1', content: 'export const routes = [];' },
          {
            type: 'tool_result',
            tool_use_id: 'toolu_2',
            content: '1 failing',
            is_error: true,
            cache_control: { type: 'ephemeral' },
          },
        ],
      },
    ],
  };

  it('ChatAnthropic sends them back as the body: blocks, calls and results in place, the breakpoint kept', async () => {
    const before = JSON.stringify(body);
    const { system, messages } = fromAnthropicBody(body, classes);
    expect(messages.map((m) => m.type)).toEqual(['human', 'ai', 'tool', 'tool']);
    expect(messages.map((m) => (m as { name?: string }).name ?? null)).toEqual([null, null, 'read_file', 'bash']);
    const sent = await sentBy(system, messages);
    expect(sent.system).toEqual(body.system);
    // A ToolMessage carries no cache_control of its own: the breakpoint sits on its (last) content block; and
    // ChatAnthropic does not send a result's is_error.
    expect(sent.messages).toEqual([
      body.messages[0],
      body.messages[1],
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'toolu_1', content: 'export const routes = [];' },
          {
            type: 'tool_result',
            tool_use_id: 'toolu_2',
            content: [{ type: 'text', text: '1 failing', cache_control: { type: 'ephemeral' } }],
          },
        ],
      },
    ]);
    // The manager's body is its own (reused for the next request): untouched.
    expect(JSON.stringify(body)).toBe(before);
  });

  it('reads the messages back as abridge’s, and tells them apart by what the model reads', () => {
    const { messages } = fromAnthropicBody(body, classes);
    expect(messages.map(fromLangChain)).toEqual([
      {
        role: 'user',
        parts: [
          { type: 'text', text: 'Look at this.' },
          { type: 'image', mediaType: 'image/png', data: 'iVBORw0KGgo=' },
        ],
      },
      {
        role: 'assistant',
        parts: [
          { type: 'thinking', text: 'The router first.', signature: 'EqSig' },
          { type: 'text', text: 'Reading it.' },
          { type: 'tool-call', id: 'toolu_1', name: 'read_file', arguments: { path: 'src/router.ts' } },
          { type: 'tool-call', id: 'toolu_2', name: 'bash', arguments: { command: 'npm test' } },
        ],
      },
      {
        role: 'tool',
        parts: [
          {
            type: 'tool-result',
            callId: 'toolu_1',
            toolName: 'read_file',
            content: [{ type: 'text', text: 'export const routes = [];' }],
            isError: false,
          },
        ],
      },
      {
        role: 'tool',
        parts: [
          {
            type: 'tool-result',
            callId: 'toolu_2',
            toolName: 'bash',
            content: [{ type: 'text', text: '1 failing' }],
            isError: true,
          },
        ],
      },
    ]);
    const a = new AIMessage({ content: 'x', id: 'msg_1', name: 'model' });
    const b = new AIMessage({ content: 'x', id: 'run-2' });
    expect(fingerprint(a)).toBe(fingerprint(b));
    expect(fingerprint(a)).not.toBe(fingerprint(new HumanMessage('x')));
    expect(fingerprint(a)).not.toBe(fingerprint(new AIMessage({ content: 'y' })));
  });
});

describe('a Chat Completions body as LangChain messages', () => {
  it('system prompt apart, calls parsed, results named after their calls', () => {
    const body: ChatRequestBody = {
      model: 'gpt-5',
      messages: [
        { role: 'system', content: 'You are a coding agent.' },
        { role: 'system', content: 'Context: 41% full.' },
        { role: 'user', content: 'Fix the test.' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [
            { id: 'call_1', type: 'function', function: { name: 'bash', arguments: '{"command":"npm test"}' } },
          ],
        },
        { role: 'tool', tool_call_id: 'call_1', content: '1 failing' },
      ],
    };
    const { system, messages } = fromChatBody(body, classes);
    expect(system.text).toBe('You are a coding agent.\n\nContext: 41% full.');
    expect(messages.map((m) => m.type)).toEqual(['human', 'ai', 'tool']);
    expect((messages[1] as AIMessage).tool_calls).toEqual([
      { id: 'call_1', name: 'bash', args: { command: 'npm test' }, type: 'tool_call' },
    ]);
    expect(messages[1]!.content).toBe('');
    expect(messages[2]).toMatchObject({ tool_call_id: 'call_1', name: 'bash', content: '1 failing' });
  });
});

describe('usage', () => {
  it('usage_metadata counts cache reads and writes in input_tokens: abridge’s input is the rest', () => {
    const m = new AIMessage({
      content: 'ok',
      usage_metadata: {
        input_tokens: 12_000,
        output_tokens: 300,
        total_tokens: 12_300,
        input_token_details: { cache_read: 9_000, cache_creation: 2_500 },
        output_token_details: { reasoning: 100 },
      },
    });
    expect(usageOf(m)).toEqual({ input: 500, output: 300, cacheRead: 9_000, cacheWrite: 2_500, reasoning: 100 });
    const raw = new AIMessage({
      content: 'ok',
      response_metadata: { usage: { input_tokens: 40, output_tokens: 2, cache_read_input_tokens: 1000 } },
    });
    expect(usageOf(raw)).toEqual({ input: 40, output: 2, cacheRead: 1000, cacheWrite: 0 });
    expect(usageOf(new AIMessage('no usage'))).toBeUndefined();
  });

  it('reads a human message’s data-URL image and a failed tool result', () => {
    expect(
      fromLangChain(
        new HumanMessage({ content: [{ type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } }] }),
      ),
    ).toEqual({ role: 'user', parts: [{ type: 'image', mediaType: 'image/png', data: 'AAAA' }] });
    expect(fromLangChain(new ToolMessage({ tool_call_id: 'c', content: 'boom', status: 'error' }))).toEqual({
      role: 'tool',
      parts: [{ type: 'tool-result', callId: 'c', content: [{ type: 'text', text: 'boom' }], isError: true }],
    });
  });
});
