/**
 * `abridgeToolRunner` (`abridge-context/anthropic`, issue 36 item 5): the Anthropic SDK's own tool runner
 * (`client.beta.messages.toolRunner`, run with `thread: false`) sending the manager's prepared request each turn,
 * against the loopback provider (which refuses what the API refuses and bills on its own), 20–40 KB tool outputs in a
 * 40,000-token window.
 */
import Anthropic from '@anthropic-ai/sdk';
import { betaZodTool } from '@anthropic-ai/sdk/helpers/beta/zod';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { abridgeToolRunner } from '../src/adapters/anthropic.js';
import { ContextManager } from '../src/manager/context-manager.js';
import { fakeAnsweringAt, lastToolResult, readBackAnswer, toolOutput } from './support/agent-loop.js';
import { startFakeProvider, type FakeProvider } from './support/fake-provider.js';

const MODEL = 'claude-sonnet-4-6';
const WINDOW = 40_000;
const MARKER = '[task 7f3a]';
const TASK = `You are a coding agent. Task: fix the failing checkout test in the orders API without changing its public routes. ${MARKER}`;
const REQUESTS = 40;

/** A fake whose model calls tools until the `requests`-th request it accepts, which it answers with the final text. */
const fakeFor = (requests: number, window = WINDOW) => fakeAnsweringAt(requests, window, MARKER);

/** The agent's runnable tools, answering each call with 20–40 KB; `calls` counts them. */
function agentTools() {
  const calls = { n: 0 };
  const readFile = betaZodTool({
    name: 'read_file',
    description: 'Read a file of the workspace.',
    inputSchema: z.object({ path: z.string() }),
    run: ({ path }) => toolOutput(JSON.stringify({ path }), calls.n++),
  });
  const bash = betaZodTool({
    name: 'bash',
    description: 'Run a shell command in the workspace.',
    inputSchema: z.object({ command: z.string() }),
    run: ({ command }) => toolOutput(JSON.stringify({ command }), calls.n++),
  });
  return { tools: [readFile, bash], calls };
}

