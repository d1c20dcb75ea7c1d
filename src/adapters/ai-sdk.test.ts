import { createAnthropic } from '@ai-sdk/anthropic';
import { createOpenAI } from '@ai-sdk/openai';
import {
  APICallError,
  type LanguageModelV3,
  type LanguageModelV3CallOptions,
  type LanguageModelV3GenerateResult,
  type LanguageModelV3Middleware,
  type LanguageModelV3Prompt,
  type LanguageModelV3StreamPart,
} from '@ai-sdk/provider';
import {
  generateText,
  jsonSchema,
  stepCountIs,
  streamText,
  tool,
  wrapLanguageModel,
  type ModelMessage,
  type Tool,
  type ToolSet,
} from 'ai';
import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULT_BUDGET_SETTINGS } from '../budget/defaults.js';
import { contextOverflow, type RequestProvider } from '../formats/wire.js';
import { ContextManager, type ContextManagerOptions } from '../manager/context-manager.js';
import type { Message } from '../model/types.js';
import { activeMessages } from '../model/view.js';
import { MemorySessionStore } from '../store/memory-session-store.js';
import {
  abridgeMessages,
  abridgeMiddleware,
  aiSdkClient,
  abridgePrepareStep,
  abridgeTools,
  type AiSdkEvent,
  type AiSdkLanguageModel,
  type AiSdkRequestReport,
} from './ai-sdk.js';
import { fromV3Message, toV3Prompt, usageFromV3, V3Originals } from './ai-sdk-v3.js';
import { handOffFor, isSummaryRequest, SECTIONS } from '../../test/support/summary-model.js';

// The fake provider and the example workspace live outside src/ (under their own tsconfig): loaded by path, typed here.
interface FakeRequest {
  index: number;
  refused?: { status: number; message: string };
  usage?: { promptTokens: number; cacheReadTokens: number };
  markerInSystem?: boolean;
  maxOutputTokens?: number;
  body?: unknown;
  answer?: { text?: string };
}
interface FakeScriptContext {
  system: string;
  assistantTurns: number;
  tools: { name: string }[];
  messages: { role: string; parts: { kind: string; text?: string }[] }[];
}
interface Fake {
  v1URL: string;
  requests: FakeRequest[];
  close(): Promise<void>;
}
type StartFake = (o: {
  window: number;
  maxOutputTokens?: number;
  script?: {
    marker?: string;
    toolTurns?: number;
    answer?: (
      ctx: FakeScriptContext,
    ) => { text: string; toolCalls?: { name: string; input: Record<string, unknown> }[] } | undefined;
  };
}) => Promise<Fake>;
type ToolOutput = { output: string; isError: boolean };
const outside = (path: string) => new URL(path, import.meta.url).href;
const { startFakeProvider } = (await import(outside('../../test/support/fake-provider.ts'))) as {
  startFakeProvider: StartFake;
};
const workspace = (await import(outside('../../examples/workspace.ts'))) as {
  readFile(p: string): ToolOutput;
  bash(c: string): ToolOutput;
};

const TASK = 'Find why test/router.test.ts fails after the middleware refactor and fix it.';
const SYSTEM = `You are a coding agent working in a repository. Your task: ${TASK}\nUse read_file and bash to investigate; answer without a tool call when you are done.`;
const WINDOW = 40_000;
const config = {
  budget: {
    ...DEFAULT_BUDGET_SETTINGS,
    thresholds: { warn: 0.8, compact: 0.9, block: 0.98, target: 0.6 },
    contextWindow: WINDOW,
  },
};

const agentTools: ToolSet = {
  read_file: tool({
    description: 'Read a file of the workspace.',
    inputSchema: jsonSchema<{ path: string }>({
      type: 'object',
      properties: { path: { type: 'string' } },
      required: ['path'],
    }),
    execute: async ({ path }) => workspace.readFile(path).output,
  }),
  bash: tool({
    description: 'Run a shell command in the workspace.',
    inputSchema: jsonSchema<{ command: string }>({
      type: 'object',
      properties: { command: { type: 'string' } },
      required: ['command'],
    }),
    execute: async ({ command }) => workspace.bash(command).output,
  }),
};
const TOOL_SPECS = [
  {
    name: 'read_file',
    description: 'Read a file of the workspace.',
    inputSchema: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
  },
  {
    name: 'bash',
    description: 'Run a shell command in the workspace.',
    inputSchema: { type: 'object', properties: { command: { type: 'string' } }, required: ['command'] },
  },
];

// ---------------------------------------------------------------------------------------------------------------------

