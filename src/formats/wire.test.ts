import { describe, expect, it } from 'vitest';
import { AbridgeError } from '../errors.js';
import { anthropicRequestProblems } from './anthropic.js';
import { openaiChatRequestProblems } from './openai-chat.js';
import { openaiResponsesRequestProblems } from './openai-responses.js';
import type { Message, TextPart } from '../model/types.js';
import { PromptBuilder } from '../prompt/builder.js';
import { TokenCounter } from '../tokens/counter.js';
import { contextOverflow, fromResponse, promptRequestOptions, toRequest, type RequestOptions } from './wire.js';
import { ANTHROPIC_MESSAGE, CHAT_COMPLETION, PNG, RESPONSES_RESPONSE } from '../../test/support/provider-responses.js';

const text = (t: string): TextPart => ({ type: 'text', text: t });

/** A conversation with everything: system, image, signed and redacted thinking, parallel calls, an image result. */
const CONVERSATION: Message[] = [
  { role: 'system', parts: [text('Project rules: run the tests before you commit.')] },
  {
    role: 'user',
    parts: [
      text('Fix the failing parser test. Screenshot attached.'),
      { type: 'image', mediaType: 'image/png', data: PNG, byteSize: 70 },
    ],
  },
  {
    role: 'assistant',
    provider: 'anthropic',
    model: 'claude-sonnet-4-5',
    parts: [
      { type: 'thinking', text: 'Read the test and the parser.', signature: 'EqQBCkYIBxgCKkB' },
      { type: 'thinking', text: '', signature: 'RWRhY3RlZA==', redacted: true },
      { type: 'tool-call', id: 'toolu_01A', name: 'read', arguments: { path: 'src/parser.ts' } },
      { type: 'tool-call', id: 'toolu_01B', name: 'read', arguments: { path: 'src/parser.test.ts' } },
    ],
  },
  {
    role: 'tool',
    parts: [
      {
        type: 'tool-result',
        callId: 'toolu_01A',
        toolName: 'read',
        content: [text('export function parse() {}')],
        isError: false,
      },
      {
        type: 'tool-result',
        callId: 'toolu_01B',
        toolName: 'read',
        content: [text('test("parse")'), { type: 'image', mediaType: 'image/png', data: PNG, byteSize: 70 }],
        isError: false,
      },
    ],
  },
  {
    role: 'assistant',
    provider: 'anthropic',
    model: 'claude-sonnet-4-5',
    parts: [text('The parser returns nothing; fixing it.')],
  },
  { role: 'user', parts: [text('Go ahead.')] },
];

const OPTIONS: RequestOptions = {
  model: 'claude-sonnet-4-5',
  maxOutputTokens: 8192,
  system: [{ text: 'You are a coding agent.', cache: true }, { text: 'Context: 41% full.' }],
  tools: [
    {
      name: 'read',
      description: 'Read a file',
      inputSchema: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
    },
    { name: 'grep', inputSchema: { type: 'object', properties: { pattern: { type: 'string' } } }, deferred: true },
  ],
  cacheTools: true,
  cacheConversation: true,
  extra: { temperature: 0.2 },
};

