import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ModelCatalog } from '../budget/catalog.js';
import { DEFAULT_BUDGET_SETTINGS } from '../budget/defaults.js';
import { readSession } from '../formats/read.js';
import type { CompactionMarker, Entry, Message, Session, Usage } from '../model/types.js';
import { corpusAvailable, corpusFile } from '../../test/support/corpus.js';
import type { ExactTokenizer } from '../tokens/exact.js';
import { encodeAnthropicMessage } from '../formats/anthropic.js';
import { encodeOpenaiChatMessage } from '../formats/openai-chat.js';
import { prefixStability, wireMessage, type PrefixStabilityOptions } from './prefix-stability.js';

/** One token per word, ratio 1 and a 1,000-token harness prefix: every figure below is exact. */
const words: ExactTokenizer = { encoding: 'words', count: (t) => t.split(/\s+/).filter(Boolean).length };
const text = (n: number, w = 'w') => Array.from({ length: n }, () => w).join(' ');
const MODEL = 'claude-sonnet-4-5';
const HARNESS = 1000;
const catalog = new ModelCatalog().addSource([
  {
    id: MODEL,
    contextWindow: 200_000,
    maxOutputTokens: 32_000,
    pricing: { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 },
  },
]);
const base: PrefixStabilityOptions = { exact: words, familyRatio: { claude: 1 }, prefixTokens: HARNESS, catalog };

/** Builds a session whose assistant messages report a prompt of HARNESS + the tokens of everything the model saw. */
class Synthetic {
  readonly entries: Entry[] = [];
  private add(e: Omit<Entry, 'index'>): Entry {
    const entry = { ...e, index: this.entries.length } as Entry;
    this.entries.push(entry);
    return entry;
  }
  message(m: Message): this {
    this.add({ kind: 'message', message: m });
    return this;
  }
  user(n: number): this {
    return this.message({ role: 'user', parts: [{ type: 'text', text: text(n) }] });
  }
  /** An assistant message reporting `prompt` tokens (cache figures as given, else all input). */
  assistant(n: number, prompt: number, cache: Partial<Usage> = {}): this {
    const usage: Usage = {
      input: prompt - (cache.cacheRead ?? 0) - (cache.cacheWrite ?? 0),
      output: 10,
      cacheRead: cache.cacheRead ?? 0,
      cacheWrite: cache.cacheWrite ?? 0,
    };
    return this.message({ role: 'assistant', model: MODEL, parts: [{ type: 'text', text: text(n) }], usage });
  }
  call(k: number, prompt: number): this {
    return this.message({
      role: 'assistant',
      model: MODEL,
      parts: [{ type: 'tool-call', id: `call_${k}`, name: 'read', arguments: { path: `f${k}` } }],
      usage: { input: prompt, output: 10, cacheRead: 0, cacheWrite: 0 },
    });
  }
  result(k: number, n: number): this {
    return this.message({
      role: 'tool',
      parts: [
        {
          type: 'tool-result',
          callId: `call_${k}`,
          toolName: 'read',
          content: [{ type: 'text', text: text(n, 'r') }],
          isError: false,
        },
      ],
    });
  }
  /** The agent's own compaction (pi-style): a summary in place of everything before `firstKeptEntry`. */
  agentCompaction(summary: string, firstKeptEntry: number): this {
    const marker: CompactionMarker = { number: 1, summary, source: 'pi', firstKeptEntry };
    this.add({
      kind: 'compaction',
      compaction: marker,
      message: { role: 'user', parts: [{ type: 'compaction', marker }], synthetic: true },
    });
    return this;
  }
  session(): Session {
    return { format: 'anthropic', info: {}, entries: this.entries, problems: [] };
  }
}

// Counted tokens with Claude's framing: 4 per message; a text message of n words is n + 4.
const head = '{"role":"user","content":[{"type":"text","text":"';

