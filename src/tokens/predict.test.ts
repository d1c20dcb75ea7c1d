import { basename } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseSession, readSession } from '../formats/read.js';
import type { CompactionMarker, Entry, Message, Session, Usage } from '../model/types.js';
import { corpusAvailable, corpusFiles } from '../../test/support/corpus.js';
import { TokenCounter } from './counter.js';
import { CALIBRATION_PRIOR_WEIGHT, FAMILY_RATIO } from './defaults.js';
import { PromptTracker, startsResponse } from './predict.js';
import { replaySession } from '../analysis/replay.js';
import type { ReplayRequest } from './replay.js';

const CLAUDE = 'claude-sonnet-4-5';
const GPT = 'gpt-5';

// Deterministic filler text of roughly `words` words.
const VOCAB = [
  'the',
  'session',
  'context',
  'window',
  'grows',
  'with',
  'every',
  'tool',
  'result',
  'and',
  'compaction',
  'keeps',
  'it',
  'small',
  'src/tokens/predict.ts',
  '42',
  'readFile(path)',
  '{"ok":true}',
  'Error:',
  'function',
];
function filler(words: number, seed: number): string {
  let s = seed >>> 0;
  const out: string[] = [];
  for (let i = 0; i < words; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    out.push(VOCAB[s % VOCAB.length]!);
    if (i % 13 === 12) out.push('\n');
  }
  return out.join(' ');
}

const usage = (prompt: number, output = 50): Usage => ({ input: prompt, output, cacheRead: 0, cacheWrite: 0 });
const user = (text: string): Message => ({ role: 'user', parts: [{ type: 'text', text }] });
const assistant = (text: string, model: string, reported?: number, extra: Partial<Message> = {}): Message => ({
  role: 'assistant',
  parts: [{ type: 'text', text }],
  model,
  ...(reported !== undefined ? { usage: usage(reported) } : {}),
  ...extra,
});
const toolResult = (callId: string, text: string): Message => ({
  role: 'tool',
  parts: [{ type: 'tool-result', callId, content: [{ type: 'text', text }], isError: false }],
});

/** A linear session from messages and markers, indexed in order. */
function session(
  items: (Message | { compaction: Omit<CompactionMarker, 'number' | 'source'> })[],
  format: Session['format'] = 'pi',
): Session {
  let n = 0;
  const entries: Entry[] = items.map((item, index) => {
    if ('compaction' in item) {
      const marker: CompactionMarker = { number: ++n, source: 'pi', ...item.compaction };
      return {
        index,
        kind: 'compaction',
        compaction: marker,
        message: { role: 'user', parts: [{ type: 'compaction', marker }], synthetic: true },
      };
    }
    return { index, kind: 'message', message: item };
  });
  return { format, info: {}, entries, problems: [] };
}

const count = (m: Message) => new TokenCounter({ family: 'claude' }).message(m);

