import { afterEach, describe, expect, it, vi } from 'vitest';
import { parseSession } from '../formats/read.js';
import { writeSession } from '../formats/write.js';
import { argumentsText } from '../model/parts.js';
import type { Message, Session, ToolCallPart, ToolResultPart } from '../model/types.js';
import { activeMessages, activeView, isSummaryItem, type ViewItem } from '../model/view.js';
import { MemoryResultStore } from './memory-result-store.js';
import type { ResultStore, StoredResultMeta } from './result-store.js';
import type { StrategyName } from './strategies/strategy.js';
import { PiTranscript } from '../../test/support/random-session.js';
import { DEFAULT_STRATEGY_OPTIONS } from '../defaults.js';
import { comparable } from '../../test/support/view-compare.js';
import { compact, forceCompact, squeezeSummary, STRATEGIES, type CompactOptions } from './compact.js';
import { checkInvariants, introducedViolations } from './invariants.js';
import { FILES_HEADING } from './in-play.js';
import { compress } from './strategies/head-tail.js';
import { STRATEGY_NAMES, type Strategy, type StrategyContext } from './strategies/strategy.js';
import { summaryMessage, summaryText } from './strategies/summarize.js';
import { ExtractiveSummarizer, parseSummary } from './summarizers/extractive.js';
import type { Summarizer, SummaryRequest } from './summarizers/summarizer.js';
import { isHumanUser, unitsOf } from './turns.js';
import { TokenCounter } from '../tokens/counter.js';

// ---------------------------------------------------------------------------------------------------------------------
// Synthetic sessions

const NOW = () => new Date(Date.UTC(2026, 0, 2));
const TASK = 'Fix the flaky retry in src/net/retry.ts. Never change the public API of src/net/index.ts.';

/** `n` numbered lines of about 40 characters: `tag line 0001: …`. */
function lines(n: number, tag: string): string {
  return Array.from({ length: n }, (_, i) => `${tag} line ${String(i + 1).padStart(4, '0')}: value ${i * 7} ok`).join(
    '\n',
  );
}

const build = (t: PiTranscript): Session => parseSession(t.jsonl());

/** The task, then `steps` steps each with one call whose result is `resultLines` lines (tools alternate read / bash). */
function toolSession(steps: number, resultLines = 60): { session: Session; outputs: Map<string, string> } {
  const t = new PiTranscript();
  t.user(TASK);
  const outputs = new Map<string, string>();
  for (let i = 0; i < steps; i++) {
    const bash = i % 2 === 1;
    const out = lines(resultLines, `out${i}`);
    const [id] = t.step({
      text: `Step ${i}.`,
      calls: [
        bash
          ? { name: 'bash', args: { command: `npm test -- case${i}` }, result: out }
          : { name: 'read', args: { path: `src/file${i}.ts` }, result: out },
      ],
    });
    outputs.set(id!, out);
  }
  return { session: build(t), outputs };
}

/** A session with evidence to summarize: instructions, paths, commands, errors, numbers; thinking in the last step. */
function workSession(extraSteps = 8): Session {
  const t = new PiTranscript();
  t.user(TASK);
  t.step({
    thinking: 'Start by reading the retry loop.',
    text: 'I will read the retry code first.',
    calls: [{ name: 'read', args: { path: 'src/net/retry.ts' }, result: lines(80, 'retry.ts') }],
  });
  t.step({
    text: 'Let me run the failing test.',
    calls: [
      {
        name: 'bash',
        args: { command: 'npx vitest run test/retry.test.ts' },
        result: `FAIL test/retry.test.ts\nError: expected 3 retries, got 2\n${lines(40, 'vitest')}\nexit code 1`,
        isError: true,
      },
    ],
  });
  t.user('Please also keep the backoff under 250 ms; do not touch test/fixtures/slow.json.');
  t.step({
    text: 'The root cause is an off-by-one in the attempt counter.',
    calls: [
      {
        name: 'edit',
        args: { path: 'src/net/retry.ts', oldText: 'attempt < max', newText: 'attempt <= max' },
        result: 'Edited src/net/retry.ts',
      },
    ],
  });
  t.step({
    calls: [
      {
        name: 'bash',
        args: { command: 'npx vitest run test/retry.test.ts --reporter=dot' },
        result: `${lines(60, 'dots')}\n12 tests passed`,
      },
    ],
  });
  for (let i = 0; i < extraSteps; i++)
    t.step({
      text: `Checking module ${i}.`,
      calls: [{ name: 'read', args: { path: `src/net/mod${i}.ts` }, result: lines(50, `mod${i}`) }],
    });
  // The last human message is protected too: it comes just before the last 5 steps.
  t.user('Looks right. Finish the remaining checks and report.');
  for (let i = 0; i < 5; i++) {
    const thinking = i === 4 ? { thinking: 'Last check before reporting.' } : {};
    t.step({
      ...thinking,
      text: `Final check ${i}.`,
      calls: [{ name: 'bash', args: { command: `npm run check:${i}` }, result: lines(20, `check${i}`) }],
    });
  }
  return build(t);
}

/** The context size compact() works with (provider tokens, prefix included). */
async function sizeOf(session: Session, prefixTokens = 0): Promise<number> {
  return (await compact(session, { target: Number.MAX_SAFE_INTEGER, strategies: [], prefixTokens })).beforeTokens;
}

function textOf(m: Message): string {
  return m.parts
    .map((p) => {
      switch (p.type) {
        case 'text':
        case 'thinking':
          return p.text;
        case 'tool-call':
          return `${p.name} ${argumentsText(p.arguments)}`;
        case 'tool-result':
          return p.content.map((c) => (c.type === 'text' ? c.text : '')).join('\n');
        case 'compaction':
          return p.marker.summary;
        default:
          return '';
      }
    })
    .join('\n');
}

const resultOf = (item: ViewItem): ToolResultPart =>
  item.message.parts.find((p): p is ToolResultPart => p.type === 'tool-result')!;
const resultTextOf = (item: ViewItem): string => textOf({ role: 'tool', parts: [resultOf(item)] });
const toolItems = (view: readonly ViewItem[]) => view.filter((v) => v.message.role === 'tool');
const callOf = (view: readonly ViewItem[], id: string): ToolCallPart =>
  view.flatMap((v) => v.message.parts).find((p): p is ToolCallPart => p.type === 'tool-call' && p.id === id)!;

const REF = /"ref_id": "(r_[0-9a-f]{16})"/;
/** Tests protect the last 5 steps throughout (no relaxing toward fewer), unless they say otherwise. */
const base: Partial<CompactOptions> = { prefixTokens: 0, now: NOW, minKeepLastSteps: 5 };

/** Records what the summarizer was asked and answered. */
class RecordingSummarizer implements Summarizer {
  readonly name = 'recording';
  readonly inner = new ExtractiveSummarizer();
  requests: SummaryRequest[] = [];
  answers: string[] = [];
  async summarize(req: SummaryRequest): Promise<string> {
    this.requests.push(req);
    const out = await this.inner.summarize(req);
    this.answers.push(out);
    return out;
  }
}

afterEach(() => {
  vi.restoreAllMocks();
});

// ---------------------------------------------------------------------------------------------------------------------

describe('strategies as values', () => {
  it('runs a strategy object passed in place of a built-in one, with no registry involved', async () => {
    const { session } = toolSession(8);
    let calls = 0;
    const mine: Strategy = {
      name: 'clear-tool-results',
      async apply(view, ctx) {
        calls++;
        return STRATEGIES['clear-tool-results'].apply(view, ctx);
      },
    };
    const r = await compact(session, { ...base, target: 1, strategies: [mine], keepLastSteps: 0, minKeepLastSteps: 0 });
    expect(calls).toBeGreaterThan(0);
    expect(r.strategiesRun.map((s) => s.name)).toEqual(['clear-tool-results']);
  });
});

describe('onStrategy', () => {
  it('is told each strategy as it starts, the ones that ran among them in order', async () => {
    const { session } = toolSession(12);
    const started: string[] = [];
    const r = await compact(session, { ...base, target: 600, onStrategy: (name) => started.push(name) });
    expect(r.strategiesRun.length).toBeGreaterThan(0);
    // Every strategy that ran was announced, in the order it ran (a strategy undone or skipped is announced too).
    const ran: string[] = r.strategiesRun.map((s) => s.name);
    expect(started.filter((n) => ran.includes(n)).filter((n, i, a) => a.indexOf(n) === i)).toEqual(ran);
    expect(started.every((n) => (STRATEGY_NAMES as readonly string[]).includes(n))).toBe(true);
  });
});

