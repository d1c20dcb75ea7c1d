import { describe, expect, it } from 'vitest';
import { DEFAULT_STRATEGY_OPTIONS } from '../defaults.js';
import { parseSession } from '../formats/read.js';
import { writeSession } from '../formats/write.js';
import type { Session, ToolCallPart } from '../model/types.js';
import { activeView, isSummaryItem, type ViewItem } from '../model/view.js';
import { MemoryResultStore } from './memory-result-store.js';
import { PiTranscript } from '../../test/support/random-session.js';
import { TokenCounter } from '../tokens/counter.js';
import { compact } from './compact.js';
import { dropThinking } from './strategies/drop-thinking.js';
import type { StrategyContext } from './strategies/strategy.js';
import { agentSummary, summaryText } from './strategies/summarize.js';
import { ExtractiveSummarizer } from './summarizers/extractive.js';
import type { Summarizer, SummaryRequest } from './summarizers/summarizer.js';
import { isHarnessText, isRequest } from './turns.js';

const NOW = () => new Date(Date.UTC(2026, 0, 2));
const TASK =
  'Port the retry logic in src/net/retry.ts to exponential backoff. Keep the public API of src/net/index.ts.';
const build = (t: PiTranscript): Session => parseSession(t.jsonl());
const body = (n: number, tag: string) =>
  Array.from({ length: n }, (_, i) => `${tag} line ${i}: some output of the tool`).join('\n');

/** `n` steps of work, each a `make` with `lines` lines of output. */
function makeSteps(t: PiTranscript, n: number, lines: number): void {
  for (let i = 0; i < n; i++)
    t.step({
      text: `Step ${i}.`,
      calls: [{ name: 'bash', args: { command: `make part${i}` }, result: body(lines, `p${i}`) }],
    });
}

/** The task, six small steps, optionally a lint run of 120 lines, the whole suite's 900 lines, and the answer. */
function suiteSession(o: { lint: boolean }): Session {
  const t = new PiTranscript();
  t.user(TASK);
  makeSteps(t, 6, 20);
  if (o.lint)
    t.step({
      text: 'Linting.',
      calls: [{ name: 'bash', args: { command: 'npm run lint' }, result: body(120, 'lint') }],
    });
  t.step({ text: 'Testing.', calls: [{ name: 'bash', args: { command: 'npm test' }, result: body(900, 'suite') }] });
  t.step({ text: 'Done.' });
  return build(t);
}

async function sizeOf(session: Session): Promise<number> {
  return (await compact(session, { target: Number.MAX_SAFE_INTEGER, strategies: [], prefixTokens: 0 })).beforeTokens;
}

/** A long session: the task, 20 steps of work, a second instruction, 6 more steps. */
function longSession(): Session {
  const t = new PiTranscript();
  t.user(TASK);
  for (let i = 0; i < 20; i++)
    t.step({
      text: `Looking at part ${i}.`,
      calls: [{ name: 'bash', args: { command: `grep -n retry src/net/part${i}.ts` }, result: body(40, `old${i}`) }],
    });
  t.user('Also add jitter, at most 100 ms.');
  for (let i = 0; i < 6; i++)
    t.step({
      text: `Jitter step ${i}.`,
      calls: [{ name: 'read', args: { path: `src/net/jitter${i}.ts` }, result: body(40, `new${i}`) }],
    });
  return build(t);
}

/**
 * Many long messages from a person (a summary carrying them all would take the room the recent work needs), compacted
 * to `share` of its size: the summary's tokens, the verbatim end's, and the room beside what must stay whatever
 * happens (here the first request and the latest instruction).
 */
async function requestsCompacted(share: number): Promise<{ summary: number; verbatim: number; room: number }> {
  const t = new PiTranscript();
  t.user(TASK);
  for (let turn = 0; turn < 12; turn++) {
    t.user(`Request ${turn}: ${body(12, `req${turn} please also consider`).replace(/\n/g, ' ')}`);
    makeSteps(t, 4, 12);
  }
  const session = build(t);
  const view0 = activeView(session);
  const counter = new TokenCounter();
  const target = Math.floor((await sizeOf(session)) * share);
  const r = await compact(session, { target, prefixTokens: 0, now: NOW, strategies: ['summarize', 'truncate'] });
  expect(r.reachedTarget).toBe(true);
  const view = activeView(session);
  const head = r.protectedParts
    .filter((p) => /^(first user message|latest instruction)/.test(p.what))
    .reduce((n, p) => n + p.tokens, 0);
  let verbatim = 0;
  for (let i = view.length - 1, j = view0.length - 1; view[i]!.message === view0[j]!.message; i--, j--)
    verbatim += counter.message(view[i]!.message);
  return { summary: counter.message(view.find(isSummaryItem)!.message), verbatim, room: target - head };
}

class Recording implements Summarizer {
  readonly name = 'recording';
  readonly requests: SummaryRequest[] = [];
  async summarize(req: SummaryRequest): Promise<string> {
    this.requests.push(req);
    return new ExtractiveSummarizer().summarize(req);
  }
}