describe('PromptTracker anchoring', () => {
  it('predicts the last reported prompt plus ratio × counted growth', () => {
    const tracker = new PromptTracker({ prefixTokens: 1000 });
    const u1 = user(filler(300, 1));
    const a1 = assistant(filler(80, 2), CLAUDE, 5000);
    const r1 = toolResult('c1', filler(400, 3));
    tracker.push({ index: 0, kind: 'message', message: u1 });
    const start = tracker.contextTokens;
    expect(start).toBe(count(u1));
    tracker.observe(a1.usage!, CLAUDE, 1, start);
    tracker.push({ index: 1, kind: 'message', message: a1 });
    tracker.push({ index: 2, kind: 'message', message: r1 });
    const growth = tracker.contextTokens - start;
    expect(growth).toBe(count(a1) + count(r1));
    expect(growth).toBeGreaterThan(300);

    const p = tracker.predict(CLAUDE);
    expect(p.anchored).toBe(true);
    expect(p.anchorEntry).toBe(1);
    expect(p.ratio).toBe(FAMILY_RATIO.claude);
    expect(p.predicted).toBe(Math.round(5000 + FAMILY_RATIO.claude * growth));
    expect(p.counted).toBe(start + growth);
    expect(p.estimateOnly).toBe(Math.round(1000 + FAMILY_RATIO.claude * (start + growth)));
    // The default model is the last assistant's.
    expect(tracker.predict()).toEqual(p);
  });

  it('with no report yet: prefix + family ratio × counted', () => {
    const tracker = new PromptTracker({ prefixTokens: 2500 });
    const u1 = user(filler(200, 4));
    tracker.push({ index: 0, kind: 'message', message: u1 });
    const p = tracker.predict(CLAUDE);
    expect(p.anchored).toBe(false);
    expect(p.predicted).toBe(Math.round(2500 + FAMILY_RATIO.claude * count(u1)));
    expect(p.predicted).toBe(p.estimateOnly);
    expect(tracker.predict(GPT).predicted).toBe(Math.round(2500 + FAMILY_RATIO.gpt * count(u1)));
    expect(new PromptTracker({ familyRatio: { claude: 2 } }).ratioOf(CLAUDE)).toBe(2);
  });

  it('replaySession: request n is predicted from request n−1 usage and the entries between', () => {
    const u1 = user(filler(300, 5));
    const a1 = assistant(filler(60, 6), CLAUDE, 7000);
    const r1 = toolResult('c1', filler(500, 7));
    const a2 = assistant(filler(60, 8), CLAUDE, 7900);
    const s = session([u1, a1, r1, a2]);
    const out = replaySession(s, { prefixTokens: 3000 });
    expect(out.map((r) => r.index)).toEqual([1, 3]);
    expect(out[0]).toMatchObject({
      model: CLAUDE,
      family: 'claude',
      reported: 7000,
      anchored: false,
      predicted: Math.round(3000 + FAMILY_RATIO.claude * count(u1)),
    });
    expect(out[1]).toMatchObject({
      reported: 7900,
      anchored: true,
      predicted: Math.round(7000 + FAMILY_RATIO.claude * (count(a1) + count(r1))),
    });
    expect(out[1]!.estimateOnly).toBe(Math.round(3000 + FAMILY_RATIO.claude * (count(u1) + count(a1) + count(r1))));
  });

  it('never uses the usage of the request being predicted', () => {
    const build = (second: number, third: number) =>
      session([
        user(filler(300, 9)),
        assistant('ok', CLAUDE, 6000),
        toolResult('c1', filler(200, 10)),
        assistant('done', CLAUDE, second),
        user('thanks'),
        assistant('bye', CLAUDE, third),
      ]);
    const sane = replaySession(build(6400, 6500), { prefixTokens: 0 });
    const absurd = replaySession(build(50_000_000, 6500), { prefixTokens: 0 });
    expect(absurd[1]!.reported).toBe(50_000_000);
    expect(absurd[1]!.predicted).toBe(sane[1]!.predicted);
    expect(absurd[1]!.predicted).toBeLessThan(8000);
    // The first request too: its own (absurd) report does not leak into its prediction.
    const first = replaySession(session([user(filler(300, 9)), assistant('ok', CLAUDE, 99_999_999)]), {
      prefixTokens: 0,
    });
    expect(first[0]!.predicted).toBe(Math.round(FAMILY_RATIO.claude * count(user(filler(300, 9)))));
    // Nor does the next one: a 50M-token prompt is no bill of any request (above every window offered), so it is
    // reported as not used, and nothing anchors on it.
    expect(absurd[1]!.ignored).toMatch(/no count of a request/);
    expect(absurd[2]!.predicted).toBeLessThan(8000);
    // A believable bill is what the next request anchors on (that is the point of anchoring).
    const odd = replaySession(build(9000, 6500), { prefixTokens: 0 });
    expect(odd[1]!.ignored).toBeUndefined();
    expect(odd[2]!.predicted).toBeGreaterThan(9000);
  });
});