describe('clear-tool-results alone', () => {
  it('clears old results oldest first and keeps the last `keep` tool uses whole', async () => {
    for (const keep of [0, 3, 5]) {
      const { session, outputs } = toolSession(8);
      const r = await compact(session, {
        ...base,
        target: 1,
        strategies: ['clear-tool-results'],
        keepLastSteps: 0,
        minKeepLastSteps: 0,
        options: { clearing: { keep } },
      });
      expect(r.strategiesRun.map((s) => s.name)).toEqual(keep === 8 ? [] : ['clear-tool-results']);
      const tools = toolItems(activeView(session));
      expect(tools).toHaveLength(8);
      tools.forEach((item, i) => {
        const whole = i >= 8 - keep;
        expect(item.edit, `result ${i} with keep ${keep}`).toBe(whole ? undefined : 'cleared');
        expect(resultTextOf(item) === outputs.get(resultOf(item).callId)).toBe(whole);
      });
    }
  });

  it("with untilTarget, stops once under the target, oldest first — a file's latest read after the other results of its turn", async () => {
    const { session } = toolSession(8);
    const size = await sizeOf(session);
    const r = await compact(session, {
      ...base,
      target: size - 100,
      strategies: ['clear-tool-results'],
      keepLastSteps: 0,
      minKeepLastSteps: 0,
      options: { clearing: { untilTarget: true } },
    });
    expect(r.reachedTarget).toBe(true);
    // Reads of src/file0.ts, src/file2.ts… (each the latest read of its file) and commands in between, in one turn:
    // the oldest command output goes first.
    expect(toolItems(activeView(session)).map((v) => v.edit)).toEqual([
      undefined,
      'cleared',
      ...Array(6).fill(undefined),
    ]);
  });

  it('by default clears every eligible result in one batch (one cache break buys the most room)', async () => {
    const { session } = toolSession(8);
    const size = await sizeOf(session);
    const r = await compact(session, {
      ...base,
      target: size - 100,
      strategies: ['clear-tool-results'],
      keepLastSteps: 0,
      minKeepLastSteps: 0,
    });
    expect(r.reachedTarget).toBe(true);
    // All but the last 3 tool uses (keep: 3).
    expect(toolItems(activeView(session)).map((v) => v.edit)).toEqual([
      ...Array(5).fill('cleared'),
      ...Array(3).fill(undefined),
    ]);
  });

  it('leaves the results of excluded tools', async () => {
    const { session } = toolSession(8);
    await compact(session, {
      ...base,
      target: 1,
      strategies: ['clear-tool-results'],
      keepLastSteps: 0,
      minKeepLastSteps: 0,
      options: { clearing: { keep: 0, excludeTools: ['bash'] } },
    });
    for (const item of toolItems(activeView(session)))
      expect(item.edit).toBe(resultOf(item).toolName === 'bash' ? undefined : 'cleared');
  });

  it('clearAtLeast: clears that much even past the target, or skips with the reason and changes nothing', async () => {
    const { session } = toolSession(8);
    const size = await sizeOf(session);
    // One result would be enough for the target, but at least 1,500 tokens must go: two results (~500 each… more).
    const r = await compact(session, {
      ...base,
      target: size - 100,
      strategies: ['clear-tool-results'],
      keepLastSteps: 0,
      minKeepLastSteps: 0,
      options: { clearing: { clearAtLeast: 1500 } },
    });
    const cleared = toolItems(activeView(session)).filter((v) => v.edit === 'cleared').length;
    expect(cleared).toBeGreaterThan(1);
    expect(r.beforeTokens - r.afterTokens).toBeGreaterThanOrEqual(1500);

    const other = toolSession(8).session;
    const entries = other.entries.length;
    const r2 = await compact(other, {
      ...base,
      target: 1,
      strategies: ['clear-tool-results'],
      keepLastSteps: 0,
      minKeepLastSteps: 0,
      options: { clearing: { keep: 3, clearAtLeast: 1_000_000 } },
    });
    expect(r2.strategiesRun).toEqual([]);
    expect(r2.skipped).toEqual([
      {
        name: 'clear-tool-results',
        reason: expect.stringMatching(/^could clear only \d+ tokens, less than clear_at_least \(1000000\)$/),
      },
    ]);
    expect(r2.reachedTarget).toBe(false);
    expect(r2.afterTokens).toBe(r2.beforeTokens);
    expect(other.entries).toHaveLength(entries);
    expect(r2.entry).toBeUndefined();
  });

  it('skips with a reason when there is nothing older than the last `keep` tool uses', async () => {
    const { session } = toolSession(3);
    const r = await compact(session, {
      ...base,
      target: 1,
      strategies: ['clear-tool-results'],
      keepLastSteps: 0,
      minKeepLastSteps: 0,
    });
    expect(r.skipped).toEqual([
      { name: 'clear-tool-results', reason: 'no tool results older than the last 3 tool uses' },
    ]);
  });

  it('does not clear results smaller than the placeholder', async () => {
    const t = new PiTranscript();
    t.user(TASK);
    for (let i = 0; i < 6; i++) t.step({ calls: [{ name: 'bash', args: { command: `echo ${i}` }, result: `${i}` }] });
    const session = build(t);
    const r = await compact(session, {
      ...base,
      target: 1,
      strategies: ['clear-tool-results'],
      keepLastSteps: 0,
      minKeepLastSteps: 0,
    });
    expect(r.skipped).toEqual([{ name: 'clear-tool-results', reason: 'nothing clearable' }]);
  });

  it('clearToolInputs empties the arguments of the cleared calls only', async () => {
    const { session } = toolSession(6);
    const view0 = activeView(session);
    await compact(session, {
      ...base,
      target: 1,
      strategies: ['clear-tool-results'],
      keepLastSteps: 0,
      minKeepLastSteps: 0,
      options: { clearing: { keep: 2, clearToolInputs: true } },
    });
    const view = activeView(session);
    for (const item of toolItems(view)) {
      const id = resultOf(item).callId;
      if (item.edit === 'cleared') expect(callOf(view, id).arguments).toEqual({});
      else expect(callOf(view, id).arguments).toEqual(callOf(view0, id).arguments);
    }
    expect(toolItems(view).filter((v) => v.edit === 'cleared')).toHaveLength(4);
    // The assistant messages whose calls lost their inputs are edits; the entries themselves are untouched.
    const edited = view.filter((v) => v.message.role === 'assistant' && v.edit === 'cleared');
    expect(edited).toHaveLength(4);
    for (const v of edited)
      expect(
        session.entries[v.entry!]!.message!.parts.some(
          (p) => p.type === 'tool-call' && argumentsText(p.arguments) !== '{}',
        ),
      ).toBe(true);
  });

  /** Clearing alone, down to nothing: every result but the kept ones cleared into the store. */
  const clearEverything = {
    ...base,
    target: 1,
    strategies: ['clear-tool-results'] as StrategyName[],
    keepLastSteps: 0,
    minKeepLastSteps: 0,
  };

  it('the placeholder names the tool and a ref_id the store reads the original back from', async () => {
    const { session, outputs } = toolSession(6);
    const store = new MemoryResultStore();
    await compact(session, { ...clearEverything, store });
    const cleared = toolItems(activeView(session)).filter((v) => v.edit === 'cleared');
    expect(cleared).toHaveLength(3);
    for (const item of cleared) {
      const part = resultOf(item);
      const text = resultTextOf(item);
      expect(text).toMatch(
        new RegExp(
          `^\\[tool result cleared to save context: ${part.toolName} output of ~\\d+ tokens\\. Read it back with read_result \\{"ref_id": "r_[0-9a-f]{16}"\\} if it is needed again\\.\\]$`,
        ),
      );
      const ref = text.match(REF)![1]!;
      const back = await store.read(ref, { limit: 2000 });
      expect(back.text).toBe(outputs.get(part.callId));
      expect(await store.stat(ref)).toMatchObject({
        tool: part.toolName,
        callId: part.callId,
        entry: item.entry,
        sessionId: 'sess-test',
      });
    }
  });
  it("a store's batch: results go through it and are committed before compact returns (one sync for them all)", async () => {
    const { session } = toolSession(6);
    const base0 = new MemoryResultStore();
    const events: string[] = [];
    const store: ResultStore = Object.assign(Object.create(base0) as MemoryResultStore, {
      put: async () => {
        throw new Error('put outside the batch');
      },
      batch: () => ({
        store: {
          ...bindAll(base0),
          put: (text: string, meta?: StoredResultMeta) => {
            events.push('put');
            return base0.put(text, meta);
          },
        },
        commit: async () => {
          events.push('commit');
        },
      }),
    });
    const r = await compact(session, { ...clearEverything, store });
    expect(r.marker).toBeDefined();
    expect(events.filter((e) => e === 'put')).toHaveLength(3);
    expect(events[events.length - 1]).toBe('commit');
    expect(events.filter((e) => e === 'commit')).toHaveLength(1);
  });
});