describe('selection: oldest first, recent verbatim', () => {
  it('archives from the oldest unit forward and keeps the newest work byte-identical', async () => {
    const session = longSession();
    const view0 = activeView(session);
    const r = await compact(session, {
      target: Math.floor((await sizeOf(session)) * 0.35),
      prefixTokens: 0,
      now: NOW,
      strategies: ['summarize', 'truncate'],
    });
    expect(r.reachedTarget).toBe(true);
    const view = activeView(session);
    const summary = view.find(isSummaryItem)!;
    // The summary starts right after the first request: the oldest work went first.
    expect(summary.covers.fromEntry).toBe(view0[1]!.entry);
    // Everything after the summary is the end of the conversation, exactly as it was — but for the newest archived
    // step, which may stand beside the summary with its result cut to its first and last lines.
    let after = view.slice(view.indexOf(summary) + 1);
    const edited = after.map((v) => v.edit !== undefined).lastIndexOf(true);
    expect(edited).toBeLessThanOrEqual(1);
    after = after.slice(edited + 1);
    expect(after.map((v) => v.message)).toEqual(view0.slice(view0.length - after.length).map((v) => v.message));
    for (let i = 0; i < after.length; i++)
      expect(after[i]!.message).toBe(view0[view0.length - after.length + i]!.message);
    // The latest instruction is among them.
    expect(
      after.some((v) => v.message.parts.some((p) => p.type === 'text' && p.text.startsWith('Also add jitter'))),
    ).toBe(true);
    expect(r.keptRecentTokens).toBeGreaterThan(0);
  });

  it('under heavy compaction the summary keeps to its share of the room and the recent work keeps the rest', async () => {
    const { summary, verbatim, room } = await requestsCompacted(0.12);
    const share = DEFAULT_STRATEGY_OPTIONS.summarize.maxRoomShare;
    expect(share).toBeLessThan(1);
    expect(summary).toBeLessThanOrEqual(Math.ceil(room * share));
    // The end of the conversation as it was holds a good part of the rest (the newest archived step may stand beside the
    // summary with its results cut short).
    expect(verbatim).toBeGreaterThan(room * (1 - share) * 0.6);
  });

  it('when the room holds little more than the newest tenth of the conversation, the summary gives way to it', async () => {
    const { summary, verbatim, room } = await requestsCompacted(0.1);
    const { minRoomShare, maxRoomShare } = DEFAULT_STRATEGY_OPTIONS.summarize;
    // Planned at its least share of the room (it may take what whole units left unused beside it), not at the most it
    // may take when the room is larger.
    expect(summary).toBeLessThanOrEqual(Math.ceil(room * minRoomShare * 1.25));
    expect(summary).toBeLessThan(room * maxRoomShare * 0.75);
    expect(verbatim).toBeGreaterThan(room * (1 - minRoomShare) * 0.75);
  });

  it('a turn whose rest costs more than a tenth of the room is cut inside, its newest steps kept', async () => {
    // Old turns, then a long turn the cut lands in, then two short turns: archiving up to the next request would archive
    // the rest of the long turn and leave much of the room unused.
    const t = new PiTranscript();
    t.user(TASK);
    for (let turn = 0; turn < 15; turn++) {
      t.user(`Part ${turn} next.`);
      makeSteps(t, 3, 12);
    }
    t.user('Now the jitter, at most 100 ms.');
    for (let i = 0; i < 20; i++)
      t.step({
        text: `Jitter step ${i}.`,
        calls: [{ name: 'read', args: { path: `src/net/jitter${i}.ts` }, result: body(12, `j${i}`) }],
      });
    t.user('Commit it.');
    makeSteps(t, 6, 12);
    t.user('Push.');
    t.step({ text: 'Pushed.' });
    const session = build(t);
    const target = Math.floor((await sizeOf(session)) * 0.25);
    const r = await compact(session, { target, prefixTokens: 0, now: NOW, strategies: ['summarize', 'truncate'] });
    expect(r.reachedTarget).toBe(true);
    const view = activeView(session);
    // The summary is followed by the newest steps of the long turn, not by the last request.
    const next = view[view.findIndex(isSummaryItem) + 1]!;
    expect(next.message.role).toBe('assistant');
    expect(JSON.stringify(next.message)).toMatch(/Jitter step \d+/);
    const kept = view.filter((v) => /Jitter step \d+/.test(JSON.stringify(v.message)));
    expect(kept.length).toBeGreaterThanOrEqual(5);
    expect(r.afterTokens).toBeGreaterThan(target * 0.85);
  });

  it('clears old results before touching recent ones, and gives recent ones back after archiving', async () => {
    const session = longSession();
    const view0 = activeView(session);
    await compact(session, { target: Math.floor((await sizeOf(session)) * 0.4), prefixTokens: 0, now: NOW });
    const view = activeView(session);
    const lastTool = [...view0].reverse().find((v) => v.message.role === 'tool')!;
    expect(view.find((v) => v.entry === lastTool.entry)?.message).toBe(lastTool.message);
  });
});

