/**
 * The provider's own context management asked for by the ContextManager (`native`), through the official SDKs against
 * the loopback provider, which applies Anthropic's edits and compactions and the Responses API's compaction as
 * documented, bills the edited prompt and refuses what the real APIs refuse.
 */
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import { anthropicBetaParams, anthropicParams, anthropicTokenCounter } from '../src/adapters/anthropic.js';
import { responsesParams, responsesTokenCounter } from '../src/adapters/openai.js';
import type { AnthropicRequestBody, ResponsesRequestBody } from '../src/formats/wire.js';
import { ContextManager, type ContextManagerOptions, type PreparedTurn } from '../src/manager/context-manager.js';
import { ContextOverflowError } from '../src/manager/overflow.js';
import { nativeModeOf } from '../src/manager/native.js';
import { promptTokens } from '../src/model/parts.js';
import type { Message } from '../src/model/types.js';
import { SessionStats } from '../src/model/stats.js';
import { activeMessages } from '../src/model/view.js';
import { MemorySessionStore } from '../src/store/memory-session-store.js';
import { loadSession } from '../src/store/session-store.js';
import { answerCalls, LOOP_TOOLS } from './support/agent-loop.js';
import { startFakeProvider, type FakeProvider } from './support/fake-provider.js';

const CLAUDE = 'claude-sonnet-4-6';
const GPT = 'gpt-5';
const open: FakeProvider[] = [];
afterEach(async () => {
  while (open.length) await open.pop()!.close();
});

async function fake(window: number): Promise<FakeProvider> {
  const f = await startFakeProvider({ window, maxOutputTokens: 64_000, script: { toolTurns: 10_000 } });
  open.push(f);
  return f;
}

type Path = 'anthropic' | 'openai-responses';

/** Sends a prepared turn with the official SDK: the beta client when the turn names betas. */
function sender(f: FakeProvider, path: Path): (turn: PreparedTurn) => Promise<unknown> {
  if (path === 'anthropic') {
    const client = new Anthropic({ baseURL: f.baseURL, apiKey: 'sk-ant-test', maxRetries: 0 });
    return (turn) =>
      turn.betas?.length
        ? client.beta.messages.create(anthropicBetaParams(turn.request as AnthropicRequestBody, turn.betas))
        : client.messages.create(anthropicParams(turn.request as AnthropicRequestBody));
  }
  const client = new OpenAI({ baseURL: f.v1URL, apiKey: 'sk-test', maxRetries: 0 });
  return (turn) => client.responses.create(responsesParams(turn.request as ResponsesRequestBody));
}

interface Step {
  turn: PreparedTurn;
  billed: number;
  cleared?: number;
  providerCompacted: boolean;
}

/**
 * The agent loop: `n` requests, each tool call answered with 20–40 KB (or, with `pasted`, a short result and a long
 * message of the person's: what no clearing removes). Everything appended is pushed to `appended`.
 */
async function loop(
  cm: ContextManager,
  send: (turn: PreparedTurn) => Promise<unknown>,
  n: number,
  appended: Message[],
  from = 0,
  pasted = false,
): Promise<Step[]> {
  const steps: Step[] = [];
  for (let i = 0; i < n; i++) {
    const turn = await cm.prepare({ maxOutputTokens: 4096 });
    const response = await send(turn);
    const result = await cm.record(response);
    appended.push(result.message);
    steps.push({
      turn,
      billed: result.usage ? promptTokens(result.usage) : 0,
      ...(result.usage?.cleared ? { cleared: result.usage.cleared } : {}),
      providerCompacted: result.compaction !== undefined,
    });
    const tool = answerCalls(result.message, from + i);
    if (tool.parts.length === 0) break;
    if (pasted) {
      for (const p of tool.parts) if (p.type === 'tool-result') p.content = [{ type: 'text', text: 'ok' }];
      const person: Message = {
        role: 'user',
        parts: [
          { type: 'text', text: `Log ${from + i}:\n${'request failed with status 502 at upstream '.repeat(900)}` },
        ],
      };
      await cm.append(tool, person);
      appended.push(tool, person);
    } else {
      await cm.append(tool);
      appended.push(tool);
    }
  }
  return steps;
}

/**
 * A message as the archive must hold it: role, text, calls and results by id — a result offloaded as it arrived holds
 * its head and tail and a ref to the whole (which the result store keeps), so results compare by id and by their head.
 */
