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
import { expectHostRun, plainLoopCompactions, toolOutput } from '../support/agent-loop.js';
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