describe('the tail is the end of the conversation', () => {
  it('a newer result cleared while older work stays whole is given back by archiving that older work', async () => {
    // Clearing runs first and shortens the biggest results outside the protected window, the newest included; once the
    // chain has to summarize anyway, the span is chosen so that the newest results stand whole and older work goes.
    const t = new PiTranscript();
    t.user(TASK);
    for (let i = 0; i < 30; i++)
      t.step({
        text: `Step ${i}: ${body(12, `reasoning about part ${i}`)}`,
        calls: [{ name: 'bash', args: { command: `make part${i}` }, result: body(4, `p${i}`) }],
      });
    t.step({
      text: 'Reading the spec.',
      calls: [{ name: 'read', args: { path: 'docs/spec.md' }, result: body(220, 'spec') }],
    });
    t.step({ text: 'Noted.', calls: [{ name: 'bash', args: { command: 'ls' }, result: 'a\nb' }] });
    t.step({ text: 'Done.' });
    const session = build(t);
    const view0 = activeView(session);
    const spec = view0.find((v) => v.message.role === 'tool' && JSON.stringify(v.message).includes('spec line 0'))!;
    const r = await compact(session, { target: Math.floor((await sizeOf(session)) * 0.6), prefixTokens: 0, now: NOW });
    expect(r.reachedTarget).toBe(true);
    expect(r.strategiesRun.map((x) => x.name)).toContain('summarize');
    const view = activeView(session);
    expect(view.find((v) => v.entry === spec.entry)?.message).toBe(spec.message);
    // Everything after the summary is verbatim: no older step kept whole while the newer result was cut.
    const after = view.slice(view.findIndex(isSummaryItem) + 1);
    for (const v of after) expect(v.edit).toBeUndefined();
  });

  it('the newest shortened result gets the room before an older one is given back whole', async () => {
    const session = suiteSession({ lint: true });
    const r = await compact(session, {
      target: Math.floor((await sizeOf(session)) * 0.3),
      prefixTokens: 0,
      now: NOW,
      strategies: ['offload', 'summarize', 'truncate'],
    });
    expect(r.reachedTarget).toBe(true);
    const view = activeView(session);
    const find = (tag: string) =>
      view.find((v) => v.message.role === 'tool' && JSON.stringify(v.message).includes(`${tag} line 0`));
    const suite = find('suite');
    const lint = find('lint');
    expect(suite?.edit).toBe('compressed');
    // The older result did not take the room whole while the newest is cut short.
    expect(lint?.edit).toBeDefined();
  });

  it('the newest archivable step that fits only without its results stays, its results offloaded, not summarized', async () => {
    const t = new PiTranscript();
    t.user(TASK);
    for (let i = 0; i < 10; i++)
      t.step({
        text: `Step ${i}: ${body(20, 'why')}`,
        calls: [{ name: 'bash', args: { command: `make part${i}` }, result: body(3, `p${i}`) }],
      });
    t.step({
      text: 'Reading the docs.',
      calls: [
        { name: 'read', args: { path: 'docs/a.md' }, result: body(60, 'docA') },
        { name: 'read', args: { path: 'docs/b.md' }, result: body(40, 'docB') },
      ],
    });
    t.step({ text: 'Done: the retry logic now backs off exponentially.' });
    const session = build(t);
    const view0 = activeView(session);
    const reading = view0.find((v) => JSON.stringify(v.message).includes('Reading the docs.'))!;
    const r = await compact(session, { target: Math.floor((await sizeOf(session)) * 0.16), prefixTokens: 0, now: NOW });
    expect(r.reachedTarget).toBe(true);
    const view = activeView(session);
    // The step's call stays verbatim, its results are references to read back (the newer one with what the room left
    // of its text); the summary ends before it.
    expect(view.find((v) => v.entry === reading.entry)?.message).toBe(reading.message);
    const results = view.filter((v) => v.message.role === 'tool');
    expect(results.map((v) => v.edit)).toEqual(['offloaded', 'compressed']);
    for (const v of results) expect(JSON.stringify(v.message)).toMatch(/read_result \{\\"ref_id\\"/);
    expect(view.find(isSummaryItem)!.covers.toEntry).toBeLessThan(reading.entry!);
  });

  it('a summary that came out smaller than planned leaves no room a newer archived step would fit in', async () => {
    // The span is chosen for a summary of the planned size (a share of what it replaces); bland output summarizes to
    // far less, and the room that leaves goes back to the newest archived steps, kept verbatim.
    const steps = (n: number) => {
      const t = new PiTranscript();
      t.user(TASK);
      makeSteps(t, n, 40);
      return build(t);
    };
    const step = (await sizeOf(steps(31))) - (await sizeOf(steps(30)));
    const session = steps(30);
    const target = Math.floor((await sizeOf(session)) * 0.5);
    const r = await compact(session, { target, prefixTokens: 0, now: NOW, strategies: ['summarize', 'truncate'] });
    expect(r.reachedTarget).toBe(true);
    expect(target - r.afterTokens).toBeLessThan(step);
  });

  it('the thinking of a turn that ended with an answer is not protected; of a tool-use loop under way it is', async () => {
    const make = (ended: boolean) => {
      const t = new PiTranscript();
      t.user(TASK);
      makeSteps(t, 8, 30);
      t.user('Now check the docs.');
      t.step({
        thinking: 'Which docs? The README and docs/api.md.',
        text: 'Reading the docs.',
        calls: [{ name: 'read', args: { path: 'docs/api.md' }, result: body(200, 'api') }],
      });
      t.step({
        text: 'And the README.',
        calls: [{ name: 'read', args: { path: 'README.md' }, result: body(5, 'readme') }],
      });
      if (ended) t.step({ text: 'The docs agree with the code.' });
      return build(t);
    };
    // What stays when nothing gives way (shrinkProtected off: the thinking step may otherwise give way last).
    const protectedWhat = async (session: Session) => {
      const r = await compact(session, {
        target: Math.floor((await sizeOf(session)) * 0.3),
        prefixTokens: 0,
        now: NOW,
        shrinkProtected: false,
      });
      return r.protectedParts.map((p) => p.what);
    };
    expect(await protectedWhat(make(false))).toContain('the step of the latest thinking');
    expect(await protectedWhat(make(true))).not.toContain('the step of the latest thinking');
  });

  it('a large newest message outside the tail budget is archived last, not first', async () => {
    const t = new PiTranscript();
    t.user(TASK);
    makeSteps(t, 16, 30);
    // What a person ran with `!` in pi: a synthetic user message holding a large output, the newest message of all.
    t.bash('find .', body(600, 'found'));
    const session = build(t);
    const view0 = activeView(session);
    const last = view0.at(-1)!;
    const size = await sizeOf(session);
    const r = await compact(session, {
      target: Math.floor(size * 0.72),
      prefixTokens: 0,
      now: NOW,
      strategies: ['summarize', 'truncate'],
    });
    expect(r.reachedTarget).toBe(true);
    const view = activeView(session);
    // The newest message is still there, byte-identical, and the oldest steps went into the summary.
    expect(view.at(-1)!.message).toBe(last.message);
    expect(view.find(isSummaryItem)!.covers.fromEntry).toBe(view0[1]!.entry);
  });

  it('the newest result shortened for its size gets back its first and last lines as far as the budget allows', async () => {
    const session = suiteSession({ lint: false });
    const size = await sizeOf(session);
    const r = await compact(session, {
      target: Math.floor(size * 0.3),
      prefixTokens: 0,
      now: NOW,
      strategies: ['offload', 'summarize', 'truncate'],
    });
    expect(r.reachedTarget).toBe(true);
    const view = activeView(session);
    const suite = view.find((v) => v.message.role === 'tool' && JSON.stringify(v.message).includes('suite line 0'));
    expect(suite?.edit).toBe('compressed');
    const text = JSON.stringify(suite!.message);
    expect(text).toContain('suite line 1: some output');
    expect(text).toContain('suite line 899: some output');
    expect(text).toMatch(/read_result \{\\"ref_id\\": \\"[^\\]+\\", \\"offset\\": \d+\}/);
    // It filled the room the rest left, and no more.
    expect(r.afterTokens).toBeLessThanOrEqual(Math.floor(size * 0.3));
    expect(r.afterTokens).toBeGreaterThan(0.8 * Math.floor(size * 0.3));
  });
});

describe('the last step gives way only when that can reach the target', () => {
  /** The task, four small steps, then a last step whose result is most of the session. */
  function bigLastStep(): Session {
    const t = new PiTranscript();
    t.user(TASK);
    makeSteps(t, 4, 10);
    t.step({
      text: 'Running the whole suite.',
      calls: [{ name: 'bash', args: { command: 'npm test' }, result: body(700, 'suite') }],
    });
    return build(t);
  }

  it('cuts the last step short, keeping its call and result paired, when the rest fits the target', async () => {
    const session = bigLastStep();
    const view0 = activeView(session);
    const size = await sizeOf(session);
    const target = Math.floor(size * 0.2);
    const store = new MemoryResultStore();
    const r = await compact(session, { target, prefixTokens: 0, now: NOW, store });
    expect(r.reachedTarget).toBe(true);
    expect(r.afterTokens).toBeLessThanOrEqual(target);
    expect(r.keptLastSteps).toBe(0);
    expect(r.violations).toEqual([]);
    const view = activeView(session);
    // The request stays word for word; the suite's result is still there (shortened, readable back), after its call.
    expect(view.some((v) => v.message === view0[0]!.message)).toBe(true);
    const at = view.findIndex((v) => v.message.role === 'tool' && JSON.stringify(v.message).includes('suite line 0'));
    expect(at).toBeGreaterThan(0);
    expect(view[at]!.edit).toBeDefined();
    expect(JSON.stringify(view[at]!.message)).toContain('suite line 699');
    expect(JSON.stringify(view[at - 1]!.message)).toContain('npm test');
    // Every reference it names gives back the whole result, however often it was cut.
    const refs = [...JSON.stringify(view[at]!.message).matchAll(/ref_id\\": \\"(r_[0-9a-f]+)/g)].map((m) => m[1]!);
    expect(refs.length).toBeGreaterThan(0);
    for (const ref of refs) expect((await store.read(ref, { limit: 2000 })).text).toBe(body(700, 'suite'));
  });

  it('keeps the last step verbatim when even the request does not fit: giving it up could not reach the target', async () => {
    const session = bigLastStep();
    const view0 = activeView(session);
    const r = await compact(session, { target: 10, prefixTokens: 0, now: NOW });
    expect(r.reachedTarget).toBe(false);
    expect(r.keptLastSteps).toBe(1);
    const view = activeView(session);
    expect(view.at(-1)!.message).toBe(view0.at(-1)!.message);
    expect(view.at(-2)!.message).toBe(view0.at(-2)!.message);
  });

  it('archives the last step, last of all, when even cut to its references it does not fit beside what must stay', async () => {
    // A last step of eight reads: its calls and the references of its results alone are more than the room.
    const t = new PiTranscript();
    t.user(TASK);
    makeSteps(t, 4, 10);
    t.step({
      text: 'Reading the callers.',
      calls: Array.from({ length: 8 }, (_, i) => ({
        name: 'read',
        args: { path: `src/net/caller${i}.ts` },
        result: body(40, `caller${i}`),
      })),
    });
    const session = build(t);
    const view0 = activeView(session);
    const lastEntries = view0.slice(-9).map((v) => v.entry);
    const task = await sizeOf(parseSession(new PiTranscript().user(TASK).jsonl()));
    const target = task + 80;
    const r = await compact(session, { target, prefixTokens: 0, now: NOW });
    expect(r.reachedTarget).toBe(true);
    expect(r.afterTokens).toBeLessThanOrEqual(target);
    expect(r.violations).toEqual([]);
    const view = activeView(session);
    expect(view[0]!.message).toBe(view0[0]!.message);
    expect(view.filter((v) => lastEntries.includes(v.entry))).toEqual([]);
    expect(view.some((v) => isSummaryItem(v))).toBe(true);
    expect(r.summaryNotes).toContain(
      `the last step (entries ${lastEntries[0]}–${lastEntries.at(-1)}) was archived to fit the budget: cut short, it did not fit`,
    );
    // A request body made from the view names the model the archived step was answered by.
    const model = view0.findLast((v) => v.message.role === 'assistant')!.message.model;
    expect(model).toBeTruthy();
    expect(view.some((v) => v.message.role === 'assistant')).toBe(false);
    expect(JSON.parse(writeSession(session, 'anthropic')).model).toBe(model);
    // Archived, not deleted: the session still holds every entry as it was.
    expect(session.entries.filter((e) => lastEntries.includes(e.index)).map((e) => e.message)).toEqual(
      view0.slice(-9).map((v) => v.message),
    );
  });

  it('keeps it verbatim when minKeepLastSteps says so, at the cost of the target', async () => {
    const session = bigLastStep();
    const view0 = activeView(session);
    const size = await sizeOf(session);
    const r = await compact(session, {
      target: Math.floor(size * 0.2),
      prefixTokens: 0,
      now: NOW,
      minKeepLastSteps: 1,
    });
    expect(r.reachedTarget).toBe(false);
    expect(r.keptLastSteps).toBe(1);
    expect(activeView(session).at(-1)!.message).toBe(view0.at(-1)!.message);
  });
});

describe('a summary after the last step', () => {
  /**
   * The task and one step, then what `after` adds; compacted once with truncate (which archives what follows the step),
   * then again at half the size: the second compaction, and the step as the first left it.
   */
  async function twice(after: (t: PiTranscript) => void) {
    const t = new PiTranscript();
    t.user(TASK);
    t.step({ text: 'Looking at it.', calls: [{ name: 'bash', args: { command: 'make' }, result: body(20, 'make') }] });
    after(t);
    const session = build(t);
    const size = await sizeOf(session);
    const opts = { prefixTokens: 0, now: NOW };
    const first = await compact(session, { ...opts, target: Math.floor(size * 0.3), strategies: ['truncate'] });
    const view1 = activeView(session);
    const step = view1.filter((v) => v.message.role === 'assistant' || v.message.role === 'tool');
    expect(step.length).toBe(2);
    const second = await compact(session, { ...opts, target: Math.floor(first.afterTokens * 0.5) });
    // The step is still there (its result may be cut short to fit): an agent resuming the session has an assistant
    // message to resume from.
    const view2 = activeView(session);
    expect(view2.some((v) => v.message === step[0]!.message)).toBe(true);
    expect(view2.some((v) => v.entry === step[1]!.entry && v.message.role === 'tool')).toBe(true);
    expect(second.violations).toEqual([]);
    return { view1, step };
  }

  it('at the very end does not end the recent tail: a second compaction still protects the last step', async () => {
    // Harness text after the work (what Claude Code writes for /model): the only archivable units.
    const { view1 } = await twice((t) => {
      t.synthetic(body(60, 'harness a'));
      t.synthetic(body(60, 'harness b'));
    });
    expect(isSummaryItem(view1.at(-1)!)).toBe(true);
  });

  it('does not hide the last step from a second compaction when a person wrote after it', async () => {
    const { view1, step } = await twice((t) => {
      t.synthetic(body(60, 'harness'));
      t.user('Thanks, that is all for now.');
      t.bash('ls', body(60, 'ls'));
    });
    // The summary stands between the step and the person's last message.
    const at = view1.findIndex((v) => isSummaryItem(v));
    expect(at).toBeGreaterThan(view1.indexOf(step[1]!));
    expect(at).toBeLessThan(view1.length - 1);
  });
});

describe("a person's command output", () => {
  it('is cut to its first and last lines like a large result; project memory a harness injected is not', async () => {
    const t = new PiTranscript();
    t.user(TASK);
    const memory = `# AGENTS.md instructions for /repo\n${body(400, 'rule')}`;
    t.synthetic(memory);
    makeSteps(t, 2, 10);
    t.bash('find .', body(3000, './found'));
    const session = build(t);
    const store = new MemoryResultStore();
    const size = await sizeOf(session);
    const r = await compact(session, {
      target: Math.floor(size * 0.6),
      prefixTokens: 0,
      now: NOW,
      store,
      strategies: ['head-tail'],
    });
    expect(r.strategiesRun.map((s) => s.name)).toEqual(['head-tail']);
    const view = activeView(session);
    const text = (i: number) => view[i]!.message.parts.map((p) => (p.type === 'text' ? p.text : '')).join('');
    expect(text(1)).toBe(memory);
    expect(view[1]!.edit).toBeUndefined();
    const out = text(view.length - 1);
    expect(view.at(-1)!.edit).toBe('compressed');
    expect(out).toMatch(/^Ran `find \.`/);
    expect(out).toContain('./found line 2999');
    const ref = /"ref_id": "(r_[0-9a-f]+)"/.exec(out)![1]!;
    expect((await store.read(ref, { limit: 2000, offset: 1500 })).text).toContain('./found line 1500');
  });
});

describe('project memory a harness recorded as a message', () => {
  it('stays verbatim like the system prompt, named among what must stay; a listing that mentions AGENTS.md does not', async () => {
    const t = new PiTranscript();
    t.user(TASK);
    const memory = `# AGENTS.md instructions for /repo\n<INSTRUCTIONS>\n${body(200, 'rule')}\n</INSTRUCTIONS>`;
    t.synthetic(memory);
    t.bash('ls', 'AGENTS.md\npackage.json\nsrc');
    makeSteps(t, 30, 20);
    const session = build(t);
    const view0 = activeView(session);
    const r = await compact(session, {
      target: Math.floor((await sizeOf(session)) * 0.4),
      prefixTokens: 0,
      now: NOW,
    });
    expect(r.reachedTarget).toBe(true);
    const view = activeView(session);
    const kept = view.find((v) => v.message.parts.some((p) => p.type === 'text' && p.text === memory));
    expect(kept?.edit).toBeUndefined();
    expect(kept?.message).toBe(view0[1]!.message);
    expect(r.protectedParts.map((p) => p.what)).toContain(`project memory (entry ${view0[1]!.entry})`);
    // The listing is old work like any other: archived.
    expect(view.some((v) => v.message.parts.some((p) => p.type === 'text' && p.text.startsWith('Ran `ls`')))).toBe(
      false,
    );
  });
});

describe('a long last answer gives way in place', () => {
  /** The task, eight steps of work, then the assistant's long final answer (with its thinking). */
  function longAnswer(): Session {
    const t = new PiTranscript();
    t.user(TASK);
    makeSteps(t, 8, 30);
    t.assistant({ thinking: 'Summing up what changed. '.repeat(40), text: body(300, 'answer') });
    return build(t);
  }

  it("drops the ended turn's thinking and cuts the answer to its first and last lines, the whole answer stored", async () => {
    const session = longAnswer();
    const view0 = activeView(session);
    const store = new MemoryResultStore();
    const size = await sizeOf(session);
    const target = Math.floor(size * 0.15);
    const r = await compact(session, { target, prefixTokens: 0, now: NOW, store });
    expect(r.reachedTarget).toBe(true);
    expect(r.afterTokens).toBeLessThanOrEqual(target);
    expect(r.violations).toEqual([]);
    const view = activeView(session);
    expect(view[0]!.message).toBe(view0[0]!.message);
    // The answer is still the last message, an assistant's, edited in place: no thinking, first and last lines kept.
    const last = view.at(-1)!;
    expect(last.message.role).toBe('assistant');
    expect(last.entry).toBe(view0.at(-1)!.entry);
    expect(last.edit).toBe('compressed');
    expect(last.message.parts.some((p) => p.type === 'thinking')).toBe(false);
    const text = JSON.stringify(last.message);
    expect(text).toContain('answer line 0:');
    expect(text).toContain('answer line 299:');
    expect(text).not.toContain('answer line 150:');
    // …and read back whole through the reference it names.
    const ref = /"ref_id\\": \\"([^"\\]+)/.exec(text)?.[1];
    expect(ref).toBeDefined();
    expect((await store.read(ref!, { limit: 2000 })).text).toBe(body(300, 'answer'));
    expect(r.summaryNotes.join('\n')).toMatch(/last step's answer \(entry \d+\) was cut/);
    // The summary of the steps before it is still there.
    expect(view.some((v) => isSummaryItem(v))).toBe(true);
  });

  it('leaves the answer whole when a budget lets it stay', async () => {
    const session = longAnswer();
    const view0 = activeView(session);
    const size = await sizeOf(session);
    const r = await compact(session, { target: Math.floor(size * 0.6), prefixTokens: 0, now: NOW });
    expect(r.reachedTarget).toBe(true);
    expect(activeView(session).at(-1)!.message).toBe(view0.at(-1)!.message);
  });
});

