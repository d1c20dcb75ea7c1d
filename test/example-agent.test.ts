/**
 * The example agent (examples/agent.ts) on every provider path, against a loopback server that speaks each wire
 * format, bills usage independently of abridge, and refuses — with the real APIs' error bodies — any request whose
 * prompt + max_tokens exceed the window, and any broken tool pairing.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeProvider, type FakeProvider } from './support/fake-provider.js';
import { handOffFor, isSummaryRequest } from './support/summary-model.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const TASK = 'Fix the failing checkout test in the orders API without changing its public routes. [task 7f3a]';
const MARKER = '[task 7f3a]';
const WINDOW = 40_000;
const AI_SDK = existsSync(join(ROOT, 'examples', 'agent-ai-sdk.ts'));
const PROVIDERS = [
  'anthropic',
  'openai-chat',
  'openai-responses',
  ...(AI_SDK ? ['ai-sdk-anthropic', 'ai-sdk-openai'] : []),
];
const MODEL: Record<string, string> = {
  anthropic: 'claude-sonnet-4-6',
  'ai-sdk-anthropic': 'claude-sonnet-4-6',
  'openai-chat': 'gpt-5',
  'openai-responses': 'gpt-5',
  'ai-sdk-openai': 'gpt-5',
};

interface Run {
  code: number | null;
  lines: Record<string, unknown>[];
  stderr: string;
}

/** Runs the example agent; `killAfterTurn` sends SIGKILL once that request's line has been printed. */
function runAgent(server: FakeProvider, args: string[], killAfterTurn?: number): Promise<Run> {
  return new Promise((done) => {
    const child = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'examples', 'agent.ts'), ...args], {
      cwd: ROOT,
      env: { ...process.env, NODE_NO_WARNINGS: '1' },
    });
    const lines: Record<string, unknown>[] = [];
    let buffer = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      buffer += chunk;
      for (let nl = buffer.indexOf('\n'); nl >= 0; nl = buffer.indexOf('\n')) {
        const line = JSON.parse(buffer.slice(0, nl)) as Record<string, unknown>;
        buffer = buffer.slice(nl + 1);
        lines.push(line);
        if (killAfterTurn !== undefined && line.turn === killAfterTurn) child.kill('SIGKILL');
      }
    });
    child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
    child.on('close', (code) => done({ code, lines, stderr }));
  });
}

const common = (provider: string, server: FakeProvider, turns: number) => [
  ...bare(provider, server, turns),
  '--window',
  String(WINDOW),
  '--max-tokens',
  '4096',
];

/** Without --window and --max-tokens: the catalog's window and abridge's default reserve. */
const bare = (provider: string, server: FakeProvider, turns: number) => [
  '--provider',
  provider,
  '--base-url',
  server.baseURL,
  '--model',
  MODEL[provider]!,
  '--turns',
  String(turns),
  '--task',
  TASK,
];

