/**
 * A Mastra agent (the real `@mastra/core` 1.x, Node ≥ 22.13: run by scripts/node22-check.sh only) with abridge's
 * processor, against the loopback provider through `@ai-sdk/openai` (the Responses API): a 40,000-token window, tool
 * outputs of 20–40 KB. The provider refuses what the real API refuses and bills on its own count.
 */
import { createOpenAI } from '@ai-sdk/openai';
import { Agent } from '@mastra/core/agent';
import { createTool } from '@mastra/core/tools';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { AbridgeProcessor, type MastraEvent, type MastraRequestReport } from '../../src/adapters/mastra.js';
import { ContextManager } from '../../src/manager/context-manager.js';
import { MemorySessionStore } from '../../src/store/memory-session-store.js';
import { plainLoopCompactions, toolOutput } from '../support/agent-loop.js';
import { startFakeProvider, type FakeProvider } from '../support/fake-provider.js';

// Mastra reports usage to its makers unless told not to; nothing leaves this machine.
process.env.MASTRA_TELEMETRY_DISABLED = '1';

const WINDOW = 40_000;
const MARKER = '[task 9b27]';
const TASK = `Fix the failing checkout test in the orders API without changing its public routes. ${MARKER}`;
const TOOL_ROUNDS = 40;
let finalAt = Number.POSITIVE_INFINITY;

function agentTools() {
  let round = 0;
  return {
    read_file: createTool({
      id: 'read_file',
      description: 'Read a file of the workspace.',
      inputSchema: z.object({ path: z.string() }),
      execute: async ({ path }) => toolOutput(JSON.stringify({ path }), round++),
    }),
    bash: createTool({
      id: 'bash',
      description: 'Run a shell command in the workspace.',
      inputSchema: z.object({ command: z.string() }),
      execute: async ({ command }) => toolOutput(JSON.stringify({ command }), round++),
    }),
  };
}