describe('honest figures', () => {
  it('never reports less than the messages of the view come to, even when the provider reported less (a negative learned prefix)', async () => {
    const t = new PiTranscript();
    t.user(TASK);
    // The provider says the whole prompt was 50 tokens: less than the messages alone.
    for (let i = 0; i < 10; i++)
      t.step({
        text: `Step ${i}.`,
        calls: [{ name: 'bash', args: { command: `cat f${i}.txt` }, result: body(60, `f${i}`) }],
        usage: { input: 50, output: 10, cacheRead: 0, cacheWrite: 0 },
      });
    const session = build(t);
    const counter = new TokenCounter({ family: 'claude' });
    const r = await compact(session, { target: 1500, now: NOW, prefixTokens: 0 });
    const counted = activeView(session).reduce((n, v) => n + counter.message(v.message), 0);
    expect(r.afterTokens).toBeGreaterThanOrEqual(Math.floor(counted));
    expect(r.beforeTokens).toBeGreaterThan(1500);
    expect(r.afterTokens).toBeGreaterThanOrEqual(0);
    expect(r.reachedTarget).toBe(r.afterTokens <= 1500);
    for (const s of r.strategiesRun) expect(s.afterTokens).toBeGreaterThanOrEqual(0);
  });

  it('names what must stay verbatim and its size', async () => {
    const session = longSession();
    const r = await compact(session, { target: 10, prefixTokens: 0, now: NOW });
    expect(r.reachedTarget).toBe(false);
    expect(r.protectedTokens).toBeGreaterThan(10);
    expect(r.protectedParts.map((p) => p.what)).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^first user message \(entry \d+\)$/),
        expect.stringMatching(/^latest instruction \(entry \d+\)$/),
      ]),
    );
  });
});

