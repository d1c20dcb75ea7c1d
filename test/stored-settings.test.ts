/**
 * The store keeps what a session ran with (issue 36, item 3): a ContextManager session records its model, provider,
 * window and reserve; `abridge sessions` lists them (and who wrote the session), `inspect --db` and `view --db` measure
 * the session against its own window, and `ContextManager.resume` continues with them — its first prediction from the
 * size the last compaction gave the view, not a recount with a seed ratio.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ContextManager } from '../src/manager/context-manager.js';
import { openSqliteStore } from '../src/store/sqlite/session-store.js';
import { answerCalls, LOOP_TOOLS, sendRequest } from './support/agent-loop.js';
import { runCli } from './support/cli.js';
import { startFakeProvider, type FakeProvider } from './support/fake-provider.js';

const SYSTEM = 'You are a coding agent. Task: fix the failing checkout test.';
const WINDOW = 40_000;

describe('a stored session keeps what it ran with', () => {
  let fake: FakeProvider;
  let dir: string;
  let db: string;
  beforeAll(async () => {
    fake = await startFakeProvider({ window: WINDOW, maxOutputTokens: 64_000, script: { toolTurns: 1000 } });
    dir = mkdtempSync(join(tmpdir(), 'abridge-settings-'));
    db = join(dir, 'agent.sqlite');
  });
  afterAll(async () => {
    await fake.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** Runs `turns` requests of a manager against the fake; returns the predictions and the bills, request by request. */
  async function run(cm: ContextManager, turns: number, from: number) {
    const out: { predicted: number; billed: number; compacted: boolean }[] = [];
    for (let turn = from; turn < from + turns; turn++) {
      const prepared = await cm.prepare();
      const { status, body } = await sendRequest(fake, 'anthropic', prepared.request);
      expect(status).toBe(200);
      const { message, usage } = await cm.record(body);
      out.push({
        predicted: prepared.pressure.predicted,
        billed: usage!.input + usage!.cacheRead + usage!.cacheWrite,
        compacted: prepared.compaction !== undefined,
      });
      await cm.append(answerCalls(message, turn));
    }
    return out;
  }

  it('recorded by the manager, listed by `sessions`, used by `inspect --db`, `view --db` and `resume`', async () => {
    const store = await openSqliteStore(db);
    const cm = new ContextManager({
      model: 'claude-sonnet-4-6',
      provider: 'anthropic',
      contextWindow: WINDOW,
      system: SYSTEM,
      tools: LOOP_TOOLS,
      store,
      sessionId: 'agent-1',
    });
    await cm.append({ role: 'user', parts: [{ type: 'text', text: 'Start on the task.' }] });
    const first = await run(cm, 12, 0);
    expect(first.some((r) => r.compacted)).toBe(true);
    const settings = {
      writer: 'context-manager',
      model: 'claude-sonnet-4-6',
      provider: 'anthropic',
      contextWindow: WINDOW,
      // No max output given: min(64,000 the catalog's maximum, 32,000, half the window).
      reserveTokens: 20_000,
    };
    expect((await store.getSession('agent-1'))!.info.settings).toEqual(settings);
    // A compaction now: the session is resumed from a snapshot no bill has followed yet.
    await cm.compactNow();
    await store.close();

    const listed = runCli(['sessions', '--db', db]);
    expect(listed.code).toBe(0);
    const row = listed.stdout.split('\n').find((l) => l.includes('agent-1'))!;
    expect(row).toMatch(/context-manager \(anthropic\)/);
    expect(row).toMatch(/claude-sonnet-4-6/);
    expect(row).toMatch(/40,000/);
    expect(row).toMatch(/20,000/);
    const json = JSON.parse(runCli(['sessions', '--db', db, '--json']).stdout) as { settings: unknown }[];
    expect(json[0]!.settings).toEqual(settings);

    // inspect and view measure it against the 40,000 it ran in, not the catalog's 1,000,000 for the model.
    const inspected = runCli(['inspect', '--db', db, '--session', 'agent-1', '--json']);
    expect(inspected.code, inspected.stderr).toBe(0);
    const context = (JSON.parse(inspected.stdout) as { context: { window: number; reserve: number } }).context;
    expect(context.window).toBe(WINDOW);
    expect(context.reserve).toBe(20_000);
    // The command line still wins.
    const told = runCli(['inspect', '--db', db, '--session', 'agent-1', '--context-window', '100000', '--json']);
    expect((JSON.parse(told.stdout) as { context: { window: number } }).context.window).toBe(100_000);
    const page = join(dir, 'agent.html');
    const viewed = runCli(['view', '--db', db, '--session', 'agent-1', '--out', page]);
    expect(viewed.code, viewed.stderr).toBe(0);
    expect(readFileSync(page, 'utf8')).toMatch(/"window":\[40000[,\]]/);

    // Resumed with neither model nor window: what it ran with. Its first prediction is the size the compaction gave
    // the view plus the new turn — as close to the bill as a live compaction's next prediction (1–4% here); a recount
    // of the snapshot with the seed ratio was 12% off.
    const again = await openSqliteStore(db);
    const resumed = await ContextManager.resume(again, 'agent-1', { system: SYSTEM, tools: LOOP_TOOLS });
    expect(resumed.currentModel).toBe('claude-sonnet-4-6');
    expect(resumed.provider).toBe('anthropic');
    const after = await run(resumed, 10, 12);
    const firstAfter = after[0]!;
    expect(Math.abs(firstAfter.predicted - firstAfter.billed) / firstAfter.billed).toBeLessThan(0.05);
    expect(fake.requests.filter((r) => r.refused)).toEqual([]);
    const turn = await resumed.prepare();
    expect(turn.pressure.window).toBe(WINDOW);
    expect(turn.pressure.maxOutputTokens).toBe(20_000);
    await again.close();
  });

  it('`inspect --db` without --session, or with a file as well, is one clear line and exit 2', () => {
    const alone = runCli(['inspect', '--db', db]);
    expect(alone.code).toBe(2);
    expect(alone.stderr).toMatch(/--db and --session go together/);
    const both = runCli(['inspect', 'x.jsonl', '--db', db, '--session', 'agent-1']);
    expect(both.code).toBe(2);
    expect(both.stderr).toMatch(/either a transcript \(x\.jsonl\) or --db/);
  });
});
