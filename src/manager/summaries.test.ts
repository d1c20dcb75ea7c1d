/**
 * The ContextManager's summaries by a model (`summaryClient`, `summarizeWithAgentModel`) and the instructions of one
 * compaction (`compactNow`, the `compact_context` tool), against a loopback Anthropic Messages API reached through the
 * official SDK (`anthropicClient`): what the server received, and what the next request shows.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { anthropicClient } from '../adapters/anthropic.js';
import type { LlmClient, LlmCompletionRequest } from '../compaction/summarizers/llm.js';
import { TITLE } from '../compaction/summarizers/render.js';
import { AbridgeError } from '../errors.js';
import type { Message } from '../model/types.js';
import { startLoopback, type Loopback } from '../../test/support/loopback.js';
import { handOffFor, isSummaryRequest, offTaskAnswer } from '../../test/support/summary-model.js';
import { ContextManager, type ContextManagerOptions, type PreparedTurn } from './context-manager.js';

const TASK = 'Fix the failing parser tests in test/parser.test.ts; keep the public API of src/parser/index.ts.';
const FILES = ['src/parser/headers.ts', 'src/lexer/tokenizer.ts', 'src/parser/index.ts', 'test/fixtures/headers.txt'];
const SUMMARY_MODEL = 'claude-haiku-4-5';

interface SummaryBody {
  model: string;
  max_tokens: number;
  system: string;
  messages: { role: string; content: string }[];
}

let server: Loopback | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** A loopback Messages API whose "model" answers the n-th summary request (1-based) with `answer(prompt, n)`. */
async function summaryServer(answer: (prompt: string, n: number) => string) {
  let n = 0;
  server = await startLoopback(({ body }) => {
    const b = body as SummaryBody;
    const text = isSummaryRequest(b.system) ? answer(b.messages[0]!.content, ++n) : 'not a summary request';
    return {
      json: {
        id: `msg_0${n}`,
        type: 'message',
        role: 'assistant',
        model: b.model,
        content: [{ type: 'text', text }],
        stop_reason: 'end_turn',
        stop_sequence: null,
        usage: { input_tokens: 900, output_tokens: 300, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 },
      },
    };
  });
  const client = await anthropicClient({
    model: SUMMARY_MODEL,
    apiKey: 'sk-ant-test',
    baseURL: server.baseURL,
    maxRetries: 0,
  });
  const bodies = () => server!.requests.map((r) => r.body as SummaryBody);
  return { client, bodies, prompts: () => bodies().map((b) => b.messages[0]!.content) };
}

/** An agent's session: the task, four files read, a failing test run, a person's later instruction. */
async function session(options: Partial<ContextManagerOptions> = {}): Promise<ContextManager> {
  const cm = new ContextManager({ model: 'claude-sonnet-4-5', system: 'You are a coding agent.', ...options });
  await cm.append({ role: 'user', parts: [{ type: 'text', text: TASK }] });
  for (const [i, path] of FILES.entries()) {
    await cm.recordResponse({
      role: 'assistant',
      parts: [
        { type: 'text', text: `Reading ${path}.` },
        { type: 'tool-call', id: `c${i}`, name: 'read', arguments: { path } },
      ],
    });
    const lines = Array.from({ length: 50 }, (_, k) => `export const v${k} = parse${i}(input, ${k});`);
    await cm.append(result(`c${i}`, 'read', lines.join('\n')));
  }
  await cm.recordResponse({
    role: 'assistant',
    parts: [
      { type: 'text', text: 'Running the parser tests.' },
      { type: 'tool-call', id: 'ct', name: 'bash', arguments: { command: 'npx vitest run test/parser.test.ts' } },
    ],
  });
  await cm.append(
    result('ct', 'bash', 'FAIL test/parser.test.ts > parses headers\nError: expected 3 to be 4\nTests: 1 failed', true),
  );
  await cm.recordResponse({ role: 'assistant', parts: [{ type: 'text', text: 'The header count is off by one.' }] });
  await cm.append({ role: 'user', parts: [{ type: 'text', text: 'Go on, but do not touch package.json.' }] });
  return cm;
}

