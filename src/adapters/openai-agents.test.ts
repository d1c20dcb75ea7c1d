/**
 * The OpenAI Agents SDK's own runner (`run(agent, input, { session })`, the real `@openai/agents`: 0.14 on Node 20,
 * the current release in the Node 22 check) with an AbridgeSession, against the loopback provider speaking the
 * Responses API: a 40,000-token window, tool outputs of 20–40 KB. The provider refuses what the real API refuses and
 * bills on its own count.
 */
import { Agent, OpenAIResponsesModel, run, setTracingDisabled, tool } from '@openai/agents';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { startFakeProvider, type FakeProvider } from '../../test/support/fake-provider.js';
import { expectHostRun, plainLoopCompactions, toolOutput } from '../../test/support/agent-loop.js';
import { AbridgeError } from '../errors.js';
import { ContextManager } from '../manager/context-manager.js';
import { MemorySessionStore } from '../store/memory-session-store.js';
import { AbridgeSession, type OpenAIAgentsEvent, type OpenAIAgentsRequestReport } from './openai-agents.js';

const WINDOW = 40_000;
const MARKER = '[task 5e1c]';
const TASK = `Fix the failing checkout test in the orders API without changing its public routes. ${MARKER}`;
const TOOL_ROUNDS = 40;
let finalAt = Number.POSITIVE_INFINITY;

setTracingDisabled(true);

function agentTools() {
  let round = 0;
  return [
    tool({
      name: 'read_file',
      description: 'Read a file of the workspace.',
      parameters: z.object({ path: z.string() }),
      execute: ({ path }) => toolOutput(JSON.stringify({ path }), round++),
    }),
    tool({
      name: 'bash',
      description: 'Run a shell command in the workspace.',
      parameters: z.object({ command: z.string() }),
      execute: ({ command }) => toolOutput(JSON.stringify({ command }), round++),
    }),
  ];
}