describe('a target the archive note cannot fit beside what stays', () => {
  it('keeps the last step and names the note among what made the target unreachable', async () => {
    const make = () => {
      const t = new PiTranscript();
      t.user('Rename the flag.');
      t.step({ text: `Renamed --fast to --quick in src/cli.ts.\n${body(20, 'readme')}` });
      return build(t);
    };
    const counter = new TokenCounter({ family: 'claude' });
    const view0 = activeView(make());
    const first = counter.message(view0[0]!.message);
    // Room for the first request and a few tokens: less than the shortest note an archive leaves.
    const target = Math.ceil(first) + 4;
    const session = make();
    const r = await compact(session, { target, prefixTokens: 0, now: NOW });
    expect(r.reachedTarget).toBe(false);
    expect(activeView(session).map((v) => v.message)).toEqual(view0.map((v) => v.message));
    const note = r.protectedParts.find((p) => p.what === 'the note archiving anything needs, at its shortest');
    expect(note?.tokens).toBeGreaterThan(4);
    // Without the last step, what must stay and the note are still over the target: nothing could have reached it.
    const withoutLast = r.protectedParts.filter((p) => p.what !== 'the last step').reduce((n, p) => n + p.tokens, 0);
    expect(withoutLast).toBeGreaterThan(target);
    // With room for the note, the target is reached.
    const r2 = await compact(make(), { target: target + 40, prefixTokens: 0, now: NOW });
    expect(r2.reachedTarget).toBe(true);
    expect(r2.protectedParts.map((p) => p.what)).not.toContain('the note archiving anything needs, at its shortest');
  });
});