function shape(m: Message): string {
  return JSON.stringify([
    m.role,
    m.parts.map((p) =>
      p.type === 'text'
        ? ['text', p.text]
        : p.type === 'tool-call'
          ? ['call', p.id, p.name, p.arguments]
          : p.type === 'tool-result'
            ? ['result', p.callId, p.content[0]?.type === 'text' ? p.content[0].text.slice(0, 200) : '']
            : [p.type],
    ),
  ]);
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const errorOf = (s: Step) => Math.abs(s.turn.pressure.predicted - s.billed) / s.billed;

function manager(path: Path, window: number, o: Partial<ContextManagerOptions> = {}) {
  const store = new MemorySessionStore();
  const cm = new ContextManager({
    model: path === 'anthropic' ? CLAUDE : GPT,
    provider: path,
    contextWindow: window,
    system: 'You are a coding agent. Fix the failing checkout test. [task 7f3a]',
    tools: LOOP_TOOLS,
    native: 'prefer',
    store,
    ...o,
  });
  return { cm, store };
}

describe("Anthropic, native 'prefer': the server clears tool results as abridge plans", () => {
  it('50 requests in a 40,000-token window: none refused, the bill predicted within 2% (median) after each edit, what is sent bounded', async () => {
    const f = await fake(40_000);
    const { cm, store } = manager('anthropic', 40_000);
    const compactions: { strategies: string[] }[] = [];
    cm.on('compaction-complete', (e) => compactions.push(e));
    const appended: Message[] = [{ role: 'user', parts: [{ type: 'text', text: 'Start on the task.' }] }];
    await cm.append(appended[0]!);
    const steps = await loop(cm, sender(f, 'anthropic'), 50, appended);
    expect(steps).toHaveLength(50);
    expect(f.requests.filter((r) => r.refused)).toEqual([]);
    // The server did clear: what was sent grew past the window, what was billed stayed under it. Once what the server
    // clears is 3 windows, abridge clears it on its side, aiming at what the server leaves: what is sent stays bounded.
    const edited = steps.filter((s) => (s.cleared ?? 0) > 0);
    expect(edited.length).toBeGreaterThan(30);
    const sent = Math.max(...steps.map((s) => s.turn.pressure.sent ?? 0));
    expect(sent).toBeGreaterThan(3 * 40_000);
    expect(sent).toBeLessThan(5 * 40_000);
    expect(Math.max(...steps.map((s) => s.billed))).toBeLessThan(40_000 - 4096);
    // (And when the last 3 results alone pass the compact mark — 20–40 KB each here — abridge compacts: far fewer
    // times than without the provider's clearing, 24 in the same loop.)
    expect(compactions.length).toBeGreaterThanOrEqual(1);
    expect(compactions.length).toBeLessThanOrEqual(8);
    // What abridge cleared on its side can be read back, which the server's placeholder cannot offer.
    const ref = JSON.stringify(cm.session.entries.map((e) => e.message)).match(/r_[0-9a-f]{16}/)?.[0];
    expect(ref).toBeDefined();
    const back = await cm.runTool({ id: 'x', name: 'read_result', arguments: { ref_id: ref } });
    expect(back?.isError, JSON.stringify(back?.content).slice(0, 300)).toBe(false);
    expect(JSON.stringify(back?.content)).toMatch(/\d+:\d+ x{30}/);
    // After each edit the prediction is of the bill: the server's own figures anchor it.
    expect(median(edited.map(errorOf))).toBeLessThanOrEqual(0.02);
    // The boundary moves only when room is needed: most requests clear what the one before cleared (the cache holds).
    const boundaries = steps.map((s) => s.turn.native?.cleared ?? 0);
    const moves = boundaries.filter((b, i) => i > 0 && b !== boundaries[i - 1]).length;
    expect(moves).toBeLessThan(steps.length);
    const cached = f.requests.filter((r) => (r.usage?.cacheReadTokens ?? 0) > 0).length;
    expect(cached).toBeGreaterThan(f.requests.length / 2);
    // The archive is the whole conversation: every message appended, in order, none edited.
    const stored = await loadSession(store, cm.sessionId);
    const messages = stored.entries.filter((e) => e.kind === 'message' && e.message).map((e) => e.message!);
    expect(messages.length).toBe(appended.length);
    const mismatched = messages.map(shape).filter((x, i) => x !== shape(appended[i]!));
    expect(mismatched).toEqual([]);
  }, 120_000);

  it("'never' sends no context_management and no betas; 'only' never compacts on the client and refuses what cannot fit", async () => {
    const f = await fake(40_000);
    const never = manager('anthropic', 40_000, { native: 'never' });
    await never.cm.append({ role: 'user', parts: [{ type: 'text', text: 'Go.' }] });
    const steps = await loop(never.cm, sender(f, 'anthropic'), 6, []);
    expect(steps.every((s) => s.turn.betas === undefined && !('context_management' in s.turn.request))).toBe(true);

    // A window where clearing cannot make room: every result is kept (the last 3 tool uses are never cleared).
    const only = manager('anthropic', 40_000, { native: 'only' });
    const compacted: unknown[] = [];
    only.cm.on('compaction-complete', (e) => compacted.push(e));
    await only.cm.append({ role: 'user', parts: [{ type: 'text', text: 'Go.' }] });
    const before = f.requests.length;
    let thrown: unknown;
    try {
      await loop(only.cm, sender(f, 'anthropic'), 50, []);
    } catch (err) {
      thrown = err;
    }
    expect(compacted).toEqual([]);
    // Whatever happened, no request was sent that the provider refused.
    expect(f.requests.slice(before).filter((r) => r.refused)).toEqual([]);
    if (thrown !== undefined) expect(thrown).toBeInstanceOf(ContextOverflowError);
  }, 120_000);
});

describe('the provider compacts: recorded as a marker, sent back, resumed from', () => {
  it("Anthropic compact_20260112 in a 120,000-token window (what grows is the person's pasted logs: clearing cannot help)", async () => {
    const f = await fake(120_000);
    const { cm, store } = manager('anthropic', 120_000);
    const appended: Message[] = [{ role: 'user', parts: [{ type: 'text', text: 'Start on the task.' }] }];
    await cm.append(appended[0]!);
    const steps = await loop(cm, sender(f, 'anthropic'), 30, appended, 0, true);
    const at = steps.findIndex((s) => s.providerCompacted);
    expect(at).toBeGreaterThan(0);
    expect(steps[at]!.turn.native?.compacting).toBe(true);
    expect(steps[at]!.turn.betas).toContain('compact-2026-01-12');
    expect(f.requests.filter((r) => r.refused)).toEqual([]);
    // The next request sends the compaction block back, first, and is billed from it.
    const next = f.requests.find((r, i) => i > at && r.model === CLAUDE)!;
    const body = next.body as { messages: { role: string; content: { type: string }[] }[] };
    const blocks = body.messages.flatMap((m) => m.content.map((b) => b.type));
    expect(blocks.filter((b) => b === 'compaction')).toHaveLength(1);
    // The store has the whole history and the provider's compaction as a marker.
    const stored = await loadSession(store, cm.sessionId);
    const markers = stored.entries.filter((e) => e.compaction);
    expect(markers.length).toBe(steps.filter((s) => s.providerCompacted).length);
    for (const m of markers) {
      expect(m.compaction).toMatchObject({ trigger: 'provider', strategies: ['anthropic-compaction'] });
      expect(m.compaction!.summary).toMatch(/<summary>/);
    }
    // The archive: every message, the compaction blocks in markers only.
    const messages = stored.entries.filter((e) => e.kind === 'message' && e.message).map((e) => e.message!);
    const without = appended.map((m) => ({ ...m, parts: m.parts.filter((p) => p.type !== 'compaction') }));
    expect(messages.map(shape)).toEqual(without.map(shape));
    // The view as `view` and a resume read it starts from the provider's compaction.
    const view = activeMessages(stored);
    expect(view[0]!.parts[0]).toMatchObject({ type: 'compaction', marker: { native: { provider: 'anthropic' } } });
    const resumed = await ContextManager.resume(store, cm.sessionId, {
      system: 'You are a coding agent. Fix the failing checkout test. [task 7f3a]',
      tools: LOOP_TOOLS,
      native: 'prefer',
    });
    const after = await loop(resumed, sender(f, 'anthropic'), 3, [], 100, true);
    expect(after[0]!.turn.betas).toContain('compact-2026-01-12');
    expect(f.requests.filter((r) => r.refused)).toEqual([]);
    expect(errorOf(after[1]!)).toBeLessThan(0.05);
  }, 120_000);

  it.each([
    ['', 0.05],
    [' counted by the endpoint after each', 0.005],
  ])(
    "Responses compaction in a 40,000-token window: 50 requests, none refused, resumed from the provider's item; the bill after each compaction predicted%s",
    async (how, bound) => {
      const f = await fake(40_000);
      const counter = responsesTokenCounter(new OpenAI({ baseURL: f.v1URL, apiKey: 'sk-test', maxRetries: 0 }));
      const { cm, store } = manager('openai-responses', 40_000, how ? { countTokens: counter } : {});
      const client: unknown[] = [];
      cm.on('compaction-complete', (e) => client.push(e));
      const appended: Message[] = [{ role: 'user', parts: [{ type: 'text', text: 'Start on the task.' }] }];
      await cm.append(appended[0]!);
      const steps = await loop(cm, sender(f, 'openai-responses'), 50, appended);
      expect(steps).toHaveLength(50);
      expect(f.requests.filter((r) => r.refused)).toEqual([]);
      const compactedAt = steps.flatMap((s, i) => (s.providerCompacted ? [i] : []));
      expect(compactedAt.length).toBeGreaterThanOrEqual(2);
      // Every compaction was the provider's (the Responses API always can).
      expect(client).toHaveLength(compactedAt.length);
      // After each compaction the next prediction is of the bill: from the provider's bill of the compacted prompt and
      // abridge's count of what came since (within a few percent: most of the prompt is new) — or the endpoint's count.
      const after = compactedAt.map((i) => steps[i + 1]).filter((s): s is Step => s !== undefined);
      expect(median(after.map(errorOf))).toBeLessThanOrEqual(bound);
      if (how) {
        expect(after.every((s) => s.turn.pressure.estimated !== undefined)).toBe(true);
        expect(f.requests.filter((r) => r.countOnly).length).toBeGreaterThanOrEqual(after.length);
      }
      const stored = await loadSession(store, cm.sessionId);
      const markers = stored.entries.filter((e) => e.compaction).map((e) => e.compaction!);
      expect(markers.map((m) => m.number)).toEqual(compactedAt.map((_, i) => i + 1));
      expect(markers.every((m) => m.native?.provider === 'openai' && m.summary === '')).toBe(true);
      const stats = new SessionStats();
      for (const e of stored.entries) stats.add(e);
      expect(stats.result().compactions.map((c) => c.native)).toEqual(markers.map(() => ({ provider: 'openai' })));
      expect(stored.entries.filter((e) => e.kind === 'message' && e.message)).toHaveLength(appended.length);
      const resumed = await ContextManager.resume(store, cm.sessionId, { tools: LOOP_TOOLS, native: 'prefer' });
      const more = await loop(resumed, sender(f, 'openai-responses'), 3, [], 100);
      const first = f.requests.filter((r) => !r.countOnly).at(-3)!.body as { input: { type: string }[] };
      expect(first.input[0]!.type).toBe('compaction');
      expect(more).toHaveLength(3);
      expect(f.requests.filter((r) => r.refused)).toEqual([]);
    },
    120_000,
  );
});

describe('native: configuration and sending', () => {
  it('checks the option, per provider, and Chat Completions has none', () => {
    expect(nativeModeOf('prefer', 'anthropic')).toBe('prefer');
    expect(nativeModeOf({ anthropic: 'only' }, 'anthropic')).toBe('only');
    expect(nativeModeOf({ anthropic: 'only' }, 'openai-responses')).toBe('never');
    expect(nativeModeOf('prefer', 'openai-chat')).toBe('never');
    expect(() => nativeModeOf('always', 'anthropic')).toThrow(
      /native: expected one of 'never', 'prefer', 'only', got "always"/,
    );
    expect(() => nativeModeOf({ gemini: 'prefer' }, 'anthropic')).toThrow(/unknown provider "gemini"/);
    expect(() => nativeModeOf({ anthropic: 1 }, 'anthropic')).toThrow(/native\.anthropic: expected one of/);
  });

  it('anthropicParams refuses a body that needs the beta API, naming what to call', () => {
    const body = { model: CLAUDE, max_tokens: 10, messages: [], context_management: { edits: [] } };
    expect(() => anthropicParams(body as AnthropicRequestBody)).toThrow(
      /client\.beta\.messages\.create\(anthropicBetaParams/,
    );
    expect(anthropicBetaParams(body as AnthropicRequestBody, ['context-management-2025-06-27'])).toMatchObject({
      betas: ['context-management-2025-06-27'],
      context_management: { edits: [] },
    });
  });

  it('the Anthropic endpoint counts the edited request: the first request of a session and the first after the server cleared anew', async () => {
    const f = await fake(40_000);
    const counter = anthropicTokenCounter(new Anthropic({ baseURL: f.baseURL, apiKey: 'sk-ant-test', maxRetries: 0 }));
    const { cm } = manager('anthropic', 40_000, { countTokens: counter });
    await cm.append({ role: 'user', parts: [{ type: 'text', text: 'Start on the task.' }] });
    const steps = await loop(cm, sender(f, 'anthropic'), 12, []);
    const counted = steps.filter((s) => s.turn.pressure.estimated !== undefined);
    expect(counted[0]).toBe(steps[0]);
    // A counted request is predicted exactly (the fake's count and bill agree), its edits applied.
    for (const s of counted) expect(s.turn.pressure.predicted).toBe(s.billed);
    expect(f.requests.filter((r) => r.refused)).toEqual([]);
  }, 60_000);

  it('a deployment that does not offer it: one refusal, then abridge compacts by itself', async () => {
    const f = await fake(40_000);
    const { cm } = manager('anthropic', 40_000);
    const refused: unknown[] = [];
    cm.on('native-refused', (e) => refused.push(e));
    // A proxy that drops the beta header: the API then does not know `context_management`.
    const client = new Anthropic({ baseURL: f.baseURL, apiKey: 'sk-ant-test', maxRetries: 0 });
    const send = (turn: PreparedTurn) =>
      client.messages.create(turn.request as unknown as Anthropic.MessageCreateParamsNonStreaming);
    await cm.append({ role: 'user', parts: [{ type: 'text', text: 'Start on the task.' }] });
    let compactions = 0;
    cm.on('compaction-complete', () => compactions++);
    for (let i = 0; i < 25; i++) {
      let turn = await cm.prepare({ maxOutputTokens: 4096 });
      let response: unknown;
      try {
        response = await send(turn);
      } catch (err) {
        expect(cm.recoverFromNativeRefusal(err)).toBe(true);
        turn = await cm.prepare({ maxOutputTokens: 4096 });
        expect('context_management' in turn.request).toBe(false);
        response = await send(turn);
      }
      const { message } = await cm.record(response);
      await cm.append(answerCalls(message, i));
    }
    expect(refused).toHaveLength(1);
    expect(String((refused[0] as { message: string }).message)).toMatch(/context_management/);
    expect(f.requests.filter((r) => r.refused)).toHaveLength(1);
    expect(compactions).toBeGreaterThan(0);
    // Any other error is not this one.
    expect(cm.recoverFromNativeRefusal(new Error('socket hang up'))).toBe(false);
  }, 60_000);

  it("a token-count endpoint that fails: the request goes with abridge's figure; one that is not there is not asked again", async () => {
    const f = await fake(40_000);
    let asked = 0;
    const missing = async () => {
      asked++;
      throw Object.assign(new Error('404 Invalid URL (POST /v1/messages/count_tokens)'), { status: 404 });
    };
    const { cm } = manager('anthropic', 40_000, { countTokens: missing });
    const failed: { again: boolean }[] = [];
    cm.on('count-failed', (e) => failed.push(e));
    await cm.append({ role: 'user', parts: [{ type: 'text', text: 'Start on the task.' }] });
    const steps = await loop(cm, sender(f, 'anthropic'), 6, []);
    expect(steps).toHaveLength(6);
    expect(asked).toBe(1);
    expect(failed).toEqual([{ message: '404 Invalid URL (POST /v1/messages/count_tokens)', again: false }]);
    expect(steps.every((s) => s.turn.pressure.estimated === undefined)).toBe(true);
  }, 60_000);

  it('extra.context_management is refused while the manager writes it', async () => {
    const { cm } = manager('anthropic', 40_000);
    await cm.append({ role: 'user', parts: [{ type: 'text', text: 'Go.' }] });
    await expect(cm.prepare({ extra: { context_management: { edits: [] } } })).rejects.toThrow(
      /extra\.context_management: the manager writes it itself/,
    );
  });
});