describe('AbridgeSession in the OpenAI Agents SDK runner', () => {
  let fake: FakeProvider;
  let client: OpenAI;
  beforeAll(async () => {
    fake = await startFakeProvider({
      window: WINDOW,
      maxOutputTokens: 16_000,
      // The scripted model calls tools until the request the test names (it counts the assistant turns it is sent,
      // which compaction lowers), then answers.
      script: {
        toolTurns: 10_000,
        answer: (ctx) =>
          ctx.requestIndex >= finalAt ? { text: 'Done. The route table is built too early.' } : undefined,
      },
    });
    client = new OpenAI({ baseURL: fake.v1URL, apiKey: 'sk-test', maxRetries: 0 });
  });
  afterAll(async () => {
    await fake?.close();
  });

  it('40 tool rounds with 20–40 KB outputs in a 40,000-token window: 0 refused, ≥ 2 compactions (not one per request), the task in every request', async () => {
    const store = new MemorySessionStore();
    const cm = new ContextManager({
      model: 'gpt-5',
      provider: 'openai-responses',
      contextWindow: WINDOW,
      maxOutputTokens: 4096,
      store,
      sessionId: 'agents-1',
    });
    let compactions = 0;
    const startedAt: number[] = [];
    cm.on('compaction-complete', (c) => {
      compactions++;
      startedAt.push(c.before);
    });
    const reports: OpenAIAgentsRequestReport[] = [];
    const events: OpenAIAgentsEvent[] = [];
    const session = new AbridgeSession(cm, { onRequest: (r) => reports.push(r), onEvent: (e) => events.push(e) });
    const agent = new Agent({
      name: 'coder',
      instructions: 'You are a coding agent working in a TypeScript repository.',
      tools: [...agentTools(), ...(await session.tools())],
      model: session.model(new OpenAIResponsesModel(client, 'gpt-5')),
    });
    const before = fake.requests.length;
    finalAt = before + TOOL_ROUNDS;
    const result = await run(agent, TASK, { session, maxTurns: TOOL_ROUNDS + 5 });
    const mine = fake.requests.slice(before);

    expect(result.finalOutput).toMatch(/^Done\./);
    finalAt = Number.POSITIVE_INFINITY;
    const baseline = await plainLoopCompactions(fake, {
      model: 'gpt-5',
      window: WINDOW,
      maxOutputTokens: 4096,
      system: 'You are a coding agent working in a TypeScript repository.',
      task: TASK,
      turns: TOOL_ROUNDS,
    });
    expectHostRun({
      mine,
      reports,
      compactions,
      startedAt,
      baseline,
      window: WINDOW,
      maxOutputTokens: 4096,
      rounds: TOOL_ROUNDS,
      marker: MARKER,
    });
    expect(events.filter((e) => e.type === 'resync')).toEqual([]);
    expect(events.filter((e) => e.type === 'tools-not-offered')).toEqual([]);

    // The store holds the whole conversation (compaction archives, nothing is deleted); the runner's end-of-run write
    // added nothing twice.
    const stored = await store.entries('agents-1');
    const calls = stored.flatMap((e) => e.message?.parts ?? []).filter((p) => p.type === 'tool-call');
    expect(calls.length).toBe(mine.reduce((n, r) => n + (r.answer?.toolCalls?.length ?? 0), 0));
    expect(new Set(calls.map((p) => (p as { id: string }).id)).size).toBe(calls.length);

    // A second run of the same conversation starts from the view the session gives: no resync, nothing refused.
    const next = fake.requests.length;
    finalAt = next + 2;
    const second = await run(agent, `Now write the fix. ${MARKER}`, { session, maxTurns: 5 });
    const later = fake.requests.slice(next);
    expect(later.length).toBe(3);
    expect(second.finalOutput).toMatch(/^Done\./);
    expect(later.filter((r) => r.refused)).toEqual([]);
    expect(events.filter((e) => e.type === 'resync')).toEqual([]);
    // The view's items, not the runner's whole history: the first request of the second run is under the window.
    expect(later[0]!.promptTokens!).toBeLessThan(WINDOW - 4096);
    expect(JSON.stringify(later[0]!.body)).toContain('Now write the fix.');
  }, 240_000);

  it('streamed: run(…, { stream: true }) goes through the same session, recording each bill as the stream ends', async () => {
    const cm = new ContextManager({
      model: 'gpt-5',
      provider: 'openai-responses',
      contextWindow: WINDOW,
      maxOutputTokens: 4096,
    });
    let compactions = 0;
    cm.on('compaction-complete', () => compactions++);
    const reports: OpenAIAgentsRequestReport[] = [];
    const session = new AbridgeSession(cm, { onRequest: (r) => reports.push(r) });
    const agent = new Agent({
      name: 'coder',
      instructions: 'You are a coding agent working in a TypeScript repository.',
      tools: [...agentTools(), ...(await session.tools())],
      model: session.model(new OpenAIResponsesModel(client, 'gpt-5')),
    });
    const before = fake.requests.length;
    finalAt = before + 15;
    const result = await run(agent, TASK, { session, stream: true, maxTurns: 20 });
    for await (const _ of result.toTextStream()) {
      // consumed: the run advances as its stream is read
    }
    await result.completed;
    const mine = fake.requests.slice(before);
    expect(result.finalOutput).toMatch(/^Done\./);
    expect(mine.length).toBe(16);
    expect(mine.every((r) => r.stream)).toBe(true);
    expect(mine.filter((r) => r.refused)).toEqual([]);
    expect(mine.every((r) => JSON.stringify(r.body).includes(MARKER))).toBe(true);
    expect(compactions).toBeGreaterThanOrEqual(2);
    expect(reports.map((r) => r.reported)).toEqual(mine.map((r) => r.usage!.promptTokens));
  });

  it('told 40,000 while the server enforces 30,000: each refusal is recovered by one retry inside the model call; the run finishes', async () => {
    const small = await startFakeProvider({
      window: 30_000,
      maxOutputTokens: 16_000,
      script: { toolTurns: 10_000, answer: (ctx) => (ctx.requestIndex >= 12 ? { text: 'Done.' } : undefined) },
    });
    try {
      const cm = new ContextManager({
        model: 'gpt-5',
        provider: 'openai-responses',
        contextWindow: WINDOW,
        maxOutputTokens: 4096,
      });
      const events: OpenAIAgentsEvent[] = [];
      const session = new AbridgeSession(cm, { onEvent: (e) => events.push(e) });
      const agent = new Agent({
        name: 'coder',
        instructions: 'You are a coding agent working in a TypeScript repository.',
        tools: [...agentTools(), ...(await session.tools())],
        model: session.model(
          new OpenAIResponsesModel(new OpenAI({ baseURL: small.v1URL, apiKey: 'sk-test', maxRetries: 0 }), 'gpt-5'),
        ),
      });
      const result = await run(agent, TASK, { session, maxTurns: 20 });
      expect(result.finalOutput).toMatch(/^Done\./);
      // The Responses API's refusal states no figures ("Your input exceeds the context window of this model"): the
      // manager cannot learn the window from it, so a growing context may be refused again; each refusal is recovered
      // by the retry inside the same model call, and the runner never sees one.
      const refused = small.requests.filter((r) => r.refused).map((r) => r.index);
      expect(refused.length).toBeGreaterThanOrEqual(1);
      expect(refused.every((i) => small.requests[i + 1] && !small.requests[i + 1]!.refused)).toBe(true);
      expect(events.filter((e) => e.type === 'overflow')).toEqual(
        refused.map(() => expect.objectContaining({ type: 'overflow', recovered: true })),
      );
    } finally {
      await small.close();
    }
  });

  it('refuses what would lose history, and a conversation the server holds', async () => {
    const session = new AbridgeSession(new ContextManager({ model: 'gpt-5', provider: 'openai-responses' }));
    await expect(session.popItem()).rejects.toBeInstanceOf(AbridgeError);
    await expect(session.clearSession()).rejects.toBeInstanceOf(AbridgeError);
    const agent = new Agent({
      name: 'coder',
      instructions: 'You are a coding agent.',
      model: session.model(new OpenAIResponsesModel(client, 'gpt-5')),
    });
    await expect(run(agent, 'hello', { previousResponseId: 'resp_123' })).rejects.toThrow(/server holds/);
  });

  it('getItems gives the view the model sees; addItems keeps what the app adds', async () => {
    const cm = new ContextManager({ model: 'gpt-5', provider: 'openai-responses' });
    const session = new AbridgeSession(cm);
    expect(await session.getSessionId()).toBe(cm.sessionId);
    await session.addItems([
      { role: 'user', content: 'Read the router.' },
      { type: 'function_call', callId: 'call_1', name: 'read_file', arguments: '{"path":"src/router.ts"}' },
      {
        type: 'function_call_result',
        callId: 'call_1',
        name: 'read_file',
        status: 'completed',
        output: { type: 'text', text: 'export const routes = [];' },
      },
    ]);
    const items = await session.getItems();
    expect(items.map((i) => ('type' in i ? i.type : 'message'))).toEqual([
      'message',
      'function_call',
      'function_call_result',
    ]);
    expect(await session.getItems(1)).toEqual(items.slice(-1));
    expect(cm.session.entries.filter((e) => e.message).map((e) => e.message!.role)).toEqual([
      'user',
      'assistant',
      'tool',
    ]);
  });
});