describe('toRequest: anthropic', () => {
  it('system blocks (caller first, then the view), tools, breakpoints, thinking, parallel calls, images', () => {
    const body = toRequest(CONVERSATION, 'anthropic', OPTIONS);
    expect(anthropicRequestProblems(body)).toEqual([]);
    expect(body.model).toBe('claude-sonnet-4-5');
    expect(body.max_tokens).toBe(8192);
    expect(body.temperature).toBe(0.2);
    expect(body.system).toEqual([
      { type: 'text', text: 'You are a coding agent.', cache_control: { type: 'ephemeral' } },
      { type: 'text', text: 'Context: 41% full.' },
      { type: 'text', text: 'Project rules: run the tests before you commit.' },
    ]);
    // The breakpoint goes on the last tool in the prompt: the deferred one is not.
    expect(body.tools).toEqual([
      {
        name: 'read',
        description: 'Read a file',
        input_schema: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
        cache_control: { type: 'ephemeral' },
      },
      {
        name: 'grep',
        input_schema: { type: 'object', properties: { pattern: { type: 'string' } } },
        defer_loading: true,
      },
    ]);
    expect(body.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user', 'assistant', 'user']);
    expect(body.messages[0]!.content[1]).toEqual({
      type: 'image',
      source: { type: 'base64', media_type: 'image/png', data: PNG },
    });
    expect(body.messages[1]!.content).toEqual([
      { type: 'thinking', thinking: 'Read the test and the parser.', signature: 'EqQBCkYIBxgCKkB' },
      { type: 'redacted_thinking', data: 'RWRhY3RlZA==' },
      { type: 'tool_use', id: 'toolu_01A', name: 'read', input: { path: 'src/parser.ts' } },
      { type: 'tool_use', id: 'toolu_01B', name: 'read', input: { path: 'src/parser.test.ts' } },
    ]);
    expect(body.messages[2]!.content).toEqual([
      { type: 'tool_result', tool_use_id: 'toolu_01A', content: 'export function parse() {}' },
      {
        type: 'tool_result',
        tool_use_id: 'toolu_01B',
        content: [
          { type: 'text', text: 'test("parse")' },
          { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } },
        ],
      },
    ]);
    expect(body.messages[4]!.content).toEqual([
      { type: 'text', text: 'Go ahead.', cache_control: { type: 'ephemeral' } },
    ]);
  });

  it('refuses more than 4 breakpoints, extra fields it sets itself, and bad options', () => {
    const system = [1, 2, 3, 4].map((n) => ({ text: `block ${n}`, cache: true }));
    expect(() => toRequest(CONVERSATION, 'anthropic', { ...OPTIONS, system })).toThrow(
      /6 Anthropic cache breakpoints.*at most 4/,
    );
    expect(() => toRequest(CONVERSATION, 'anthropic', { ...OPTIONS, extra: { messages: [] } })).toThrow(
      /options\.extra\.messages/,
    );
    expect(() => toRequest(CONVERSATION, 'anthropic', { ...OPTIONS, maxOutputTokens: 0 })).toThrow(AbridgeError);
    expect(() => toRequest(CONVERSATION, 'anthropic', { ...OPTIONS, model: '' })).toThrow(/options\.model/);
    expect(() => toRequest(CONVERSATION, 'nope' as 'anthropic', OPTIONS)).toThrow(/provider "nope"/);
    expect(() =>
      toRequest(CONVERSATION, 'anthropic', {
        ...OPTIONS,
        tools: [
          { name: 'web.search', inputSchema: {} },
          { name: 'web_search', inputSchema: {} },
        ],
      }),
    ).toThrow(/options\.tools\[1\]\.name: "web_search" is sent as "web_search", like options\.tools\[0\]/);
  });

  it('an unanswered call gets an error result; a result without its call becomes text (pairing as prepareConversation)', () => {
    const messages: Message[] = [
      { role: 'user', parts: [text('hi')] },
      { role: 'tool', parts: [{ type: 'tool-result', callId: 'gone', content: [text('old output')], isError: false }] },
      { role: 'assistant', parts: [{ type: 'tool-call', id: 'c1', name: 'ls', arguments: {} }] },
      { role: 'user', parts: [text('stop')] },
    ];
    const body = toRequest(messages, 'anthropic', { model: 'm', maxOutputTokens: 100 });
    expect(anthropicRequestProblems(body)).toEqual([]);
    expect(JSON.stringify(body.messages[0])).toContain('[result of tool call gone]');
    expect(body.messages[2]!.content[0]).toEqual({
      type: 'tool_result',
      tool_use_id: 'c1',
      content: '[no result recorded]',
      is_error: true,
    });
  });
});