function result(callId: string, toolName: string, text: string, isError = false): Message {
  return {
    role: 'tool',
    parts: [{ type: 'tool-result', callId, toolName, isError, content: [{ type: 'text', text }] }],
  };
}

/** The summary the next request carries (the compaction part of its view), and the request body as JSON. */
function summaryIn(turn: PreparedTurn): { summary: string; body: string } {
  const part = turn.messages.flatMap((m) => m.parts).find((p) => p.type === 'compaction');
  return { summary: part?.type === 'compaction' ? part.marker.summary : '', body: JSON.stringify(turn.request) };
}

const INSTRUCTIONS = 'Keep the failing assertion and the fixture path.';
const TARGET = 1_000;

describe('ContextManager: summaries by a model (summaryClient)', () => {
  it('a good answer is accepted and is the summary the next request shows; the instructions reach the model', async () => {
    const s = await summaryServer((prompt) => handOffFor(prompt, { mark: 'ACCEPTED-FIRST' }));
    const cm = await session({ summaryClient: s.client });
    const r = await cm.compactNow({ target: TARGET, instructions: `  ${INSTRUCTIONS}\n` });
    expect(r.strategiesRun.map((x) => x.name)).toContain('summarize');
    expect(r.summaryNotes).toEqual([]);

    expect(s.bodies()).toHaveLength(1);
    const [body] = s.bodies();
    expect(body!.model).toBe(SUMMARY_MODEL);
    expect(isSummaryRequest(body!.system)).toBe(true);
    const prompt = s.prompts()[0]!;
    expect(prompt).toContain(
      `<instructions>\nThe person asked this summary to keep or focus on the following; follow it first:\n${INSTRUCTIONS}\n</instructions>`,
    );
    expect(prompt).toContain(`<original-task>\n${TASK}\n</original-task>`);
    for (const path of FILES.slice(0, 3)) expect(prompt).toContain(`- ${path} (read)`);
    expect(prompt).not.toContain('Your previous answer was not accepted');

    const { summary, body: sent } = summaryIn(await cm.prepare());
    expect(summary).toBe(handOffFor(prompt, { mark: 'ACCEPTED-FIRST' }));
    expect(sent).toContain('ACCEPTED-FIRST');
  });

  it('a truncated answer (no Next step) is retried once, told what was wrong; the second answer is the summary', async () => {
    const s = await summaryServer((prompt, n) =>
      n === 1
        ? handOffFor(prompt, { omit: ['Next step'], mark: 'CUT-SHORT' })
        : handOffFor(prompt, { mark: 'RETRIED' }),
    );
    const cm = await session({ summaryClient: s.client });
    const r = await cm.compactNow({ target: TARGET });
    expect(r.summaryNotes).toEqual([]);

    const [first, second] = s.prompts();
    expect(s.prompts()).toHaveLength(2);
    expect(first).not.toContain('Your previous answer was not accepted');
    expect(second!.startsWith(first!)).toBe(true);
    expect(second!.slice(first!.length)).toBe(
      '\n\nYour previous answer was not accepted: it left out the Next step section. Write the whole summary again, every section, mentioning every file and unresolved error of the checklist.',
    );
    const { summary, body } = summaryIn(await cm.prepare());
    expect(summary).toContain('RETRIED');
    expect(summary).toContain('## Next step\nRun the test suite again and fix what still fails.');
    expect(body).not.toContain('CUT-SHORT');
  });

  it('an answer missing its sections twice falls back to the extractive summary, and summaryNotes say why', async () => {
    const s = await summaryServer(
      (_prompt, n) =>
        `## Primary request\n${TASK}\n\nAttempt ${n}: I read the parser files and ran the tests; one assertion fails in the headers test.`,
    );
    const cm = await session({ summaryClient: s.client });
    const r = await cm.compactNow({ target: TARGET });

    expect(s.prompts()).toHaveLength(2);
    expect(s.prompts()[1]).toContain(
      'Your previous answer was not accepted: it left out the Current state, Next step sections; it left out the summary',
    );
    expect(r.summaryNotes).toHaveLength(1);
    expect(r.summaryNotes[0]).toMatch(
      /^the LLM summarizer failed \(claude-haiku-4-5 left out the Current state, Next step sections; .* \(2 attempts\)\); the extractive summary was used instead$/,
    );
    const { summary, body } = summaryIn(await cm.prepare());
    expect(summary.startsWith(TITLE)).toBe(true);
    expect(body).not.toContain('Attempt 1: I read the parser files');
    expect(body).not.toContain('Attempt 2: I read the parser files');
  });

  it('an off-task answer is rejected: retried with the reason, then replaced by the extractive summary', async () => {
    const s = await summaryServer(() => offTaskAnswer());
    const cm = await session({ summaryClient: s.client });
    const r = await cm.compactNow({ target: TARGET });

    expect(s.prompts()).toHaveLength(2);
    expect(s.prompts()[1]).toMatch(
      /Your previous answer was not accepted: it .*is about something else: it names none of the requests’ words\./,
    );
    expect(r.summaryNotes[0]).toMatch(/is about something else: it names none of the requests’ words/);
    expect(r.summaryNotes[0]).toMatch(/the extractive summary was used instead$/);
    const { summary, body } = summaryIn(await cm.prepare());
    expect(summary.startsWith(TITLE)).toBe(true);
    expect(body).not.toContain('sourdough');
  });
});