describe('offload alone', () => {
  function sizedSession(sizes: number[]): { session: Session; outputs: string[] } {
    const t = new PiTranscript();
    t.user(TASK);
    const outputs: string[] = [];
    for (const [i, n] of sizes.entries()) {
      const out = lines(n, `r${i}`).slice(0, n);
      outputs.push(out);
      t.step({ calls: [{ name: 'grep', args: { pattern: `p${i}` }, result: out }] });
    }
    for (let i = 0; i < 5; i++) t.step({ calls: [{ name: 'bash', args: { command: `true ${i}` }, result: 'ok' }] });
    return { session: build(t), outputs };
  }

  it('replaces results over 4,096 bytes with a reference holding the first 200 characters and the ref', async () => {
    const { session, outputs } = sizedSession([4096, 4097, 20_000, 100]);
    const store = new MemoryResultStore();
    const r = await compact(session, { ...base, target: 1, store, strategies: ['offload'] });
    expect(r.strategiesRun.map((s) => s.name)).toContain('offload');
    const tools = toolItems(activeView(session)).slice(0, 4);
    expect(tools.map((v) => v.edit)).toEqual([undefined, 'offloaded', 'offloaded', undefined]);
    for (const i of [1, 2]) {
      const text = resultTextOf(tools[i]!);
      const original = outputs[i]!;
      expect(
        text.startsWith(
          `[tool result offloaded: grep output, ${Buffer.byteLength(original).toLocaleString('en-US')} bytes, `,
        ),
      ).toBe(true);
      expect(text).toContain(`It began:\n${original.slice(0, 200).trimEnd()}…\n`);
      expect(text).not.toContain(original.slice(0, 201));
      const ref = text.match(REF)![1]!;
      expect(text).toContain(`read_result {"ref_id": "${ref}", "offset": 0, "limit": 200}`);
      expect((await store.read(ref, { limit: 2000 })).text).toBe(original);
    }
    expect(resultTextOf(tools[0]!)).toBe(outputs[0]);
    expect(resultTextOf(tools[3]!)).toBe(outputs[3]);
  });

  it('skips with the reason when no result is over the threshold', async () => {
    const { session } = sizedSession([100, 4096]);
    const r = await compact(session, { ...base, target: 1, strategies: ['offload'] });
    expect(r.skipped).toEqual([{ name: 'offload', reason: 'no changeable tool result over 4096 bytes' }]);
  });
});

describe('head-tail alone', () => {
  it('keeps the first and last lines with a marker naming the elided lines and the ref', async () => {
    const t = new PiTranscript();
    t.user(TASK);
    const big = lines(2000, 'log');
    t.step({ calls: [{ name: 'bash', args: { command: 'npm run build' }, result: big }] });
    for (let i = 0; i < 5; i++) t.step({ calls: [{ name: 'bash', args: { command: `true ${i}` }, result: 'ok' }] });
    const session = build(t);
    const store = new MemoryResultStore();
    const r = await compact(session, { ...base, target: 1, store, strategies: ['head-tail'] });
    expect(r.strategiesRun.map((s) => s.name)).toEqual(['head-tail']);
    const item = toolItems(activeView(session))[0]!;
    expect(item.edit).toBe('compressed');
    const text = resultTextOf(item);
    const out = text.split('\n');
    const all = big.split('\n');
    expect(out[0]).toBe(all[0]);
    expect(out[out.length - 1]).toBe(all[all.length - 1]);
    const m = text.match(
      /\[… lines (\d+)–(\d+) of 2000 elided \(([\d,]+) lines, ([\d,]+) characters\); the whole result: read_result \{"ref_id": "(r_[0-9a-f]{16})", "offset": (\d+)\} …\]/,
    );
    expect(m).not.toBeNull();
    const [, from, to, count, , ref, offset] = m!;
    const head = Number(from) - 1;
    const tail = 2000 - Number(to);
    expect(Number(count!.replace(/,/g, ''))).toBe(2000 - head - tail);
    expect(Number(offset)).toBe(head);
    expect(out).toEqual([...all.slice(0, head), expect.any(String), ...all.slice(2000 - tail)]);
    expect(head).toBeGreaterThan(0);
    expect(tail).toBeGreaterThan(0);
    expect((await store.read(ref!, { limit: 2000 })).text).toBe(big);
    expect(text.length).toBeLessThan(big.length / 10);
  });

  it('spends the room a long line stopped the first lines at: the last lines take it, then the opening of that line', () => {
    const counter = new TokenCounter();
    const tailLines = Array.from(
      { length: 150 },
      (_, i) => `  at handler${i} (src/server/routes/r${i}.ts:${i + 10}:7)`,
    );
    const huge = `const bundle = ${JSON.stringify('abcdefghij '.repeat(4000))};`;
    const text = ['// build output', 'export {};', huge, ...tailLines].join('\n');
    const out = compress(text, 4000, 'r_0123456789abcdef', { counter });
    const got = counter.text(out);
    // The room is used (before: the two first lines and at most half the room of last lines, ~1,500 tokens).
    expect(got).toBeGreaterThan(0.85 * 4000);
    expect(got).toBeLessThanOrEqual(4000 + 60);
    const outLines = out.split('\n');
    expect(outLines.slice(0, 2)).toEqual(['// build output', 'export {};']);
    expect(outLines.slice(-150)).toEqual(tailLines);
    expect(huge.startsWith(outLines[2]!)).toBe(true);
    expect(outLines[2]!.length).toBeGreaterThan(2000);
    expect(outLines[3]).toMatch(
      /^\[… lines 3–3 of 153 elided \(line 3 in part; 1 line, [\d,]+ characters\); the whole result: read_result \{"ref_id": "r_0123456789abcdef", "offset": 2\} …\]$/,
    );
  });

  it('keeps the error lines it elides after the marker, as a cleared result keeps them', () => {
    const counter = new TokenCounter();
    const all = lines(600, 'test').split('\n');
    all[250] = 'FAIL test/router.test.ts > builds the routes: TypeError: cannot read properties of undefined';
    all[251] = '    at buildRoutes (src/server/router.ts:42:7)';
    all[300] = 'Error: expected 200 to be 404';
    const out = compress(all.join('\n'), 800, 'r_0123456789abcdef', { counter }).split('\n');
    expect(counter.text(out.join('\n'))).toBeLessThanOrEqual(800 + 60);
    const marker = out.findIndex((l) => l.startsWith('[… lines '));
    expect(out.slice(marker + 1, marker + 4)).toEqual(['[error lines among them: 251, 301]', all[250], all[300]]);
    expect(out[0]).toBe(all[0]);
    expect(out.at(-1)).toBe(all.at(-1));
    // Nothing to keep when the elided lines hold no error: the marker is followed by the last lines.
    const plain = compress(lines(600, 'test'), 800, 'r_0123456789abcdef', { counter }).split('\n');
    expect(plain.some((l) => l.startsWith('[error lines'))).toBe(false);
  });

  it('cuts a single huge line by characters', async () => {
    const t = new PiTranscript();
    t.user(TASK);
    const minified = 'x'.repeat(50_000);
    t.step({ calls: [{ name: 'read', args: { path: 'dist/app.min.js' }, result: minified }] });
    for (let i = 0; i < 5; i++) t.step({ calls: [{ name: 'bash', args: { command: `true ${i}` }, result: 'ok' }] });
    const session = build(t);
    await compact(session, { ...base, target: 1, strategies: ['head-tail'] });
    const text = resultTextOf(toolItems(activeView(session))[0]!);
    expect(text).toMatch(
      /^x{1600}\n\[… [\d,]+ characters elided; the whole result: read_result \{"ref_id": "r_[0-9a-f]{16}"\} …\]\nx{1600}$/,
    );
  });
});