describe('PromptTracker: one prefix, honest anchors', () => {
  it('learns the prefix once, from the first bill: later bills do not move it', () => {
    const tracker = new PromptTracker({ prefixTokens: 0 });
    const u1 = user(filler(200, 11));
    tracker.push({ index: 0, kind: 'message', message: u1 });
    tracker.observe(usage(3000), CLAUDE, 1, tracker.contextTokens);
    const prefix = Math.round(3000 - FAMILY_RATIO.claude * count(u1));
    expect(tracker.predict(CLAUDE).prefix).toBe(prefix);
    tracker.push({ index: 1, kind: 'message', message: assistant('ok', CLAUDE) });
    const r = toolResult('c1', filler(600, 12));
    tracker.push({ index: 2, kind: 'message', message: r });
    // A later bill 400 tokens above what the count says: the prefix stays; the prediction follows the bill.
    const counted = tracker.contextTokens;
    tracker.observe(usage(Math.round(prefix + FAMILY_RATIO.claude * counted + 400)), CLAUDE, 3, counted);
    const p = tracker.predict(CLAUDE);
    expect(p.prefix).toBe(prefix);
    expect(p.anchored).toBe(true);
    expect(p.predicted).toBe(Math.round(prefix + FAMILY_RATIO.claude * counted + 400));
  });

  it('does not anchor on a bill under half of what its messages count (a harness reporting part of the prompt)', () => {
    const tracker = new PromptTracker({ prefixTokens: 1000 });
    const u1 = user(filler(2000, 13));
    tracker.push({ index: 0, kind: 'message', message: u1 });
    tracker.observe(usage(50), CLAUDE, 1, tracker.contextTokens);
    const p = tracker.predict(CLAUDE);
    expect(p.anchored).toBe(false);
    expect(p.predicted).toBe(Math.round(1000 + FAMILY_RATIO.claude * count(u1)));
    // At half or more it is a bill.
    tracker.observe(usage(Math.ceil((FAMILY_RATIO.claude * count(u1)) / 2)), CLAUDE, 2, tracker.contextTokens);
    expect(tracker.predict(CLAUDE).anchored).toBe(true);
  });

  it("after abridge's compaction, predicts the size its marker reported, plus what came after", () => {
    const u1 = user(filler(300, 14));
    const a1 = assistant(filler(100, 15), CLAUDE, 9000);
    const r1 = toolResult('c1', filler(900, 16));
    const marker: CompactionMarker = {
      number: 1,
      source: 'abridge',
      summary: 'Read the file.',
      archived: { fromEntry: 1, toEntry: 2 },
      tokensAfter: 1234,
    };
    const u2 = user('Now fix it.');
    const tracker = new PromptTracker({ prefixTokens: 0 });
    tracker.push({ index: 0, kind: 'message', message: u1 });
    tracker.observe(a1.usage!, CLAUDE, 1, tracker.contextTokens);
    tracker.push({ index: 1, kind: 'message', message: a1 });
    tracker.push({ index: 2, kind: 'message', message: r1 });
    tracker.push({
      index: 3,
      kind: 'compaction',
      compaction: marker,
      message: { role: 'user', parts: [{ type: 'compaction', marker }], synthetic: true },
    });
    // The context is the view: u1 and the summary, counted once.
    const summary = { role: 'user' as const, parts: [{ type: 'compaction' as const, marker }], synthetic: true };
    expect(tracker.contextTokens).toBe(count(u1) + count(summary));
    expect(tracker.predict(CLAUDE)).toMatchObject({ predicted: 1234, anchored: false });
    tracker.push({ index: 4, kind: 'message', message: u2 });
    expect(tracker.predict(CLAUDE).predicted).toBe(Math.round(1234 + FAMILY_RATIO.claude * count(u2)));
  });
});