describe('toRequest with a PromptBuilder result', () => {
  it('carries out the breakpoints the builder decided: same system blocks, tools and conversation markers', () => {
    const long = (n: number) => Array.from({ length: n }, (_, i) => `w${i}`).join(' ');
    const builder = new PromptBuilder([
      { name: 'base', content: long(900), cacheable: true },
      { name: 'rules', content: long(300), cacheable: true },
      { name: 'status', content: 'Context: 41% full.', cacheable: false },
    ]);
    const words = { encoding: 'words', count: (t: string) => t.split(/\s+/).filter(Boolean).length };
    const tools = [{ name: 'read', description: long(1200), input_schema: { type: 'object' } }];
    const built = builder.build({
      provider: 'anthropic',
      model: 'claude-sonnet-4-5',
      tools,
      messages: CONVERSATION.slice(1),
      counter: new TokenCounter({ family: 'claude', exact: words }),
      ratio: 1,
    });
    expect(built.breakpoints.map((b) => b.at)).toEqual(['tools', 'system', 'messages']);
    const body = toRequest(CONVERSATION.slice(1), 'anthropic', {
      model: 'claude-sonnet-4-5',
      maxOutputTokens: 1000,
      tools: [{ name: 'read', description: long(1200), inputSchema: { type: 'object' } }],
      ...promptRequestOptions(built),
    });
    expect(body.system).toEqual(built.anthropic!.system);
    expect(body.tools).toEqual(built.anthropic!.tools);
    expect(body.messages).toEqual(built.anthropic!.messages);
    // Dynamic sections after the conversation: the same messages as the builder's, the note after the breakpoint.
    const after = builder.build({
      provider: 'anthropic',
      model: 'claude-sonnet-4-5',
      tools,
      messages: CONVERSATION.slice(1),
      dynamicPlacement: 'after-conversation',
      counter: new TokenCounter({ family: 'claude', exact: words }),
      ratio: 1,
    });
    const afterBody = toRequest(CONVERSATION.slice(1), 'anthropic', {
      model: 'claude-sonnet-4-5',
      maxOutputTokens: 1000,
      tools: [{ name: 'read', description: long(1200), inputSchema: { type: 'object' } }],
      ...promptRequestOptions(after),
    });
    expect(afterBody.system).toEqual(after.anthropic!.system);
    expect(afterBody.messages).toEqual(after.anthropic!.messages);
    expect(afterBody.messages.at(-1)!.content.at(-1)).toEqual({ type: 'text', text: 'Context: 41% full.' });
    const chat = toRequest(CONVERSATION.slice(1), 'openai-chat', {
      model: 'gpt-5',
      maxOutputTokens: 1000,
      ...promptRequestOptions(after),
    });
    expect(chat.messages.at(-1)).toEqual({ role: 'user', content: 'Context: 41% full.' });
    // PromptBlock objects pass as they are, their cache_control read as cache.
    expect(
      toRequest(CONVERSATION.slice(1), 'anthropic', { model: 'm', maxOutputTokens: 10, system: built.blocks }).system,
    ).toEqual(built.anthropic!.system);
  });
});

describe('tool names', () => {
  it('a tool and its calls get the same wire name', () => {
    const messages: Message[] = [
      { role: 'user', parts: [text('search')] },
      { role: 'assistant', parts: [{ type: 'tool-call', id: 'c1', name: 'web.search', arguments: { q: 'x' } }] },
      { role: 'tool', parts: [{ type: 'tool-result', callId: 'c1', content: [text('found')], isError: false }] },
    ];
    const o = { model: 'm', maxOutputTokens: 10, tools: [{ name: 'web.search', inputSchema: { type: 'object' } }] };
    const a = toRequest(messages, 'anthropic', o);
    expect([a.tools![0]!.name, (a.messages[1]!.content[0] as { name: string }).name]).toEqual([
      'web_search',
      'web_search',
    ]);
    const c = toRequest(messages, 'openai-chat', o);
    expect((c.tools![0] as { function: { name: string } }).function.name).toBe('web_search');
    const r = toRequest(messages, 'openai-responses', o);
    expect([(r.tools![0] as { name: string }).name, (r.input[1] as { name: string }).name]).toEqual([
      'web_search',
      'web_search',
    ]);
  });
});