describe('summarize alone', () => {
  it('when no span fits the planned summary, archives as far as gives it its floor share rather than starving it', async () => {
    const t = new PiTranscript();
    t.user(TASK);
    for (let i = 0; i < 20; i++)
      t.step({
        text: `Step ${i}: ran \`npm test -- case${i}\` and read src/mod${i}/file${i}.ts.\n${lines(24, `step${i}`)}`,
      });
    const view = activeView(build(t));
    const counter = new TokenCounter({ family: 'claude' });
    const size = (v: readonly ViewItem[]) => v.reduce((n, x) => n + counter.message(x.message), 0);
    const head = counter.message(view[0]!.message);
    const step = (size(view) - head) / 20;
    // The first request and the last 8 steps must stay; the target leaves the summary at most two steps' worth once
    // all 12 older steps are archived, less than the 40% of the room it is planned at.
    const target = head + 10 * step;
    const summarizer = new RecordingSummarizer();
    const ctx: StrategyContext = {
      counter,
      target,
      size,
      protectedEntries: new Set([view[0]!.entry!, ...view.slice(-8).map((v) => v.entry!)]),
      store: new MemoryResultStore(),
      summarizer,
      options: { ...DEFAULT_STRATEGY_OPTIONS },
      room: target - head,
      summaryRoom: (target - head) * 0.4,
    };
    const out = await STRATEGIES.summarize.apply(view, ctx);
    expect(size(out)).toBeLessThanOrEqual(target);
    // All 12 archivable steps went (archiving 11 also reached the target, with a summary of one step's room), and the
    // summary was given its floor share of the room (what it fills of it is its content's to say).
    expect(out.length).toBe(1 + 1 + 8);
    const asked = Math.max(...summarizer.requests.filter((r) => r.messages.length >= 12).map((r) => r.maxTokens));
    // Starved, it would have had what archiving 11 steps leaves: about one step's worth.
    expect(asked).toBeGreaterThanOrEqual(DEFAULT_STRATEGY_OPTIONS.summarize.minSummaryTokens);
    expect(asked).toBeGreaterThan(1.5 * step);
  });

  it('archives no more than the room needs when the newest edit is an input stubbed for its size (it comes back whole or not at all)', async () => {
    const t = new PiTranscript();
    t.user(TASK);
    for (let i = 0; i < 12; i++)
      t.step({
        text: `Step ${i}.`,
        calls: [{ name: 'bash', args: { command: `npm test -- part${i}` }, result: lines(20, `p${i}`) }],
      });
    t.step({
      text: 'Writing the fix.',
      calls: [{ name: 'write', args: { path: 'src/net/retry.ts', content: lines(400, 'src') }, result: 'wrote 16 KB' }],
    });
    t.step({
      text: 'Checking.',
      calls: [{ name: 'read', args: { path: 'src/net/retry.ts' }, result: lines(30, 'chk') }],
    });
    t.user('Good. Now run the tests.');
    t.step({ text: 'Running.', calls: [{ name: 'bash', args: { command: 'npm test' }, result: 'all passed' }] });
    const session = build(t);
    const r = await compact(session, { target: 4000, prefixTokens: 0, strategies: ['stub-inputs', 'summarize'] });
    expect(r.reachedTarget).toBe(true);
    // The 16 KB input cannot come back in part, so archiving more old steps to make room for it buys nothing: the
    // newer half of the old steps stays verbatim (before: all twelve archived, 1,288 of the 4,000 tokens used).
    expect(r.afterTokens).toBeGreaterThan(0.9 * 4000);
    const text = activeView(session)
      .map((v) => JSON.stringify(v.message.parts))
      .join('\n');
    for (let i = 6; i < 12; i++) expect(text).toContain(`p${i} line 0020`);
  });

  it('gives the summary the room that archiving whole units left, up to its size by what it replaces', async () => {
    const make = () => {
      const t = new PiTranscript();
      t.user(TASK);
      for (let i = 0; i < 10; i++) {
        t.user(`Request ${i}: ${'keep the retry budget per host and log every give-up with its cause; '.repeat(12)}`);
        t.step({ text: `Part ${i}: edit src/part${i}/retry.ts as follows.\n${lines(120, `part${i}`)}` });
      }
      return build(t);
    };
    const size = await sizeOf(make());
    expect(size).toBeGreaterThan(15_000);
    for (const share of [0.2, 0.25, 0.3, 0.35]) {
      const s = make();
      const target = Math.floor(size * share);
      const r = await compact(s, { ...base, target, strategies: ['summarize'] });
      expect(r.reachedTarget).toBe(true);
      expect(activeView(s).some(isSummaryItem)).toBe(true);
      // Archiving a turn of ~1,600 tokens whole overshoots; the summary takes the difference (before: 74–80% of the
      // target was used at 20% and 25%).
      expect(r.afterTokens, `at ${share}`).toBeGreaterThan(target * 0.9);
    }
  });

  it('replaces a span with the extractive summary and leaves the first user message, the last 5 steps and the latest thinking', async () => {
    const session = workSession();
    const view0 = activeView(session);
    const size = await sizeOf(session);
    const summarizer = new RecordingSummarizer();
    const r = await compact(session, {
      ...base,
      target: Math.floor(size * 0.5),
      strategies: ['summarize'],
      summarizer,
      keepLastSteps: 5,
      minKeepLastSteps: 5,
    });
    expect(r.strategiesRun.map((s) => s.name)).toEqual(['summarize']);
    expect(r.keptLastSteps).toBe(5);
    const view = activeView(session);
    const summary = view.find(isSummaryItem)!;
    expect(summary).toBeDefined();
    // The summary is what the extractive summarizer wrote for exactly the archived messages, then (in the room left)
    // the files the archived work leaves in play.
    expect(summarizer.answers).toHaveLength(1);
    const [said, files] = summaryText(summary.message).split(`\n\n${FILES_HEADING}\n`);
    expect(said).toBe(summarizer.answers[0]);
    // The most recently read file of the span first (src/net/mod0.ts … mod7.ts were read last, in that order).
    expect(files).toMatch(/^- src\/net\/mod7\.ts — read in entry \d+:\n```\nmod7 line 0001/);
    expect(r.marker!.summary).toBe(summaryText(summary.message));
    const archived = view0.filter((v) => v.entry! >= summary.covers.fromEntry && v.entry! <= summary.covers.toEntry);
    expect(summarizer.requests[0]!.messages).toEqual(archived.map((v) => v.message));
    expect(summarizer.requests[0]!.task).toBe(TASK);
    expect(summarizer.answers[0]).toBe(new ExtractiveSummarizer().summarizeSync(summarizer.requests[0]!));
    // What was archived is not in view any more; the summary stands at its place.
    for (const v of archived) expect(view.some((x) => x.entry === v.entry)).toBe(false);
    expect(view.indexOf(summary)).toBe(view0.indexOf(archived[0]!));
    // Protected: the first user message (same object), the last 5 steps, the latest thinking.
    expect(view[0]!.message).toBe(view0[0]!.message);
    const steps = unitsOf(view0)
      .filter((u) => u.kind === 'step')
      .slice(-5);
    for (const u of steps)
      for (let i = u.start; i < u.end; i++)
        expect(view.find((x) => x.entry === view0[i]!.entry)?.message).toBe(view0[i]!.message);
    const thinking = [...view0].reverse().find((v) => v.message.parts.some((p) => p.type === 'thinking'))!;
    expect(view.find((x) => x.entry === thinking.entry)?.message).toBe(thinking.message);
    // The evidence of the span is listed: every path and command of its calls, every human instruction in it.
    const answer = summarizer.answers[0]!;
    expect(parseSummary(answer)).toBeDefined();
    const calls = archived.flatMap((v) => v.message.parts).filter((p): p is ToolCallPart => p.type === 'tool-call');
    const args = (c: ToolCallPart) => c.arguments as Record<string, string>;
    expect(calls.length).toBeGreaterThan(3);
    for (const c of calls) {
      if (args(c).path) expect(answer).toContain(args(c).path);
      if (args(c).command) expect(answer).toContain(`\`${args(c).command}\``);
    }
    for (const v of archived.filter((x) => isHumanUser(x.message))) expect(answer).toContain(textOf(v.message));
    expect(checkInvariants(view)).toEqual([]);
  });

  it('keeps the latest thinking even when it is older than the last 5 steps', async () => {
    const t = new PiTranscript();
    t.user(TASK);
    t.step({
      thinking: 'The only thinking of the session.',
      text: 'Reading.',
      calls: [{ name: 'read', args: { path: 'src/a.ts' }, result: lines(100, 'a') }],
    });
    for (let i = 0; i < 10; i++)
      t.step({ calls: [{ name: 'read', args: { path: `src/b${i}.ts` }, result: lines(100, `b${i}`) }] });
    const session = build(t);
    const view0 = activeView(session);
    const thinking = view0.find((v) => v.message.parts.some((p) => p.type === 'thinking'))!;
    const r = await compact(session, {
      ...base,
      target: Math.floor((await sizeOf(session)) * 0.4),
      strategies: ['summarize'],
      minKeepLastSteps: 5,
    });
    expect(r.strategiesRun.map((s) => s.name)).toEqual(['summarize']);
    expect(activeView(session).find((x) => x.entry === thinking.entry)?.message).toBe(thinking.message);
  });

  it('skips with its message when the summarizer throws, and truncation still reaches the target', async () => {
    const session = workSession();
    const size = await sizeOf(session);
    const broken: Summarizer = { name: 'broken', summarize: () => Promise.reject(new Error('model overloaded')) };
    const r = await compact(session, {
      ...base,
      target: Math.floor(size * 0.5),
      summarizer: broken,
      strategies: ['summarize', 'truncate'],
    });
    expect(r.skipped).toEqual([{ name: 'summarize', reason: 'failed: model overloaded' }]);
    expect(r.strategiesRun.map((s) => s.name)).toEqual(['truncate']);
    expect(r.reachedTarget).toBe(true);
    expect(r.afterTokens).toBeLessThanOrEqual(Math.floor(size * 0.5));
    expect(r.violations).toEqual([]);
  });

  it('skips when the summarizer returns nothing', async () => {
    const session = workSession();
    const empty: Summarizer = { name: 'blank', summarize: async () => '\n ' };
    const r = await compact(session, {
      ...base,
      target: Math.floor((await sizeOf(session)) * 0.5),
      summarizer: empty,
      strategies: ['summarize'],
    });
    expect(r.skipped).toEqual([
      { name: 'summarize', reason: expect.stringContaining('the blank summarizer returned nothing') },
    ]);
    expect(r.entry).toBeUndefined();
  });
});

