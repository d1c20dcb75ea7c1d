// What the agent-loop tests share: the tools a coding agent offers, the tool output it gets back, and one request sent
// over the wire to the loopback provider (test/support/fake-provider.ts).
import { expect } from 'vitest';
import type { HostRequestReport } from '../../src/manager/host-report.js';
import type { Message, Part } from '../../src/model/types.js';
import type { FakeProvider, ModelAnswer, RecordedRequest, ScriptContext } from './fake-provider.js';

export const LOOP_TOOLS = [
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

/** 20–40 KB of output a tool call returns, the same for the same call. */
export function toolOutput(call: string, turn: number): string {
  const lines = 400 + ((turn * 37) % 400);
  return Array.from({ length: lines }, (_, i) => `${call} ${turn}:${i} ${'x'.repeat(30 + (i % 40))}`).join('\n');
}

/** The tool message answering every call of `message` with its toolOutput. */
export function answerCalls(message: Message, turn: number): Message & { parts: Part[] } {
  const calls = message.parts.filter((p): p is Extract<Part, { type: 'tool-call' }> => p.type === 'tool-call');
  return {
    role: 'tool',
    parts: calls.map((c) => ({
      type: 'tool-result',
      callId: c.id,
      toolName: c.name,
      content: [{ type: 'text', text: toolOutput(JSON.stringify(c.arguments), turn) }],
      isError: false,
    })),
  };
}

export type LoopPath = 'anthropic' | 'openai-chat' | 'openai-responses';

/** One request body POSTed to the fake provider's Anthropic or Chat endpoint: its status and parsed body. */
export async function sendRequest(
  fake: FakeProvider,
  path: LoopPath,
  request: unknown,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const route = {
    anthropic: '/v1/messages',
    'openai-chat': '/v1/chat/completions',
    'openai-responses': '/v1/responses',
  };
  const res = await fetch(`${fake.baseURL}${route[path]}`, {
    method: 'POST',
    headers:
      path === 'anthropic'
        ? { 'content-type': 'application/json', 'x-api-key': 'sk-ant-test', 'anthropic-version': '2023-06-01' }
        : { 'content-type': 'application/json', authorization: 'Bearer sk-test' },
    body: JSON.stringify(request),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

/**
 * The model's answer that reads back, with abridge's `read_result`, the first lines a shortened tool result elided (the
 * newest such result in the request): what an agent does when it needs what was cut. Undefined when nothing was.
 */
export function readBack(ctx: ScriptContext): { answer: ModelAnswer; offset: number } | undefined {
  const texts = ctx.messages.flatMap((m) => m.parts).flatMap((p) => (p.kind === 'tool_result' ? [p.text] : []));
  for (let i = texts.length - 1; i >= 0; i--) {
    const m = /read_result \{"ref_id": "(r_[0-9a-f]+)", "offset": (\d+)\}/.exec(texts[i]!);
    if (!m) continue;
    const offset = Number(m[2]);
    return {
      answer: {
        text: 'I need the lines that were cut.',
        toolCalls: [{ name: 'read_result', input: { ref_id: m[1]!, offset, limit: 3 } }],
      },
      offset,
    };
  }
  return undefined;
}

/**
 * A script answer for the loopback model: ordinary tool calls until a shortened result shows up, then the read-back of
 * its cut lines (`asked.offset` says which), then the final text.
 */
export function readBackAnswer(asked: { offset?: number }): (ctx: ScriptContext) => ModelAnswer | undefined {
  return (ctx) => {
    if (asked.offset !== undefined) return { text: 'Done: the route table is built too early.' };
    const back = readBack(ctx);
    if (!back) return undefined;
    asked.offset = back.offset;
    return back.answer;
  };
}

/** The text of the last tool result an Anthropic request body carries. */
export function lastToolResult(body: unknown): string {
  const messages = (body as { messages: { content: unknown }[] }).messages;
  const blocks = messages.flatMap((m) => (Array.isArray(m.content) ? m.content : [])) as Record<string, unknown>[];
  const result = blocks.filter((b) => b.type === 'tool_result').at(-1);
  return typeof result?.content === 'string' ? result.content : JSON.stringify(result?.content);
}

/**
 * How often a ContextManager loop of its own (prepare, send over Chat Completions, record, append the calls' outputs)
 * compacts over `turns` requests in `window`: the yardstick a host adapter's run is held to (it keeps the manager's
 * state, so it compacts no more often than the manager does by itself).
 */
export async function plainLoopCompactions(
  fake: FakeProvider,
  options: { model: string; window: number; maxOutputTokens: number; system: string; task: string; turns: number },
): Promise<number> {
  const { ContextManager } = await import('../../src/manager/context-manager.js');
  const cm = new ContextManager({
    model: options.model,
    provider: 'openai-chat',
    contextWindow: options.window,
    maxOutputTokens: options.maxOutputTokens,
    system: options.system,
    tools: LOOP_TOOLS,
  });
  let compactions = 0;
  cm.on('compaction-complete', () => compactions++);
  await cm.append({ role: 'user', parts: [{ type: 'text', text: options.task }] });
  for (let turn = 0; turn < options.turns; turn++) {
    const { status, body } = await sendRequest(fake, 'openai-chat', (await cm.prepare()).request);
    if (status !== 200) throw new Error(`the plain loop's request ${turn} was refused: ${JSON.stringify(body)}`);
    const { message } = await cm.record(body);
    await cm.append(answerCalls(message, turn));
  }
  return compactions;
}

/**
 * What a host adapter's run against the loopback provider must show, request by request: none refused, the calls
 * answered, the task in every request, a window that really filled, compactions that started near full and came no
 * more often than the manager's own loop (`baseline`, within 15%), and a report per request whose bill is the
 * provider's and whose prediction anchored on the previous bill (median error under 5%).
 */
export function expectHostRun(run: {
  mine: readonly RecordedRequest[];
  reports: readonly Omit<HostRequestReport, 'retry'>[];
  compactions: number;
  startedAt: readonly number[];
  baseline: number;
  window: number;
  maxOutputTokens: number;
  rounds: number;
  marker: string;
}): void {
  const { mine, reports, compactions, window, maxOutputTokens } = run;
  expect(mine.length).toBe(run.rounds + 1);
  expect(mine.filter((r) => r.refused)).toEqual([]);
  expect(mine.filter((r) => (r.answer?.toolCalls?.length ?? 0) > 0).length).toBe(run.rounds);
  expect(mine.every((r) => JSON.stringify(r.body).includes(run.marker))).toBe(true);
  // The outputs really are 20–40 KB and the window really fills: what abridge kept from the provider was real.
  expect(Math.max(...mine.map((r) => r.usage?.promptTokens ?? 0))).toBeGreaterThan(window * 0.5);
  // The adapter keeps the manager's state: it compacts when the window calls for it (each compaction started near the
  // compact mark, 90% of window − reserve), not at every request, and no more often than the manager by itself.
  expect(compactions).toBeGreaterThanOrEqual(2);
  expect(run.startedAt.every((t) => t >= 0.85 * (window - maxOutputTokens))).toBe(true);
  expect(compactions).toBeLessThanOrEqual(Math.ceil(run.baseline * 1.15));
  // (A request may compact twice: to the target, then to the hard ceiling.)
  expect(reports.filter((r) => r.compacted).length).toBeGreaterThanOrEqual(2);
  expect(reports.filter((r) => r.compacted).length).toBeLessThanOrEqual(compactions);
  // Every request sent the reserve abridge counted, and its bill anchored the next prediction.
  expect(mine.every((r) => r.maxOutputTokens === maxOutputTokens)).toBe(true);
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
}

/**
 * A loopback provider whose model calls tools (its requests carrying `marker`) until the `requests`-th request it
 * accepts, which it answers with the final text. A refused request is not a turn of the model.
 */
export async function fakeAnsweringAt(requests: number, window: number, marker: string): Promise<FakeProvider> {
  const { startFakeProvider } = await import('./fake-provider.js');
  let answered = 0;
  return startFakeProvider({
    window,
    maxOutputTokens: 64_000,
    script: {
      toolTurns: 10_000,
      marker,
      answer: () => (++answered >= requests ? { text: 'Done: the route table is built too early.' } : undefined),
    },
  });
}

/** A `grep` output of `lines` lines over module `i` (about 5 KB for the default 120). */
export function grepOutput(i: number, lines = 120): string {
  return Array.from(
    { length: lines },
    (_, k) => `src/mod${i}/file${k}.ts:${k + 1}: const value${k} = compute(${k});`,
  ).join('\n');
}

/** Agent steps `from`…`from + n − 1` recorded on a manager: a bash call each, answered by `grepOutput(i)`. */
export async function grepSteps(
  cm: {
    recordResponse(m: Message): Promise<void>;
    append(...m: Message[]): Promise<void>;
  },
  from: number,
  n: number,
): Promise<void> {
  for (let i = from; i < from + n; i++) {
    await cm.recordResponse({
      role: 'assistant',
      parts: [
        { type: 'text', text: `Step ${i}: reading module ${i}.` },
        { type: 'tool-call', id: `call_${i}`, name: 'bash', arguments: { command: `grep -rn value src/mod${i}` } },
      ],
    });
    await cm.append({
      role: 'tool',
      parts: [
        {
          type: 'tool-result',
          callId: `call_${i}`,
          toolName: 'bash',
          isError: false,
          content: [{ type: 'text', text: grepOutput(i) }],
        },
      ],
    });
  }
}