describe('toRequest: openai', () => {
  it('chat: one system message (caller, then view), tool calls, tool messages, images forwarded, deferred tools left out', () => {
    const body = toRequest(CONVERSATION, 'openai-chat', { ...OPTIONS, model: 'gpt-5' });
    expect(openaiChatRequestProblems(body)).toEqual([]);
    expect(body.max_completion_tokens).toBe(8192);
    expect(body.max_tokens).toBeUndefined();
    expect(body.messages[0]).toEqual({
      role: 'system',
      content: 'You are a coding agent.\n\nContext: 41% full.\n\nProject rules: run the tests before you commit.',
    });
    expect(body.messages.map((m) => m.role)).toEqual([
      'system',
      'user',
      'assistant',
      'tool',
      'tool',
      'user',
      'assistant',
      'user',
    ]);
    expect(body.messages[2]).toEqual({
      role: 'assistant',
      content: null,
      tool_calls: [
        { id: 'toolu_01A', type: 'function', function: { name: 'read', arguments: '{"path":"src/parser.ts"}' } },
        { id: 'toolu_01B', type: 'function', function: { name: 'read', arguments: '{"path":"src/parser.test.ts"}' } },
      ],
    });
    expect(body.tools).toEqual([
      {
        type: 'function',
        function: {
          name: 'read',
          description: 'Read a file',
          parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
        },
      },
    ]);
    expect(toRequest(CONVERSATION, 'openai-chat', { ...OPTIONS, maxTokensParameter: 'max_tokens' }).max_tokens).toBe(
      8192,
    );
  });

  it('responses: instructions, function_call / function_call_output items, strict false by default, deferred tools marked', () => {
    const body = toRequest(CONVERSATION, 'openai-responses', { ...OPTIONS, model: 'gpt-5' });
    expect(openaiResponsesRequestProblems(body)).toEqual([]);
    expect(body.max_output_tokens).toBe(8192);
    expect(body.instructions).toBe(
      'You are a coding agent.\n\nContext: 41% full.\n\nProject rules: run the tests before you commit.',
    );
    expect(body.input.map((i) => i.type)).toEqual([
      'message',
      'function_call',
      'function_call',
      'function_call_output',
      'function_call_output',
      'message',
      'message',
    ]);
    expect(body.tools).toEqual([
      {
        type: 'function',
        name: 'read',
        description: 'Read a file',
        parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
        strict: false,
      },
      {
        type: 'function',
        name: 'grep',
        parameters: { type: 'object', properties: { pattern: { type: 'string' } } },
        strict: false,
        defer_loading: true,
      },
    ]);
  });

  it('responses: reasoning items read from a response go back before the item that followed them', () => {
    const { message } = fromResponse('openai-responses', RESPONSES_RESPONSE);
    const body = toRequest(
      [
        { role: 'user', parts: [text('List the files.')] },
        message,
        {
          role: 'tool',
          parts: [{ type: 'tool-result', callId: 'call_9x', content: [text('a.ts\nb.ts')], isError: false }],
        },
      ],
      'openai-responses',
      { model: 'gpt-5', maxOutputTokens: 1000 },
    );
    expect(openaiResponsesRequestProblems(body)).toEqual([]);
    expect(body.input.slice(1, 4)).toEqual([
      {
        type: 'reasoning',
        id: 'rs_0a1b',
        summary: [{ type: 'summary_text', text: 'The user wants a listing; call ls.' }],
        encrypted_content: 'gAAAAABoEncrypted',
      },
      { type: 'message', role: 'assistant', content: 'Listing the files.' },
      { type: 'function_call', call_id: 'call_9x', name: 'ls', arguments: '{"path":"."}' },
    ]);
    // Other providers never get it: Anthropic refuses foreign signatures, Chat has no field for reasoning.
    expect(JSON.stringify(toRequest([message], 'anthropic', { model: 'm', maxOutputTokens: 10 }))).not.toContain(
      'rs_0a1b',
    );
    expect(JSON.stringify(toRequest([message], 'openai-chat', { model: 'm', maxOutputTokens: 10 }))).not.toContain(
      'rs_0a1b',
    );
  });
});