describe('truncate alone', () => {
  it('archives the oldest units with a note and keeps the first user message', async () => {
    const { session } = toolSession(10);
    const view0 = activeView(session);
    const size = await sizeOf(session);
    const r = await compact(session, { ...base, target: Math.floor(size * 0.6), strategies: ['truncate'] });
    expect(r.strategiesRun.map((s) => s.name)).toEqual(['truncate']);
    expect(r.reachedTarget).toBe(true);
    const view = activeView(session);
    expect(view[0]!.message).toBe(view0[0]!.message);
    const summary = view[1]!;
    expect(isSummaryItem(summary)).toBe(true);
    const archivedMessages = summary.covers!.toEntry - summary.covers!.fromEntry + 1;
    expect(summary.covers!.fromEntry).toBe(view0[1]!.entry);
    expect(summaryText(summary.message)).toBe(
      `[${archivedMessages} more messages were archived without a summary to fit the context; the full history is kept.]`,
    );
    expect(archivedMessages % 2).toBe(0); // whole steps: a call never loses its result
    expect(view.slice(2).map((v) => v.entry)).toEqual(view0.slice(1 + archivedMessages).map((v) => v.entry));
    expect(r.marker!.archived).toEqual(summary.covers);
  });

  it('never makes the context bigger, and archives any unprotected unit, oldest first, wherever it is', async () => {
    const t = new PiTranscript();
    t.user(TASK);
    t.synthetic('[hook] ok');
    t.step({ text: 'Sure.' });
    for (let i = 0; i < 5; i++)
      t.step({ calls: [{ name: 'read', args: { path: `src/k${i}.ts` }, result: lines(50, `k${i}`) }] });
    const session = build(t);
    const view0 = activeView(session);
    const r = await compact(session, {
      ...base,
      target: Math.floor((await sizeOf(session)) * 0.5),
      strategies: ['truncate'],
    });
    expect(r.afterTokens).toBeLessThanOrEqual(r.beforeTokens);
    const view = activeView(session);
    // The first request and the last step stay; the oldest units went first.
    expect(view[0]!.message).toBe(view0[0]!.message);
    expect(view.at(-1)!.message).toBe(view0.at(-1)!.message);
    expect(view.some((v) => v.entry === view0[1]!.entry)).toBe(false);
  });

  it('a later truncation counts every message archived without a summary, its own and the earlier ones', async () => {
    const { session } = toolSession(20);
    const r1 = await compact(session, {
      ...base,
      target: Math.floor((await sizeOf(session)) * 0.7),
      strategies: ['truncate'],
    });
    const r2 = await compact(session, { ...base, target: Math.floor(r1.afterTokens * 0.7), strategies: ['truncate'] });
    expect(r2.strategiesRun.map((s) => s.name)).toEqual(['truncate']);
    const { fromEntry, toEntry } = r2.marker!.archived!;
    expect(fromEntry).toBe(r1.marker!.archived!.fromEntry);
    expect(toEntry).toBeGreaterThan(r1.marker!.archived!.toEntry);
    expect(r2.marker!.summary).toBe(
      `[${toEntry - fromEntry + 1} more messages were archived without a summary to fit the context; the full history is kept.]`,
    );
  });
});