describe('ContextManager: instructions of one compaction', () => {
  it('compactNow adds its instructions to the standing ones; the numeric target still works', async () => {
    const s = await summaryServer((prompt) => handOffFor(prompt));
    const cm = await session({ summaryClient: s.client, compaction: { instructions: 'Always keep port numbers.' } });
    const r = await cm.compactNow(TARGET);
    expect(r.afterTokens).toBeLessThanOrEqual(TARGET);
    await cm.append({ role: 'user', parts: [{ type: 'text', text: 'Now the body parser, please.' }] });
    for (let i = 0; i < 3; i++) {
      await cm.recordResponse({
        role: 'assistant',
        parts: [{ type: 'tool-call', id: `b${i}`, name: 'read', arguments: { path: `src/parser/body${i}.ts` } }],
      });
      await cm.append(
        result(`b${i}`, 'read', Array.from({ length: 60 }, (_, k) => `line ${k} of body${i}`).join('\n')),
      );
    }
    await cm.compactNow({ target: 900, instructions: INSTRUCTIONS });
    const [first, second] = s.prompts();
    expect(first).toContain('follow it first:\nAlways keep port numbers.\n</instructions>');
    expect(second).toContain(`follow it first:\nAlways keep port numbers.\n${INSTRUCTIONS}\n</instructions>`);
  });

  it('the compact_context tool passes the agent’s instructions to the compaction it runs', async () => {
    const s = await summaryServer((prompt) => handOffFor(prompt, { mark: 'FROM-THE-TOOL' }));
    const cm = await session({ summaryClient: s.client });
    const tool = (await cm.tools()).find((t) => t.name === 'compact_context')!;
    expect(Object.keys((tool.inputSchema as { properties: object }).properties)).toEqual(['instructions']);
    const answer = await cm.runTool({
      id: 'call_compact',
      name: 'compact_context',
      arguments: { instructions: 'Keep the list of files read and the failing test.' },
    });
    expect(answer?.isError).toBe(false);
    expect(answer?.content).toEqual([
      { type: 'text', text: expect.stringMatching(/^Compacted the context: [\d,]+ → [\d,]+ tokens/) },
    ]);
    expect(s.prompts()).toHaveLength(1);
    expect(s.prompts()[0]).toContain(
      'follow it first:\nKeep the list of files read and the failing test.\n</instructions>',
    );
    expect(summaryIn(await cm.prepare()).summary).toContain('FROM-THE-TOOL');
  });

  it('bad compactNow input is an INVALID_INPUT error naming the key, and nothing is compacted', async () => {
    const cm = await session();
    const bad: [unknown, string][] = [
      [0, 'compactNow: target: expected a positive number of tokens, got 0'],
      [{ target: Number.NaN }, 'compactNow: target: expected a positive number of tokens, got null'],
      [{ target: '5000' }, 'compactNow: target: expected a positive number of tokens, got "5000"'],
      [{ instructions: 42 }, 'compactNow: instructions: expected a string (what the summary must keep), got 42'],
      [{ instruction: 'typo' }, 'compactNow: unknown option "instruction" (expected target, instructions)'],
      ['keep the tests', 'compactNow: expected a target in tokens or { target?, instructions? }, got "keep the tests"'],
    ];
    for (const [input, message] of bad) {
      const err = await cm.compactNow(input as never).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(AbridgeError);
      expect((err as AbridgeError).code).toBe('INVALID_INPUT');
      expect((err as AbridgeError).message).toBe(message);
    }
    expect(cm.session.entries.some((e) => e.kind === 'compaction')).toBe(false);
  });
});

