import { countTokens } from 'gpt-tokenizer';
import { describe, expect, it } from 'vitest';
import { checkInvariants } from '../compaction/invariants.js';
import { parseSession } from '../formats/read.js';
import { writeSession } from '../formats/write.js';
import type { Message, Usage } from '../model/types.js';
import { activeMessages, activeView } from '../model/view.js';
import { loadSession } from '../store/session-store.js';
import { MemorySessionStore } from '../store/memory-session-store.js';
import { mergeConfig, DEFAULT_CONFIG } from './config.js';
import { ContextManager } from './context-manager.js';
import { ContextOverflowError } from './overflow.js';
import { contextOverflow } from '../formats/wire.js';

const TASK = 'Find every use of value in src/ and list the modules. Never edit tests.';
const output = (i: number, lines = 120) =>
  Array.from(
    { length: lines },
    (_, k) => `src/mod${i}/file${k}.ts:${k + 1}: const value${k} = compute(${k}, "step ${i}");`,
  ).join('\n');

/**
 * A bill computed independently of abridge's counting: o200k tokens of the whole request body as JSON (which
 * over-counts keys and escapes — stricter than a real provider), × 1.1 as a Claude-like tokenizer would.
 */
function bill(request: unknown): number {
  return Math.ceil(countTokens(JSON.stringify(request)) * 1.1);
}

async function turn(cm: ContextManager, i: number, billed: number, lines = 120): Promise<void> {
  const call: Message = {
    role: 'assistant',
    parts: [
      { type: 'text', text: `Step ${i}: reading module ${i}.` },
      { type: 'tool-call', id: `call_${i}`, name: 'bash', arguments: { command: `grep -rn value src/mod${i}` } },
    ],
  };
  const usage: Usage = { input: 3, output: 40, cacheRead: Math.max(0, billed - 200), cacheWrite: 197 };
  await cm.recordResponse(call, usage);
  await cm.append({
    role: 'tool',
    parts: [
      {
        type: 'tool-result',
        callId: `call_${i}`,
        toolName: 'bash',
        isError: i % 7 === 0,
        content: [{ type: 'text', text: output(i, lines) }],
      },
    ],
  });
}

/** A message as the model is sent it: its bill is not part of it (a working session's view carries none). */
const sentForm = (m: Message) => JSON.stringify({ ...m, usage: undefined });