describe('stale anchors', () => {
  it('a compaction marker drops the anchor; the next report re-anchors', () => {
    const u1 = user(filler(400, 11));
    const a1 = assistant(filler(50, 12), CLAUDE, 9000);
    const u2 = user(filler(100, 13));
    const items = [
      u1,
      a1,
      u2,
      { compaction: { summary: 'Goal: ship it. Done: parts 1–3.', firstKeptEntry: 2 } },
      user('continue'),
      assistant('on it', CLAUDE, 4000),
      user('and then?'),
      assistant('done', CLAUDE, 4100),
    ];
    const out = replaySession(session(items), { prefixTokens: 0 });
    expect(out.map((r) => r.index)).toEqual([1, 5, 7]);
    expect(out[1]!.anchored).toBe(false);
    expect(out[2]!.anchored).toBe(true);
    // Unanchored after the compaction: the prefix this session showed (9000 − ratio × counted) + ratio × what is kept.
    const learnedPrefix = 9000 - FAMILY_RATIO.claude * count(u1);
    const summaryMessage = session(items).entries[3]!.message!;
    const kept = count(u2) + count(summaryMessage) + count(user('continue'));
    expect(out[1]!.predicted).toBe(Math.round(learnedPrefix + FAMILY_RATIO.claude * kept));
    // Without the marker the same request would have anchored on the 9000 report.
    const noCompaction = replaySession(session(items.filter((_, i) => i !== 3)), { prefixTokens: 0 });
    expect(noCompaction[1]!.anchored).toBe(true);
    expect(noCompaction[1]!.predicted).toBeGreaterThan(9000);
  });

  it('PromptTracker: the context after a compaction is what it keeps plus the summary', () => {
    const tracker = new PromptTracker();
    const msgs = [
      user(filler(300, 14)),
      assistant(filler(30, 15), CLAUDE),
      user(filler(50, 16)),
      assistant(filler(30, 17), CLAUDE),
    ];
    msgs.forEach((m, index) => tracker.push({ index, kind: 'message', message: m }));
    tracker.observe(usage(8000), CLAUDE, 3, tracker.contextTokens);
    const marker: CompactionMarker = {
      number: 1,
      summary: 'Summary of the first turns.',
      firstKeptEntry: 2,
      source: 'pi',
    };
    const compactionMessage: Message = { role: 'user', parts: [{ type: 'compaction', marker }] };
    tracker.push({ index: 4, kind: 'compaction', compaction: marker, message: compactionMessage });
    expect(tracker.contextTokens).toBe(count(msgs[2]!) + count(msgs[3]!) + count(compactionMessage));
    expect(tracker.predict(CLAUDE).anchored).toBe(false);
    // A marker that keeps nothing (no first kept entry) leaves only the summary.
    tracker.push({
      index: 5,
      kind: 'compaction',
      compaction: { ...marker, number: 2, firstKeptEntry: undefined },
      message: compactionMessage,
    });
    expect(tracker.contextTokens).toBe(count(compactionMessage));
  });

  it('PromptTracker: an abridge marker keeps what lies outside its archived span, with its edits', () => {
    const tracker = new PromptTracker();
    const msgs = [
      user(filler(300, 20)),
      assistant(filler(30, 21), CLAUDE),
      user(filler(50, 22)),
      assistant(filler(300, 23), CLAUDE),
    ];
    msgs.forEach((m, index) => tracker.push({ index, kind: 'message', message: m }));
    const edited: Message = { role: 'assistant', parts: [{ type: 'text', text: 'short' }] };
    const marker = {
      number: 1,
      summary: 'S',
      source: 'abridge',
      archived: { fromEntry: 1, toEntry: 2 },
      edits: [{ entry: 3, message: edited, how: 'cleared' }],
    } as CompactionMarker;
    const summary: Message = { role: 'user', parts: [{ type: 'compaction', marker }] };
    tracker.push({ index: 4, kind: 'compaction', compaction: marker, message: summary });
    expect(tracker.contextTokens).toBe(count(msgs[0]!) + count(edited) + count(summary));
  });

  it('a model change: the other model’s bill is the measure, scaled by the two ratios (it holds the harness prompt no count has), not an anchor', () => {
    const u1 = user(filler(300, 18));
    const items = [
      u1,
      assistant('a', CLAUDE, 8000),
      user(filler(50, 19)),
      assistant('b', GPT, 7000),
      user('more'),
      assistant('c', GPT, 7100),
    ];
    const out = replaySession(session(items), { prefixTokens: 500 });
    expect(out.map((r) => [r.model, r.family, r.anchored])).toEqual([
      [CLAUDE, 'claude', false],
      [GPT, 'gpt', false],
      [GPT, 'gpt', true],
    ]);
    // Claude's 8,000 as GPT would count it, plus what came since at GPT's ratio — not the configured 500-token prefix
    // plus a recount, which misses whatever the harness sends that the transcript does not hold.
    const since = count(items[1] as Message) + count(items[2] as Message);
    expect(out[1]!.predicted).toBe(
      Math.round((8000 * FAMILY_RATIO.gpt) / FAMILY_RATIO.claude + FAMILY_RATIO.gpt * since),
    );

    const tracker = new PromptTracker();
    tracker.push({ index: 0, kind: 'message', message: u1 });
    tracker.observe(usage(8000), CLAUDE, 1, tracker.contextTokens);
    expect(tracker.predict(CLAUDE).anchored).toBe(true);
    expect(tracker.predict(GPT).anchored).toBe(false);
    expect(tracker.predict(GPT).ratio).toBe(FAMILY_RATIO.gpt);
  });

  it('an abandoned branch neither appears in the replay nor anchors the active branch (pi v3 tree)', () => {
    const ts = '2026-01-01T00:00:00.000Z';
    const rec = (id: string, parentId: string | null, message: Record<string, unknown>) => ({
      type: 'message',
      id,
      parentId,
      timestamp: ts,
      message,
    });
    const piAssistant = (text: string, input: number) => ({
      role: 'assistant',
      content: [{ type: 'text', text }],
      api: 'anthropic-messages',
      provider: 'anthropic',
      model: CLAUDE,
      usage: { input, output: 20, cacheRead: 0, cacheWrite: 0, totalTokens: input + 20 },
      stopReason: 'stop',
      timestamp: 2,
    });
    const header = { type: 'session', version: 3, id: 'sess', timestamp: ts, cwd: '/repo' };
    const trunk = [
      rec('u1', null, { role: 'user', content: filler(300, 20), timestamp: 1 }),
      rec('a1', 'u1', piAssistant('first answer', 6000)),
    ];
    const abandoned = [
      rec('u2a', 'a1', { role: 'user', content: filler(2000, 21), timestamp: 3 }),
      rec('a2a', 'u2a', piAssistant('abandoned answer', 999_999)),
      rec('u3a', 'a2a', { role: 'user', content: 'still abandoned', timestamp: 4 }),
      rec('a3a', 'u3a', piAssistant('abandoned again', 1_000_500)),
    ];
    const active = [
      rec('u2b', 'a1', { role: 'user', content: filler(100, 22), timestamp: 5 }),
      rec('a2b', 'u2b', piAssistant('active answer', 6300)),
      rec('u3b', 'a2b', { role: 'user', content: filler(40, 23), timestamp: 6 }),
      rec('a3b', 'u3b', piAssistant('active again', 6450)),
    ];
    const jsonl = (records: unknown[]) => `${records.map((r) => JSON.stringify(r)).join('\n')}\n`;
    const tree = parseSession(jsonl([header, ...trunk, ...abandoned, ...active]));
    const linear = parseSession(jsonl([header, ...trunk, ...active]));
    expect(tree.format).toBe('pi');
    const idOf = (s: Session, r: ReplayRequest) => s.entries[r.index]!.id;

    const out = replaySession(tree, { prefixTokens: 0 });
    expect(out.map((r) => idOf(tree, r))).toEqual(['a1', 'a2b', 'a3b']);
    expect(out.map((r) => r.reported)).toEqual([6000, 6300, 6450]);
    // Identical to the session that never had the abandoned branch: no anchor and no calibration from it.
    const strip = (rs: ReplayRequest[]) => rs.map(({ index: _i, start: _s, line: _l, ...rest }) => rest);
    expect(strip(out)).toEqual(strip(replaySession(linear, { prefixTokens: 0 })));
    expect(out[1]!.anchored).toBe(true);
    const a1 = tree.entries.find((e) => e.id === 'a1')!.message!;
    const u2b = tree.entries.find((e) => e.id === 'u2b')!.message!;
    expect(out[1]!.predicted).toBe(Math.round(6000 + FAMILY_RATIO.claude * (count(a1) + count(u2b))));
    // Replaying the abandoned branch explicitly is not what replaySession does: it follows the default leaf.
    expect(out.every((r) => r.predicted < 10_000)).toBe(true);
  });
});