describe('ContextManager: choosing the summarizer', () => {
  const fakeClient: LlmClient = { model: 'm', contextWindow: 100_000, complete: async () => '' };

  it("'llm' without summaryClient, a client beside another summarizer, or a bad value: errors naming the option", () => {
    const error = (options: Partial<ContextManagerOptions>) => {
      try {
        new ContextManager({ model: 'claude-sonnet-4-5', ...options });
      } catch (err) {
        expect(err).toBeInstanceOf(AbridgeError);
        expect((err as AbridgeError).code).toBe('INVALID_INPUT');
        return (err as Error).message;
      }
      return 'no error';
    };
    expect(error({ summarizer: 'llm' })).toMatch(
      /^ContextManager: summarizer 'llm' needs summaryClient, the model that writes the summaries \(anthropicClient\(\) of abridge-context\/anthropic/,
    );
    expect(error({ summarizer: 'extractive', summaryClient: fakeClient })).toBe(
      "ContextManager: summaryClient is the model of summarizer 'llm', but summarizer is 'extractive': drop one of the two",
    );
    expect(error({ summarizer: 'gpt' as never })).toBe(
      "ContextManager: summarizer: expected 'extractive', 'llm' or a Summarizer (an object with a summarize() method), got \"gpt\"",
    );
    expect(error({ summaryClient: { model: 'm', complete: async () => '' } as never })).toMatch(
      /^ContextManager: summaryClient: expected an LlmClient \(\{ model, contextWindow, complete\(\) \}.*got an object with model, complete$/,
    );
    expect(error({ summarizer: 'llm', summaryClient: fakeClient })).toBe('no error');
  });

  it('summarizeWithAgentModel: taken when the options chose none; its client is the manager’s model', async () => {
    const asked: LlmCompletionRequest[] = [];
    const complete = async (req: LlmCompletionRequest) => {
      asked.push(req);
      return handOffFor(req.prompt, { mark: 'AGENT-MODEL' });
    };
    const cm = await session({ contextWindow: 50_000, maxOutputTokens: 8_000 });
    expect(cm.summarizeWithAgentModel(complete)).toBe(true);
    await cm.compactNow({ target: TARGET });
    expect(asked).toHaveLength(1);
    expect(isSummaryRequest(asked[0]!.system)).toBe(true);
    // Sized for the manager's own window (50,000): the answer may take at most half of it.
    expect(asked[0]!.maxOutputTokens).toBeLessThanOrEqual(25_000);
    expect(summaryIn(await cm.prepare()).summary).toContain('AGENT-MODEL');

    const extractive = await session({ summarizer: 'extractive' });
    expect(extractive.summarizeWithAgentModel(complete)).toBe(false);
    await extractive.compactNow({ target: TARGET });
    expect(asked).toHaveLength(1);
    expect(summaryIn(await extractive.prepare()).summary.startsWith(TITLE)).toBe(true);
  });
});