describe('cheap steps keep the evidence', () => {
  /** The task, one tool use, six reads after it; cleared to 80% of its size by clear-tool-results alone. */
  async function clearedAfter(call: NonNullable<Parameters<PiTranscript['step']>[0]['calls']>[number]) {
    const t = new PiTranscript();
    t.user(TASK);
    t.step({ calls: [call] });
    for (let i = 0; i < 6; i++)
      t.step({ calls: [{ name: 'read', args: { path: `src/r${i}.ts` }, result: body(30, `r${i}`) }] });
    const session = build(t);
    await compact(session, {
      target: Math.floor((await sizeOf(session)) * 0.8),
      prefixTokens: 0,
      now: NOW,
      strategies: ['clear-tool-results'],
    });
    return activeView(session);
  }

  it('a cleared error result keeps its exit status and first error lines', async () => {
    const view = await clearedAfter({
      name: 'bash',
      args: { command: 'npm test' },
      // pi's bash writes the exit code after the output.
      result: `${body(30, 'log')}\nError: expected 3 to be 4\n    at retry.test.ts:12\n\nCommand exited with code 1`,
      isError: true,
    });
    const cleared = view.find(
      (v) => v.edit === 'cleared' && v.message.parts.some((p) => p.type === 'tool-result' && p.isError),
    )!;
    const text = cleared.message.parts
      .map((p) => (p.type === 'tool-result' ? p.content.map((c) => (c.type === 'text' ? c.text : '')).join('') : ''))
      .join('');
    expect(text).toContain('exit 1');
    expect(text).toContain('Error: expected 3 to be 4');
    expect(text).toMatch(/read_result \{"ref_id": "r_[0-9a-f]{16}"\}/);
  });

  it("a cleared failure with no error word keeps what the command printed, not its harness's header (Codex's exec)", async () => {
    const printed = 'if any flags in the group [detailed json] are set none of the others can be';
    const view = await clearedAfter({
      name: 'exec_command',
      args: { cmd: 'entire status --detailed --json' },
      result: `Chunk ID: 42eb7d\nWall time: 0.0000 seconds\nProcess exited with code 1\nOriginal token count: 27\nOutput:\n${printed}\n${body(30, 'rest')}`,
    });
    const cleared = view.find(
      (v) => v.edit === 'cleared' && JSON.stringify(v.message).includes('It ended with exit 1'),
    )!;
    const text = JSON.stringify(cleared.message);
    expect(text).toContain('It ended with exit 1; first error lines:');
    expect(text).toContain(printed);
    expect(text).not.toContain('Chunk ID');
  });

  it('a cleared result that did not fail keeps the error-shaped lines it printed without being said to have failed', async () => {
    const printed = 'src/a.ts:3:1: error Unexpected any';
    const view = await clearedAfter({
      name: 'bash',
      args: { command: 'npm run lint' },
      result: `${body(30, 'lint')}\n${printed}`,
    });
    const cleared = view.find((v) => v.edit === 'cleared' && JSON.stringify(v.message).includes('Unexpected any'))!;
    const text = JSON.stringify(cleared.message);
    expect(text).toContain(printed);
    expect(text).toContain('It printed lines that read as errors (its record says it did not fail)');
    expect(text).not.toMatch(/ended with|first error lines/);
  });

  it('a cleared file read is not said to report errors for the words in it', async () => {
    const doc = `# Design\n${body(30, 'doc')}\n| **Fail-closed security** | errors stop the run; exit 1 |`;
    const view = await clearedAfter({ name: 'read', args: { path: 'docs/design.md' }, result: doc });
    const cleared = view.find((v) => v.edit === 'cleared' && JSON.stringify(v.message).includes('docs/design.md'));
    const text = JSON.stringify(cleared?.message ?? view);
    expect(text).not.toMatch(/read as errors|ended with|first error lines/);
  });

  it('stubs a large old tool input to its path, size and a reference that reads it back', async () => {
    const t = new PiTranscript();
    t.user(TASK);
    const content = body(2000, 'file');
    t.step({ calls: [{ name: 'write', args: { path: 'src/big.ts', content }, result: 'ok' }] });
    for (let i = 0; i < 4; i++) t.step({ calls: [{ name: 'read', args: { path: `src/s${i}.ts` }, result: 'small' }] });
    const session = build(t);
    const store = new MemoryResultStore();
    const r = await compact(session, {
      target: Math.floor((await sizeOf(session)) * 0.5),
      prefixTokens: 0,
      now: NOW,
      store,
      strategies: ['stub-inputs'],
    });
    expect(r.strategiesRun.map((s) => s.name)).toEqual(['stub-inputs']);
    const call = activeView(session)
      .flatMap((v) => v.message.parts)
      .find((p): p is ToolCallPart => p.type === 'tool-call' && p.name === 'write')!;
    const args = call.arguments as Record<string, string>;
    expect(args.path).toBe('src/big.ts');
    expect(args.content).toBeUndefined();
    const ref = /"ref_id": "(r_[0-9a-f]{16})"/.exec(args._abridged!)![1]!;
    expect((await store.read(ref)).text).toContain('file line 1999');
  });

  it("drops earlier turns' thinking but keeps the current turn's", async () => {
    const t = new PiTranscript();
    t.user(TASK);
    t.step({ thinking: 'old reasoning '.repeat(300), text: 'Old answer.' });
    t.user('Next.');
    t.step({
      thinking: 'current reasoning',
      text: 'Working.',
      calls: [{ name: 'read', args: { path: 'a.ts' }, result: 'x' }],
    });
    const session = build(t);
    await compact(session, {
      target: Math.floor((await sizeOf(session)) * 0.5),
      prefixTokens: 0,
      now: NOW,
      strategies: ['drop-thinking'],
    });
    const thinking = activeView(session)
      .flatMap((v) => v.message.parts)
      .filter((p) => p.type === 'thinking');
    expect(thinking).toHaveLength(1);
    expect(thinking[0]!.type === 'thinking' && thinking[0]!.text).toBe('current reasoning');
  });
});