describe('AbridgeProcessor in a Mastra agent', () => {
  let fake: FakeProvider;
  beforeAll(async () => {
    fake = await startFakeProvider({
      window: WINDOW,
      maxOutputTokens: 16_000,
      // The scripted model calls tools until the request the test names, then answers.
      script: {
        toolTurns: 10_000,
        answer: (ctx) =>
          ctx.requestIndex >= finalAt ? { text: 'Done. The route table is built too early.' } : undefined,
      },
    });
  });
  afterAll(async () => {
    await fake?.close();
  });

  it('40 tool rounds with 20–40 KB outputs in a 40,000-token window: 0 refused, ≥ 2 compactions, the task in every request', async () => {
    const store = new MemorySessionStore();
    const cm = new ContextManager({
      model: 'gpt-5',
      provider: 'openai-responses',
      contextWindow: WINDOW,
      maxOutputTokens: 4096,
      agentTools: false,
      store,
      sessionId: 'mastra-1',
    });
    let compactions = 0;
    const startedAt: number[] = [];
    cm.on('compaction-complete', (c) => {
      compactions++;
      startedAt.push(c.before);
    });
    const reports: MastraRequestReport[] = [];
    const events: unknown[] = [];
    const abridge = new AbridgeProcessor(cm, { onRequest: (r) => reports.push(r), onEvent: (e) => events.push(e) });
    const openai = createOpenAI({ baseURL: fake.v1URL, apiKey: 'sk-test' });
    const agent = new Agent({
      id: 'coder',
      name: 'coder',
      instructions: 'You are a coding agent working in a TypeScript repository.',
      // @ai-sdk/openai 4 is built on a newer @ai-sdk/provider 4 than the one Mastra bundles: the same model at run time,
      // types that differ in a detail Mastra does not use.
      model: openai('gpt-5') as unknown as ConstructorParameters<typeof Agent>[0]['model'],
      tools: agentTools(),
      inputProcessors: [abridge],
      errorProcessors: [abridge],
    });
    const before = fake.requests.length;
    finalAt = before + TOOL_ROUNDS;
    const result = await agent.generate(TASK, { maxSteps: TOOL_ROUNDS + 5 });
    const mine = fake.requests.slice(before);

    expect(result.text).toMatch(/Done\. The route table is built too early\.$/);
    expect(mine.length).toBe(TOOL_ROUNDS + 1);
    expect(mine.filter((r) => r.refused)).toEqual([]);
    expect(mine.filter((r) => (r.answer?.toolCalls?.length ?? 0) > 0).length).toBe(TOOL_ROUNDS);
    expect(mine.every((r) => JSON.stringify(r.body).includes(MARKER))).toBe(true);
    expect(Math.max(...mine.map((r) => r.usage?.promptTokens ?? 0))).toBeGreaterThan(WINDOW * 0.5);
    expect(compactions).toBeGreaterThanOrEqual(2);
    // The processor keeps the manager's state: each compaction started from a context near full (the compact mark is
    // 90% of window − reserve), none because a stateless view of the history looked full.
    expect(startedAt.every((t) => t >= 0.85 * (WINDOW - 4096))).toBe(true);
    // … and no more often than the manager compacts by itself on such a run.
    finalAt = Number.POSITIVE_INFINITY;
    const baseline = await plainLoopCompactions(fake, {
      model: 'gpt-5',
      window: WINDOW,
      maxOutputTokens: 4096,
      system: 'You are a coding agent working in a TypeScript repository.',
      task: TASK,
      turns: TOOL_ROUNDS,
    });
    // About as often as the manager's own loop (on Chat Completions, whose framing differs a little from Responses):
    // the stateless wrapper compacted on 35 of 41 requests.
    expect(compactions).toBeLessThanOrEqual(Math.ceil(baseline * 1.15));
    // (A request may compact twice: to the target, then to the hard ceiling.)
    expect(reports.filter((r) => r.compacted).length).toBeGreaterThanOrEqual(2);
    expect(reports.filter((r) => r.compacted).length).toBeLessThanOrEqual(compactions);
    expect(mine.every((r) => r.maxOutputTokens === 4096)).toBe(true);
    expect(reports.length).toBe(mine.length);
    expect(reports.every((r, i) => r.reported === mine[i]!.usage!.promptTokens)).toBe(true);
    expect(
      reports
        .slice(1)
        .filter((r) => !r.compacted)
        .every((r) => r.anchored),
    ).toBe(true);
    const errors = reports
      .filter((r) => !r.compacted && r.anchored && r.reported !== null)
      .map((r) => Math.abs(r.predicted - r.reported!) / r.reported!)
      .sort((a, b) => a - b);
    expect(errors[Math.floor(errors.length / 2)]!).toBeLessThan(0.05);
    expect(events).toEqual([]);
    const stored = await store.entries('mastra-1');
    const calls = stored.flatMap((e) => e.message?.parts ?? []).filter((p) => p.type === 'tool-call');
    expect(calls.length).toBe(mine.reduce((n, r) => n + (r.answer?.toolCalls?.length ?? 0), 0));
  }, 240_000);

  it('told 40,000 while the server enforces 30,000: processAPIError recovers each refusal with one retry; the run finishes', async () => {
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
        agentTools: false,
      });
      const events: MastraEvent[] = [];
      const abridge = new AbridgeProcessor(cm, { onEvent: (e) => events.push(e) });
      const openai = createOpenAI({ baseURL: small.v1URL, apiKey: 'sk-test' });
      const agent = new Agent({
        id: 'coder',
        name: 'coder',
        instructions: 'You are a coding agent working in a TypeScript repository.',
        model: openai('gpt-5') as unknown as ConstructorParameters<typeof Agent>[0]['model'],
        tools: agentTools(),
        inputProcessors: [abridge],
        errorProcessors: [abridge],
      });
      // Mastra counts a retried step as a step.
      const result = await agent.generate(TASK, { maxSteps: 30 });
      expect(result.text).toMatch(/Done\./);
      // The Responses API's refusal states no figures: each one is recovered by Mastra's retry of the step.
      const refused = small.requests.filter((r) => r.refused).map((r) => r.index);
      expect(refused.length).toBeGreaterThanOrEqual(1);
      expect(refused.every((i) => small.requests[i + 1] && !small.requests[i + 1]!.refused)).toBe(true);
      expect(events).toEqual(refused.map(() => expect.objectContaining({ type: 'overflow', recovered: true })));
    } finally {
      await small.close();
    }
  });
});
