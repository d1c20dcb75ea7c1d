/**
 * The LangChain middleware (`abridge-context/langchain`, issue 36 item 5) in a real LangChain v1 agent: `createAgent` of
 * `langchain` with ChatAnthropic of `@langchain/anthropic`, against the loopback provider (which refuses what the API
 * refuses and bills on its own), 20–40 KB tool outputs in a 40,000-token window.
 */
import { ChatAnthropic } from '@langchain/anthropic';
import { tool } from '@langchain/core/tools';
import { createAgent, MiddlewareError } from 'langchain';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import {
  abridgeLangChainMiddleware,
  type LangChainEvent,
  type LangChainRequestReport,
} from '../src/adapters/langchain.js';
import { ContextManager } from '../src/manager/context-manager.js';
import { ContextOverflowError } from '../src/manager/overflow.js';
import { MemorySessionStore } from '../src/store/memory-session-store.js';
import { fakeAnsweringAt, lastToolResult, readBackAnswer, toolOutput } from './support/agent-loop.js';
import { startFakeProvider, type FakeProvider } from './support/fake-provider.js';

const MODEL = 'claude-sonnet-4-6';
const WINDOW = 40_000;
const MARKER = '[task 7f3a]';
const TASK = `You are a coding agent. Task: fix the failing checkout test in the orders API without changing its public routes. ${MARKER}`;
const REQUESTS = 40;

/** A fake whose model calls tools until the `requests`-th request it accepts, which it answers with the final text. */
const fakeFor = (requests: number, window = WINDOW) => fakeAnsweringAt(requests, window, MARKER);

/** The agent's tools, answering each call with 20–40 KB; `calls` counts them. */
function agentTools() {
  const calls = { n: 0 };
  const readFile = tool(async ({ path }) => toolOutput(JSON.stringify({ path }), calls.n++), {
    name: 'read_file',
    description: 'Read a file of the workspace.',
    schema: z.object({ path: z.string() }),
  });
  const bash = tool(async ({ command }) => toolOutput(JSON.stringify({ command }), calls.n++), {
    name: 'bash',
    description: 'Run a shell command in the workspace.',
    schema: z.object({ command: z.string() }),
  });
  return { tools: [readFile, bash], calls };
}

