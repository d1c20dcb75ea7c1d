/**
 * The AI SDK adapter with LanguageModelV4 (AI SDK 7) models and params, written as plain objects: these run whichever
 * `ai` is installed (the repo's ai@6, or ai@7 in scripts/node22-check.sh), calling the middleware as `wrapLanguageModel`
 * of AI SDK 7 does (V4 params, V4 model), and calling `abridgePrepareStep` as AI SDK 7 does (the messages a step
 * returned carry forward to the next).
 */
import type { LanguageModelV3Middleware } from '@ai-sdk/provider';
import type { ModelMessage } from 'ai';
import { describe, expect, it } from 'vitest';
import { DEFAULT_BUDGET_SETTINGS } from '../budget/defaults.js';
import { ContextManager } from '../manager/context-manager.js';
import {
  abridgeMiddleware,
  abridgePrepareStep,
  aiSdkClient,
  type AiSdkEvent,
  type AiSdkLanguageModel,
} from './ai-sdk.js';

const config = {
  budget: {
    ...DEFAULT_BUDGET_SETTINGS,
    thresholds: { warn: 0.8, compact: 0.9, block: 0.98, target: 0.6 },
    contextWindow: 40_000,
  },
};
const png = Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex');
const usage = (prompt: number) => ({
  inputTokens: { total: prompt, noCache: prompt, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 20, text: 20, reasoning: undefined },
});

/** A V4 model answering from a list; the params of each call kept. */
function v4Model(answers: { content: unknown[]; prompt: number }[]) {
  const calls: { prompt: unknown[]; maxOutputTokens?: number }[] = [];
  return {
    specificationVersion: 'v4' as const,
    provider: 'test',
    modelId: 'claude-sonnet-4-5',
    supportedUrls: {},
    calls,
    async doGenerate(params: { prompt: unknown[] }) {
      calls.push(params);
      const a = answers.shift()!;
      return {
        content: a.content,
        finishReason: { unified: 'stop', raw: 'end_turn' },
        usage: usage(a.prompt),
        warnings: [],
      };
    },
    async doStream(params: { prompt: unknown[] }) {
      calls.push(params);
      const a = answers.shift()!;
      const parts = [
        { type: 'stream-start', warnings: [] },
        ...a.content,
        { type: 'finish', finishReason: { unified: 'stop', raw: 'end_turn' }, usage: usage(a.prompt) },
      ];
      return { stream: new ReadableStream({ start: (c) => (parts.forEach((p) => c.enqueue(p)), c.close()) }) };
    },
  };
}

/** What AI SDK 7's `wrapLanguageModel` does with a middleware, for one call (V4 params, the V4 model). */
async function call(
  middleware: ReturnType<typeof abridgeMiddleware>,
  model: ReturnType<typeof v4Model>,
  params: { prompt: unknown[] },
  type: 'generate' | 'stream' = 'generate',
) {
  // Typed as AI SDK 6's middleware whichever `ai` is installed; the hooks get V4 values, as AI SDK 7 gives them.
  const mw = middleware as unknown as LanguageModelV3Middleware;
  const m = model as never;
  const transformed = await mw.transformParams!({ type, params: params as never, model: m });
  const doGenerate = () => model.doGenerate(transformed as never) as never;
  const doStream = () => model.doStream(transformed as never) as never;
  if (type === 'generate') await mw.wrapGenerate!({ doGenerate, doStream, params: transformed, model: m });
  else {
    const { stream } = await mw.wrapStream!({ doGenerate, doStream, params: transformed, model: m });
    const reader = stream.getReader();
    while (!(await reader.read()).done);
  }
  return transformed as unknown as { prompt: { role: string; content: unknown }[]; maxOutputTokens: number };
}

const manager = () =>
  new ContextManager({
    model: 'claude-sonnet-4-5',
    provider: 'anthropic',
    config,
    maxOutputTokens: 4_000,
    agentTools: false,
  });
