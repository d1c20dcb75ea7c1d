/**
 * Usage is evidence, not truth: an agent loop (ContextManager against a loopback Anthropic server that bills what it
 * receives and refuses a prompt over its window) where one response reports a prompt that is not the one sent — 10M or
 * 1e308 tokens, or 1.2× and 2× the window — runs as it does without the lie: every request fits, none is refused, the
 * same turns, and the report is recorded as a problem.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ContextManager } from '../src/manager/context-manager.js';
import { ContextOverflowError } from '../src/manager/overflow.js';
import { answerCalls, LOOP_TOOLS, sendRequest } from './support/agent-loop.js';
import { startFakeProvider, type FakeProvider } from './support/fake-provider.js';

const WINDOW = 40_000;
const MAX_OUTPUT = 4096;
const TURNS = 24;
interface Outcome {
  requests: number;
  refused: number;
  overflows: number;
  compactions: number;
  overWindow: number;
  problems: string[];
}

async function loop(fake: FakeProvider, lie?: { at: number; prompt: number }): Promise<Outcome> {
  const cm = new ContextManager({
    model: 'claude-sonnet-4-6',
    provider: 'anthropic',
    contextWindow: WINDOW,
    system: 'You are a coding agent. Fix the failing checkout test.',
    tools: LOOP_TOOLS,
    maxOutputTokens: MAX_OUTPUT,
  });
  const out: Outcome = { requests: 0, refused: 0, overflows: 0, compactions: 0, overWindow: 0, problems: [] };
  cm.on('compaction-complete', () => out.compactions++);
  await cm.append({ role: 'user', parts: [{ type: 'text', text: 'Start on the task.' }] });
  const first = fake.requests.length;
  for (let turn = 0; turn < TURNS; turn++) {
    let request: unknown;
    try {
      request = (await cm.prepare({ maxOutputTokens: MAX_OUTPUT })).request;
    } catch (err) {
      if (err instanceof ContextOverflowError) {
        out.overflows++;
        continue;
      }
      throw err;
    }
    out.requests++;
    const { status, body } = await sendRequest(fake, 'anthropic', request);
    if (status !== 200) {
      out.refused++;
      break;
    }
    // The lie: the prompt this response says was sent.
    if (lie && turn === lie.at)
      body.usage = {
        ...(body.usage as Record<string, number>),
        input_tokens: lie.prompt,
        cache_read_input_tokens: 0,
        cache_creation_input_tokens: 0,
      };
    const { message } = await cm.record(body);
    const results = answerCalls(message, turn);
    if (results.parts.length === 0) break;
    await cm.append(results);
  }
  const sent = fake.requests.slice(first);
  out.overWindow = sent.filter(
    (r) => (r.promptTokens ?? 0) + Number((r.body as { max_tokens?: number }).max_tokens ?? 0) > WINDOW,
  ).length;
  out.problems = cm.session.problems.filter((p) => p.kind === 'implausible-usage').map((p) => p.message);
  return out;
}

describe('a response that lies about its prompt', () => {
  let fake: FakeProvider;
  let honest: Outcome;
  beforeAll(async () => {
    fake = await startFakeProvider({ window: WINDOW, maxOutputTokens: 8000, script: { toolTurns: 100 } });
    honest = await loop(fake);
  });
  afterAll(async () => {
    await fake.close();
  });

  it('the honest loop: every request fits, compactions keep it going', () => {
    expect(honest).toMatchObject({ requests: TURNS, refused: 0, overflows: 0, overWindow: 0, problems: [] });
    expect(honest.compactions).toBeGreaterThanOrEqual(2);
  });

  it.each([
    ['10M tokens', 10_000_000],
    ['1e308 tokens', 1e308],
    ['1.2× the window', Math.round(WINDOW * 1.2)],
    ['2× the window', WINDOW * 2],
    ['a tenth of what was sent', 1_000],
  ])('one response claiming %s: the loop finishes as it does without it', async (_name, prompt) => {
    const lied = await loop(fake, { at: 5, prompt });
    expect(lied).toMatchObject({ requests: TURNS, refused: 0, overflows: 0, overWindow: 0 });
    expect(lied.compactions).toBe(honest.compactions);
    // Recorded, not used.
    expect(lied.problems).toHaveLength(1);
    expect(lied.problems[0]).toMatch(/not used$/);
  });
});