describe('fromResponse', () => {
  it('anthropic: thinking, text, tool_use; usage with cache read and write', () => {
    const r = fromResponse('anthropic', ANTHROPIC_MESSAGE);
    expect(r.usage).toEqual({ input: 12, output: 318, cacheRead: 48_210, cacheWrite: 1_953 });
    expect(r.stopReason).toBe('tool_use');
    expect(r.finish).toBe('tool-calls');
    expect(r.message).toMatchObject({
      role: 'assistant',
      model: 'claude-sonnet-4-5-20250929',
      provider: 'anthropic',
      responseId: 'msg_01XFDUDYJgAACzvnptvVoYEL',
    });
    expect(r.message.parts).toEqual([
      { type: 'thinking', text: 'The test expects an array.', signature: 'EuYBCkQYAiJAk' },
      { type: 'text', text: 'Reading both files.' },
      { type: 'tool-call', id: 'toolu_01T1x1fJ34qAmk2tNTrN7Up6', name: 'read', arguments: { path: 'src/parser.ts' } },
      {
        type: 'tool-call',
        id: 'toolu_01VQx2LpPzm3cX8fN4Kc8Z1a',
        name: 'read',
        arguments: { path: 'src/parser.test.ts' },
      },
    ]);
  });

  it('openai-chat: cached tokens move from prompt_tokens to cacheRead; reasoning tokens kept', () => {
    const r = fromResponse('openai-chat', CHAT_COMPLETION);
    expect(r.usage).toEqual({ input: 2_006 - 1_920, output: 187, cacheRead: 1_920, cacheWrite: 0, reasoning: 128 });
    expect(r.finish).toBe('tool-calls');
    expect(r.stopReason).toBe('tool_calls');
    expect(r.message.parts).toEqual([
      { type: 'text', text: 'Let me look.' },
      { type: 'tool-call', id: 'call_abc123', name: 'read', arguments: { path: 'src/parser.ts' } },
    ]);
  });

  it('openai-responses: reasoning kept whole, message text, function call; cached and reasoning tokens', () => {
    const r = fromResponse('openai-responses', RESPONSES_RESPONSE);
    expect(r.usage).toEqual({ input: 5_230 - 4_096, output: 412, cacheRead: 4_096, cacheWrite: 0, reasoning: 256 });
    expect(r.finish).toBe('tool-calls');
    expect(r.stopReason).toBe('completed');
    expect(r.message.parts.map((p) => p.type)).toEqual(['thinking', 'text', 'tool-call']);
    expect(r.message.parts[2]).toEqual({ type: 'tool-call', id: 'call_9x', name: 'ls', arguments: { path: '.' } });
  });

  it('refuses what is not a response of that provider', () => {
    expect(() => fromResponse('anthropic', { choices: [] })).toThrow(/expected an Anthropic Message/);
    expect(() => fromResponse('openai-chat', { choices: [] })).toThrow(/choices\[0\]/);
    expect(() => fromResponse('openai-responses', null)).toThrow(AbridgeError);
  });
});