describe('calibration', () => {
  /** Runs `turns` turns against a provider that bills `prefix + trueRatio × counted`; returns the tracker and errors. */
  function simulate(trueRatio: number, turns: number, options: ConstructorParameters<typeof PromptTracker>[0] = {}) {
    const tracker = new PromptTracker(options);
    const errors: number[] = [];
    const ratios: number[] = [];
    let index = 0;
    for (let t = 0; t < turns; t++) {
      tracker.push({ index: index++, kind: 'message', message: user(filler(60 + ((t * 37) % 400), 100 + t)) });
      const predicted = tracker.predict(CLAUDE).predicted;
      const start = tracker.contextTokens;
      const reported = Math.round(4000 + trueRatio * start);
      errors.push(Math.abs(predicted - reported) / reported);
      tracker.observe(usage(reported), CLAUDE, index, start);
      ratios.push(tracker.ratioOf(CLAUDE));
      tracker.push({
        index: index++,
        kind: 'message',
        message: assistant(filler(20 + ((t * 11) % 90), 900 + t), CLAUDE),
      });
    }
    return { tracker, errors, ratios };
  }

  it('converges to the ratio the provider bills (1.3× the counted growth)', () => {
    const { tracker, errors, ratios } = simulate(1.3, 150);
    expect(ratios[0]).toBe(FAMILY_RATIO.claude); // nothing learned from the first report
    expect(Math.abs(ratios[9]! - 1.3)).toBeLessThan(Math.abs(FAMILY_RATIO.claude - 1.3));
    expect(Math.abs(ratios[149]! - 1.3)).toBeLessThan(Math.abs(ratios[9]! - 1.3));
    expect(Math.abs(tracker.ratioOf(CLAUDE) - 1.3)).toBeLessThan(0.005);
    // The ratio moves toward the truth (by the bills' rounding, a hair back at times).
    for (let i = 1; i < ratios.length; i++) expect(ratios[i]!).toBeGreaterThanOrEqual(ratios[i - 1]! - 1e-4);
    // Late predictions are near exact.
    expect(Math.max(...errors.slice(100))).toBeLessThan(0.001);
    // Another model keeps its seed.
    expect(tracker.ratioOf('claude-opus-4-1')).toBe(FAMILY_RATIO.claude);
    expect(tracker.ratioOf(GPT)).toBe(FAMILY_RATIO.gpt);
  });

  it('learning matters: without it (an enormous prior) late predictions are worse', () => {
    const learned = simulate(1.3, 150);
    const frozen = simulate(1.3, 150, { priorWeight: 1e15 });
    expect(frozen.tracker.ratioOf(CLAUDE)).toBeCloseTo(FAMILY_RATIO.claude, 6);
    const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
    expect(mean(learned.errors.slice(50))).toBeLessThan(mean(frozen.errors.slice(50)) / 5);
  });

  it('a shrinking prompt teaches nothing', () => {
    const tracker = new PromptTracker();
    tracker.push({ index: 0, kind: 'message', message: user(filler(500, 30)) });
    tracker.observe(usage(10_000), CLAUDE, 1, tracker.contextTokens);
    tracker.push({ index: 1, kind: 'message', message: user(filler(500, 31)) });
    tracker.observe(usage(3_000), CLAUDE, 2, tracker.contextTokens);
    expect(tracker.ratioOf(CLAUDE)).toBe(FAMILY_RATIO.claude);
    expect(CALIBRATION_PRIOR_WEIGHT).toBeGreaterThan(0);
  });
});

