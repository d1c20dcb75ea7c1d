/**
 * The window is what the provider says it is (issue 36, item 1): a ContextManager that assumes the catalog's window of
 * its model, against a loopback Anthropic server that enforces 40,000 tokens, learns the window from the first refusal
 * ("prompt is too long: N tokens > 40000 maximum"), compacts under it and is not refused again; the window is recorded
 * in the session and a resumed manager keeps it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { contextOverflow } from '../src/formats/wire.js';
import { ContextManager } from '../src/manager/context-manager.js';
import type { Message, Part } from '../src/model/types.js';
import { MemorySessionStore } from '../src/store/memory-session-store.js';
import { startFakeProvider, type FakeProvider } from './support/fake-provider.js';

const WINDOW = 40_000;
const MAX_OUTPUT = 4096;
const TURNS = 40;
const TOOLS = [
  {
    name: 'bash',
    description: 'Run a shell command in the workspace.',
    inputSchema: { type: 'object', properties: { command: { type: 'string' } }, required: ['command'] },
  },
];

function output(call: string, turn: number): string {
  const lines = 400 + ((turn * 37) % 400);
  return Array.from({ length: lines }, (_, i) => `${call} ${turn}:${i} ${'x'.repeat(30 + (i % 40))}`).join('\n');
}

type Path = 'anthropic' | 'openai-chat';

async function send(
  fake: FakeProvider,
  path: Path,
  request: unknown,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${fake.baseURL}${path === 'anthropic' ? '/v1/messages' : '/v1/chat/completions'}`, {
    method: 'POST',
    headers:
      path === 'anthropic'
        ? { 'content-type': 'application/json', 'x-api-key': 'sk-ant-test', 'anthropic-version': '2023-06-01' }
        : { 'content-type': 'application/json', authorization: 'Bearer sk-test' },
    body: JSON.stringify(request),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

describe('a window the provider enforces below the one assumed', () => {
  let fake: FakeProvider;
  beforeAll(async () => {
    fake = await startFakeProvider({ window: WINDOW, maxOutputTokens: 8000, script: { toolTurns: 100 } });
  });
  afterAll(async () => {
    await fake.close();
  });

  it.each([
    ['anthropic', 'claude-sonnet-4-6'],
    ['openai-chat', 'gpt-5.4'],
  ] as [Path, string][])(
    '%s (%s): learned from the first refusal; every turn finishes, one request refused, the window kept on resume',
    async (path, model) => {
      const store = new MemorySessionStore();
      const cm = new ContextManager({
        model,
        provider: path,
        system: 'You are a coding agent. Task: fix the failing checkout test.',
        tools: TOOLS,
        store,
        sessionId: 's',
      });
      const assumed = cm.breakdown().window;
      expect(assumed).toBeGreaterThan(WINDOW);
      await cm.append({ role: 'user', parts: [{ type: 'text', text: 'Start on the task.' }] });
      const first = fake.requests.length;
      let refused = 0;
      let turns = 0;
      for (let turn = 0; turn < TURNS; turn++) {
        let { status, body } = await send(fake, path, (await cm.prepare({ maxOutputTokens: MAX_OUTPUT })).request);
        if (status !== 200) {
          refused++;
          const overflow = contextOverflow({ status, error: body });
          expect(overflow?.limit).toBe(WINDOW);
          expect(await cm.recoverFromOverflow(overflow!)).toBe(true);
          ({ status, body } = await send(fake, path, (await cm.prepare({ maxOutputTokens: MAX_OUTPUT })).request));
          if (status !== 200) {
            refused++;
            break;
          }
        }
        turns++;
        const { message } = await cm.record(body);
        const calls = message.parts.filter((p): p is Extract<Part, { type: 'tool-call' }> => p.type === 'tool-call');
        const results: Part[] = calls.map((c) => ({
          type: 'tool-result',
          callId: c.id,
          toolName: c.name,
          content: [{ type: 'text', text: output(JSON.stringify(c.arguments), turn) }],
          isError: false,
        }));
        await cm.append({ role: 'tool', parts: results } satisfies Message);
      }
      expect({ turns, refused }).toEqual({ turns: TURNS, refused: 1 });
      expect(fake.requests.slice(first).filter((r) => r.refused).length).toBe(1);
      expect(cm.breakdown().window).toBe(WINDOW);
      const resumed = await ContextManager.resume(store, 's', {
        model,
        provider: path,
        system: 'You are a coding agent. Task: fix the failing checkout test.',
        tools: TOOLS,
      });
      expect(resumed.breakdown().window).toBe(WINDOW);
    },
  );

  it('told 40,000 while the server enforces 30,000: one refusal, then the window the server stated', async () => {
    const small = await startFakeProvider({ window: 30_000, maxOutputTokens: 8000, script: { toolTurns: 100 } });
    try {
      const cm = new ContextManager({
        model: 'claude-sonnet-4-6',
        provider: 'anthropic',
        contextWindow: 40_000,
        system: 'You are a coding agent. Task: fix the failing checkout test.',
        tools: TOOLS,
      });
      await cm.append({ role: 'user', parts: [{ type: 'text', text: 'Start on the task.' }] });
      let refused = 0;
      for (let turn = 0; turn < TURNS; turn++) {
        let { status, body } = await send(
          small,
          'anthropic',
          (await cm.prepare({ maxOutputTokens: MAX_OUTPUT })).request,
        );
        if (status !== 200) {
          refused++;
          expect(await cm.recoverFromOverflow(contextOverflow({ status, error: body })!)).toBe(true);
          ({ status, body } = await send(
            small,
            'anthropic',
            (await cm.prepare({ maxOutputTokens: MAX_OUTPUT })).request,
          ));
          expect(status).toBe(200);
        }
        const { message } = await cm.record(body);
        const calls = message.parts.filter((p): p is Extract<Part, { type: 'tool-call' }> => p.type === 'tool-call');
        await cm.append({
          role: 'tool',
          parts: calls.map((c) => ({
            type: 'tool-result',
            callId: c.id,
            toolName: c.name,
            content: [{ type: 'text', text: output(JSON.stringify(c.arguments), turn) }],
            isError: false,
          })),
        } satisfies Message);
      }
      expect(refused).toBe(1);
      expect(cm.breakdown().window).toBe(30_000);
    } finally {
      await small.close();
    }
  });
});