describe('prefix stability on a synthetic session', () => {
  // Requests: 0 sees [u100] = 104; 1 sees + [a50, u30] = 192; 2 sees + [a20, u40] = 260; the agent then compacts
  // (summary "s ×10" in place of entries 0–3), and 3 sees [summary 14, u40 44, a10 14, u10 14] = 86.
  const build = () =>
    new Synthetic()
      .user(100)
      .assistant(50, HARNESS + 104, { cacheWrite: 1104 })
      .user(30)
      .assistant(20, HARNESS + 192, { cacheRead: 1104, cacheWrite: 88 })
      .user(40)
      .assistant(10, HARNESS + 260, { cacheRead: 1192, cacheWrite: 68 })
      .agentCompaction(text(10, 's'), 4)
      .user(10)
      .assistant(10, HARNESS + 86, { cacheRead: 1000, cacheWrite: 86 })
      .session();

  it('counts the previous prompt as the stable prefix while the agent only appends', async () => {
    const r = await prefixStability(build(), base);
    expect(r.rows.map((x) => [x.reported.prompt, x.none.stable, x.none.fresh])).toEqual([
      [1104, 1000, 104], // only the harness prefix is stable on the first request
      [1192, 1104, 88],
      [1260, 1192, 68],
      [1086, expect.any(Number), expect.any(Number)],
    ]);
    expect(r.rows.slice(0, 3).every((x) => x.none.breakAt === undefined)).toBe(true);
  });

  it("breaks the prefix at the agent's compaction summary: only the harness and the summary's leading bytes stay", async () => {
    const r = await prefixStability(build(), base);
    const row = r.rows[3]!;
    expect(row.none.breakAt).toEqual({ position: 0, summary: true });
    // The summary serializes as head + "s s … s" + '"}]}'; it shares `head` with the message it replaced.
    const summaryJson = `${head}${text(10, 's')}"}]}`;
    const partial = Math.floor((14 * head.length) / summaryJson.length);
    expect(row.none).toMatchObject({ prompt: 1086, stable: HARNESS + partial, fresh: 86 - partial });
    expect(r.agentCompactions).toBe(1);
  });

  it("replaces the agent's compaction with abridge's: without it, the context keeps growing and stays cached", async () => {
    const r = await prefixStability(build(), base);
    // Rows before the agent's compaction are the same in both worlds.
    for (const x of r.rows.slice(0, 3)) expect(x.compacted).toEqual(x.none);
    // Request 3 without the agent's compaction sees [u100, a50, u30, a20, u40, a10, u10] = 288: 202 more than reported.
    expect(r.rows[3]!.compacted).toMatchObject({ prompt: 1086 + 202, stable: 1260, fresh: 28 });
    expect(r.rows[3]!.compacted.breakAt).toBeUndefined();
    expect(r.compactions).toEqual([]); // a 200K window is nowhere near its compact level
  });

  it('prices the stable prefix at cache read, the rest at cache write, and all of it at input when uncached', async () => {
    const r = await prefixStability(build(), base);
    expect(r.rows[1]!.none.cost!.cached).toBeCloseTo((1104 * 0.3 + 88 * 3.75) / 1e6, 12);
    expect(r.rows[1]!.none.cost!.uncached).toBeCloseTo((1192 * 3) / 1e6, 12);
    expect(r.rows[1]!.reported.cost).toBeCloseTo((1104 * 0.3 + 88 * 3.75) / 1e6, 12);
    const t = r.totals;
    expect(t.none.prompt).toBe(1104 + 1192 + 1260 + 1086);
    expect(t.none.stable + t.none.fresh).toBe(t.none.prompt);
    expect(t.reported.cacheReadShare).toBeCloseTo((1104 + 1192 + 1000) / (1104 + 1192 + 1260 + 1086), 12);
    expect(t.unpriced).toBe(0);
  });

  it('compares each request with the previous request of the same model', async () => {
    const s = new Synthetic()
      .user(100)
      .assistant(50, HARNESS + 104)
      .user(30)
      .message({
        role: 'assistant',
        model: 'claude-3-5-haiku-20241022',
        parts: [{ type: 'text', text: text(20) }],
        usage: { input: 1500 + 192, output: 5, cacheRead: 0, cacheWrite: 0 },
      })
      .user(40)
      .assistant(10, HARNESS + 260)
      .session();
    const r = await prefixStability(s, base);
    expect(r.rows.map((x) => x.model)).toEqual([MODEL, 'claude-3-5-haiku-20241022', MODEL]);
    // The second Sonnet request reuses the first Sonnet prompt (104 counted tokens), whatever Haiku saw between them.
    expect(r.rows[2]!.none).toMatchObject({ prompt: 1260, stable: 1104, fresh: 156 });
  });
});