describe('abridgeToolRunner: the Anthropic SDK tool runner on the manager’s history', () => {
  let fake: FakeProvider | undefined;
  afterEach(async () => {
    await fake?.close();
    fake = undefined;
  });

  it.each([false, true])(
    'stream %s: 40 requests with 20–40 KB tool outputs in a 40,000-token window: 0 refused, ≥ 2 compactions, the task in every request',
    async (stream) => {
      fake = await fakeFor(REQUESTS);
      const client = new Anthropic({ apiKey: 'sk-ant-test', baseURL: fake.baseURL, maxRetries: 0 });
      const { tools, calls } = agentTools();
      // The user's glue, as docs/agent-loop.md shows it.
      const cm = new ContextManager({ model: MODEL, provider: 'anthropic', system: TASK, contextWindow: WINDOW });
      let compactions = 0;
      cm.on('compaction-complete', () => compactions++);
      await cm.append({ role: 'user', parts: [{ type: 'text', text: 'Start on the task.' }] });
      // What the manager prepared, as it was at each turn (the manager reuses its wire objects).
      const prepared: unknown[] = [];
      const prepare = cm.prepare.bind(cm);
      cm.prepare = async (o) => {
        const p = await prepare(o);
        prepared.push(JSON.parse(JSON.stringify({ system: p.request.system, messages: p.request.messages })));
        return p;
      };
      const runner = abridgeToolRunner(client, cm, { tools, maxOutputTokens: 4096, stream });
      const replies: Anthropic.Beta.Messages.BetaMessage[] = [];
      for await (const item of runner)
        replies.push(
          'finalMessage' in item ? await item.finalMessage() : (item as Anthropic.Beta.Messages.BetaMessage),
        );

      const requests = fake.requests;
      expect(requests.length).toBe(REQUESTS);
      expect(replies.length).toBe(REQUESTS);
      expect(requests.filter((r) => r.refused)).toEqual([]);
      expect(requests.filter((r) => r.markerInSystem).length).toBe(REQUESTS);
      expect(requests.every((r) => r.stream === stream)).toBe(true);
      expect(compactions).toBeGreaterThanOrEqual(2);
      expect(runner.overflows).toEqual([]);
      const made = requests.reduce((n, r) => n + (r.answer?.toolCalls?.length ?? 0), 0);
      expect(made).toBeGreaterThanOrEqual(REQUESTS);
      expect(calls.n).toBe(made);
      expect(replies.at(-1)!.stop_reason).toBe('end_turn');
      // Every request is the one the manager prepared (the runner added nothing of its own), with its max output; the
      // requests came near the window without passing it, though the tool outputs alone would have passed it.
      const sent = requests.map((r) => r.body as { system: unknown; messages: unknown });
      expect(sent.map(({ system, messages }) => ({ system, messages }))).toEqual(prepared);
      expect(requests.every((r) => r.maxOutputTokens === 4096)).toBe(true);
      const sizes = requests.map((r) => r.usage!.promptTokens + r.maxOutputTokens!);
      expect(Math.max(...sizes)).toBeGreaterThan(WINDOW * 0.85);
      expect(Math.max(...sizes)).toBeLessThanOrEqual(WINDOW);
      // abridge's own tools went out beside the agent's, runnable by the runner: read_result once something was
      // offloaded or cleared (before that it has nothing to read).
      const names = (i: number) => (requests.at(i)!.body as { tools: { name: string }[] }).tools.map((t) => t.name);
      expect(names(0)).toEqual(['read_file', 'bash', 'compact_context']);
      expect(names(-1)).toEqual(['read_file', 'bash', 'read_result', 'compact_context']);
      // Each reply was recorded with its bill: the manager's count stays anchored on it.
      expect(cm.size().anchored).toBe(true);
    },
    120_000,
  );

  it('a window the provider enforces below the catalog’s: one refusal, recovered by compacting and one retry', async () => {
    fake = await fakeFor(16);
    const client = new Anthropic({ apiKey: 'sk-ant-test', baseURL: fake.baseURL, maxRetries: 0 });
    const cm = new ContextManager({ model: MODEL, provider: 'anthropic', system: TASK });
    expect(cm.breakdown().window).toBeGreaterThan(WINDOW);
    await cm.append({ role: 'user', parts: [{ type: 'text', text: 'Start on the task.' }] });
    const runner = abridgeToolRunner(client, cm, { tools: agentTools().tools, maxOutputTokens: 4096 });
    const final = await runner.runUntilDone();
    expect(final.stop_reason).toBe('end_turn');
    expect(fake.requests.filter((r) => r.refused).length).toBe(1);
    expect(fake.requests.filter((r) => !r.refused).length).toBe(16);
    expect(runner.overflows).toEqual([{ message: expect.stringContaining('prompt is too long'), recovered: true }]);
    expect(cm.breakdown().window).toBe(WINDOW);
  }, 120_000);

  it('the model reads back what abridge cut with read_result, run by the runner beside the agent’s tools', async () => {
    const asked: { offset?: number } = {};
    fake = await startFakeProvider({
      window: WINDOW,
      maxOutputTokens: 64_000,
      script: { toolTurns: 10_000, marker: MARKER, answer: readBackAnswer(asked) },
    });
    const client = new Anthropic({ apiKey: 'sk-ant-test', baseURL: fake.baseURL, maxRetries: 0 });
    const cm = new ContextManager({ model: MODEL, provider: 'anthropic', system: TASK, contextWindow: WINDOW });
    await cm.append({ role: 'user', parts: [{ type: 'text', text: 'Start on the task.' }] });
    const final = await abridgeToolRunner(client, cm, {
      tools: agentTools().tools,
      maxOutputTokens: 4096,
    }).runUntilDone();
    expect(final.stop_reason).toBe('end_turn');
    expect(asked.offset).toBeGreaterThan(0);
    expect(fake.requests.filter((r) => r.refused)).toEqual([]);
    const readBack = lastToolResult(fake.requests.at(-1)!.body);
    expect(readBack).toContain(`:${asked.offset} x`);
    expect(readBack).not.toMatch(/^Error/);
  }, 60_000);

  it('a caller that stops early and later continues: the calls left unanswered are paired, nothing refused', async () => {
    fake = await fakeFor(6);
    const client = new Anthropic({ apiKey: 'sk-ant-test', baseURL: fake.baseURL, maxRetries: 0 });
    const cm = new ContextManager({ model: MODEL, provider: 'anthropic', system: TASK, contextWindow: WINDOW });
    await cm.append({ role: 'user', parts: [{ type: 'text', text: 'Start on the task.' }] });
    const { tools, calls } = agentTools();
    let seen = 0;
    for await (const message of abridgeToolRunner(client, cm, { tools, maxOutputTokens: 4096 })) {
      expect(message.stop_reason).toBe('tool_use');
      if (++seen === 3) break;
    }
    expect(fake.requests.length).toBe(3);
    const ranBeforeStop = calls.n;
    await cm.append({ role: 'user', parts: [{ type: 'text', text: 'Go on.' }] });
    const final = await abridgeToolRunner(client, cm, { tools, maxOutputTokens: 4096 }).runUntilDone();
    expect(final.stop_reason).toBe('end_turn');
    expect(fake.requests.length).toBe(6);
    expect(fake.requests.filter((r) => r.refused)).toEqual([]);
    // The third reply's calls never ran: the stop came before them.
    const made = (k: number) => fake!.requests[k]!.answer?.toolCalls?.length ?? 0;
    expect(ranBeforeStop).toBe(made(0) + made(1));
    expect(calls.n).toBe(ranBeforeStop + made(3) + made(4));
  }, 60_000);

  it('refuses a manager that does not speak Anthropic', () => {
    const client = new Anthropic({ apiKey: 'sk-ant-test' });
    const cm = new ContextManager({ model: 'gpt-5', provider: 'openai-chat' });
    expect(() => abridgeToolRunner(client, cm, { tools: [] })).toThrow(
      expect.objectContaining({ name: 'AbridgeError', code: 'INVALID_INPUT' }),
    );
  });
});
