/**
 * The window is what the provider says it is (issue 36, item 1): a ContextManager that assumes the catalog's window of
 * its model, against a loopback Anthropic server that enforces 40,000 tokens, learns the window from the first refusal
 * ("prompt is too long: N tokens > 40000 maximum"), compacts under it and is not refused again; the window is recorded
 * in the session and a resumed manager keeps it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { contextOverflow } from '../src/formats/wire.js';
import { ContextManager } from '../src/manager/context-manager.js';
import { MemorySessionStore } from '../src/store/memory-session-store.js';
import { answerCalls, LOOP_TOOLS, sendRequest, type LoopPath } from './support/agent-loop.js';
import { startFakeProvider, type FakeProvider } from './support/fake-provider.js';

const WINDOW = 40_000;

/**
 * TURNS requests of a manager against `server`, each refusal recovered once (`onRefusal` sees the overflow first);
 * returns how many requests were refused. A second refusal in a row fails the test.
 */
async function loop(
  server: FakeProvider,
  path: LoopPath,
  cm: ContextManager,
  onRefusal: (overflow: ReturnType<typeof contextOverflow>) => void = () => {},
): Promise<number> {
  await cm.append({ role: 'user', parts: [{ type: 'text', text: 'Start on the task.' }] });
  let refused = 0;
  for (let turn = 0; turn < TURNS; turn++) {
    let { status, body } = await sendRequest(server, path, (await cm.prepare({ maxOutputTokens: MAX_OUTPUT })).request);
    if (status !== 200) {
      refused++;
      const overflow = contextOverflow({ status, error: body });
      onRefusal(overflow);
      expect(await cm.recoverFromOverflow(overflow!)).toBe(true);
      ({ status, body } = await sendRequest(server, path, (await cm.prepare({ maxOutputTokens: MAX_OUTPUT })).request));
      expect(status).toBe(200);
    }
    const { message } = await cm.record(body);
    await cm.append(answerCalls(message, turn));
  }
  return refused;
}
const MAX_OUTPUT = 4096;
const TURNS = 40;
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
  ] as [LoopPath, string][])(
    '%s (%s): learned from the first refusal; every turn finishes, one request refused, the window kept on resume',
    async (path, model) => {
      const store = new MemorySessionStore();
      const cm = new ContextManager({
        model,
        provider: path,
        system: 'You are a coding agent. Task: fix the failing checkout test.',
        tools: LOOP_TOOLS,
        store,
        sessionId: 's',
      });
      const assumed = cm.breakdown().window;
      expect(assumed).toBeGreaterThan(WINDOW);
      const first = fake.requests.length;
      const refused = await loop(fake, path, cm, (overflow) => expect(overflow?.limit).toBe(WINDOW));
      expect(refused).toBe(1);
      expect(fake.requests.slice(first).filter((r) => r.refused).length).toBe(1);
      expect(cm.breakdown().window).toBe(WINDOW);
      const resumed = await ContextManager.resume(store, 's', {
        model,
        provider: path,
        system: 'You are a coding agent. Task: fix the failing checkout test.',
        tools: LOOP_TOOLS,
      });
      expect(resumed.breakdown().window).toBe(WINDOW);
    },
  );

  it('a refusal that states no figures (Responses: "exceeds the context window"): the refused request bounds the window; one refusal in 40 turns', async () => {
    const small = await startFakeProvider({ window: 30_000, maxOutputTokens: 8000, script: { toolTurns: 100 } });
    try {
      const cm = new ContextManager({
        model: 'gpt-5.4',
        provider: 'openai-responses',
        contextWindow: 40_000,
        system: 'You are a coding agent. Task: fix the failing checkout test.',
        tools: LOOP_TOOLS,
      });
      const refused = await loop(small, 'openai-responses', cm, (overflow) => expect(overflow?.limit).toBeUndefined());
      expect(refused).toBe(1);
      // Bounded by what was refused (its prompt and max output), which passed the server's 30,000 by one request's
      // growth: far under the 40,000 assumed.
      const learned = cm.breakdown().window;
      expect(learned).toBeGreaterThanOrEqual(30_000);
      expect(learned).toBeLessThan(32_000);
    } finally {
      await small.close();
    }
  });

  it('told 40,000 while the server enforces 30,000: one refusal, then the window the server stated', async () => {
    const small = await startFakeProvider({ window: 30_000, maxOutputTokens: 8000, script: { toolTurns: 100 } });
    try {
      const cm = new ContextManager({
        model: 'claude-sonnet-4-6',
        provider: 'anthropic',
        contextWindow: 40_000,
        system: 'You are a coding agent. Task: fix the failing checkout test.',
        tools: LOOP_TOOLS,
      });
      expect(await loop(small, 'anthropic', cm)).toBe(1);
      expect(cm.breakdown().window).toBe(30_000);
    } finally {
      await small.close();
    }
  });
});