describe('startsResponse', () => {
  const m = (extra: Partial<Message>): Message => ({
    role: 'assistant',
    parts: [{ type: 'text', text: 'x' }],
    ...extra,
  });

  it('Claude Code blocks sharing a responseId are one response; a new id starts one', () => {
    const first = m({ responseId: 'msg_1', usage: usage(100) });
    expect(startsResponse(first, undefined)).toBe(true);
    expect(startsResponse(m({ responseId: 'msg_1', usage: usage(100) }), first)).toBe(false);
    expect(startsResponse(m({ responseId: 'msg_2', usage: usage(120) }), first)).toBe(true);
  });

  it('without response ids, a message after one that carried usage starts a response (pi)', () => {
    expect(startsResponse(m({}), m({ usage: usage(100) }))).toBe(true);
    expect(startsResponse(m({}), m({}))).toBe(false);
  });

  it('replaySession reports a multi-block Claude Code response once, predicted before its first block', () => {
    const u1 = user(filler(300, 40));
    const b1 = assistant(filler(40, 41), CLAUDE, 5000, { responseId: 'msg_A' });
    const b2: Message = {
      role: 'assistant',
      parts: [{ type: 'tool-call', id: 'toolu_1', name: 'read', arguments: { path: 'a.ts' } }],
      model: CLAUDE,
      usage: usage(5000),
      responseId: 'msg_A',
    };
    const r1 = toolResult('toolu_1', filler(300, 42));
    const c1 = assistant('done', CLAUDE, 5800, { responseId: 'msg_B' });
    const s = session([u1, b1, b2, r1, c1], 'claude-code');
    const out = replaySession(s, { prefixTokens: 0 });
    expect(out.map((r) => r.index)).toEqual([1, 4]);
    expect(out[0]!.predicted).toBe(Math.round(FAMILY_RATIO.claude * count(u1)));
    expect(out[1]!.predicted).toBe(Math.round(5000 + FAMILY_RATIO.claude * (count(b1) + count(b2) + count(r1))));
  });
});