describe('thinking a provider still needs', () => {
  const ctx = { protectedEntries: new Set<number>() } as unknown as StrategyContext;
  const thinkingLeft = (view: ViewItem[]) =>
    view.flatMap((v) => v.message.parts).filter((p) => p.type === 'thinking').length;
  /** The task and a step that thought, then read a file. */
  const reading = () => {
    const t = new PiTranscript();
    t.user(TASK);
    t.step({
      thinking: 'reading first',
      text: 'Reading.',
      calls: [{ name: 'read', args: { path: 'a.ts' }, result: 'x' }],
    });
    return t;
  };

  it('none once the turn has ended with the answer: the next request starts a new turn', async () => {
    const t = reading();
    t.step({ thinking: 'all done', text: 'Done: a.ts is fixed.' });
    const view = activeView(build(t));
    expect(thinkingLeft(view)).toBe(2);
    expect(thinkingLeft(await dropThinking.apply(view, ctx))).toBe(0);
  });

  it("the current turn's while its tool-use loop is under way", async () => {
    const view = activeView(build(reading()));
    await expect(dropThinking.apply(view, ctx)).rejects.toThrow(/no thinking a provider still needs/);
  });
});

describe('summaries as hand-offs', () => {
  it("never takes the harness's messages for the task", () => {
    for (const text of [
      '/compact',
      '<task-notification>done</task-notification>',
      '[Request interrupted by user for tool use]',
      '<command-name>/clear</command-name>',
      'Caveat: The messages below were generated by the user while running local commands.',
      // Cline and Roo Code append it to every user turn, a tool result's included.
      '<environment_details>\n# VSCode Visible Files\nsrc/a.ts\n</environment_details>',
    ]) {
      expect(isHarnessText(text)).toBe(true);
      expect(isRequest({ role: 'user', parts: [{ type: 'text', text }] })).toBe(false);
    }
    expect(isRequest({ role: 'user', parts: [{ type: 'text', text: TASK }] })).toBe(true);
    // Cline's task, with the environment block after it, is the person's.
    expect(
      isRequest({
        role: 'user',
        parts: [
          { type: 'text', text: `<task>\n${TASK}\n</task>` },
          { type: 'text', text: '<environment_details>\n…\n</environment_details>' },
        ],
      }),
    ).toBe(true);
  });

  it('the primary request is the first real request, the summary has the hand-off sections, and user messages are quoted whole', async () => {
    const t = new PiTranscript();
    t.user('/compact');
    t.user(TASK);
    const long = `Constraint: ${'never retry a POST; '.repeat(30)}end.`;
    t.user(long);
    t.step({
      text: 'I will run the tests.',
      calls: [
        {
          name: 'bash',
          args: { command: 'npm test' },
          result: 'Error: boom\n\nCommand exited with code 1',
          isError: true,
        },
      ],
    });
    t.user('[Request interrupted by user]');
    t.step({
      text: 'The fix is to await the timer.',
      calls: [{ name: 'edit', args: { path: 'src/net/retry.ts', old_string: 'a', new_string: 'b' }, result: 'ok' }],
    });
    t.step({ calls: [{ name: 'bash', args: { command: 'npm test' }, result: 'all passed' }] });
    for (let i = 0; i < 8; i++)
      t.step({
        text: `Next, I will check part ${i}.`,
        calls: [{ name: 'read', args: { path: `src/p${i}.ts` }, result: body(40, `p${i}`) }],
      });
    t.user('Good. Now the docs.');
    t.step({ text: 'On it.' });
    const session = build(t);
    const summarizer = new Recording();
    const r = await compact(session, {
      target: Math.floor((await sizeOf(session)) * 0.45),
      prefixTokens: 0,
      now: NOW,
      summarizer,
      strategies: ['summarize', 'truncate'],
    });
    expect(r.reachedTarget).toBe(true);
    expect(summarizer.requests[0]!.task).toBe(TASK);
    const text = r.marker!.summary;
    for (const h of [
      '### Primary request',
      '### User messages (verbatim)',
      '### Where the work stands',
      '### Files modified',
      '### Commands run',
    ])
      expect(text).toContain(h);
    expect(text).toContain(long);
    // The harness's text is not quoted among the person's words: it is listed apart, as what happened.
    const said = /### User messages \(verbatim\)\n([\s\S]*?)\n\n###/.exec(text)?.[1];
    expect(said).toContain('Constraint: never retry');
    expect(said).not.toContain('Request interrupted');
    expect(text).toMatch(/### Harness messages\n- \[Request interrupted by user\](\n|$)/);
    // The newest archived request is not the next step: a newer one stays in view.
    expect(text).not.toContain('Next step: go on with the latest request');
    // The failure is resolved by the same command succeeding after the edit — said as such, with no exit status the
    // records do not give.
    expect(text).toMatch(
      /`npm test` \(exit 1\): Error: boom → the same command succeeded later, after edits to src\/net\/retry\.ts/,
    );
    expect(text).toContain('src/net/retry.ts — edited');
    expect(text).not.toContain('exit 0');
  });

  it("keeps an agent's own earlier summary whole instead of archiving it away", async () => {
    const t = new PiTranscript();
    t.user(TASK);
    for (let i = 0; i < 4; i++)
      t.step({ calls: [{ name: 'bash', args: { command: `echo ${i}` }, result: body(20, `e${i}`) }] });
    const records = t.records;
    const firstKept = records[records.length - 2]!.id as string;
    const earlier = 'EARLIER-SUMMARY: the retry loop was rewritten; tests pass.';
    records.push({
      type: 'compaction',
      id: 'c0001',
      parentId: records[records.length - 1]!.id,
      timestamp: '2026-01-01T00:00:00.000Z',
      summary: earlier,
      firstKeptEntryId: firstKept,
      tokensBefore: 5000,
    });
    // Later records hang off the compaction, as pi writes them.
    (t as unknown as { last: string }).last = 'c0001';
    const session0 = build(t);
    expect(activeView(session0).some(isSummaryItem)).toBe(true);
    const t2 = t;
    for (let i = 0; i < 10; i++)
      t2.step({ calls: [{ name: 'bash', args: { command: `ls dir${i}` }, result: body(40, `d${i}`) }] });
    const session = build(t2);
    const r = await compact(session, {
      target: Math.floor((await sizeOf(session)) * 0.4),
      prefixTokens: 0,
      now: NOW,
      strategies: ['summarize', 'truncate'],
    });
    const view = activeView(session);
    expect(r.reachedTarget).toBe(true);
    expect(view.map((v) => summaryText(v.message)).join('\n')).toContain(earlier);
    // Shown once, where pi put it, as pi's own message: the only record of what pi replaced is never squeezed or
    // re-summarized away, and it counts among what must stay verbatim.
    expect(view.filter((v) => agentSummary(v.message)).map((v) => summaryText(v.message))).toEqual([earlier]);
    expect(r.protectedParts.map((p) => p.what)).toContain("the agent's own summary of earlier work");
    expect(view.filter((v) => summaryText(v.message).includes(earlier))).toHaveLength(1);
    expect(Math.abs(r.afterTokens - (await sizeOf(session)))).toBeLessThanOrEqual(1);
  });
});