describe('V3 prompt ↔ abridge messages', () => {
  const png = Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex');
  const prompt: LanguageModelV3Prompt = [
    { role: 'system', content: 'You are terse.' },
    {
      role: 'user',
      content: [
        { type: 'text', text: 'What is in these?' },
        { type: 'file', data: png.toString('base64'), mediaType: 'image/png' },
        { type: 'file', data: new Uint8Array(png), mediaType: 'application/pdf', filename: 'spec.pdf' },
        { type: 'file', data: new URL('https://example.com/cat.jpg'), mediaType: 'image/jpeg' },
      ],
    },
    {
      role: 'assistant',
      content: [
        { type: 'reasoning', text: 'Two files and a URL.', providerOptions: { anthropic: { signature: 'sig-abc' } } },
        { type: 'text', text: 'Let me look.' },
        {
          type: 'tool-call',
          toolCallId: 'toolu_1',
          toolName: 'read_file',
          input: { path: 'a.ts' },
          providerOptions: { openai: { itemId: 'fc_1' } },
        },
        { type: 'tool-call', toolCallId: 'toolu_2', toolName: 'stat', input: { path: 'b.ts' } },
      ],
    },
    {
      role: 'tool',
      content: [
        {
          type: 'tool-result',
          toolCallId: 'toolu_1',
          toolName: 'read_file',
          output: { type: 'text', value: 'export const a = 1;' },
        },
        { type: 'tool-result', toolCallId: 'toolu_2', toolName: 'stat', output: { type: 'json', value: { size: 12 } } },
      ],
    },
    { role: 'assistant', content: [{ type: 'tool-call', toolCallId: 'toolu_3', toolName: 'screenshot', input: {} }] },
    {
      role: 'tool',
      content: [
        {
          type: 'tool-result',
          toolCallId: 'toolu_3',
          toolName: 'screenshot',
          output: {
            type: 'content',
            value: [
              { type: 'text', text: 'the page:' },
              { type: 'image-data', data: png.toString('base64'), mediaType: 'image/png' },
            ],
          },
        },
      ],
    },
    { role: 'user', content: [{ type: 'text', text: 'Thanks.' }] },
  ];

  it('round-trips a prompt exactly, provider metadata included, when the parts are the ones read', () => {
    const originals = new V3Originals();
    const messages = prompt.filter((m) => m.role !== 'system').map((m) => fromV3Message(m, originals));
    expect(toV3Prompt(messages, { system: ['You are terse.'], originals })).toEqual(prompt);
  });

  it('converts to abridge parts by meaning, and back without the originals', () => {
    const messages = prompt.map((m) => fromV3Message(m));
    expect(messages[1]!.parts.map((p) => p.type)).toEqual(['text', 'image', 'file', 'image']);
    expect(messages[1]!.parts[2]).toMatchObject({
      type: 'file',
      name: 'spec.pdf',
      data: png.toString('base64'),
      byteSize: png.length,
    });
    expect(messages[1]!.parts[3]).toMatchObject({
      type: 'image',
      url: 'https://example.com/cat.jpg',
      mediaType: 'image/jpeg',
    });
    expect(messages[2]!.parts[0]).toEqual({ type: 'thinking', text: 'Two files and a URL.', signature: 'sig-abc' });
    expect(messages[3]!.parts[1]).toMatchObject({
      type: 'tool-result',
      callId: 'toolu_2',
      content: [{ type: 'text', text: '{"size":12}' }],
      isError: false,
    });
    const back = toV3Prompt(messages);
    expect(back[0]).toEqual({ role: 'system', content: 'You are terse.' });
    const user = back[1]!.content as { type: string; data?: unknown }[];
    expect(user[2]).toEqual({
      type: 'file',
      data: png.toString('base64'),
      mediaType: 'application/pdf',
      filename: 'spec.pdf',
    });
    expect(user[3]!.data).toEqual(new URL('https://example.com/cat.jpg'));
    // The Anthropic signature goes back where @ai-sdk/anthropic reads it; the OpenAI item id is lost without originals.
    expect(back[2]!.content[0]).toEqual({
      type: 'reasoning',
      text: 'Two files and a URL.',
      providerOptions: { anthropic: { signature: 'sig-abc' } },
    });
    expect(back[2]!.content[2]).toEqual({
      type: 'tool-call',
      toolCallId: 'toolu_1',
      toolName: 'read_file',
      input: { path: 'a.ts' },
    });
    expect(back[3]!.content[1]).toEqual({
      type: 'tool-result',
      toolCallId: 'toolu_2',
      toolName: 'stat',
      output: { type: 'text', value: '{"size":12}' },
    });
    expect(back[5]!.content[0]).toMatchObject({
      output: {
        type: 'content',
        value: [
          { type: 'text', text: 'the page:' },
          { type: 'image-data', data: png.toString('base64'), mediaType: 'image/png' },
        ],
      },
    });
  });

  it('pairs tool calls and results: a missing result is an error result, an orphan result is user text, results in the order written', () => {
    const view: Message[] = [
      {
        role: 'assistant',
        parts: [
          { type: 'tool-call', id: 'c1', name: 'bash', arguments: { command: 'ls' } },
          { type: 'tool-call', id: 'c2', name: 'bash', arguments: { command: 'pwd' } },
        ],
      },
      {
        role: 'tool',
        parts: [
          {
            type: 'tool-result',
            callId: 'c2',
            toolName: 'bash',
            content: [{ type: 'text', text: '/w' }],
            isError: false,
          },
        ],
      },
      {
        role: 'tool',
        parts: [
          {
            type: 'tool-result',
            callId: 'gone',
            toolName: 'bash',
            content: [{ type: 'text', text: 'old output' }],
            isError: false,
          },
        ],
      },
    ];
    const out = toV3Prompt(view);
    // An assistant first: the placeholder user message comes before it.
    expect(out.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'user']);
    const results = out[2]!.content as { toolCallId: string; output: { type: string; value: string } }[];
    // The recorded result as written, then the one closing the call that has none.
    expect(results.map((r) => r.toolCallId)).toEqual(['c2', 'c1']);
    expect(results[1]!.output).toEqual({ type: 'error-text', value: '[no result recorded]' });
    expect(results[0]!.output).toEqual({ type: 'text', value: '/w' });
    expect((out[3]!.content[0] as { text: string }).text).toContain('old output');
  });

  it('usage: prompt = input + cache read + cache write, for both providers’ ways of reporting', () => {
    // @ai-sdk/anthropic: total includes the cache; noCache is Anthropic's input_tokens.
    expect(
      usageFromV3({
        inputTokens: { total: 1500, noCache: 100, cacheRead: 1000, cacheWrite: 400 },
        outputTokens: { total: 50, text: 50, reasoning: undefined },
      }),
    ).toEqual({ input: 100, output: 50, cacheRead: 1000, cacheWrite: 400 });
    // Without noCache: the rest of the total.
    expect(
      usageFromV3({
        inputTokens: { total: 1000, noCache: undefined, cacheRead: 600, cacheWrite: undefined },
        outputTokens: { total: 70, text: 40, reasoning: 30 },
      }),
    ).toEqual({ input: 400, output: 70, cacheRead: 600, cacheWrite: 0, reasoning: 30 });
    expect(
      usageFromV3({
        inputTokens: { total: undefined, noCache: undefined, cacheRead: undefined, cacheWrite: undefined },
        outputTokens: { total: 1, text: 1, reasoning: undefined },
      }),
    ).toBeUndefined();
  });
});