describe('the chain', () => {
  it('stops as soon as the context is under the target and reports every figure', async () => {
    const { session } = toolSession(10);
    const view0 = activeView(session);
    const entries = session.entries.length;
    const size = await sizeOf(session);
    const target = size - 200;
    const r = await compact(session, { ...base, target });
    expect(r.strategiesRun).toEqual([{ name: 'clear-tool-results', beforeTokens: size, afterTokens: r.afterTokens }]);
    expect(r.skipped).toEqual([]);
    expect(r.beforeTokens).toBe(size);
    expect(r.afterTokens).toBeLessThanOrEqual(target);
    // The same figure a fresh count of the compacted session gives (to rounding).
    expect(Math.abs(r.afterTokens - (await sizeOf(session)))).toBeLessThanOrEqual(1);
    expect(r.beforeMessages).toBe(view0.length);
    expect(r.afterMessages).toBe(activeView(session).length);
    expect(r.afterMessages).toBe(view0.length);
    expect(r.reachedTarget).toBe(true);
    expect(r.keptLastSteps).toBeGreaterThanOrEqual(1);
    expect(r.violations).toEqual([]);
    expect(session.entries).toHaveLength(entries + 1);
    expect(r.entry).toBe(session.entries[entries]);
    expect(r.marker).toMatchObject({
      number: 1,
      source: 'abridge',
      tokensBefore: size,
      tokensAfter: r.afterTokens,
      strategies: ['clear-tool-results'],
    });
  });

  it('gives what clearing took beyond the target back to the newest cleared results, whole or in part', async () => {
    const { session, outputs } = toolSession(14, 120);
    const size = await sizeOf(session);
    const target = Math.floor(size * 0.55);
    const r = await compact(session, { ...base, target });
    expect(r.strategiesRun.map((s) => s.name)).toEqual(['clear-tool-results']);
    expect(r.reachedTarget).toBe(true);
    // The room is used: without giving back, every result outside the recent window stayed cleared (~40% of the size).
    expect(r.afterTokens).toBeGreaterThan(target * 0.97);
    const items = toolItems(activeView(session));
    const edits = items.map((v) => v.edit ?? 'whole');
    // Oldest cleared, the newest of the cleared ones back in part (its first and last lines), the rest whole.
    const cut = edits.indexOf('compressed');
    expect(cut).toBeGreaterThan(0);
    expect(edits).toEqual([
      ...Array(cut).fill('cleared'),
      'compressed',
      ...Array(edits.length - cut - 1).fill('whole'),
    ]);
    const back = resultTextOf(items[cut]!).split('\n');
    const original = outputs.get((items[cut]!.message.parts[0] as ToolResultPart).callId)!.split('\n');
    expect(back[0]).toBe(original[0]);
    expect(back.at(-1)).toBe(original.at(-1));
    // Clearing asked for alone is Anthropic's context editing: its batch stays cleared.
    const alone = toolSession(14, 120).session;
    const r2 = await compact(alone, { ...base, target, strategies: ['clear-tool-results'] });
    expect(r2.afterTokens).toBeLessThan(target * 0.8);
    expect(toolItems(activeView(alone)).filter((v) => v.edit === 'cleared')).toHaveLength(11);
  });

  it('goes down the chain, cheapest first, until the target is reached', async () => {
    const session = workSession(12);
    const size = await sizeOf(session);
    const r = await compact(session, { ...base, target: Math.floor(size * 0.22) });
    expect(r.reachedTarget).toBe(true);
    const order: readonly string[] = STRATEGY_NAMES;
    const ran = r.strategiesRun.map((s) => order.indexOf(s.name));
    expect(ran).toEqual([...ran].sort((a, b) => a - b));
    expect(r.strategiesRun.map((s) => s.name)).toContain('summarize');
    for (const s of r.strategiesRun) expect(s.afterTokens).toBeLessThan(s.beforeTokens);
    expect(r.strategiesRun[0]!.beforeTokens).toBe(size);
    expect(r.strategiesRun.at(-1)!.afterTokens).toBe(r.afterTokens);
  });

  it('does nothing when already under the target (unless forced)', async () => {
    const { session } = toolSession(4);
    const size = await sizeOf(session);
    const entries = session.entries.length;
    const r = await compact(session, { ...base, target: size + 1 });
    expect(r).toMatchObject({
      beforeTokens: size,
      afterTokens: size,
      reachedTarget: true,
      strategiesRun: [],
      skipped: [],
    });
    expect(session.entries).toHaveLength(entries);
  });

  it('skips and reports a strategy that throws; the session stays intact', async () => {
    vi.spyOn(STRATEGIES['clear-tool-results'], 'apply').mockRejectedValue(new Error('boom'));
    const { session } = toolSession(10);
    const original = structuredClone(session.entries);
    const view0 = activeView(session);
    const r = await compact(session, { ...base, target: (await sizeOf(session)) - 200 });
    expect(r.skipped).toContainEqual({ name: 'clear-tool-results', reason: 'failed: boom' });
    expect(r.strategiesRun.map((s) => s.name)).not.toContain('clear-tool-results');
    expect(r.strategiesRun.length).toBeGreaterThan(0);
    expect(r.reachedTarget).toBe(true);
    expect(r.violations).toEqual([]);
    expect(session.entries.slice(0, original.length)).toEqual(original);
    expect(introducedViolationsOf(view0, activeView(session))).toEqual([]);
  });

  it('undoes a step that would break an invariant', async () => {
    // A broken strategy: drops every tool result (calls lose their results).
    vi.spyOn(STRATEGIES.offload, 'apply').mockImplementation(async (view) =>
      view.filter((v) => v.message.role !== 'tool'),
    );
    const { session } = toolSession(10);
    const r = await compact(session, { ...base, target: 1, strategies: ['offload'] });
    expect(r.skipped).toEqual([
      { name: 'offload', reason: expect.stringMatching(/^undone: it would break an invariant \(/) },
    ]);
    expect(r.entry).toBeUndefined();
    expect(checkInvariants(activeView(session))).toEqual([]);
  });

  it('archives parallel calls recorded one message each together with their results (Codex), never a call alone', async () => {
    const make = () => {
      const t = new PiTranscript();
      t.user(TASK);
      for (let i = 0; i < 12; i++)
        t.step({
          split: true,
          calls: [0, 1, 2].map((j) => ({
            name: 'bash',
            args: { command: `git show HEAD~${i}:src/part${j}.ts` },
            result: lines(40 + j * 20, `s${i}c${j}`),
          })),
          resultOrder: [2, 0, 1],
        });
      t.user('Now push the branch.');
      t.step({ text: 'Pushed.' });
      return build(t);
    };
    const view0 = activeView(make());
    // The input has calls whose results come after another call's message (out of place, but every pair is there).
    const baseline = checkInvariants(view0);
    expect(new Set(baseline.map((v) => v.kind))).toEqual(new Set(['result-not-after-call', 'call-without-result']));
    const size = await sizeOf(make());
    for (const share of [0.1, 0.25, 0.5]) {
      const s = make();
      const r = await compact(s, { ...base, target: Math.floor(size * share), strategies: ['summarize'] });
      expect(r.reachedTarget, `at ${share}`).toBe(true);
      expect(
        r.skipped.filter((x) => x.reason.includes('invariant')),
        `at ${share}`,
      ).toEqual([]);
      expect(r.strategiesRun.map((x) => x.name)).toEqual(['summarize']);
      const view = activeView(s);
      expect(introducedViolations(baseline, checkInvariants(view)), `at ${share}`).toEqual([]);
      // Each kept result's call is kept, and each kept call of the three keeps its siblings.
      const calls = new Set(
        view.flatMap((v) => v.message.parts.flatMap((p) => (p.type === 'tool-call' ? [p.id] : []))),
      );
      const results = view.flatMap((v) => v.message.parts.flatMap((p) => (p.type === 'tool-result' ? [p.callId] : [])));
      expect(results.length).toBeGreaterThan(0);
      for (const id of results) expect(calls.has(id), `${id} at ${share}`).toBe(true);
      expect(results.length, `at ${share}`).toBe(calls.size);
    }
  });

  it('archives, never deletes: entries only grow and activeView shows the compacted view', async () => {
    const session = workSession();
    const original = structuredClone(session.entries);
    const view0 = activeView(session);
    const r = await compact(session, { ...base, target: Math.floor((await sizeOf(session)) * 0.22) });
    expect(r.reachedTarget).toBe(true);
    expect(session.entries).toHaveLength(original.length + 1);
    expect(session.entries.slice(0, original.length)).toEqual(original);
    const view = activeView(session);
    expect(view.length).toBe(r.afterMessages);
    expect(view.length).toBeLessThan(view0.length);
    const marker = r.marker!;
    const summary = view.find(isSummaryItem);
    expect(summary && summaryText(summary.message)).toBe(marker.summary);
    for (const e of marker.edits ?? [])
      expect(view.find((v) => v.entry === e.entry)).toMatchObject({ message: e.message, edit: e.how });
    expect(checkInvariants(view)).toEqual([]);
    // Every entry that is not in view is under the summary (or hidden by the marker).
    const inView = new Set(view.map((v) => v.entry));
    for (const v of view0)
      if (!inView.has(v.entry))
        expect(v.entry! >= marker.archived!.fromEntry && v.entry! <= marker.archived!.toEntry).toBe(true);
  });

  it('a second compaction summarizes the first summary plus what followed, keeping every item of it', async () => {
    const session0 = workSession();
    const first = await compact(session0, {
      ...base,
      target: Math.floor((await sizeOf(session0)) * 0.5),
      strategies: ['summarize'],
    });
    expect(first.strategiesRun.map((s) => s.name)).toEqual(['summarize']);
    const s1 = parseSummary(first.marker!.summary)!;
    expect(s1).toBeDefined();
    // Write the compacted session, add more work, and read it back (as an agent that goes on would).
    const more = new PiTranscript();
    more.user('Now also handle ECONNRESET in src/net/socket.ts.');
    more.step({
      text: 'Let me grep for it.',
      calls: [{ name: 'bash', args: { command: 'grep -rn ECONNRESET src/' }, result: lines(80, 'grep') }],
    });
    more.step({
      calls: [
        {
          name: 'edit',
          args: { path: 'src/net/socket.ts', oldText: 'a', newText: 'b' },
          result: 'Edited src/net/socket.ts',
        },
      ],
    });
    more.user('Good. Run the remaining verifications.');
    for (let i = 0; i < 6; i++)
      more.step({
        text: `Verifying ${i}.`,
        calls: [{ name: 'read', args: { path: `src/net/check${i}.ts` }, result: lines(60, `check${i}`) }],
      });
    const session = appendRecords(session0, more);
    const view1 = activeView(session);
    const r = await compact(session, {
      ...base,
      target: Math.floor((await sizeOf(session)) * 0.4),
      strategies: ['summarize'],
    });
    expect(r.strategiesRun.map((s) => s.name)).toEqual(['summarize']);
    expect(r.marker!.number).toBe(2);
    const view = activeView(session);
    expect(view.filter(isSummaryItem)).toHaveLength(1);
    const summary = view.find(isSummaryItem)!;
    // It covers the first summary's span and what followed. (Written and read back, the first summary heads the branch
    // the pi writer re-appended: on that branch it stands for its own record.)
    const firstArchived = session.entries.findLast((e) => e.compaction?.source === 'abridge' && e !== r.entry)!
      .compaction!.archived!;
    expect(summary.covers.fromEntry).toBeLessThanOrEqual(firstArchived.fromEntry);
    expect(summary.covers.toEntry).toBeGreaterThan(firstArchived.toEntry);
    expect(
      view.some((v) => v.entry !== undefined && v.entry > firstArchived.toEntry && v.entry <= summary.covers.toEntry),
    ).toBe(false);
    expect(view1.find(isSummaryItem)).toBeDefined();
    const s2 = parseSummary(summaryText(summary.message))!;
    expect(s2).toBeDefined();
    // Every item of the first summary is carried (its first line, as the first summary wrote it).
    const text2 = summaryText(summary.message);
    for (const it of s1.items) expect(text2).toContain(it.levels[it.levels.length - 1]!.split('\n')[0]!.slice(0, 60));
    // What the second span archived of the new work is listed too (where the span ends depends on the budget).
    const archivedNow = view1.filter((v) => v.entry !== undefined && !view.some((w) => w.entry === v.entry));
    const said = (t: string) =>
      archivedNow.some(
        (v) => v.message.role === 'user' && v.message.parts.some((p) => p.type === 'text' && p.text === t),
      );
    if (said('Now also handle ECONNRESET in src/net/socket.ts.'))
      expect(text2).toContain('Now also handle ECONNRESET in src/net/socket.ts.');
    for (const v of archivedNow) {
      for (const p of v.message.parts)
        if (p.type === 'tool-call' && p.name === 'bash')
          expect(text2).toContain(`\`${(p.arguments as { command: string }).command}\``);
    }
    expect(archivedNow.length).toBeGreaterThan(0);
    expect(checkInvariants(view)).toEqual([]);
  });

  it('a second compaction that only edits results leaves the first marker entry as it was', async () => {
    const t = new PiTranscript();
    t.user(TASK);
    for (let i = 0; i < 6; i++)
      t.step({
        text: `Reading ${i}.`,
        calls: [{ name: 'read', args: { path: `src/r${i}.ts` }, result: lines(40, `r${i}`) }],
      });
    for (let i = 0; i < 6; i++)
      t.step({ calls: [{ name: 'bash', args: { command: `cat big${i}.log` }, result: lines(200, `big${i}`) }] });
    const session = build(t);
    await compact(session, {
      ...base,
      target: Math.floor((await sizeOf(session)) * 0.8),
      strategies: ['summarize'],
      keepLastSteps: 6,
      minKeepLastSteps: 6,
    });
    const snapshot = structuredClone(session.entries);
    const r = await compact(session, {
      ...base,
      target: Math.floor((await sizeOf(session)) * 0.8),
      strategies: ['offload'],
      keepLastSteps: 1,
    });
    expect(r.strategiesRun.map((s) => s.name)).toEqual(['offload']);
    expect(session.entries.slice(0, snapshot.length)).toEqual(snapshot);
    expect(r.entry!.message).not.toBe(snapshot.at(-1)!.message);
  });

  it('compacts a session that pi already compacted (its summary, then a kept user turn, then more work)', async () => {
    const t = new PiTranscript();
    t.user(TASK);
    for (let i = 0; i < 3; i++)
      t.step({ calls: [{ name: 'read', args: { path: `src/old${i}.ts` }, result: lines(40, `old${i}`) }] });
    t.user('Now port the fix to src/net/socket.ts.');
    const keptId = t.records.at(-1)!.id as string;
    t.records.push({
      type: 'compaction',
      id: 'pi-compaction',
      parentId: keptId,
      timestamp: '2026-01-01T00:00:00.000Z',
      summary: 'Goal: fix the flaky retry. Done: src/net/retry.ts.',
      firstKeptEntryId: keptId,
      tokensBefore: 5000,
    });
    const records = t.records;
    const more = new PiTranscript();
    for (let i = 0; i < 14; i++)
      more.step({
        text: `Porting ${i}.`,
        calls: [{ name: 'bash', args: { command: `npm test -- socket${i}` }, result: lines(60, `socket${i}`) }],
      });
    const extra = more.records
      .slice(1)
      .map((r, i) => ({ ...r, id: `p${i}`, parentId: i === 0 ? 'pi-compaction' : `p${i - 1}` }));
    const session = parseSession(`${[...records, ...extra].map((r) => JSON.stringify(r)).join('\n')}\n`);
    const view0 = activeView(session);
    expect(isSummaryItem(view0[0]!)).toBe(true); // pi's summary, then the kept user message
    expect(isHumanUser(view0[1]!.message)).toBe(true);
    const r = await compact(session, {
      ...base,
      target: Math.floor((await sizeOf(session)) * 0.4),
      strategies: ['summarize', 'truncate'],
    });
    expect(r.strategiesRun.map((s) => s.name)).toContain('summarize');
    expect(r.reachedTarget).toBe(true);
    expect(r.violations).toEqual([]);
  });

  it('forceCompact halves the context', async () => {
    const session = workSession();
    const size = await sizeOf(session);
    const r = await forceCompact(session, { prefixTokens: 0, now: NOW });
    expect(r.beforeTokens).toBe(size);
    expect(r.afterTokens).toBeLessThanOrEqual(Math.floor(size / 2));
    expect(r.reachedTarget).toBe(true);
    expect(r.violations).toEqual([]);
    // Even when under any target a caller might have: it runs anyway.
    const again = await forceCompact(session, { prefixTokens: 0, now: NOW, target: Math.floor(r.afterTokens * 0.9) });
    expect(again.strategiesRun.length).toBeGreaterThan(0);
    expect(again.afterTokens).toBeLessThanOrEqual(Math.floor(r.afterTokens * 0.9));
  });
});

describe('native records', () => {
  it('pi: a session with an abridge compaction is written and read back to the same view', async () => {
    const session = workSession();
    // A small recent window, so that clearing has work to do beside the summary (a summary planned at half the room,
    // not giving way to the newest tenth of the conversation, archives only part of the cleared steps); a summarizer
    // that is not local (as an LLM's), so that the span stays as planned and the cleared results beside it stay edits.
    const extractive = new ExtractiveSummarizer();
    const r = await compact(session, {
      ...base,
      target: Math.floor((await sizeOf(session)) * 0.22),
      restoreRecent: false,
      summarizer: { name: 'remote', summarize: (req) => extractive.summarize(req) },
      options: { summarize: { maxRoomShare: 0.5, recentShare: 0 } },
    });
    expect(r.strategiesRun.map((s) => s.name)).toContain('summarize');
    expect(r.marker!.edits?.length ?? 0).toBeGreaterThan(0);
    const text = writeSession(session);
    const records = text
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    // Every original record stays; the view follows on a new branch, the summary in its place after the first request.
    expect(records.slice(0, session.entries.length - 1).map((x) => JSON.stringify(x))).toEqual(
      session.entries.slice(0, -1).map((e) => JSON.stringify(e.raw)),
    );
    const summary = records.find((x) => x.customType === 'abridge.summary')!;
    expect(summary).toMatchObject({
      type: 'custom_message',
      content: [{ type: 'text', text: r.marker!.summary }],
      details: { abridge: { source: 'abridge', summary: r.marker!.summary, rebased: true } },
    });
    const back = parseSession(text);
    expect(back.problems).toEqual([]);
    expect(comparable(activeMessages(back))).toEqual(comparable(activeMessages(session)));
    // Written again, it is the same text.
    expect(writeSession(back)).toBe(text);
  });

  it('pi: a compaction that only edited results round-trips too (a custom record)', async () => {
    const { session } = toolSession(10);
    const r = await compact(session, { ...base, target: (await sizeOf(session)) - 200 });
    expect(r.marker!.archived).toBeUndefined();
    const text = writeSession(session);
    const records = text
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(records.filter((x) => x.customType === 'abridge.compaction')).toHaveLength(1);
    const back = parseSession(text);
    expect(comparable(activeMessages(back))).toEqual(comparable(activeMessages(session)));
  });

  it.each([
    ['edits only', 0.6, false],
    ['a summary', 0.15, true],
  ])(
    'Claude Code: the written boundary, summary and copies read back as the compacted view (%s)',
    async (_, fraction, summarized) => {
      const session = claudeCodeSession(20);
      const r = await compact(session, { ...base, target: Math.floor((await sizeOf(session)) * fraction) });
      expect(r.reachedTarget).toBe(true);
      expect(r.strategiesRun.map((s) => s.name).includes('summarize')).toBe(summarized);
      const view = activeView(session);
      const written = writeSession(session);
      const back = parseSession(written);
      expect(back.format).toBe('claude-code');
      expect(back.problems).toEqual([]);
      const records = written
        .trimEnd()
        .split('\n')
        .map((l) => JSON.parse(l) as Record<string, unknown>);
      const boundary = records.findIndex((x) => x.subtype === 'compact_boundary');
      expect(boundary).toBeGreaterThan(0);
      // Claude Code keeps nothing from before a boundary: the compacted context follows it in order, the original
      // request first (copied verbatim), the summary as a compact-summary record where it stands.
      expect(records[boundary + 1]).toMatchObject({
        type: 'user',
        message: { content: [{ type: 'text', text: TASK }] },
      });
      if (summarized)
        expect(records.slice(boundary).find((x) => x.isCompactSummary === true)).toMatchObject({
          type: 'user',
          message: { content: r.marker!.summary },
        });
      const backView = activeView(back);
      expect(normalized(backView)).toBe(normalized(view));
      expect(checkInvariants(backView)).toEqual([]);
    },
  );

  it('Claude Code: a protected message between archived units survives the round trip', async () => {
    const session = claudeCodeSession(10, { midSpan: true });
    const view0 = activeView(session);
    const r = await compact(session, {
      ...base,
      target: Math.floor((await sizeOf(session)) * 0.6),
      strategies: ['summarize'],
    });
    expect(r.strategiesRun.map((s) => s.name)).toEqual(['summarize']);
    const view = activeView(session);
    const at = view.findIndex(isSummaryItem);
    // The oldest step went first; the latest instruction after it stays where it was, and the steps archived after it
    // are hidden under the one summary.
    expect(at).toBe(1);
    expect(view[2]!.message).toBe(view0[2]!.message);
    expect(view.some((v) => v.message === view0[3]!.message)).toBe(false);
    const backView = activeView(parseSession(writeSession(session)));
    expect(normalized(backView)).toBe(normalized(view));
  });
});

// ---------------------------------------------------------------------------------------------------------------------

function introducedViolationsOf(before: readonly ViewItem[], after: readonly ViewItem[]) {
  const had = new Set(checkInvariants(before).map((v) => `${v.kind}:${v.key}`));
  return checkInvariants(after).filter((v) => !had.has(`${v.kind}:${v.key}`));
}

/** The session written as pi JSONL with `more`'s records (minus its header) appended, linked after the last entry. */
function appendRecords(session: Session, more: PiTranscript): Session {
  const text = writeSession(session);
  // An agent goes on from the last record of the file (pi resumes there).
  const lastId = parseSession(text).entries.at(-1)!.id!;
  const records = more.records
    .slice(1)
    .map((r, i) => ({ ...r, id: `m${i}`, parentId: i === 0 ? lastId : `m${i - 1}` }));
  return parseSession(text + records.map((r) => JSON.stringify(r)).join('\n') + '\n');
}

/**
 * A view's text with the original request folded into the summary the way Claude Code and pi records carry it, so that
 * a view and its re-read copy compare: `## Original request (verbatim)` + task + summary, then every message after it.
 */
function normalized(view: readonly ViewItem[]): string {
  const at = view.findIndex((v) => v.message.parts.some((p) => p.type === 'compaction'));
  const task = view.find((v) => isHumanUser(v.message));
  const parts: string[] = [];
  view.forEach((v, i) => {
    if (i < at && v === task) return; // folded into the summary below
    if (i === at) {
      const s = summaryText(v.message);
      const taskText = task ? textOf(task.message).trim() : '';
      parts.push(
        s.startsWith('## Original request (verbatim)\n') ? s : `## Original request (verbatim)\n${taskText}\n\n${s}`,
      );
      return;
    }
    parts.push(`${v.message.role}: ${textOf(v.message)}`);
  });
  return parts.join('\n---\n').replace(/[ \t]+/g, ' ');
}

/** A Claude Code transcript: a task, optionally an early step and a user instruction, then `steps` tool steps. */
function claudeCodeSession(steps: number, opts: { midSpan?: boolean } = {}): Session {
  const records: Record<string, unknown>[] = [];
  let parent: string | null = null;
  let n = 0;
  const add = (type: string, rest: Record<string, unknown>) => {
    const uuid = `00000000-0000-4000-8000-${String(n++).padStart(12, '0')}`;
    records.push({
      parentUuid: parent,
      isSidechain: false,
      userType: 'external',
      cwd: '/repo',
      sessionId: 'cc-session',
      version: '2.1.0',
      type,
      uuid,
      timestamp: `2026-01-01T00:${String(Math.floor(n / 60)).padStart(2, '0')}:${String(n % 60).padStart(2, '0')}.000Z`,
      ...rest,
    });
    parent = uuid;
  };
  const assistant = (id: string, content: unknown[]) =>
    add('assistant', {
      message: {
        id,
        type: 'message',
        role: 'assistant',
        model: 'claude-sonnet-4-5',
        content,
        stop_reason: 'tool_use',
        stop_sequence: null,
        usage: { input_tokens: 0, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, output_tokens: 0 },
      },
    });
  const result = (id: string, text: string, isError = false) =>
    add('user', {
      message: { role: 'user', content: [{ type: 'tool_result', tool_use_id: id, content: text, is_error: isError }] },
    });
  add('user', { message: { role: 'user', content: TASK } });
  if (opts.midSpan) {
    assistant('msg_early', [{ type: 'text', text: 'Done: the root cause is found in src/net/retry.ts.' }]);
    add('user', {
      message: { role: 'user', content: 'Important: always keep the retry budget at 3; never remove the jitter.' },
    });
  }
  for (let i = 0; i < steps; i++) {
    assistant(`msg_${i}`, [
      ...(i === steps - 1 ? [{ type: 'thinking', thinking: 'Final check.', signature: 'SIG' }] : []),
      {
        type: 'tool_use',
        id: `toolu_${i}`,
        name: i % 2 ? 'Bash' : 'Read',
        input: i % 2 ? { command: `npm test -- part${i}` } : { file_path: `/repo/src/part${i}.ts` },
      },
    ]);
    result(`toolu_${i}`, lines(70, `part${i}`), i === 3);
  }
  return parseSession(`${records.map((r) => JSON.stringify(r)).join('\n')}\n`);
}

describe('squeezing the summary into the room left', () => {
  it("keeps the person's words the room holds: the message's own cost is set aside, not a flat margin", async () => {
    const counter = new TokenCounter();
    const words = 'Keep the public API of src/net/index.ts.';
    const t = new PiTranscript();
    t.user('Port the retry logic to exponential backoff.');
    t.user(words);
    for (let i = 0; i < 12; i++)
      t.step({
        text: `Part ${i}.`,
        calls: [{ name: 'bash', args: { command: `grep -n retry src/net/part${i}.ts` }, result: `part${i}: 3 hits` }],
      });
    const messages = activeView(parseSession(t.jsonl())).map((v) => v.message);
    const summarizer = new ExtractiveSummarizer();
    const full = summarizer.summarizeSync({ messages, maxTokens: 4000, counter });
    // The shortest rendering that still carries the person's words, and exactly its message's room.
    let least = '';
    for (let m = 20; !least.includes(words); m++)
      least = summarizer.summarizeSync({ messages: [], previousSummary: full, maxTokens: m, counter, strict: true });
    const rest: ViewItem = { entry: 40, message: { role: 'user', parts: [{ type: 'text', text: 'Go on.' }] } };
    const view: ViewItem[] = [{ message: summaryMessage(full), covers: { fromEntry: 1, toEntry: 30 } }, rest];
    const size = (v: readonly ViewItem[]) => v.reduce((n, it) => n + counter.message(it.message), 0);
    // (A couple of tokens over it: a rendering's tokens are not quite the sum of its parts.)
    const target = counter.message(rest.message) + counter.message(summaryMessage(least)) + 2;
    const notes: string[] = [];
    const out = await squeezeSummary(view, target, size, counter, notes);
    expect(size(out)).toBeLessThanOrEqual(target);
    // With a flat 20-token margin the words did not fit and the summary became a bare note.
    expect(summaryText(out[0]!.message)).toContain(words);
    expect(notes[0]).toMatch(/^the summary was cut to \d+ tokens to fit the budget$/);
  });
});

/** A store's methods bound to it, as a plain object (to build a view over it). */
function bindAll(store: MemoryResultStore): ResultStore {
  return {
    put: store.put.bind(store),
    read: store.read.bind(store),
    stat: store.stat.bind(store),
    list: store.list.bind(store),
  };
}