const run = corpusAvailable() ? describe : describe.skip;
if (!corpusAvailable()) console.warn('predict corpus tests skipped: ../shared/corpus not found (set ABRIDGE_CORPUS)');

run('replaySession over the corpus', () => {
  it('per family with ≥ 50 requests: median error ≤ 2%, p90 ≤ 5%; every prediction finite and positive', async () => {
    const byFamily = new Map<
      string,
      { errors: number[]; estimateOnly: number[]; anchored: number; files: Set<string> }
    >();
    const bad: string[] = [];
    let total = 0;
    for (const folder of ['pi', 'claude-code', 'codex']) {
      for (const file of corpusFiles(folder)) {
        const s = await readSession(file);
        for (const r of replaySession(s)) {
          total++;
          if (!Number.isFinite(r.predicted) || r.predicted <= 0)
            bad.push(`${folder}/${basename(file)} entry ${r.index}: predicted ${r.predicted}`);
          if (!Number.isFinite(r.estimateOnly) || r.estimateOnly <= 0)
            bad.push(`${folder}/${basename(file)} entry ${r.index}: estimateOnly ${r.estimateOnly}`);
          let f = byFamily.get(r.family);
          if (!f) byFamily.set(r.family, (f = { errors: [], estimateOnly: [], anchored: 0, files: new Set() }));
          f.errors.push(Math.abs(r.predicted - r.reported) / r.reported);
          f.estimateOnly.push(Math.abs(r.estimateOnly - r.reported) / r.reported);
          if (r.anchored) f.anchored++;
          f.files.add(`${folder}/${basename(file)}`);
        }
      }
    }
    const pct = (xs: number[], p: number) => {
      const s = [...xs].sort((a, b) => a - b);
      return s[Math.max(0, Math.ceil(p * s.length) - 1)]!;
    };
    const fmt = (x: number) => `${(x * 100).toFixed(2)}%`;
    const table: Record<string, Record<string, string | number>> = {};
    for (const [family, f] of [...byFamily].sort()) {
      table[family] = {
        requests: f.errors.length,
        files: f.files.size,
        anchored: fmt(f.anchored / f.errors.length),
        median: fmt(pct(f.errors, 0.5)),
        p90: fmt(pct(f.errors, 0.9)),
        max: fmt(pct(f.errors, 1)),
        'estimateOnly median': fmt(pct(f.estimateOnly, 0.5)),
        'estimateOnly p90': fmt(pct(f.estimateOnly, 0.9)),
      };
    }
    console.log('replaySession |predicted − reported| / reported by provider family:');
    console.table(table);

    expect(bad).toEqual([]);
    expect(total).toBeGreaterThan(1000);
    const checked = [...byFamily].filter(([, f]) => f.errors.length >= 50);
    expect(checked.map(([family]) => family).sort()).toEqual(['claude', 'gemini', 'gpt']);
    for (const [family, f] of checked) {
      expect(pct(f.errors, 0.5), `${family} median`).toBeLessThanOrEqual(0.02);
      expect(pct(f.errors, 0.9), `${family} p90`).toBeLessThanOrEqual(0.05);
    }
  });
});