describe('ContextManager', () => {
  it('compacts at the compact level, never returns a request over window − max output, and keeps the whole history', async () => {
    const config = mergeConfig(DEFAULT_CONFIG, { contextWindow: 40_000 });
    const store = new MemorySessionStore();
    const cm = new ContextManager({
      model: 'claude-sonnet-4-5',
      provider: 'anthropic',
      config,
      store,
      system: `You are a coding agent. Task: ${TASK}`,
      now: () => new Date(0),
    });
    const events: string[] = [];
    cm.on('context-warning', () => events.push('warning'));
    cm.on('auto-compacting', () => events.push('auto-compacting'));
    cm.on('compaction-complete', (r) => events.push(`complete ${r.before > r.after}`));
    cm.on('context-blocked', () => events.push('blocked'));
    await cm.append({ role: 'user', parts: [{ type: 'text', text: TASK }] });
    let compactions = 0;
    for (let i = 0; i < 40; i++) {
      const prepared = await cm.prepare({ maxOutputTokens: 8000 });
      if (prepared.compaction) compactions++;
      const billed = bill(prepared.request);
      // What the provider would bill fits: prompt + max_tokens ≤ window.
      expect(billed + 8000).toBeLessThanOrEqual(40_000);
      expect(prepared.request.max_tokens).toBe(8000);
      expect(JSON.stringify(prepared.request.system)).toContain(TASK);
      expect(checkInvariants(activeView(cm.session))).toEqual([]);
      await turn(cm, i, billed);
    }
    expect(compactions).toBeGreaterThanOrEqual(2);
    // Compaction goes down to the target (hysteresis), so it does not run again every turn.
    expect(compactions).toBeLessThanOrEqual(12);
    expect(events).toContain('auto-compacting');
    expect(events).toContain('complete true');
    expect(events).not.toContain('blocked');
    // Nothing deleted: 1 user message + 40 × (response + result) in the store. The working session is the last
    // compaction's view and what came after: what the model sees, no more (each compaction walks only that).
    const stored = await loadSession(store, cm.sessionId);
    expect(stored.entries.filter((e) => e.kind === 'message')).toHaveLength(81);
    expect(cm.session.entries.filter((e) => e.kind === 'message').map((e) => e.message)).toEqual(
      activeMessages(cm.session),
    );
    // The store's log shows the model the same messages as the manager.
    expect(activeMessages(stored).map(sentForm)).toEqual(activeMessages(cm.session).map(sentForm));
    // Written as a pi transcript and read back: the same view.
    const back = parseSession(writeSession(cm.session));
    expect(activeView(back).map((v) => v.message.role)).toEqual(activeView(cm.session).map((v) => v.message.role));
  });

  it('predicts within a few percent of an independent bill once anchored', async () => {
    const config = mergeConfig(DEFAULT_CONFIG, { contextWindow: 400_000 });
    const cm = new ContextManager({ model: 'claude-sonnet-4-5', config, system: 'You are a coding agent.' });
    await cm.append({ role: 'user', parts: [{ type: 'text', text: TASK }] });
    const errors: number[] = [];
    for (let i = 0; i < 12; i++) {
      const prepared = await cm.prepare({ maxOutputTokens: 8000 });
      const billed = bill(prepared.request);
      if (i >= 2) errors.push(Math.abs(prepared.pressure.predicted - billed) / billed);
      expect(prepared.pressure.anchored).toBe(i > 0);
      await turn(cm, i, billed);
    }
    expect(Math.max(...errors)).toBeLessThan(0.03);
  });

  it('reserves the request’s own max output: a larger max_tokens compacts earlier', async () => {
    const config = mergeConfig(DEFAULT_CONFIG, { contextWindow: 100_000 });
    const run = async (maxOutputTokens: number) => {
      const cm = new ContextManager({ model: 'claude-sonnet-4-5', config });
      await cm.append({ role: 'user', parts: [{ type: 'text', text: TASK }] });
      for (let i = 0; i < 60; i++) {
        const p = await cm.prepare({ maxOutputTokens });
        expect(bill(p.request) + maxOutputTokens).toBeLessThanOrEqual(100_000);
        if (p.compaction) return i;
        await turn(cm, i, bill(p.request));
      }
      return 60;
    };
    expect(await run(64_000)).toBeLessThan(await run(8_000));
  });

  it('offloads a huge tool result as it arrives and answers read_result for it', async () => {
    const config = mergeConfig(DEFAULT_CONFIG, { contextWindow: 40_000 });
    const cm = new ContextManager({ model: 'claude-sonnet-4-5', provider: 'anthropic', config });
    await cm.append({ role: 'user', parts: [{ type: 'text', text: TASK }] });
    await cm.prepare({ maxOutputTokens: 4000 });
    await turn(cm, 1, 500, 3000); // ~75K tokens of output: bigger than the whole window
    const p = await cm.prepare({ maxOutputTokens: 4000 });
    expect(bill(p.request) + 4000).toBeLessThanOrEqual(40_000);
    const text = JSON.stringify(p.request.messages);
    const ref = /read_result \{\\"ref_id\\": \\"(r_[0-9a-f]{16})\\"/.exec(text)?.[1];
    expect(ref).toBeDefined();
    const answer = await cm.runTool({
      id: 't1',
      name: 'read_result',
      arguments: { ref_id: ref, offset: 2990, limit: 5 },
    });
    expect(answer?.content[0]).toMatchObject({ type: 'text' });
    expect(JSON.stringify(answer)).toContain('src/mod1/file2990.ts');
  });

  it('throws a typed error naming what does not fit, instead of returning a request the provider would refuse', async () => {
    const config = mergeConfig(DEFAULT_CONFIG, { contextWindow: 20_000 });
    const cm = new ContextManager({ model: 'claude-sonnet-4-5', config, system: 'Rules. '.repeat(6000) });
    await cm.append({ role: 'user', parts: [{ type: 'text', text: TASK }] });
    const err = await cm.prepare({ maxOutputTokens: 8000 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ContextOverflowError);
    expect((err as ContextOverflowError).code).toBe('CONTEXT_OVERFLOW');
    expect((err as Error).message).toMatch(/system prompt \+ tools ≈ \d+K leave no room/);
    const tooBig = await new ContextManager({ model: 'claude-sonnet-4-5', config })
      .prepare({ maxOutputTokens: 20_000 })
      .catch((e: unknown) => e);
    expect((tooBig as Error).message).toMatch(/max output tokens alone reach the window/);
    // Above the window, with a conversation: the same typed error, not a compaction asked for a negative target.
    const over = new ContextManager({ model: 'claude-sonnet-4-5', contextWindow: 16_000 });
    await over.append({ role: 'user', parts: [{ type: 'text', text: TASK }] });
    const above = await over.prepare({ maxOutputTokens: 16_384 }).catch((e: unknown) => e);
    expect(above).toBeInstanceOf(ContextOverflowError);
    expect((above as Error).message).toMatch(/may hold 0\): max output tokens alone reach the window/);
  });

  it('resumes from the store’s latest snapshot with the same view, and goes on compacting', async () => {
    const config = mergeConfig(DEFAULT_CONFIG, { contextWindow: 40_000 });
    const store = new MemorySessionStore();
    const a = new ContextManager({ model: 'claude-sonnet-4-5', config, store, sessionId: 's1', system: TASK });
    await a.append({ role: 'user', parts: [{ type: 'text', text: TASK }] });
    let compactions = 0;
    for (let i = 0; i < 20; i++) {
      const p = await a.prepare({ maxOutputTokens: 8000 });
      if (p.compaction) compactions++;
      await turn(a, i, bill(p.request));
    }
    expect(compactions).toBeGreaterThan(0);
    const b = await ContextManager.resume(store, 's1', { model: 'claude-sonnet-4-5', config, system: TASK });
    expect(activeMessages(b.session).map(sentForm)).toEqual(activeMessages(a.session).map(sentForm));
    // The resumed session starts from the snapshot, as the running one restarted from it: the same working session,
    // fewer entries than the store's log (which holds the markers and every message as it was).
    expect(b.session.entries.length).toBe(a.session.entries.length);
    expect(b.session.entries.length).toBeLessThan((await store.entries('s1')).length);
    for (let i = 20; i < 40; i++) {
      const p = await b.prepare({ maxOutputTokens: 8000 });
      expect(bill(p.request) + 8000).toBeLessThanOrEqual(40_000);
      if (p.compaction) compactions++;
      await turn(b, i, bill(p.request));
    }
    expect(compactions).toBeGreaterThan(1);
    const all = await loadSession(store, 's1');
    expect(all.entries.filter((e) => e.kind === 'message')).toHaveLength(81);
    expect(activeMessages(all).map(sentForm)).toEqual(activeMessages(b.session).map(sentForm));
    await expect(ContextManager.resume(store, 'nope', { model: 'claude-sonnet-4-5' })).rejects.toThrow(
      /no session "nope"/,
    );
  });

  it('offers read_result, compact_context, tool_search (when tools are deferred) and memory, and defers MCP tools', async () => {
    const config = mergeConfig(DEFAULT_CONFIG, { contextWindow: 20_000 });
    const mcp = Array.from({ length: 30 }, (_, i) => ({
      name: `jira_${i}`,
      description: `Jira operation ${i}: ${'does things with issues and boards. '.repeat(8)}`,
      inputSchema: { type: 'object', properties: { key: { type: 'string' } } },
      kind: 'mcp' as const,
      server: 'jira',
    }));
    const cm = new ContextManager({
      model: 'claude-sonnet-4-5',
      provider: 'anthropic',
      config,
      tools: [
        {
          name: 'bash',
          description: 'run a command',
          inputSchema: { type: 'object', properties: { command: { type: 'string' } } },
        },
        ...mcp,
      ],
      memory: { root: '/tmp/abridge-memory-test' },
    });
    expect((await cm.tools()).map((t) => t.name)).toEqual(['read_result', 'compact_context', 'tool_search', 'memory']);
    await cm.append({ role: 'user', parts: [{ type: 'text', text: TASK }] });
    const p = await cm.prepare({ maxOutputTokens: 2000 });
    const names = (p.request.tools ?? []).map((t) => String(t.name));
    expect(names).toContain('bash');
    expect(names).toContain('tool_search');
    expect(names.filter((n) => n.startsWith('jira_')).length).toBeLessThan(30);
    expect(JSON.stringify(p.request.system)).toMatch(/deferred to save context/);
  });

  it('recognizes the provider’s overflow answer, compacts below the ceiling and says so', async () => {
    const config = mergeConfig(DEFAULT_CONFIG, { contextWindow: 60_000 });
    const cm = new ContextManager({ model: 'claude-sonnet-4-5', provider: 'anthropic', config });
    await cm.append({ role: 'user', parts: [{ type: 'text', text: TASK }] });
    let last = 0;
    for (let i = 0; i < 9; i++) {
      const p = await cm.prepare({ maxOutputTokens: 8000 });
      last = p.pressure.predicted;
      await turn(cm, i, bill(p.request));
    }
    // What the Anthropic SDK throws for a 400 "prompt is too long" (a provider that counted more than predicted).
    const refusal = Object.assign(
      new Error(
        '400 {"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 61234 tokens > 60000 maximum"}}',
      ),
      {
        status: 400,
        error: {
          type: 'error',
          error: { type: 'invalid_request_error', message: 'prompt is too long: 61234 tokens > 60000 maximum' },
        },
      },
    );
    const overflow = contextOverflow(refusal);
    expect(overflow).toMatchObject({ provider: 'anthropic', promptTokens: 61234, limit: 60000 });
    const events: { recovered: boolean }[] = [];
    cm.on('overflow', (e) => events.push(e));
    expect(await cm.recoverFromOverflow(overflow!)).toBe(true);
    expect(events).toEqual([expect.objectContaining({ recovered: true })]);
    const retry = await cm.prepare({ maxOutputTokens: 8000 });
    expect(retry.pressure.predicted).toBeLessThan(last);
    // Under the ceiling by as much as the provider's count (61,234) exceeded the prediction.
    expect(retry.pressure.predicted).toBeLessThanOrEqual(Math.floor((last * (60_000 - 8000)) / 61_234));
  });

  it('raises the window when two prompts larger than it were billed (a 1M-context variant), not one', async () => {
    const cm = new ContextManager({ model: 'claude-sonnet-4-5', provider: 'anthropic' });
    const ignored: { reported: number; reason: string }[] = [];
    cm.on('usage-ignored', (e) => ignored.push(e));
    // A large request (~120K tokens), billed at 2.5× that: more than its count, within what a provider's tokenizer
    // could make of it — but above the 200K window assumed.
    await cm.append({ role: 'user', parts: [{ type: 'text', text: `${TASK}\n${'word '.repeat(100_000)}` }] });
    expect((await cm.prepare({ maxOutputTokens: 8000 })).pressure.window).toBe(200_000);
    const bill = { input: 3, output: 5, cacheRead: 303_112, cacheWrite: 0 };
    await cm.recordResponse({ role: 'assistant', parts: [{ type: 'text', text: 'ok' }] }, bill);
    // One such bill is not believed: recorded as a problem, the window kept.
    expect(ignored.map((e) => e.reported)).toEqual([303_115]);
    expect(cm.session.problems.map((p) => p.kind)).toEqual(['implausible-usage']);
    await cm.append({ role: 'user', parts: [{ type: 'text', text: 'go on' }] });
    expect((await cm.prepare({ maxOutputTokens: 8000 })).pressure.window).toBe(200_000);
    // A second one is.
    await cm.recordResponse({ role: 'assistant', parts: [{ type: 'text', text: 'ok' }] }, bill);
    await cm.append({ role: 'user', parts: [{ type: 'text', text: 'go on' }] });
    const p = await cm.prepare({ maxOutputTokens: 8000 });
    expect(p.pressure.window).toBe(1_000_000);
    expect(ignored).toHaveLength(1);
  });

  it('builds OpenAI Chat and Responses requests with the system prompt and the view', async () => {
    for (const provider of ['openai-chat', 'openai-responses'] as const) {
      const cm = new ContextManager({ model: 'gpt-5', provider, system: TASK });
      await cm.append({ role: 'user', parts: [{ type: 'text', text: 'go' }] });
      const p = await cm.prepare({ maxOutputTokens: 1000 });
      const body = p.request as unknown as Record<string, unknown>;
      if (provider === 'openai-chat') {
        expect(body.max_completion_tokens).toBe(1000);
        expect((body.messages as { role: string; content: string }[])[0]).toEqual({ role: 'system', content: TASK });
      } else {
        expect(body.max_output_tokens).toBe(1000);
        expect(body.instructions).toBe(TASK);
      }
    }
  });
});

describe('ContextManager: a configuration written by hand', () => {
  it('takes what it gives and the defaults for the rest; a config that is no object is a clear error', async () => {
    const partial = { budget: { contextWindow: 50_000, thresholds: { compact: 0.5 } } } as never;
    const cm = new ContextManager({ model: 'claude-sonnet-4-5', provider: 'anthropic', config: partial });
    await cm.append({ role: 'user', parts: [{ type: 'text', text: 'hello' }] });
    const p = await cm.prepare({ maxOutputTokens: 1000 });
    expect(p.pressure.window).toBe(50_000);
    // The given threshold is kept (half of the window less this request's 1,000 tokens of output), the rest defaults.
    expect(p.pressure.marks.compact).toBe(24_500);
    expect(p.pressure.marks.warn).toBeGreaterThan(p.pressure.marks.compact);
    expect(() => new ContextManager({ model: 'claude-sonnet-4-5', config: 'fast' as never })).toThrow(
      /config: expected an object/,
    );
  });
});

describe('ContextManager: a shared result store', () => {
  it("is seen through the session's view: one session's agent cannot read another's refs", async () => {
    const { MemoryResultStore } = await import('../compaction/memory-result-store.js');
    const shared = new MemoryResultStore();
    const a = new ContextManager({ model: 'claude-sonnet-4-5', results: shared });
    const b = new ContextManager({ model: 'claude-sonnet-4-5', results: shared });
    const { refId } = await a.results.put('tool output of session A\n');
    const readA = (await a.tools()).find((t) => t.name === 'read_result')!;
    const readB = (await b.tools()).find((t) => t.name === 'read_result')!;
    expect(await readA.run({ ref_id: refId })).toBe(`[ref ${refId} · line 0 of 1 · end]\ntool output of session A\n`);
    expect(await readB.run({ ref_id: refId })).toMatch(
      /^Error: No stored result with ref_id "r_[0-9a-f]{16}" in this session's stored results\./,
    );
  });
});