// ---------------------------------------------------------------------------------------------------------------------

/** A V3 model answering from a list (and counting its calls); `fail` makes the first call throw. */
function scriptedModel(
  answers: LanguageModelV3GenerateResult[],
  fail?: unknown,
): LanguageModelV3 & { calls: LanguageModelV3CallOptions[] } {
  const calls: LanguageModelV3CallOptions[] = [];
  let failed = false;
  return {
    specificationVersion: 'v3',
    provider: 'test',
    modelId: 'claude-sonnet-4-5',
    supportedUrls: {},
    calls,
    async doGenerate(options) {
      calls.push(options);
      if (fail && !failed) {
        failed = true;
        throw fail;
      }
      return answers.shift()!;
    },
    async doStream() {
      throw new Error('not used');
    },
  };
}

function answer(content: LanguageModelV3GenerateResult['content'], prompt: number): LanguageModelV3GenerateResult {
  return {
    content,
    finishReason: { unified: 'tool-calls', raw: 'tool_use' },
    usage: {
      inputTokens: { total: prompt, noCache: prompt, cacheRead: 0, cacheWrite: 0 },
      outputTokens: { total: 20, text: 20, reasoning: undefined },
    },
    warnings: [],
  };
}

/**
 * The middleware as AI SDK 6 types it: with AI SDK 7 installed, `abridgeMiddleware`'s type is the V4 middleware, and
 * these tests call it with V3 models and params (what it does with those does not depend on the installed `ai`).
 */
const asV3 = (mw: ReturnType<typeof abridgeMiddleware>) => mw as unknown as LanguageModelV3Middleware;

/** What `wrapLanguageModel` does with a middleware, for one generate call. */
async function call(
  middleware: ReturnType<typeof abridgeMiddleware>,
  model: LanguageModelV3,
  params: LanguageModelV3CallOptions,
): Promise<LanguageModelV3CallOptions> {
  const mw = asV3(middleware);
  const transformed = await mw.transformParams!({ type: 'generate', params, model });
  await mw.wrapGenerate!({
    doGenerate: () => model.doGenerate(transformed),
    doStream: () => model.doStream(transformed),
    params: transformed,
    model,
  });
  return transformed;
}

async function mw2(cm: ContextManager, events: AiSdkEvent[], prompt: LanguageModelV3Prompt): Promise<void> {
  await call(
    abridgeMiddleware(cm, { onEvent: (e) => events.push(e) }),
    scriptedModel([answer([{ type: 'text', text: 'More.' }], 400)]),
    { prompt },
  );
}

const sessionMessages = (cm: ContextManager) => cm.session.entries.filter((e) => e.message).map((e) => e.message!);