describe('contextOverflow', () => {
  it('recognizes the providers’ overflow bodies and extracts the numbers', () => {
    expect(
      contextOverflow({
        status: 400,
        error: {
          type: 'error',
          error: { type: 'invalid_request_error', message: 'prompt is too long: 215000 tokens > 200000 maximum' },
        },
      }),
    ).toEqual({
      provider: 'anthropic',
      status: 400,
      message: 'prompt is too long: 215000 tokens > 200000 maximum',
      promptTokens: 215_000,
      limit: 200_000,
    });
    expect(
      contextOverflow({
        type: 'error',
        error: {
          type: 'invalid_request_error',
          message:
            'input length and `max_tokens` exceed context limit: 187254 + 21333 > 200000, decrease input length or `max_tokens` and try again',
        },
      }),
    ).toMatchObject({
      provider: 'anthropic',
      promptTokens: 187_254,
      maxTokens: 21_333,
      limit: 200_000,
    });
    const chat =
      "This model's maximum context length is 128000 tokens. However, you requested 140012 tokens (131820 in the messages, 8192 in the completion). Please reduce the length of the messages or completion.";
    expect(
      contextOverflow({
        status: 400,
        error: { message: chat, type: 'invalid_request_error', param: 'messages', code: 'context_length_exceeded' },
        code: 'context_length_exceeded',
      }),
    ).toEqual({
      provider: 'openai',
      status: 400,
      message: chat,
      limit: 128_000,
      promptTokens: 131_820,
      maxTokens: 8_192,
    });
    expect(
      contextOverflow({
        error: {
          message:
            "This model's maximum context length is 4096 tokens. However, your messages resulted in 5000 tokens. Please reduce the length of the messages.",
          code: 'context_length_exceeded',
        },
      }),
    ).toMatchObject({ limit: 4096, promptTokens: 5000 });
    expect(
      contextOverflow({
        status: 400,
        error: {
          message: 'Your input exceeds the context window of this model. Please adjust your input and try again.',
          type: 'invalid_request_error',
          param: 'input',
          code: 'context_length_exceeded',
        },
      }),
    ).toEqual({
      provider: 'openai',
      status: 400,
      message: 'Your input exceeds the context window of this model. Please adjust your input and try again.',
    });
  });

  it('OpenAI-compatible servers and gateways say it in their own words', () => {
    expect(
      contextOverflow({
        status: 400,
        error: {
          message:
            'Input tokens exceed the configured limit of 272000 tokens. Your messages resulted in 301234 tokens. Please reduce the length of the messages.',
          type: 'invalid_request_error',
          code: 'context_length_exceeded',
        },
      }),
    ).toMatchObject({
      provider: 'openai',
      limit: 272_000,
      promptTokens: 301_234,
    });
    expect(
      contextOverflow({
        error: {
          message:
            "This endpoint's maximum context length is 131072 tokens. However, you requested about 140000 tokens (131000 of text input, 9000 in the output). Please reduce the length of either one.",
          code: 400,
        },
      }),
    ).toMatchObject({ limit: 131_072, promptTokens: 140_000 });
    expect(contextOverflow(new Error('Input is too long for requested model.'))).toEqual({
      message: 'Input is too long for requested model.',
    });
    expect(
      contextOverflow({
        error: {
          code: 400,
          message: 'The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).',
          status: 'INVALID_ARGUMENT',
        },
      }),
    ).toMatchObject({ provider: 'gemini', promptTokens: 1_200_000, limit: 1_048_576 });
  });

  it('looks inside the AI SDK’s APICallError (responseBody text) and RetryError (lastError), and causes', () => {
    const apiCall = Object.assign(new Error('prompt is too long: 201234 tokens > 200000 maximum'), {
      name: 'AI_APICallError',
      statusCode: 400,
      responseBody: JSON.stringify({
        type: 'error',
        error: { type: 'invalid_request_error', message: 'prompt is too long: 201234 tokens > 200000 maximum' },
      }),
    });
    const retry = Object.assign(new Error('Failed after 3 attempts.'), {
      name: 'AI_RetryError',
      errors: [apiCall],
      lastError: apiCall,
    });
    expect(contextOverflow(retry)).toMatchObject({
      provider: 'anthropic',
      status: 400,
      promptTokens: 201_234,
      limit: 200_000,
    });
    expect(contextOverflow(new Error('request failed', { cause: apiCall }))).toMatchObject({ promptTokens: 201_234 });
  });

  it('is undefined for other errors', () => {
    expect(contextOverflow(undefined)).toBeUndefined();
    expect(contextOverflow(new Error('ECONNRESET'))).toBeUndefined();
    expect(
      contextOverflow({
        status: 429,
        error: {
          type: 'error',
          error: {
            type: 'rate_limit_error',
            message: 'Number of request tokens has exceeded your per-minute rate limit',
          },
        },
      }),
    ).toBeUndefined();
    expect(
      contextOverflow({
        status: 400,
        error: {
          type: 'error',
          error: {
            type: 'invalid_request_error',
            message:
              'max_tokens: 100000 > 64000, which is the maximum allowed number of output tokens for claude-sonnet-4-5',
          },
        },
      }),
    ).toBeUndefined();
    expect(
      contextOverflow({
        status: 400,
        error: {
          message:
            "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.",
          code: null,
        },
      }),
    ).toBeUndefined();
  });
});