const messagesOf = (cm: ContextManager) => cm.session.entries.filter((e) => e.message).map((e) => e.message!);

describe('abridgeMiddleware with a LanguageModelV4 model (AI SDK 7)', () => {
  // A V4 prompt with every shape V4 changed: tagged file data (bytes, base64, URL, provider reference), a reasoning
  // file, a custom part, and a tool result whose content holds `file` items.
  const user = {
    role: 'user',
    content: [
      { type: 'text', text: 'What is in these?' },
      { type: 'file', data: { type: 'data', data: new Uint8Array(png) }, mediaType: 'image/png' },
      {
        type: 'file',
        data: { type: 'data', data: png.toString('base64') },
        mediaType: 'application/pdf',
        filename: 'spec.pdf',
      },
      { type: 'file', data: { type: 'url', url: new URL('https://example.com/cat.jpg') }, mediaType: 'image/jpeg' },
      { type: 'file', data: { type: 'reference', reference: { anthropic: 'file_01' } }, mediaType: 'application/pdf' },
    ],
  };
  const assistant = {
    role: 'assistant',
    content: [
      { type: 'reasoning', text: 'Four files.', providerOptions: { anthropic: { signature: 'sig-4' } } },
      { type: 'reasoning-file', data: { type: 'data', data: png.toString('base64') }, mediaType: 'image/png' },
      { type: 'custom', kind: 'test.marker', providerOptions: { test: { id: 'x' } } },
      { type: 'tool-call', toolCallId: 'toolu_1', toolName: 'screenshot', input: {} },
    ],
  };
  const tool = {
    role: 'tool',
    content: [
      {
        type: 'tool-result',
        toolCallId: 'toolu_1',
        toolName: 'screenshot',
        output: {
          type: 'content',
          value: [
            { type: 'text', text: 'the page:' },
            { type: 'file', data: { type: 'data', data: png.toString('base64') }, mediaType: 'image/png' },
            {
              type: 'file',
              data: { type: 'url', url: new URL('https://example.com/log.txt') },
              mediaType: 'text/plain',
            },
          ],
        },
      },
    ],
  };
  const system = { role: 'system', content: 'You are terse.' };

  it('reads V4 parts by meaning, sends a V4 prompt, and gives back the parts it left untouched as they came', async () => {
    const cm = manager();
    const events: AiSdkEvent[] = [];
    const mw = abridgeMiddleware(cm, { onEvent: (e) => events.push(e), cache: false });
    const model = v4Model([
      { content: [{ type: 'text', text: 'A PNG, a PDF, a cat.' }], prompt: 1_500 },
      { content: [{ type: 'text', text: 'ok' }], prompt: 1_600 },
    ]);
    const sent = await call(mw, model, { prompt: [system, user, assistant, tool] });
    const [u, a, t] = messagesOf(cm);
    expect(u!.parts.map((p) => p.type)).toEqual(['text', 'image', 'file', 'image', 'file']);
    expect(u!.parts[1]).toMatchObject({ type: 'image', mediaType: 'image/png', byteSize: png.byteLength });
    expect(u!.parts[2]).toMatchObject({ type: 'file', mediaType: 'application/pdf', name: 'spec.pdf' });
    expect(u!.parts[3]).toMatchObject({ type: 'image', url: 'https://example.com/cat.jpg' });
    // The reasoning file counts as the image it is; the custom part has no text of its own.
    expect(a!.parts.map((p) => p.type)).toEqual(['thinking', 'image', 'tool-call']);
    expect(t!.parts[0]).toMatchObject({
      type: 'tool-result',
      content: [
        { type: 'text', text: 'the page:' },
        { type: 'image', mediaType: 'image/png', byteSize: png.byteLength },
        { type: 'file', url: 'https://example.com/log.txt', mediaType: 'text/plain' },
      ],
    });
    // What the provider gets: V4 parts, the untouched ones as they came (the custom part is not sent).
    expect(sent.maxOutputTokens).toBe(4_000);
    expect(sent.prompt).toEqual([
      system,
      user,
      { ...assistant, content: assistant.content.filter((c) => c.type !== 'custom') },
      tool,
    ]);
    expect(model.calls[0]!.prompt).toBe(sent.prompt);
    // The next prompt continues the history with the answer in the AI SDK's form: nothing re-synced.
    const answer = { role: 'assistant', content: [{ type: 'text', text: 'A PNG, a PDF, a cat.' }] };
    const next = { role: 'user', content: [{ type: 'text', text: 'Thanks.' }] };
    await call(mw, model, { prompt: [system, user, assistant, tool, answer, next] });
    expect(events).toEqual([]);
    expect(messagesOf(cm).map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant', 'user', 'assistant']);
    // (The answer's usage is checked below, on prompts whose size the bill can be.)
  });

  it('a part abridge writes itself (no original) is sent in V4 form: tagged file data, `file` items in tool results', async () => {
    const cm = manager();
    await cm.append({
      role: 'user',
      parts: [
        { type: 'text', text: 'Look.' },
        { type: 'image', mediaType: 'image/png', data: png.toString('base64'), byteSize: png.byteLength },
      ],
    });
    await cm.append({ role: 'assistant', parts: [{ type: 'tool-call', id: 'c1', name: 'shot', arguments: {} }] });
    await cm.append({
      role: 'tool',
      parts: [
        {
          type: 'tool-result',
          callId: 'c1',
          toolName: 'shot',
          isError: false,
          content: [
            { type: 'image', mediaType: 'image/png', data: png.toString('base64') },
            { type: 'image', url: 'https://example.com/a.png' },
          ],
        },
      ],
    });
    const model = v4Model([{ content: [{ type: 'text', text: 'ok' }], prompt: 900 }]);
    // A prompt holding only what is new continues the resumed manager.
    const sent = await call(abridgeMiddleware(cm, { cache: false }), model, {
      prompt: [{ role: 'user', content: [{ type: 'text', text: 'And?' }] }],
    });
    expect(sent.prompt[0]).toEqual({
      role: 'user',
      content: [
        { type: 'text', text: 'Look.' },
        { type: 'file', data: { type: 'data', data: png.toString('base64') }, mediaType: 'image/png' },
      ],
    });
    expect(sent.prompt[2]).toEqual({
      role: 'tool',
      content: [
        {
          type: 'tool-result',
          toolCallId: 'c1',
          toolName: 'shot',
          output: {
            type: 'content',
            value: [
              { type: 'file', data: { type: 'data', data: png.toString('base64') }, mediaType: 'image/png' },
              { type: 'file', data: { type: 'url', url: new URL('https://example.com/a.png') }, mediaType: 'image/*' },
            ],
          },
        },
      ],
    });
  });

  it('records a V4 answer, generated or streamed, file parts included', async () => {
    for (const type of ['generate', 'stream'] as const) {
      const cm = manager();
      const content =
        type === 'generate'
          ? [
              { type: 'text', text: 'Here is the chart.' },
              { type: 'file', data: { type: 'data', data: png.toString('base64') }, mediaType: 'image/png' },
              { type: 'tool-call', toolCallId: 't1', toolName: 'read_file', input: '{"path":"a.ts"}' },
            ]
          : [
              { type: 'text-start', id: '1' },
              { type: 'text-delta', id: '1', delta: 'Here is ' },
              { type: 'text-delta', id: '1', delta: 'the chart.' },
              { type: 'text-end', id: '1' },
              { type: 'file', data: { type: 'data', data: png.toString('base64') }, mediaType: 'image/png' },
              { type: 'custom', kind: 'test.marker' },
              { type: 'tool-call', toolCallId: 't1', toolName: 'read_file', input: '{"path":"a.ts"}' },
            ];
      const model = v4Model([{ content, prompt: 700 }]);
      await call(
        abridgeMiddleware(cm),
        model,
        { prompt: [{ role: 'user', content: [{ type: 'text', text: 'Go.' }] }] },
        type,
      );
      const answer = messagesOf(cm)[1]!;
      expect(answer.parts, type).toEqual([
        { type: 'text', text: 'Here is the chart.' },
        { type: 'image', mediaType: 'image/png', data: png.toString('base64'), byteSize: png.byteLength },
        { type: 'tool-call', id: 't1', name: 'read_file', arguments: { path: 'a.ts' } },
      ]);
      expect(answer.usage, type).toEqual({ input: 700, output: 20, cacheRead: 0, cacheWrite: 0 });
    }
  });

  it('aiSdkClient and the agent-model summaries call a V4 model', async () => {
    const model = v4Model([{ content: [{ type: 'text', text: 'summary text' }], prompt: 100 }]);
    const client = aiSdkClient(model as unknown as AiSdkLanguageModel, { contextWindow: 32_000 });
    expect(client.model).toBe('claude-sonnet-4-5');
    expect(await client.complete({ system: 'S', prompt: 'P', maxOutputTokens: 500 })).toBe('summary text');
    expect(model.calls[0]).toEqual({
      prompt: [
        { role: 'system', content: 'S' },
        { role: 'user', content: [{ type: 'text', text: 'P' }] },
      ],
      maxOutputTokens: 500,
    });
    expect(() => aiSdkClient({ ...model, specificationVersion: 'v2' } as unknown as AiSdkLanguageModel)).toThrow(
      /LanguageModelV3 or LanguageModelV4/,
    );
  });
});

describe('abridgePrepareStep as AI SDK 7 calls it (returned messages carry forward)', () => {
  it('the next step starting with the messages returned is a continuation: nothing re-synced, nothing added twice', async () => {
    const cm = manager();
    const events: AiSdkEvent[] = [];
    const prepareStep = abridgePrepareStep(cm, { onEvent: (e) => events.push(e) }) as unknown as (o: {
      messages: ModelMessage[];
      steps: { usage: unknown }[];
      model?: unknown;
    }) => Promise<{ messages: ModelMessage[]; system: string; maxOutputTokens: number }>;
    const big = (n: number) =>
      Array.from({ length: 400 }, (_, i) => `line ${i} of output ${n}: ${'x'.repeat(40)}`).join('\n');
    const stepUsage = (n: number) => ({ inputTokens: n, outputTokens: 20, totalTokens: n + 20 });
    let compactions = 0;
    cm.on('compaction-complete', () => compactions++);
    let messages: ModelMessage[] = [{ role: 'user', content: 'Start.' }];
    const steps: { usage: unknown }[] = [];
    for (let i = 0; i < 10; i++) {
      const out = await prepareStep({ messages, steps: steps.slice(), model: 'a-gateway-id' });
      // AI SDK 7: the step's messages are the ones returned, then the step's answer and its tool result.
      messages = [
        ...out.messages,
        {
          role: 'assistant',
          content: [{ type: 'tool-call', toolCallId: `c${i}`, toolName: 'bash', input: { command: `cat f${i}` } }],
        },
        {
          role: 'tool',
          content: [
            { type: 'tool-result', toolCallId: `c${i}`, toolName: 'bash', output: { type: 'text', value: big(i) } },
          ],
        },
      ];
      steps.push({ usage: stepUsage(1_000 + 2_000 * i) });
    }
    // The view returned differed from the history at least once (else any history would do).
    expect(compactions).toBeGreaterThanOrEqual(1);
    expect(events).toEqual([]);
    // Each step's call and result once, in order.
    const calls = messagesOf(cm).flatMap((m) => m.parts.flatMap((p) => (p.type === 'tool-call' ? [p.id] : [])));
    expect(calls).toEqual(Array.from({ length: 9 }, (_, i) => `c${i}`));
  });
});