describe('abridgeMiddleware keeps the manager in step with the app’s history', () => {
  const user = (text: string) => ({ role: 'user' as const, content: [{ type: 'text' as const, text }] });
  const sys = { role: 'system' as const, content: SYSTEM };
  const big = (n: number) =>
    Array.from({ length: 400 }, (_, i) => `line ${i} of output ${n}: ${'x'.repeat(40)}`).join('\n');

  it('absorbs only what is new at each step, records the answer once, and sends the AI SDK’s own form of it back', async () => {
    const cm = new ContextManager({
      model: 'claude-sonnet-4-5',
      provider: 'anthropic',
      config,
      maxOutputTokens: 4_000,
      agentTools: false,
    });
    const events: AiSdkEvent[] = [];
    const mw = abridgeMiddleware(cm, { onEvent: (e) => events.push(e) });
    const model = scriptedModel([
      answer(
        [
          { type: 'reasoning', text: 'Read it first.', providerMetadata: { anthropic: { signature: 'sig-1' } } },
          { type: 'text', text: 'Reading.' },
          { type: 'tool-call', toolCallId: 'toolu_a', toolName: 'read_file', input: '{"path":"a.ts"}' },
        ],
        900,
      ),
      answer([{ type: 'text', text: 'Done.' }], 1200),
    ]);
    const first = await call(mw, model, {
      prompt: [sys, user('Start.')],
      tools: [{ type: 'function', ...TOOL_SPECS[0]! } as never],
    });
    expect(first.maxOutputTokens).toBe(4_000);
    expect(first.prompt[0]).toEqual({ role: 'system', content: SYSTEM });
    // The AI SDK's next prompt: the same history, its own form of the answer, the tool result.
    const assistant = {
      role: 'assistant' as const,
      content: [
        { type: 'reasoning' as const, text: 'Read it first.', providerOptions: { anthropic: { signature: 'sig-1' } } },
        { type: 'text' as const, text: 'Reading.' },
        { type: 'tool-call' as const, toolCallId: 'toolu_a', toolName: 'read_file', input: { path: 'a.ts' } },
      ],
    };
    const result = {
      role: 'tool' as const,
      content: [
        {
          type: 'tool-result' as const,
          toolCallId: 'toolu_a',
          toolName: 'read_file',
          output: { type: 'text' as const, value: 'export const a = 1;' },
        },
      ],
    };
    const second = await call(mw, model, {
      prompt: [sys, user('Start.'), assistant, result],
      tools: [{ type: 'function', ...TOOL_SPECS[0]! } as never],
    });
    expect(events).toEqual([]);
    const messages = sessionMessages(cm);
    expect(messages.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
    expect(messages[1]!.usage).toEqual({ input: 900, output: 20, cacheRead: 0, cacheWrite: 0 });
    expect(second.prompt.slice(1)).toEqual([user('Start.'), assistant, result]);
    // A third call that continues the history: only the new user message is added.
    await call(mw, scriptedModel([answer([{ type: 'text', text: 'ok' }], 1300)]), {
      prompt: [
        sys,
        user('Start.'),
        assistant,
        result,
        { role: 'assistant', content: [{ type: 'text', text: 'Done.' }] },
        user('Now the docs.'),
      ],
    });
    expect(sessionMessages(cm).map((m) => m.role)).toEqual([
      'user',
      'assistant',
      'tool',
      'assistant',
      'user',
      'assistant',
    ]);
    expect(events).toEqual([]);
  });

  it('streams: passes every part on unchanged and records what they amount to', async () => {
    const cm = new ContextManager({
      model: 'claude-sonnet-4-5',
      provider: 'anthropic',
      config,
      maxOutputTokens: 4_000,
      agentTools: false,
    });
    const parts: LanguageModelV3StreamPart[] = [
      { type: 'stream-start', warnings: [] },
      { type: 'reasoning-start', id: 'r' },
      { type: 'reasoning-delta', id: 'r', delta: 'Think ' },
      { type: 'reasoning-delta', id: 'r', delta: 'first.' },
      { type: 'reasoning-delta', id: 'r', delta: '', providerMetadata: { anthropic: { signature: 'sig-s' } } },
      { type: 'reasoning-end', id: 'r' },
      { type: 'text-start', id: 't' },
      { type: 'text-delta', id: 't', delta: 'Reading ' },
      { type: 'text-delta', id: 't', delta: 'a.ts.' },
      { type: 'text-end', id: 't' },
      { type: 'tool-call', toolCallId: 'toolu_s', toolName: 'read_file', input: '{"path":"a.ts"}' },
      {
        type: 'finish',
        finishReason: { unified: 'tool-calls', raw: 'tool_use' },
        usage: {
          inputTokens: { total: 1234, noCache: 34, cacheRead: 1000, cacheWrite: 200 },
          outputTokens: { total: 40, text: 40, reasoning: undefined },
        },
      },
    ];
    const model: LanguageModelV3 = {
      ...scriptedModel([]),
      doStream: async () => ({
        stream: new ReadableStream({ start: (c) => (parts.forEach((p) => c.enqueue(p)), c.close()) }),
      }),
    };
    const mw = asV3(abridgeMiddleware(cm));
    const params = await mw.transformParams!({ type: 'stream', params: { prompt: [sys, user('Start.')] }, model });
    const { stream } = await mw.wrapStream!({
      doGenerate: () => model.doGenerate(params),
      doStream: () => model.doStream(params),
      params,
      model,
    });
    const seen: LanguageModelV3StreamPart[] = [];
    for await (const p of stream as unknown as AsyncIterable<LanguageModelV3StreamPart>) seen.push(p);
    expect(seen).toEqual(parts);
    const recorded = sessionMessages(cm)[1]!;
    expect(recorded.parts).toEqual([
      { type: 'thinking', text: 'Think first.', signature: 'sig-s' },
      { type: 'text', text: 'Reading a.ts.' },
      { type: 'tool-call', id: 'toolu_s', name: 'read_file', arguments: { path: 'a.ts' } },
    ]);
    expect(recorded.usage).toEqual({ input: 34, output: 40, cacheRead: 1000, cacheWrite: 200 });
  });

  it('a resumed manager: the first prompt continues it, whether it holds only what is new or starts with the view', async () => {
    for (const withView of [false, true]) {
      const store = new MemorySessionStore();
      const first = new ContextManager({
        model: 'claude-sonnet-4-5',
        provider: 'anthropic',
        config,
        store,
        sessionId: 's',
        maxOutputTokens: 4_000,
        agentTools: false,
      });
      await call(abridgeMiddleware(first), scriptedModel([answer([{ type: 'text', text: 'Hello.' }], 300)]), {
        prompt: [sys, user('Hi.')],
      });
      const cm = await ContextManager.resume(store, 's', {
        model: 'claude-sonnet-4-5',
        provider: 'anthropic',
        config,
        maxOutputTokens: 4_000,
        agentTools: false,
      });
      const before = sessionMessages(cm).length;
      const history: ModelMessage[] = withView ? abridgeMessages(cm) : [];
      expect(history.length).toBe(withView ? 2 : 0);
      // What the AI SDK makes of the app's messages: the view's two messages in V3 form, then the new one.
      const prompt: LanguageModelV3Prompt = [
        sys,
        ...(withView
          ? [user('Hi.'), { role: 'assistant' as const, content: [{ type: 'text' as const, text: 'Hello.' }] }]
          : []),
        user('And now?'),
      ];
      const events: AiSdkEvent[] = [];
      await mw2(cm, events, prompt);
      expect(
        sessionMessages(cm)
          .slice(before)
          .map((m) => m.role),
      ).toEqual(['user', 'assistant']);
      expect(events).toEqual([]);
    }
  });

  it('re-syncs a history that is not a continuation, and says so', async () => {
    const cm = new ContextManager({
      model: 'claude-sonnet-4-5',
      provider: 'anthropic',
      config,
      maxOutputTokens: 4_000,
      agentTools: false,
    });
    const events: AiSdkEvent[] = [];
    const mw = abridgeMiddleware(cm, { onEvent: (e) => events.push(e) });
    const model = scriptedModel([
      answer([{ type: 'text', text: 'A' }], 500),
      answer([{ type: 'text', text: 'B' }], 600),
    ]);
    await call(mw, model, {
      prompt: [sys, user('one'), { role: 'assistant', content: [{ type: 'text', text: 'x' }] }, user('two')],
    });
    // The app edited its last message.
    await call(mw, model, {
      prompt: [sys, user('one'), { role: 'assistant', content: [{ type: 'text', text: 'x' }] }, user('two, edited')],
    });
    expect(events).toEqual([{ type: 'resync', kept: 2, dropped: 2, added: 1 }]);
    expect(sessionMessages(cm).map((m) => (m.parts[0] as { text: string }).text)).toEqual([
      'one',
      'x',
      'two',
      'A',
      'two, edited',
      'B',
    ]);
  });

  it('does not count abridge’s own tools twice when the app offers them, and warns when it does not', async () => {
    const predicted: number[] = [];
    const events: AiSdkEvent[] = [];
    for (const offered of [true, false]) {
      const cm = new ContextManager({
        model: 'claude-sonnet-4-5',
        provider: 'anthropic',
        config,
        maxOutputTokens: 4_000,
      });
      const own = await abridgeTools(cm);
      expect(Object.keys(own)).toEqual(expect.arrayContaining(['read_result', 'compact_context']));
      const tools = [
        { type: 'function' as const, ...TOOL_SPECS[0]! },
        ...(offered
          ? (await cm.tools()).map((t) => ({
              type: 'function' as const,
              name: t.name,
              description: t.description,
              inputSchema: t.inputSchema,
            }))
          : []),
      ];
      const mw = abridgeMiddleware(cm, {
        onEvent: (e) => events.push(e),
        onRequest: (r) => predicted.push(r.predicted),
      });
      await call(mw, scriptedModel([answer([{ type: 'text', text: 'ok' }], 800)]), {
        prompt: [sys, user('Start.')],
        tools: tools as never,
      });
    }
    expect(predicted[0]).toBe(predicted[1]);
    expect(events).toEqual([{ type: 'tools-not-offered', names: ['read_result', 'compact_context'] }]);
  });

  it('abridgeTools run abridge’s tools (read_result reads what was offloaded)', async () => {
    const cm = new ContextManager({
      model: 'claude-sonnet-4-5',
      provider: 'anthropic',
      config,
      maxOutputTokens: 4_000,
    });
    const stored = await cm.results.put('alpha\nbeta\ngamma', { tool: 'bash', callId: 'c1' });
    const tools = await abridgeTools(cm);
    const out = await tools.read_result!.execute!(
      { ref_id: stored.refId, offset: 1, limit: 1 },
      // AI SDK 7 adds a required `context` (AI SDK 6 has none).
      { toolCallId: 't', messages: [], context: {} } as Parameters<NonNullable<Tool['execute']>>[1],
    );
    expect(out).toContain('beta');
    expect(out).not.toContain('gamma');
  });

  it('after a provider’s overflow refusal: compacts, retries once with the re-prepared prompt, reports it', async () => {
    const cm = new ContextManager({
      model: 'claude-sonnet-4-5',
      provider: 'anthropic',
      config,
      maxOutputTokens: 4_000,
      agentTools: false,
    });
    const events: AiSdkEvent[] = [];
    const reports: AiSdkRequestReport[] = [];
    const refusal = new APICallError({
      message: 'prompt is too long: 41000 tokens > 40000 maximum',
      url: 'http://127.0.0.1/v1/messages',
      requestBodyValues: {},
      statusCode: 400,
      responseBody: JSON.stringify({
        type: 'error',
        error: { type: 'invalid_request_error', message: 'prompt is too long: 41000 tokens > 40000 maximum' },
      }),
    });
    const model = scriptedModel([answer([{ type: 'text', text: 'fine' }], 20_000)], refusal);
    const mw = abridgeMiddleware(cm, { onEvent: (e) => events.push(e), onRequest: (r) => reports.push(r) });
    const prompt: LanguageModelV3Prompt = [sys, user('Start.')];
    for (let i = 0; i < 5; i++) {
      prompt.push({
        role: 'assistant',
        content: [{ type: 'tool-call', toolCallId: `c${i}`, toolName: 'bash', input: { command: `step ${i}` } }],
      });
      prompt.push({
        role: 'tool',
        content: [
          { type: 'tool-result', toolCallId: `c${i}`, toolName: 'bash', output: { type: 'text', value: big(i) } },
        ],
      });
    }
    prompt.push(user('Go on.'));
    await call(mw, model, { prompt });
    expect(model.calls).toHaveLength(2);
    expect(events).toEqual([
      { type: 'overflow', message: 'prompt is too long: 41000 tokens > 40000 maximum', recovered: true },
    ]);
    expect(JSON.stringify(model.calls[1]!.prompt).length).toBeLessThan(JSON.stringify(model.calls[0]!.prompt).length);
    expect(reports.map((r) => [r.turn, r.retry, r.reported])).toEqual([
      [1, false, null],
      [2, true, 20_000],
    ]);
    expect(sessionMessages(cm).filter((m) => m.role === 'assistant' && m.usage)).toHaveLength(1);
  });
});

// ---------------------------------------------------------------------------------------------------------------------

interface WireCase {
  name: string;
  wire: RequestProvider;
  modelId: string;
  model: (f: Fake) => AiSdkLanguageModel;
  providerOptions: Record<string, { store: boolean }>;
}

const WIRES: WireCase[] = [
  {
    name: '@ai-sdk/anthropic',
    wire: 'anthropic',
    modelId: 'claude-sonnet-4-5',
    model: (f: Fake) => createAnthropic({ baseURL: f.v1URL, apiKey: 'sk-ant-test' })('claude-sonnet-4-5'),
    providerOptions: {},
  },
  // store: false makes @ai-sdk/openai send the whole input (with store: true it sends earlier items as references).
  {
    name: '@ai-sdk/openai (Responses)',
    wire: 'openai-responses',
    modelId: 'gpt-4.1',
    model: (f: Fake) => createOpenAI({ baseURL: f.v1URL, apiKey: 'sk-test' })('gpt-4.1'),
    providerOptions: { openai: { store: false } },
  },
];

describe('an AI SDK agent with 20–40 KB tool outputs in a 40,000-token window', () => {
  let fake: Fake | undefined;
  afterEach(async () => {
    await fake?.close();
    fake = undefined;
  });
  // The agent's own model writes the summaries (the middleware's default): the fake answers abridge's summary
  // requests as a careful model would.
  const BY_THE_MODEL = 'Summary written by the agent model.';
  const start = async () =>
    (fake = await startFakeProvider({
      window: WINDOW,
      maxOutputTokens: 8_000,
      script: {
        marker: TASK,
        toolTurns: 12,
        answer: (ctx) =>
          isSummaryRequest(ctx.system)
            ? { text: handOffFor(ctx.messages[0]!.parts.map((p) => p.text ?? '').join(''), { mark: BY_THE_MODEL }) }
            : undefined,
      },
    }));
  const isSummary = (r: FakeRequest) => isSummaryRequest(r.body);

  function setup(w: WireCase, f: Fake) {
    const cm = new ContextManager({ model: w.modelId, provider: w.wire, config, maxOutputTokens: 4_000 });
    const reports: AiSdkRequestReport[] = [];
    const events: AiSdkEvent[] = [];
    let compactions = 0;
    cm.on('compaction-complete', () => compactions++);
    const model = wrapLanguageModel({
      model: w.model(f),
      middleware: abridgeMiddleware(cm, { onRequest: (r) => reports.push(r), onEvent: (e) => events.push(e) }),
    });
    return { cm, model, reports, events, compactions: () => compactions };
  }

  function expectWithinWindow(f: Fake, reports: AiSdkRequestReport[], compactions: number) {
    // Nothing refused, the summary requests included.
    expect(f.requests.filter((r) => r.refused)).toEqual([]);
    expect(compactions).toBeGreaterThanOrEqual(2);
    const agent = f.requests.filter((r) => !isSummary(r));
    expect(agent.every((r) => r.markerInSystem === true)).toBe(true);
    // Not set by the app: the reserve abridge counted, sent explicitly (not the provider's default of 64,000).
    expect(new Set(agent.map((r) => r.maxOutputTokens))).toEqual(new Set([4_000]));
    expect(reports.map((r) => r.reported)).toEqual(agent.map((r) => r.usage!.promptTokens));
    // Once anchored on a bill of some size, the prediction is within 5% of the server's count.
    const anchored = reports.filter((r) => r.anchored && r.turn >= 3);
    expect(anchored.length).toBeGreaterThan(3);
    for (const r of anchored)
      expect(
        Math.abs(r.predicted - r.reported!) / r.reported!,
        `turn ${r.turn}: ${r.predicted} vs ${r.reported}`,
      ).toBeLessThan(0.05);
  }

  /**
   * The summaries are the agent model's: asked of the wrapped model whenever a compaction summarized, accepted, and what
   * the view shows. (On the OpenAI wire the cheaper strategies suffice: no summary is needed there.)
   */
  /**
   * Whether a compaction summarized, its summary came from the agent's own model (asked exactly when one did). With
   * results kept whole while the window has room, 20 steps here compact by clearing and offloading alone; the summaries
   * themselves are tested below ("summaries by the agent's own model").
   */
  function expectSummariesByTheModel(f: Fake, cm: ContextManager) {
    const asked = f.requests.filter(isSummary);
    const summarized = cm.session.entries.some((e) =>
      (e.compaction as { strategies?: string[] } | undefined)?.strategies?.includes('summarize'),
    );
    expect(asked.length > 0).toBe(summarized);
    if (!summarized) return;
    expect(asked.every((r) => r.answer?.text?.includes(BY_THE_MODEL))).toBe(true);
    const summaries = activeMessages(cm.session)
      .flatMap((m) => m.parts)
      .flatMap((p) => (p.type === 'compaction' ? [p.marker.summary] : []));
    expect(summaries).toHaveLength(1);
    expect(summaries[0]).toContain(BY_THE_MODEL);
    expect(summaries[0]).toMatch(/^## Primary request\n/);
  }

  for (const w of WIRES) {
    it(`${w.name}: generateText with tools stays within the window (0 refused, ≥2 compactions, the task in every request)`, async () => {
      const f = await start();
      const { cm, model, reports, events, compactions } = setup(w, f);
      const result = await generateText({
        model,
        system: SYSTEM,
        messages: [{ role: 'user', content: 'Start on the task.' }],
        tools: { ...agentTools, ...(await abridgeTools(cm)) },
        stopWhen: stepCountIs(20),
        maxRetries: 0,
        providerOptions: w.providerOptions,
      });
      expectWithinWindow(f, reports, compactions());
      expectSummariesByTheModel(f, cm);
      expect(events).toEqual([]);
      // Anthropic: the system prompt and the conversation are cache breakpoints; later requests read the prefix from the cache.
      const agent = f.requests.filter((r) => !isSummary(r));
      const cached = agent.filter((r) => r.usage!.cacheReadTokens > 0).length;
      if (w.wire === 'anthropic') expect(cached).toBeGreaterThan(agent.length / 3);
      // Every step's answer and tool results are in the manager once: nothing absorbed twice.
      const messages = sessionMessages(cm);
      expect(messages.filter((m) => m.role === 'assistant')).toHaveLength(result.steps.length);
      // A run stopped by its step limit while the model still called tools never sends that last step's results.
      const sent = result.finishReason === 'tool-calls' ? result.steps.slice(0, -1) : result.steps;
      const calls = sent.reduce((n, s) => n + s.toolCalls.length, 0);
      expect(messages.flatMap((m) => m.parts).filter((p) => p.type === 'tool-result')).toHaveLength(calls);
    });

    it(`${w.name}: streamText with tools stays within the window`, async () => {
      const f = await start();
      const { cm, model, reports, events, compactions } = setup(w, f);
      const errors: unknown[] = [];
      const result = streamText({
        model,
        system: SYSTEM,
        messages: [{ role: 'user', content: 'Start on the task.' }],
        tools: { ...agentTools, ...(await abridgeTools(cm)) },
        stopWhen: stepCountIs(20),
        maxRetries: 0,
        providerOptions: w.providerOptions,
        onError: ({ error }) => void errors.push(error),
      });
      let text = '';
      for await (const part of result.fullStream) if (part.type === 'text-delta') text += part.text;
      expect(errors).toEqual([]);
      expect(text).toContain('Step 1:');
      expectWithinWindow(f, reports, compactions());
      expectSummariesByTheModel(f, cm);
      expect(events).toEqual([]);
      expect(sessionMessages(cm).filter((m) => m.role === 'assistant')).toHaveLength((await result.steps).length);
    });
  }

  it('the same agent without the middleware is refused (the test can fail)', async () => {
    const f = await start();
    const w = WIRES[0]!;
    const failure = await generateText({
      model: w.model(f),
      system: SYSTEM,
      messages: [{ role: 'user', content: 'Start on the task.' }],
      tools: agentTools,
      maxOutputTokens: 4_000,
      stopWhen: stepCountIs(20),
      maxRetries: 0,
    }).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(contextOverflow(failure)).toBeDefined();
    expect(f.requests.filter((r) => r.refused).length).toBe(1);
  });

  it('abridgePrepareStep: a prepareStep agent stays within the window too', async () => {
    const f = await start();
    const w = WIRES[0]!;
    const cm = new ContextManager({
      model: w.modelId,
      provider: w.wire,
      config,
      system: SYSTEM,
      tools: TOOL_SPECS,
      maxOutputTokens: 4_000,
      agentTools: false,
    });
    let compactions = 0;
    cm.on('compaction-complete', () => compactions++);
    const result = await generateText({
      model: w.model(f),
      system: SYSTEM,
      messages: [{ role: 'user', content: 'Start on the task.' }],
      tools: agentTools,
      prepareStep: abridgePrepareStep(cm),
      stopWhen: stepCountIs(20),
      maxRetries: 0,
    });
    expect(f.requests.filter((r) => r.refused)).toEqual([]);
    expect(compactions).toBeGreaterThanOrEqual(2);
    expect(
      f.requests.filter((r) => !isSummary(r)).every((r) => r.markerInSystem === true && r.maxOutputTokens === 4_000),
    ).toBe(true);
    // prepareStep is given the step's model: it writes the summaries too.
    expectSummariesByTheModel(f, cm);
    // Every step's answer was recorded (the last one only when a next step starts).
    expect(sessionMessages(cm).filter((m) => m.role === 'assistant')).toHaveLength(result.steps.length - 1);
  });
});

describe('abridgeMiddleware: summaries by the agent’s own model', () => {
  let fake: Fake | undefined;
  afterEach(async () => {
    await fake?.close();
    fake = undefined;
  });
  const KEEP = 'Keep the router findings and the name of the failing test.';
  const promptOf = (ctx: FakeScriptContext) => ctx.messages[0]!.parts.map((p) => p.text ?? '').join('');
  /** The summary request bodies the fake received: the model asked, the max output, the prompt. */
  const summaryRequests = (f: Fake) =>
    f.requests
      .filter((r) => isSummaryRequest(r.body))
      .map((r) => {
        const body = r.body as { model: string; messages: { content: string | { text: string }[] }[] };
        const content = body.messages[0]!.content;
        return {
          model: body.model,
          prompt: typeof content === 'string' ? content : content.map((c) => c.text).join(''),
        };
      });

  /**
   * An agent whose model reads files for three turns, then calls compact_context with instructions, and is stopped
   * one step later (before the window asks for another compaction); its summary answers come from `summary` (the
   * n-th summary request, 1-based). The chain only summarizes, so that the tool's compaction needs a summary.
   */
  async function run(
    summary: (prompt: string, n: number) => string,
    options: (f: Fake) => Partial<ContextManagerOptions> = () => ({}),
  ) {
    let n = 0;
    fake = await startFakeProvider({
      window: WINDOW,
      // The summary of three 20–40 KB results asks for ~10,000 tokens: a cap the real model (64,000) allows.
      maxOutputTokens: 16_000,
      script: {
        marker: TASK,
        toolTurns: 5,
        answer: (ctx) => {
          if (isSummaryRequest(ctx.system)) return { text: summary(promptOf(ctx), ++n) };
          if (ctx.assistantTurns === 3 && ctx.tools.some((t) => t.name === 'compact_context'))
            return {
              text: 'That phase is done; compacting before the next one.',
              toolCalls: [{ name: 'compact_context', input: { instructions: KEEP } }],
            };
          return undefined;
        },
      },
    });
    const cm = new ContextManager({
      model: 'claude-sonnet-4-5',
      provider: 'anthropic',
      config,
      maxOutputTokens: 4_000,
      compaction: { strategies: ['summarize'] },
      ...options(fake),
    });
    const model = wrapLanguageModel({ model: WIRES[0]!.model(fake), middleware: abridgeMiddleware(cm) });
    await generateText({
      model,
      system: SYSTEM,
      messages: [{ role: 'user', content: 'Start on the task.' }],
      tools: { ...agentTools, ...(await abridgeTools(cm)) },
      stopWhen: stepCountIs(5),
      maxRetries: 0,
    });
    const summaries = activeMessages(cm.session)
      .flatMap((m) => m.parts)
      .flatMap((p) => (p.type === 'compaction' ? [p.marker.summary] : []));
    const toolAnswers = fake.requests.flatMap((r) =>
      JSON.stringify(r.body).includes('Compacted the context:') ? [r.index] : [],
    );
    return { f: fake, summaries, toolAnswers, asked: summaryRequests(fake) };
  }

  it('the agent’s compact_context instructions reach the wrapped model; a truncated answer is retried, the retry shown', async () => {
    const { f, summaries, toolAnswers, asked } = await run((prompt, n) =>
      n === 1
        ? handOffFor(prompt, { omit: ['Next step'], mark: 'FIRST, CUT' })
        : handOffFor(prompt, { mark: 'RETRIED' }),
    );
    expect(f.requests.filter((r) => r.refused)).toEqual([]);
    // Both attempts went to the agent's own model, with the agent's instructions; the second says what was wrong.
    expect(asked.map((a) => a.model)).toEqual(['claude-sonnet-4-5', 'claude-sonnet-4-5']);
    for (const a of asked) expect(a.prompt).toContain(`follow it first:\n${KEEP}\n</instructions>`);
    expect(asked[0]!.prompt).not.toContain('Your previous answer was not accepted');
    expect(asked[1]!.prompt).toContain('Your previous answer was not accepted: it left out the Next step section.');
    // The model's second answer is the summary the later requests carry; the tool answered its one line.
    expect(summaries).toHaveLength(1);
    expect(summaries[0]).toContain('RETRIED');
    expect(summaries[0]).toContain('## Next step\n');
    // The step after the tool's compaction: the retried summary, and the tool's one-line answer.
    const lastSummary = f.requests.findLastIndex((r) => isSummaryRequest(r.body));
    const later = f.requests.slice(lastSummary + 1);
    expect(later).toHaveLength(1);
    expect(JSON.stringify(later[0]!.body)).toContain('RETRIED');
    expect(JSON.stringify(later[0]!.body)).not.toContain('FIRST, CUT');
    expect(toolAnswers).toEqual([later[0]!.index]);
  });

  it('summarizer: "extractive" opts out: no summary request, the extractive summary in the view', async () => {
    const { f, summaries, asked } = await run(
      () => 'never asked',
      () => ({ summarizer: 'extractive' }),
    );
    expect(asked).toEqual([]);
    expect(f.requests.filter((r) => r.refused)).toEqual([]);
    expect(summaries).toHaveLength(1);
    expect(summaries[0]).toMatch(/^## Summary of earlier conversation \(abridge, extractive\)\n/);
    expect(summaries[0]).toContain(KEEP);
  });

  it('summaryClient: aiSdkClient(another model) writes the summaries instead of the agent’s', async () => {
    const { asked, summaries } = await run(
      (prompt) => handOffFor(prompt, { mark: 'BY HAIKU' }),
      (f) => ({
        summaryClient: aiSdkClient(createAnthropic({ baseURL: f.v1URL, apiKey: 'sk-ant-test' })('claude-haiku-4-5'), {
          contextWindow: 32_000,
        }),
      }),
    );
    expect(asked.map((a) => a.model)).toEqual(['claude-haiku-4-5']);
    expect(summaries[0]).toContain('BY HAIKU');
    expect(SECTIONS.every((s) => summaries[0]!.includes(`## ${s}\n`))).toBe(true);
  });
});