describe('abridgeLangChainMiddleware in a LangChain v1 agent', () => {
  let fake: FakeProvider | undefined;
  afterEach(async () => {
    await fake?.close();
    fake = undefined;
  });

  it('40 requests with 20–40 KB tool outputs in a 40,000-token window: 0 refused, ≥ 2 compactions, the task in every request', async () => {
    fake = await fakeFor(REQUESTS);
    const cm = new ContextManager({ model: MODEL, provider: 'anthropic', contextWindow: WINDOW });
    let compactions = 0;
    cm.on('compaction-complete', () => compactions++);
    const reports: LangChainRequestReport[] = [];
    const events: LangChainEvent[] = [];
    const { tools, calls } = agentTools();
    // The user's glue, as docs/langchain.md shows it: the model and tools are theirs.
    const agent = createAgent({
      model: new ChatAnthropic({ model: MODEL, apiKey: 'sk-ant-test', anthropicApiUrl: fake.baseURL }),
      tools,
      systemPrompt: TASK,
      middleware: [
        await abridgeLangChainMiddleware(cm, { onRequest: (r) => reports.push(r), onEvent: (e) => events.push(e) }),
      ],
    });
    const result = await agent.invoke(
      { messages: [{ role: 'user', content: 'Start on the task.' }] },
      { recursionLimit: 1_000 },
    );

    const requests = fake.requests;
    expect(requests.length).toBe(REQUESTS);
    expect(requests.filter((r) => r.refused)).toEqual([]);
    expect(requests.filter((r) => r.markerInSystem).length).toBe(REQUESTS);
    expect(compactions).toBeGreaterThanOrEqual(2);
    expect(reports.filter((r) => r.compacted).length).toBe(compactions);
    expect(events).toEqual([]);
    // Every call the model made ran (every third turn makes two), and the agent got the final answer.
    const made = requests.reduce((n, r) => n + (r.answer?.toolCalls?.length ?? 0), 0);
    expect(made).toBeGreaterThanOrEqual(REQUESTS);
    expect(calls.n).toBe(made);
    expect(String(result.messages.at(-1)?.content)).toContain('Done: the route table');
    // The agent's own state kept the whole history: only the model's view was compacted.
    expect(result.messages.filter((m) => m.type === 'tool').length).toBe(made);
    // The reserve is ChatAnthropic's own max_tokens (16,384 for Sonnet 4.6), and prompt + reserve came near the window
    // without passing it: what abridge prevented was real.
    const prompts = requests.map((r) => r.usage!.promptTokens);
    expect(new Set(requests.map((r) => r.maxOutputTokens))).toEqual(new Set([16_384]));
    expect(reports.every((r) => r.maxOutputTokens === 16_384)).toBe(true);
    const sizes = requests.map((r) => r.usage!.promptTokens + r.maxOutputTokens!);
    expect(Math.max(...sizes)).toBeGreaterThan(WINDOW * 0.85);
    expect(Math.max(...sizes)).toBeLessThanOrEqual(WINDOW);
    // The bills anchored the count: each report carries the bill, and after the first the prediction builds on the
    // last one (but right after a compaction, which counts the view it made).
    expect(reports.map((r) => r.reported)).toEqual(prompts);
    expect(reports.slice(1).filter((r) => !r.compacted && !r.anchored)).toEqual([]);
    const errors = reports
      .filter((r) => !r.compacted)
      .map((r) => Math.abs(r.predicted - r.reported!) / r.reported!)
      .sort((a, b) => a - b);
    expect(errors[Math.floor(errors.length / 2)]!).toBeLessThan(0.05);
  }, 120_000);

  it('a window the provider enforces below the catalog’s: one refusal, recovered by compacting and one retry', async () => {
    fake = await fakeFor(16);
    const cm = new ContextManager({ model: MODEL, provider: 'anthropic' });
    expect(cm.breakdown().window).toBeGreaterThan(WINDOW);
    const events: LangChainEvent[] = [];
    const { tools } = agentTools();
    const agent = createAgent({
      model: new ChatAnthropic({ model: MODEL, apiKey: 'sk-ant-test', anthropicApiUrl: fake.baseURL, maxRetries: 0 }),
      tools,
      systemPrompt: TASK,
      middleware: [await abridgeLangChainMiddleware(cm, { onEvent: (e) => events.push(e) })],
    });
    await agent.invoke({ messages: [{ role: 'user', content: 'Start on the task.' }] }, { recursionLimit: 1_000 });
    expect(fake.requests.filter((r) => r.refused).length).toBe(1);
    expect(fake.requests.filter((r) => !r.refused).length).toBe(16);
    expect(events).toEqual([
      { type: 'overflow', message: expect.stringContaining('prompt is too long'), recovered: true },
    ]);
    expect(cm.breakdown().window).toBe(WINDOW);
  }, 120_000);

  it('the model reads back what abridge cut with read_result, a tool the middleware brings', async () => {
    const asked: { offset?: number } = {};
    fake = await startFakeProvider({
      window: WINDOW,
      maxOutputTokens: 64_000,
      script: { toolTurns: 10_000, marker: MARKER, answer: readBackAnswer(asked) },
    });
    const cm = new ContextManager({ model: MODEL, provider: 'anthropic', contextWindow: WINDOW });
    const agent = createAgent({
      model: new ChatAnthropic({ model: MODEL, apiKey: 'sk-ant-test', anthropicApiUrl: fake.baseURL }),
      tools: agentTools().tools,
      systemPrompt: TASK,
      middleware: [await abridgeLangChainMiddleware(cm)],
    });
    const result = await agent.invoke({ messages: [{ role: 'user', content: 'Start on the task.' }] });
    expect(asked.offset).toBeGreaterThan(0);
    expect(fake.requests.filter((r) => r.refused)).toEqual([]);
    // The agent's tool node ran abridge's tool: the last request carries the lines that had been cut.
    const readBack = lastToolResult(fake.requests.at(-1)!.body);
    expect(readBack).toContain(`:${asked.offset} x`);
    expect(readBack).not.toMatch(/^Error/);
    expect(result.messages.filter((m) => m.type === 'tool' && m.name === 'read_result').length).toBe(1);
  }, 60_000);

  it('a request nothing can make fit is not sent: ContextOverflowError, as the cause of LangChain’s MiddlewareError', async () => {
    fake = await fakeFor(1_000);
    const cm = new ContextManager({ model: MODEL, provider: 'anthropic', contextWindow: 16_000 });
    const agent = createAgent({
      model: new ChatAnthropic({ model: MODEL, maxTokens: 4096, apiKey: 'sk-ant-test', anthropicApiUrl: fake.baseURL }),
      tools: [],
      systemPrompt: `${TASK} ${'Follow the house style. '.repeat(4_000)}`,
      middleware: [await abridgeLangChainMiddleware(cm)],
    });
    const err = await agent
      .invoke({ messages: [{ role: 'user', content: 'Start on the task.' }] })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(MiddlewareError);
    expect((err as Error).cause).toBeInstanceOf(ContextOverflowError);
    expect(((err as Error).cause as Error).message).toMatch(/cannot fit its 16K-token window .*system prompt/);
    expect(fake.requests).toEqual([]);
  });

  it('a history edited between invocations is re-synced from the common prefix', async () => {
    fake = await fakeFor(1_000);
    const cm = new ContextManager({ model: MODEL, provider: 'anthropic', contextWindow: WINDOW });
    const events: LangChainEvent[] = [];
    const agent = createAgent({
      model: new ChatAnthropic({ model: MODEL, apiKey: 'sk-ant-test', anthropicApiUrl: fake.baseURL }),
      tools: [],
      systemPrompt: TASK,
      middleware: [await abridgeLangChainMiddleware(cm, { onEvent: (e) => events.push(e) })],
    });
    const first = await agent.invoke({ messages: [{ role: 'user', content: 'What does the router do?' }] });
    expect(first.messages.map((m) => m.type)).toEqual(['human', 'ai']);
    // Continued as it is: nothing to re-sync.
    await agent.invoke({ messages: [...first.messages, { role: 'user', content: 'And the cache?' }] });
    expect(events).toEqual([]);
    // Rewound to the first question, asked another way: the manager keeps what it had and adds the new question.
    await agent.invoke({ messages: [{ role: 'user', content: 'What does the router do, in one line?' }] });
    expect(events).toEqual([{ type: 'resync', kept: 0, dropped: 4, added: 1 }]);
    const last = fake.requests.at(-1)!.body as { messages: { role: string; content: unknown }[] };
    expect(JSON.stringify(last.messages.at(-1))).toContain('in one line?');
    expect(fake.requests.every((r) => !r.refused && r.markerInSystem)).toBe(true);
  }, 60_000);

  it('a resumed manager takes from the agent’s history only what follows its last AI message', async () => {
    fake = await fakeFor(1_000);
    const store = new MemorySessionStore();
    const options = { model: MODEL, provider: 'anthropic' as const, contextWindow: WINDOW };
    const agentOn = async (cm: ContextManager) =>
      createAgent({
        model: new ChatAnthropic({ model: MODEL, apiKey: 'sk-ant-test', anthropicApiUrl: fake!.baseURL }),
        tools: [],
        systemPrompt: TASK,
        middleware: [await abridgeLangChainMiddleware(cm)],
      });
    const first = await (await agentOn(new ContextManager({ ...options, store, sessionId: 's' }))).invoke({
      messages: [{ role: 'user', content: 'What does the router do?' }],
    });
    // Another process: the manager resumed from the store, the history from the app (or a checkpointer).
    const resumed = await ContextManager.resume(store, 's', options);
    await (await agentOn(resumed)).invoke({
      messages: [...first.messages, { role: 'user', content: 'And the cache?' }],
    });
    const texts = resumed.session.entries
      .filter((e) => e.message)
      .map(
        (e) => `${e.message!.role}: ${e.message!.parts.map((p) => (p.type === 'text' ? p.text : p.type)).join(' ')}`,
      );
    expect(texts.filter((t) => t.startsWith('user:'))).toEqual([
      'user: What does the router do?',
      'user: And the cache?',
    ]);
    expect(texts.filter((t) => t.startsWith('assistant:')).length).toBe(2);
    const last = fake.requests.at(-1)!.body as { messages: { role: string }[] };
    expect(last.messages.map((m) => m.role)).toEqual(['user', 'assistant', 'user']);
  }, 60_000);

  it('rejects a Responses-API manager, and names a missing langchain', async () => {
    const cm = new ContextManager({ model: 'gpt-5', provider: 'openai-responses' });
    await expect(abridgeLangChainMiddleware(cm)).rejects.toMatchObject({ name: 'AbridgeError', code: 'INVALID_INPUT' });
    vi.resetModules();
    vi.doMock('langchain', () => {
      throw Object.assign(new Error("Cannot find package 'langchain' imported from /app/dist/adapters/langchain.js"), {
        code: 'ERR_MODULE_NOT_FOUND',
      });
    });
    try {
      const mod = await import('../src/adapters/langchain.js');
      const err = await mod
        .abridgeLangChainMiddleware(new ContextManager({ model: MODEL, provider: 'anthropic' }))
        .catch((e: unknown) => e);
      expect(err).toMatchObject({ name: 'AbridgeError', code: 'MISSING_DEPENDENCY' });
      expect((err as Error).message).toMatch(/^install langchain to use the LangChain middleware/);
    } finally {
      vi.doUnmock('langchain');
      vi.resetModules();
    }
  });
});
