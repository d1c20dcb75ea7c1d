#!/usr/bin/env node
/**
 * The per-turn overhead of ContextManager: `prepare()` + `recordResponse()` + `append(tool result)` on turns without
 * compaction, for sessions of 250 / 2,000 / 8,000 messages (a window large enough that none compacts), then the slope
 * per 1,000 messages; beside it, the trivial baseline of re-measuring the whole session each turn (`contextBreakdown`,
 * what `prepare()` did before). Compaction turns are timed apart, on a 40,000-token window. Uses dist/ (run it through
 * `npm run bench:turn`, which builds first).
 *
 * Then the history grows under a view that does not (a 200,000-token window compacting as it must): plain and
 * compacting turns at 2,000 / 8,000 / 32,000 entries of history (128,000 with --scale), and their slopes.
 *
 *   node bench/turn.js [--turns 60] [--scale 128000 --store sqlite] [--json]
 */
import { dirname, join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const abridge = await import(pathToFileURL(join(ROOT, 'dist', 'index.js')).href);
const { ContextManager, contextBreakdown } = abridge;

const args = process.argv.slice(2);
const TURNS = Number(args[args.indexOf('--turns') + 1]) || 60;
const JSON_OUT = args.includes('--json');
const SIZES = [250, 2000, 8000];

const resultText = (i, lines = 30) =>
  Array.from(
    { length: lines },
    (_, k) => `src/mod${i % 97}/file${k}.ts:${k + 1}: export const value${k} = compute(${k}, "turn ${i}");`,
  ).join('\n');
const call = (i) => ({
  role: 'assistant',
  parts: [
    { type: 'text', text: `Looking at module ${i % 97}.` },
    { type: 'tool-call', id: `call_${i}`, name: 'bash', arguments: { command: `grep -rn value src/mod${i % 97}` } },
  ],
});
const result = (i, lines = 30) => ({
  role: 'tool',
  parts: [
    {
      type: 'tool-result',
      callId: `call_${i}`,
      toolName: 'bash',
      isError: false,
      content: [{ type: 'text', text: resultText(i, lines) }],
    },
  ],
});
const config = (window) => ({
  budget: {
    thresholds: { warn: 0.8, compact: 0.9, block: 0.98, target: 0.6 },
    allocations: {},
    models: {},
    contextWindow: window,
  },
});

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.floor(s.length / 2)] : NaN;
};

/** A manager holding `messages` messages (user task + steps of call and result), usage reported on every response. */
async function grow(messages, window) {
  const cm = new ContextManager({
    model: 'claude-sonnet-4-5',
    provider: 'anthropic',
    config: config(window),
    system: 'You are a coding agent. Keep going until the task is done.',
  });
  await cm.append({ role: 'user', parts: [{ type: 'text', text: 'Survey every module for uses of value.' }] });
  let i = 0;
  let billed = 2000;
  // Grown without prepare(): the history a long session has, built in O(n) (the usage grows as a bill would).
  while (cm.session.entries.length < messages) {
    billed += 700;
    await cm.recordResponse(call(i), { input: 10, output: 50, cacheRead: billed - 10, cacheWrite: 0 });
    await cm.append(result(i));
    i++;
  }
  await cm.prepare({ maxOutputTokens: 8000 });
  return { cm, next: i, billed };
}

async function timeTurns(cm, from, turns, window) {
  const plain = [];
  const compacting = [];
  for (let i = from; i < from + turns; i++) {
    const t0 = performance.now();
    const p = await cm.prepare({ maxOutputTokens: 8000 });
    await cm.recordResponse(call(i), { input: 10, output: 50, cacheRead: p.pressure.predicted - 10, cacheWrite: 0 });
    await cm.append(result(i));
    const ms = performance.now() - t0;
    (p.compaction ? compacting : plain).push(ms);
  }
  return { plain, compacting };
}

const rows = [];
for (const size of SIZES) {
  const { cm, next } = await grow(size, 100_000_000);
  const { plain } = await timeTurns(cm, next, TURNS);
  const snaps = [];
  for (let k = 0; k < 7; k++) {
    const t0 = performance.now();
    contextBreakdown(cm.session, { settings: { ...config(100_000_000).budget, model: 'claude-sonnet-4-5' } });
    snaps.push(performance.now() - t0);
  }
  rows.push({
    messages: size,
    turnMs: median(plain),
    p90Ms: [...plain].sort((a, b) => a - b)[Math.floor(plain.length * 0.9)],
    wholeSessionMs: median(snaps),
  });
}
const first = rows[0];
const last = rows[rows.length - 1];
const slope = ((last.turnMs - first.turnMs) / (last.messages - first.messages)) * 1000;
const baseSlope = ((last.wholeSessionMs - first.wholeSessionMs) / (last.messages - first.messages)) * 1000;

// Compaction turns, apart: a 40,000-token window compacts every few turns.
const small = await grow(3, 40_000);
const comp = await timeTurns(small.cm, small.next, 120);