describe("prefix stability with abridge's compaction", () => {
  // A task (24 tokens), then steps of one call (15 tokens: 4 + 8 framing + id + name + args) and one 300-word result
  // (313 tokens: 4 + 8 + call id + 300): each step adds 328. Request k sees 24 + 328k counted tokens.
  const STEP = 328;
  const build = (steps: number) => {
    const s = new Synthetic().user(20);
    for (let k = 0; k < steps; k++) s.call(k, HARNESS + 24 + STEP * k).result(k, 300);
    return s.assistant(5, HARNESS + 24 + STEP * steps).session();
  };
  // A 2,500-token window with no response reserve: compaction at 2,250 (request 4 predicts 2,336), aiming at 1,500.
  const settings = { ...DEFAULT_BUDGET_SETTINGS, reserveTokens: 0, models: { [MODEL]: { contextWindow: 2500 } } };
  const options: PrefixStabilityOptions = {
    ...base,
    settings,
    catalog: new ModelCatalog(settings).addSource([
      { id: MODEL, contextWindow: 200_000, pricing: { input: 3, output: 15, cacheRead: 0.3, cacheWrite: 3.75 } },
    ]),
    compactOptions: {
      strategies: ['clear-tool-results'],
      keepLastSteps: 1,
      minKeepLastSteps: 1,
      options: { clearing: { keep: 1 } },
    },
  };

  it('compacts when the predicted prompt crosses the compact level, and the prefix breaks at the first cleared result', async () => {
    const r = await prefixStability(build(6), options);
    expect(r.rows).toHaveLength(7);
    for (const x of r.rows.slice(0, 4)) expect(x.compacted).toEqual(x.none);
    expect(r.compactions).toHaveLength(1);
    const c = r.compactions[0]!;
    expect(c).toMatchObject({
      number: 1,
      request: 4,
      entry: 9,
      before: HARNESS + 24 + 4 * STEP,
      strategies: ['clear-tool-results'],
    });
    expect(r.rows[4]!.compaction).toBe(1);
    // The oldest tool result (entry 2, view position 2) is the earliest message the compaction changed.
    expect(c.breakAt).toEqual({ position: 2, entry: 2 });
    expect(r.rows[4]!.compacted.breakAt).toEqual({ position: 2, entry: 2 });
    // Kept: the harness, the task and the first call (24 + 15), and the leading bytes of the cleared result's JSON.
    const kept = HARNESS + 24 + 15;
    expect(c.keptTokens).toBeGreaterThanOrEqual(kept);
    expect(c.keptTokens).toBeLessThan(kept + 40);
    const row = r.rows[4]!.compacted;
    expect(c.keptTokens).toBe(row.stable);
    expect(c.rewrittenTokens).toBe(row.fresh);
    expect(row.stable + row.fresh).toBe(row.prompt);
    expect(row.prompt).toBeLessThan(r.rows[4]!.none.prompt - 500);
    expect(c.writeCost).toBeCloseTo((row.fresh * 3.75) / 1e6, 12);
    // Without compaction the same request only appends one step.
    expect(r.rows[4]!.none).toMatchObject({ stable: HARNESS + 24 + 3 * STEP, fresh: STEP });
    expect(c.extraWriteTokens).toBe(row.fresh - STEP);
    // After it, the compacted context is again append-only.
    expect(r.rows[5]!.compacted.breakAt).toBeUndefined();
    expect(r.rows[5]!.compacted.fresh).toBe(STEP);
    expect(r.totals.compactions.count).toBe(1);
    expect(r.totals.compacted.prompt).toBeLessThan(r.totals.none.prompt);
  });

  it('compacts nothing with compaction: false', async () => {
    const r = await prefixStability(build(6), { ...options, compaction: false });
    expect(r.compactions).toEqual([]);
    for (const x of r.rows) expect(x.compacted).toEqual(x.none);
  });
});