describe("PromptTracker: reasoning dropped at a person's turn (Responses API)", () => {
  const at = (index: number, message: Message): Entry => ({ index, kind: 'message', message });
  const reasoned = (prompt: number, reasoning: number): Usage => ({
    input: prompt,
    output: 100 + reasoning,
    cacheRead: 0,
    cacheWrite: 0,
    reasoning,
  });
  function run(drops: boolean): number {
    const t = new PromptTracker({ reasoningDroppedAtUserTurn: drops });
    t.push(at(0, user('start')));
    // Two responses in one turn: the second prompt carries the first one's 3,000 reasoning tokens.
    t.push(at(1, assistant('step one', GPT)));
    t.observe(reasoned(10_000, 3000), GPT, 1, 0);
    t.push(at(2, assistant('step two', GPT)));
    t.observe(reasoned(13_100, 500), GPT, 2, t.contextTokens);
    t.push(at(3, user('next question')));
    return t.predict(GPT).predicted;
  }
  it("takes the reasoning the last prompt carried out of the next turn's prediction", () => {
    expect(run(false) - run(true)).toBe(3000);
  });
  it('keeps it within a turn', () => {
    const t = new PromptTracker({ reasoningDroppedAtUserTurn: true });
    t.push(at(0, user('start')));
    t.push(at(1, assistant('step one', GPT)));
    t.observe(reasoned(10_000, 3000), GPT, 1, 0);
    t.push(at(2, toolResult('c1', 'output')));
    const within = t.predict(GPT);
    const plain = new PromptTracker();
    plain.push(at(0, user('start')));
    plain.push(at(1, assistant('step one', GPT)));
    plain.observe(reasoned(10_000, 3000), GPT, 1, 0);
    plain.push(at(2, toolResult('c1', 'output')));
    expect(within.predicted).toBe(plain.predict(GPT).predicted);
  });
});

describe('PromptTracker.judge: usage is evidence, not truth', () => {
  const usage = (input: number): Usage => ({ input, output: 10, cacheRead: 0, cacheWrite: 0 });
  const problemOf = (v: ReturnType<PromptTracker['judge']>) => (v.used ? undefined : v.problem);
  const tracker = (windowOf?: (m: string) => number | undefined) =>
    new PromptTracker({ prefixTokens: 0, countsEverything: true, ...(windowOf ? { windowOf } : {}) });

  it('believes a bill near what was sent, and a small one a few hundred tokens over a tiny count', () => {
    const t = tracker(() => 200_000);
    expect(t.judge(usage(10_400), CLAUDE, 10_000)).toEqual({ used: true });
    // A provider's own tool-use prompt: 400 tokens on a request counted at 50.
    expect(t.judge(usage(450), CLAUDE, 50)).toEqual({ used: true });
  });

  it('refuses what cannot be a count: not finite, beyond every known window, under half, 3× and 4K tokens off', () => {
    const t = tracker((m) => (m === CLAUDE ? 1_000_000 : undefined));
    const counted = 20_000;
    const expected = Math.round(FAMILY_RATIO.claude * counted);
    expect(problemOf(t.judge(usage(Number.POSITIVE_INFINITY), CLAUDE, counted))).toMatch(/no count of a request/);
    expect(problemOf(t.judge(usage(1e308), CLAUDE, counted))).toMatch(/no count of a request/);
    expect(problemOf(t.judge(usage(30_000_000), CLAUDE, counted))).toMatch(/no count of a request/);
    expect(problemOf(t.judge(usage(1_200_000), CLAUDE, counted))).toMatch(
      /above every window known for .* \(1000000\)/,
    );
    expect(problemOf(t.judge(usage(Math.floor(expected / 2) - 100), CLAUDE, counted))).toMatch(/under half/);
    expect(problemOf(t.judge(usage(expected * 3 + 5_000), CLAUDE, counted))).toMatch(/more than 3× off/);
    // The window is the largest known for the model: a model nobody knows is judged by the count alone.
    expect(t.judge(usage(1_200_000), 'some-local-model', 400_000)).toEqual({ used: true });
  });

  it('a refused bill anchors nothing: the next prediction is what it was before', () => {
    const t = tracker(() => 200_000);
    const before = t.predict(CLAUDE).predicted;
    const verdict = t.observe(usage(10_000_000), CLAUDE, 1, t.contextTokens);
    expect(verdict.used).toBe(false);
    expect(t.predict(CLAUDE)).toMatchObject({ predicted: before, anchored: false });
  });
});