// The history grows, the view does not: a 200,000-token window whose manager compacts as it must, timed at 2,000 /
// 8,000 / 32,000 entries of history (`--scale 128000` goes on to 128,000: with `--store sqlite`, as the in-memory
// store would hold ~2 GB). Each compaction restarts the working session from its view, so a turn — plain or
// compacting — costs what the view costs, not the history.
const SCALE_MAX = Number(args[args.indexOf('--scale') + 1]) || 32_000;
const SCALE = [2000, 8000, 32_000, 128_000].filter((n) => n <= SCALE_MAX);
const scaleRows = [];
{
  // Results of 12 lines: a view of a few hundred messages fills the window.
  const shortResult = (i) => result(i, 12);
  // `--store sqlite`: the history in a SQLite file (what a long-running agent uses), not in this process's memory.
  const sqlite = args.includes('--store') && args[args.indexOf('--store') + 1] === 'sqlite';
  let store;
  let results;
  if (sqlite) {
    const { openSqliteStore } = await import(pathToFileURL(join(ROOT, 'dist', 'store', 'sqlite', 'index.js')).href);
    const { mkdtempSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    store = await openSqliteStore(join(mkdtempSync(join(tmpdir(), 'abridge-turn-')), 'agent.sqlite'));
    results = store.results;
  }
  const cm = new ContextManager({
    model: 'claude-sonnet-4-5',
    provider: 'anthropic',
    config: config(200_000),
    system: 'You are a coding agent. Keep going until the task is done.',
    ...(store ? { store, results } : {}),
  });
  await cm.append({ role: 'user', parts: [{ type: 'text', text: 'Survey every module for uses of value.' }] });
  let history = 1;
  let i = 0;
  const turn = async () => {
    const t0 = performance.now();
    const p = await cm.prepare({ maxOutputTokens: 8000 });
    await cm.recordResponse(call(i), { input: 10, output: 50, cacheRead: p.pressure.predicted - 10, cacheWrite: 0 });
    await cm.append(shortResult(i));
    i++;
    history += 2;
    return { ms: performance.now() - t0, compacted: p.compaction !== undefined, view: p.messages.length };
  };
  for (const target of SCALE) {
    while (history < target) await turn();
    const plain = [];
    const compacting = [];
    const views = [];
    // Plain turns at this size, then on until three compactions were timed.
    while (plain.length < TURNS || compacting.length < 3) {
      const t = await turn();
      (t.compacted ? compacting : plain).push(t.ms);
      views.push(t.view);
    }
    scaleRows.push({
      history: target,
      view: median(views),
      plainMs: median(plain),
      compactingMs: median(compacting),
      heapMiB: process.memoryUsage().heapUsed / 1048576,
    });
  }
}
const sFirst = scaleRows[0];
const sLast = scaleRows[scaleRows.length - 1];
const per = (a, b, k) => ((b[k] - a[k]) / (b.history - a.history)) * 1000;

const out = {
  turns: TURNS,
  rows,
  scale: {
    rows: scaleRows,
    plainSlopeMsPer1000: scaleRows.length > 1 ? per(sFirst, sLast, 'plainMs') : undefined,
    compactingSlopeMsPer1000: scaleRows.length > 1 ? per(sFirst, sLast, 'compactingMs') : undefined,
  },
  slopeMsPer1000: slope,
  baselineSlopeMsPer1000: baseSlope,
  compaction: { turns: comp.compacting.length, medianMs: median(comp.compacting), plainMedianMs: median(comp.plain) },
};
if (JSON_OUT) console.log(JSON.stringify(out, null, 2));
else {
  const f = (n) => n.toFixed(3);
  console.log(
    `prepare() + recordResponse() + append(result) per turn, median of ${TURNS} turns without compaction (ms)\n`,
  );
  console.log('| messages | turn (median) | turn (p90) | baseline: whole-session snapshot per turn |');
  console.log('|--:|--:|--:|--:|');
  for (const r of rows)
    console.log(`| ${r.messages.toLocaleString('en-US')} | ${f(r.turnMs)} | ${f(r.p90Ms)} | ${f(r.wholeSessionMs)} |`);
  console.log(
    `\nslope: ${f(slope)} ms per 1,000 messages (baseline ${f(baseSlope)}); ratio 8,000/250: ${(last.turnMs / first.turnMs).toFixed(2)}× (baseline ${(last.wholeSessionMs / first.wholeSessionMs).toFixed(2)}×)`,
  );
  console.log(
    `compaction turns (40,000-token window, 120 turns): ${comp.compacting.length} compactions, median ${f(out.compaction.medianMs)} ms; other turns median ${f(out.compaction.plainMedianMs)} ms`,
  );
  console.log(
    '\nhistory against view: a 200,000-token window compacting as it must (targets: plain ≤ 1 ms, compacting ≤ 25 ms at 32K, flat)\n',
  );
  console.log(
    '| history (entries) | view (messages, median) | plain turn (median ms) | compacting turn (median ms) | heap (MiB) |',
  );
  console.log('|--:|--:|--:|--:|--:|');
  for (const r of scaleRows)
    console.log(
      `| ${r.history.toLocaleString('en-US')} | ${r.view} | ${f(r.plainMs)} | ${f(r.compactingMs)} | ${r.heapMiB.toFixed(0)} |`,
    );
  if (scaleRows.length > 1)
    console.log(
      `\nslope per 1,000 entries of history: plain ${f(out.scale.plainSlopeMsPer1000)} ms, compacting ${f(out.scale.compactingSlopeMsPer1000)} ms`,
    );
}