const corpus = corpusAvailable() ? describe : describe.skip;

corpus('prefix stability on a corpus transcript', () => {
  const file = corpusFile(
    'pi',
    'japer-technology__github-claw__2026-02-20T11-44-20-711Z_b1f6c294-cc66-402c-bcb0-3e76f2777ce8.jsonl',
  );

  it('reports the cache-read share the provider reported, as summed by hand from the raw usage', async () => {
    let input = 0;
    let cacheRead = 0;
    let cacheWrite = 0;
    for (const line of readFileSync(file, 'utf8').split('\n')) {
      if (!line.trim()) continue;
      const record = JSON.parse(line) as {
        type?: string;
        message?: { role?: string; usage?: { input: number; cacheRead: number; cacheWrite: number } };
      };
      const u = record.type === 'message' && record.message?.role === 'assistant' ? record.message.usage : undefined;
      if (!u) continue;
      input += u.input;
      cacheRead += u.cacheRead;
      cacheWrite += u.cacheWrite;
    }
    const byHand = cacheRead / (input + cacheRead + cacheWrite);
    expect(byHand).toBeGreaterThan(0.5);
    const r = await prefixStability(await readSession(file));
    expect(r.totals.reported).toMatchObject({ input, cacheRead, cacheWrite });
    expect(r.totals.reported.cacheReadShare).toBeCloseTo(byHand, 12);
    // Every row adds up, and the computed share is a share.
    for (const x of r.rows) expect(x.none.stable + x.none.fresh).toBe(x.none.prompt);
    expect(r.totals.none.stableShare).toBeGreaterThan(0);
    expect(r.totals.none.stableShare).toBeLessThanOrEqual(1);
  });
});

describe('the wire shape prefix stability compares', () => {
  // A tool call whose arguments were recorded as unparsed text: Anthropic's writer wraps it in an object (`input` must
  // be one), Chat Completions sends the text; a second encoder here once sent the raw text as Anthropic's input.
  const call: Message = {
    role: 'assistant',
    parts: [
      { type: 'text', text: 'Reading.' },
      { type: 'tool-call', id: 'toolu_1', name: 'read', arguments: '{"path":"a.ts"}' },
    ],
  };
  const result: Message = {
    role: 'tool',
    parts: [
      {
        type: 'tool-result',
        callId: 'toolu_1',
        toolName: 'read',
        content: [{ type: 'text', text: 'x' }],
        isError: false,
      },
    ],
  };

  it('is the one Anthropic encoder for Claude models', () => {
    expect(wireMessage(call, 'claude')).toEqual(encodeAnthropicMessage(call));
    expect(wireMessage(call, 'claude')).toEqual([
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'Reading.' },
          { type: 'tool_use', id: 'toolu_1', name: 'read', input: { arguments: '{"path":"a.ts"}' } },
        ],
      },
    ]);
  });

  it('is the one Chat Completions encoder for OpenAI models', () => {
    for (const m of [call, result]) expect(wireMessage(m, 'gpt')).toEqual(encodeOpenaiChatMessage(m));
    expect(wireMessage(result, 'gpt')).toEqual([{ role: 'tool', tool_call_id: 'toolu_1', content: 'x' }]);
  });
});