describe('the example agent against a strict loopback provider', () => {
  let server: FakeProvider;
  let dir: string;
  beforeAll(async () => {
    server = await startFakeProvider({
      window: WINDOW,
      maxOutputTokens: 64_000,
      script: {
        toolTurns: 10_000,
        marker: MARKER,
        // On the AI SDK paths the agent's own model writes abridge's summaries: answered as a careful model would.
        answer: (ctx) =>
          isSummaryRequest(ctx.system)
            ? { text: handOffFor(ctx.messages[0]!.parts.map((p) => (p.kind === 'text' ? p.text : '')).join('')) }
            : undefined,
      },
    });
    dir = mkdtempSync(join(tmpdir(), 'abridge-agent-'));
  });
  afterAll(async () => {
    await server?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it.each(PROVIDERS)(
    '%s: 50 requests with 20–40 KB tool outputs in a 40,000-token window, 0 refused, ≥ 2 compactions, the task in every request',
    async (provider) => {
      const before = server.requests.length;
      const run = await runAgent(server, common(provider, server, 50));
      const mine = server.requests.slice(before).filter((r) => r.model === MODEL[provider]);
      expect(run.stderr).not.toMatch(/refused/);
      expect(run.code).toBe(0);
      const done = run.lines[run.lines.length - 1]!;
      expect(done).toMatchObject({ done: true, requests: 50, errors: 0 });
      expect(done.compactions as number).toBeGreaterThanOrEqual(2);
      expect(mine.filter((r) => r.refused)).toEqual([]);
      // The agent's requests carry the task; the summary requests (the AI SDK paths) are abridge's summarizer's.
      const agent = mine.filter((r) => !isSummaryRequest(r.body));
      expect(agent.length).toBeGreaterThanOrEqual(50);
      expect(agent.every((r) => r.markerInSystem)).toBe(true);
      // The tool outputs are really 20–40 KB and the window really fills: what abridge prevented was real.
      expect(Math.max(...mine.map((r) => r.usage?.promptTokens ?? 0))).toBeGreaterThan(WINDOW * 0.6);
      // Once anchored on the bill, abridge's prediction is within a few percent of it (median).
      const errors = run.lines
        .filter((l) => typeof l.reported === 'number' && typeof l.predicted === 'number' && !l.compacted)
        .map((l) => Math.abs((l.predicted as number) - (l.reported as number)) / (l.reported as number));
      errors.sort((a, b) => a - b);
      expect(errors[Math.floor(errors.length / 2)]!).toBeLessThan(0.05);
    },
    240_000,
  );

  it('split over two processes — kill -9 after request 20, then resumed from SQLite — still 0 refused, from the stored compacted context', async () => {
    const db = join(dir, 'agent.sqlite');
    const args = [...common('anthropic', server, 50), '--db', db, '--session', 'split-1'];
    const before = server.requests.length;
    const first = await runAgent(server, args, 20);
    expect(first.code).toBeNull(); // killed
    expect(first.lines.filter((l) => l.turn !== undefined).length).toBeGreaterThanOrEqual(20);
    const between = server.requests.length;
    const second = await runAgent(server, [...common('anthropic', server, 30), '--db', db, '--session', 'split-1']);
    expect(second.code).toBe(0);
    expect(second.lines[second.lines.length - 1]).toMatchObject({ done: true, requests: 30, errors: 0 });
    const all = server.requests.slice(before);
    expect(all.filter((r) => r.refused)).toEqual([]);
    expect(all.every((r) => r.markerInSystem)).toBe(true);
    // The second process continued the conversation (tool calls and results from before the kill), not a new one.
    const resumed = server.requests[between]!.body as { messages: unknown[] };
    expect(resumed.messages.length).toBeGreaterThan(4);
    const compactions = [...first.lines, ...second.lines].filter((l) => l.compacted === true).length;
    expect(compactions).toBeGreaterThanOrEqual(2);
  }, 240_000);

  // The provider's own context management, as abridge plans it (`--native prefer`): Anthropic clears tool results on
  // its side, the Responses API compacts on its side; abridge predicts the bill after each of their edits.
  it.each(['anthropic', 'openai-responses'])(
    "%s, --native prefer (Responses: with --count-tokens): 50 requests, 0 refused, the bill predicted within 2% (median) after the provider's edits",
    async (provider) => {
      const before = server.requests.length;
      const run = await runAgent(server, [
        ...common(provider, server, 50),
        '--native',
        'prefer',
        ...(provider === 'openai-responses' ? ['--count-tokens'] : []),
      ]);
      const mine = server.requests.slice(before);
      expect(run.stderr).not.toMatch(/refused/);
      expect(run.code).toBe(0);
      expect(run.lines.at(-1)).toMatchObject({ done: true, requests: 50, errors: 0 });
      expect(mine.filter((r) => r.refused)).toEqual([]);
      expect(mine.filter((r) => !r.countOnly).every((r) => r.markerInSystem)).toBe(true);
      if (provider === 'openai-responses') expect(mine.some((r) => r.countOnly)).toBe(true);
      // The provider did edit: Anthropic cleared (what was sent grew past the window), the Responses API compacted.
      const turns = run.lines.filter((l) => typeof l.turn === 'number');
      const edited = turns.filter((l) =>
        provider === 'anthropic'
          ? ((l.native as { cleared?: number } | undefined)?.cleared ?? 0) > 0
          : turns[turns.indexOf(l) - 1]?.native !== undefined &&
            (turns[turns.indexOf(l) - 1]!.native as { compacting: boolean }).compacting,
      );
      expect(edited.length).toBeGreaterThanOrEqual(provider === 'anthropic' ? 30 : 2);
      const errors = edited.map(
        (l) => Math.abs((l.predicted as number) - (l.reported as number)) / (l.reported as number),
      );
      errors.sort((a, b) => a - b);
      expect(errors[Math.floor(errors.length / 2)]!).toBeLessThanOrEqual(0.02);
    },
    240_000,
  );

  it("openai-responses, --native prefer, split over two processes: the second continues from the provider's compaction", async () => {
    const db = join(dir, 'agent-native.sqlite');
    const args = (turns: number) => [
      ...common('openai-responses', server, turns),
      '--native',
      'prefer',
      '--db',
      db,
      '--session',
      'native-1',
    ];
    const before = server.requests.length;
    const first = await runAgent(server, args(20));
    expect(first.code).toBe(0);
    expect(first.lines.some((l) => (l.native as { compacting?: boolean } | undefined)?.compacting)).toBe(true);
    const between = server.requests.length;
    const second = await runAgent(server, args(10));
    expect(second.code).toBe(0);
    expect(server.requests.slice(before).filter((r) => r.refused)).toEqual([]);
    const resumed = server.requests[between]!.body as { input: { type: string }[] };
    expect(resumed.input[0]!.type).toBe('compaction');
  }, 240_000);

  it('refuses bad arguments with one line and exit 2', async () => {
    const run = await runAgent(server, ['--provider', 'nope', '--base-url', server.baseURL]);
    expect(run.code).toBe(2);
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
    expect(run.stderr).toMatch(/--provider: expected one of anthropic/);
  }, 60_000);
});

// The window a deployment enforces is not always the catalog's (a proxy, a smaller tier, a local server) nor what the
// agent was told: a refusal that states the limit becomes the session's window, once.
describe('the example agent against a server enforcing less than it assumes', () => {
  const servers: Record<number, FakeProvider> = {};
  beforeAll(async () => {
    for (const window of [40_000, 30_000])
      servers[window] = await startFakeProvider({
        window,
        maxOutputTokens: 64_000,
        script: {
          toolTurns: 10_000,
          marker: MARKER,
          answer: (ctx) =>
            isSummaryRequest(ctx.system)
              ? { text: handOffFor(ctx.messages[0]!.parts.map((p) => (p.kind === 'text' ? p.text : '')).join('')) }
              : undefined,
        },
      });
  });
  afterAll(async () => {
    for (const s of Object.values(servers)) await s.close();
  });

  const paths = ['anthropic', 'openai-chat', ...(AI_SDK ? ['ai-sdk-anthropic'] : [])];
  const cases = paths.flatMap((provider) => [
    { provider, server: 40_000, told: undefined as number | undefined },
    { provider, server: 30_000, told: 40_000 as number | undefined },
  ]);
  it.each(cases)(
    '$provider, told $told, server enforcing $server: 40 tool calls answered, at most 1 request refused',
    async ({ provider, server: window, told }) => {
      const server = servers[window]!;
      const before = server.requests.length;
      // gpt-5.4: a 272K window in the catalog, where gpt-5's is 400K; claude-sonnet-4-6: 1M.
      const model = provider === 'openai-chat' ? 'gpt-5.4' : MODEL[provider]!;
      const args = bare(provider, server, 41).map((a) => (a === MODEL[provider] ? model : a));
      const run = await runAgent(server, told ? [...args, '--window', String(told)] : args);
      const mine = server.requests.slice(before).filter((r) => r.model === model && !isSummaryRequest(r.body));
      const refused = mine.filter((r) => r.refused);
      expect(run.code, run.stderr).toBe(0);
      expect(refused.length).toBeLessThanOrEqual(1);
      // Every accepted request answered a tool call with a 20–40 KB output: 40 of them, the task in each.
      expect(mine.filter((r) => !r.refused).length).toBeGreaterThanOrEqual(40);
      expect(mine.every((r) => r.markerInSystem)).toBe(true);
      // The window was really used: with no max output given, half the window is reserved for it (abridge's default
      // reserve, min(model max, 32,000, window / 2)), and the prompts went past 60% of the other half.
      expect(Math.max(...mine.map((r) => r.usage?.promptTokens ?? 0))).toBeGreaterThan(window * 0.3);
    },
    240_000,
  );
});