describe('the provider’s own context management in responses', () => {
  it('anthropic: applied edits become usage.cleared; a compaction block opens the message and goes back as it came', () => {
    const r = fromResponse('anthropic', {
      id: 'msg_1',
      type: 'message',
      role: 'assistant',
      model: 'claude-sonnet-4-6',
      content: [
        { type: 'compaction', content: '<summary>done so far</summary>', encrypted_content: null },
        { type: 'text', text: 'Continuing.' },
      ],
      stop_reason: 'end_turn',
      usage: {
        input_tokens: 900,
        output_tokens: 10,
        cache_read_input_tokens: 100,
        cache_creation_input_tokens: 0,
        iterations: [
          { type: 'compaction', input_tokens: 80_000, output_tokens: 300 },
          { type: 'message', input_tokens: 900, output_tokens: 10 },
        ],
      },
      context_management: {
        applied_edits: [{ type: 'clear_tool_uses_20250919', cleared_tool_uses: 4, cleared_input_tokens: 12_000 }],
      },
    });
    expect(r.usage).toMatchObject({ input: 900, cacheRead: 100, cleared: 12_000 });
    expect(r.appliedEdits).toEqual([
      { type: 'clear_tool_uses_20250919', clearedInputTokens: 12_000, clearedToolUses: 4 },
    ]);
    expect(r.compaction).toEqual({ inputTokens: 80_000, outputTokens: 300 });
    const part = r.message.parts[0]!;
    expect(part).toMatchObject({ type: 'compaction', marker: { summary: '<summary>done so far</summary>' } });
    const body = toRequest([r.message, { role: 'user', parts: [{ type: 'text', text: 'Go on.' }] }], 'anthropic', {
      model: 'claude-sonnet-4-6',
      maxOutputTokens: 100,
    });
    expect(body.messages[1]!.content[0]).toEqual({
      type: 'compaction',
      content: '<summary>done so far</summary>',
      encrypted_content: null,
    });
  });

  it('openai-responses: an opaque compaction item goes back as an item, and as a note where it cannot (Chat)', () => {
    const r = fromResponse('openai-responses', {
      id: 'resp_1',
      object: 'response',
      status: 'completed',
      model: 'gpt-5',
      output: [
        { type: 'compaction', id: 'cmp_1', encrypted_content: 'gAAAA-opaque' },
        { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Continuing.' }] },
      ],
      usage: { input_tokens: 600, output_tokens: 5 },
    });
    expect(r.compaction).toEqual({});
    const view = [r.message, { role: 'user' as const, parts: [{ type: 'text' as const, text: 'Go on.' }] }];
    const body = toRequest(view, 'openai-responses', { model: 'gpt-5', maxOutputTokens: 100 });
    expect(body.input[0]).toEqual({ type: 'compaction', encrypted_content: 'gAAAA-opaque', id: 'cmp_1' });
    const chat = toRequest(view, 'openai-chat', { model: 'gpt-5', maxOutputTokens: 100 });
    expect(JSON.stringify(chat.messages)).toContain('compacted by openai; its summary is encrypted');
  });
});
