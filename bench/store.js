#!/usr/bin/env node
/**
 * Session store benchmarks: how fast the SQLite store (and the PostgreSQL store, when a server is given) appends,
 * resumes a compacted session, and round-trips a real transcript. Run it through `npm run bench:store`, which builds
 * first; this file only uses dist/.
 *
 *   node bench/store.js [--json] [--runs 3] [--resume-runs 20] [--writers 8] [--writer-appends 1000]
 *
 * For each store:
 * (a) batched appends: 50,000 entries in batches of 1,000 into a new session (median of --runs; target ≥ 20,000/s);
 * (b) single-entry appends with expectedVersion, 1,000 per run (median of --runs);
 * (c) resume of a compacted 2,000-message session: 2,000 synthetic pi messages (user requests, assistant tool calls,
 *     tool results), imported, compacted with compact() to 50,000 tokens, recorded with recordCompaction (snapshot =
 *     activeView messages); then resume() timed --resume-runs times (median; target < 20 ms), with resume() on the
 *     same history without a snapshot alongside for comparison;
 * (d) import + export round trip of the 2.4 MB pi-mono transcript from the shared corpus (../shared/corpus or
 *     $ABRIDGE_CORPUS): readSession + importSession, then loadSession + writeSession, checked byte-identical;
 * (e) concurrent writers on one session, each writer appending one entry at a time and awaiting each append; every
 *     scenario checked to hold exactly the entries written, each writer's in its own order. Timed from a start barrier
 *     (every child connected) to the last child's end, so process start-up is not counted. Median of --runs, the
 *     scenarios of one run measured back to back (so a busy moment of the machine weighs on all of them):
 *     - --writers child processes × --writer-appends appends, queued (no expectedVersion: the store orders them;
 *       target ≥ 5,000 appends/s for PostgreSQL);
 *     - 1 child process appending writers × appends entries alone (the single-writer figure);
 *     - --writers async writers inside 1 child process on one store (its appends to one session are queued and
 *       committed together: group commit), with the number of transactions that wrote the entries;
 *     - PostgreSQL only, the round-trip baselines: the same --writers processes, and 1 process, each doing only
 *       `SELECT 1` round trips on one pg.Client, as many as the appends;
 *     - once (not per run): --writers processes appending optimistically (expectedVersion, re-read and retry on CONFLICT).
 *
 * --only a,b,c,d,e runs only those measures.
 * PostgreSQL runs when ABRIDGE_PG_URL is set (a postgres:// URL; `eval "$(scripts/pg-test-server.sh start)"` starts a
 * throwaway server), in a new schema dropped afterwards; otherwise it prints that it was skipped and why. Every
 * PostgreSQL measure, its SELECT 1 baselines included, connects through that URL; the transport it names (TCP, or a Unix
 * socket: a host that is a directory, as in the ABRIDGE_PG_SOCKET_URL the script also prints) is printed with the
 * figures and in the labels of the concurrent-writer rows.
 *
 * Prints a table; `--json` prints the figures as JSON instead. Exits 1 if a measured operation fails or a check
 * (byte-identical round trip, exact entry counts) does not hold, not when a target is missed.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const DIST = join(ROOT, 'dist');
const SELF = fileURLToPath(import.meta.url);
const CORPUS = process.env.ABRIDGE_CORPUS ?? resolve(ROOT, '..', 'shared', 'corpus');
const PI_MONO = join(CORPUS, 'pi', 'badlogic__pi-mono__before-compaction.jsonl');
const dist = (p) => import(pathToFileURL(join(DIST, p)).href);

// ---------------------------------------------------------------------------------------------------------------------
// Arguments

function parseArgs(argv) {
  const opts = {
    json: false,
    runs: 3,
    resumeRuns: 20,
    writers: 8,
    writerAppends: 1000,
    only: new Set(['a', 'b', 'c', 'd', 'e']),
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const value = () => {
      const v = argv[++i];
      if (v === undefined) usage(`${a} needs a value`);
      return positive(a, v);
    };
    if (a === '--json') opts.json = true;
    else if (a === '--runs') opts.runs = value();
    else if (a === '--resume-runs') opts.resumeRuns = value();
    else if (a === '--writers') opts.writers = value();
    else if (a === '--writer-appends') opts.writerAppends = value();
    else if (a === '--only') opts.only = new Set((argv[++i] ?? '').split(',').map((x) => x.trim()));
    else if (a === '-h' || a === '--help') usage();
    else usage(`unknown argument: ${a}`);
  }
  return opts;
}

function positive(name, v) {
  const n = Number(v);
  if (!Number.isInteger(n) || n <= 0) usage(`${name} must be a positive whole number`);
  return n;
}

function usage(error) {
  if (error) console.error(`bench/store.js: ${error}`);
  console.error(
    'usage: node bench/store.js [--json] [--runs 3] [--resume-runs 20] [--writers 8] [--writer-appends 1000] [--only a,b,c,d,e]',
  );
  process.exit(error ? 2 : 0);
}

// ---------------------------------------------------------------------------------------------------------------------
// Child mode: concurrent writers (spawned by this script itself).
//   node bench/store.js --writer <sqlite|postgres> <db> <schema> <sessionId> <worker> <count> <queued|optimistic|select1> [<loops>]

async function writer([kind, db, schema, sessionId, worker, count, mode, loops = '1']) {
  if (mode === 'select1') return roundTrips(db, Number(count));
  const store =
    kind === 'sqlite'
      ? await (await dist('store/sqlite/index.js')).openSqliteStore(db)
      : await (await dist('store/postgres/index.js')).openPostgresStore(db, { schema });
  await store.getSession(sessionId); // connected and warm
  // Start barrier: say ready, wait for the parent's go (one line on stdin).
  process.stdout.write('ready\n');
  await new Promise((res) => process.stdin.once('data', res));
  const start = performance.timeOrigin + performance.now();
  let conflicts = 0;
  // `loops` writers in this process, on this one store, each awaiting its own appends.
  const one = async (name) => {
    for (let i = 0; i < Number(count); i++) {
      const e = {
        kind: 'message',
        message: { role: 'user', parts: [{ type: 'text', text: `${name}:${i}` }] },
        raw: { worker: name, i },
      };
      if (mode === 'queued') {
        await store.append(sessionId, [e]);
        continue;
      }
      for (;;) {
        const { version } = await store.getSession(sessionId);
        try {
          await store.append(sessionId, [e], { expectedVersion: version });
          break;
        } catch (err) {
          if (err.code !== 'CONFLICT') throw err;
          conflicts++;
        }
      }
    }
  };
  await Promise.all(
    Array.from({ length: Number(loops) }, (_, l) => one(Number(loops) > 1 ? `${worker}.${l}` : worker)),
  );
  const end = performance.timeOrigin + performance.now();
  await store.close();
  process.stdout.write(`${JSON.stringify({ conflicts, start, end })}\n`);
  process.stdin.pause();
}

/** The round-trip baseline: `count` `SELECT 1` queries, one after another, on one pg.Client. */
async function roundTrips(url, count) {
  const { default: pg } = await import('pg');
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  await client.query('SELECT 1');
  process.stdout.write('ready\n');
  await new Promise((res) => process.stdin.once('data', res));
  const start = performance.timeOrigin + performance.now();
  for (let i = 0; i < count; i++) await client.query('SELECT 1');
  const end = performance.timeOrigin + performance.now();
  await client.end();
  process.stdout.write(`${JSON.stringify({ conflicts: 0, start, end })}\n`);
  process.stdin.pause();
}

// ---------------------------------------------------------------------------------------------------------------------
// Statistics, formatting

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const int = (n) => Math.round(n).toLocaleString('en-US');
const ms = (v) => `${v < 100 ? v.toFixed(v < 10 ? 2 : 1) : int(v)} ms`;

/** A row: `value` in `unit` ('ms' lower is better, '/s' higher is better), with samples and an optional target. */
function row(store, label, unit, samples, target, note) {
  const r = { store, label, unit, samples: samples.map((s) => Math.round(s * 100) / 100), median: median(samples) };
  r.best = unit === 'ms' ? Math.min(...samples) : Math.max(...samples);
  if (target !== undefined) {
    r.target = target;
    r.ok = unit === 'ms' ? r.median < target : r.median >= target;
  }
  if (note) r.note = note;
  return r;
}

function table(rows) {
  const show = (r, v) => (r.unit === 'ms' ? ms(v) : `${int(v)} ${r.unit}`);
  const cells = rows.map((r) =>
    r.skipped
      ? [r.store, r.label, '—', '—', '—', '', `skipped: ${r.skipped}`]
      : [
          r.store,
          r.label,
          show(r, r.median),
          show(r, r.best),
          r.target === undefined ? '—' : `${r.unit === 'ms' ? '<' : '≥'} ${show(r, r.target)}`,
          r.target === undefined ? '' : r.ok ? 'yes' : 'NO',
          r.note ?? '',
        ],
  );
  const head = ['store', 'measure', 'median', 'best', 'target', 'ok', 'note'];
  const widths = head.map((h, c) => Math.max(h.length, ...cells.map((r) => r[c].length)));
  const left = new Set([0, 1, 5, 6]);
  const line = (r) => `| ${r.map((v, c) => (left.has(c) ? v.padEnd(widths[c]) : v.padStart(widths[c]))).join(' | ')} |`;
  const rule = widths.map((w, c) => (left.has(c) ? '-'.repeat(w + 2) : `${'-'.repeat(w + 1)}:`));
  return [line(head), `|${rule.join('|')}|`, ...cells.map(line)].join('\n');
}

// ---------------------------------------------------------------------------------------------------------------------
// Data

const FILLER =
  'The service reads invoices from the queue, validates totals against line items and writes them to the ledger. ';

/** A realistic small entry: a message with a raw record, ~400 bytes of JSON. */
function entry(i) {
  const role = i % 2 ? 'assistant' : 'user';
  const text = `${i}: ${FILLER}${FILLER.slice(0, (i * 7) % 100)}`;
  return {
    kind: 'message',
    sourceType: 'message',
    id: `e${i}`,
    timestamp: 1_760_000_000_000 + i,
    message: { role, parts: [{ type: 'text', text }] },
    raw: { type: 'message', id: `e${i}`, message: { role, content: text } },
  };
}

/**
 * A pi (v3) transcript of `n` messages: a user request, then steps of an assistant tool call and its result (a few KB
 * of output), a user follow-up every 40 messages. Deterministic.
 */
function syntheticPi(n) {
  const t0 = Date.parse('2026-01-01T00:00:00.000Z');
  const lines = [
    {
      type: 'session',
      version: 3,
      id: 'bench-session',
      timestamp: new Date(t0).toISOString(),
      cwd: '/work/invoice-service',
    },
  ];
  let parent = null;
  let call = 0;
  const push = (message, i) => {
    const id = `m${i}`;
    lines.push({
      type: 'message',
      id,
      parentId: parent,
      timestamp: new Date(t0 + i * 1000).toISOString(),
      message: { ...message, timestamp: t0 + i * 1000 },
    });
    parent = id;
  };
  for (let i = 0; i < n; ) {
    if (i % 40 === 0) {
      push(
        {
          role: 'user',
          content: [
            {
              type: 'text',
              text: `Step ${i / 40 + 1}: refactor module ${i / 40} of the invoice service and keep the tests green. ${FILLER}`,
            },
          ],
        },
        i++,
      );
      continue;
    }
    const id = `call_${call++}`;
    const file = `src/module${call % 50}/file${call % 17}.ts`;
    push(
      {
        role: 'assistant',
        content: [
          { type: 'text', text: `Reading ${file} to see how totals are computed.` },
          { type: 'toolCall', id, name: 'read', arguments: { path: file } },
        ],
        provider: 'anthropic',
        model: 'claude-sonnet-4-5',
        usage: { input: 1000 + i * 150, output: 120, cacheRead: 0, cacheWrite: 0, totalTokens: 1120 + i * 150 },
        stopReason: 'toolUse',
      },
      i++,
    );
    if (i >= n) break;
    const output = Array.from(
      { length: 40 },
      (_, l) =>
        `${String(l + 1).padStart(4)}  export function total${l}(items: Item[]): number { return items.reduce((s, it) => s + it.price * it.qty, 0); }`,
    ).join('\n');
    push(
      {
        role: 'toolResult',
        toolCallId: id,
        toolName: 'read',
        content: [{ type: 'text', text: output }],
        isError: false,
      },
      i++,
    );
  }
  return `${lines.map((l) => JSON.stringify(l)).join('\n')}\n`;
}

// ---------------------------------------------------------------------------------------------------------------------
// Measures (the same for every store)

/**
 * `target`: { fresh(): a store on a new, empty database (SQLite) or the bench schema (PostgreSQL); again(): the store
 * `fresh` last opened, once more; writerArgs: how a writer child opens it }.
 */
async function measureStore(name, target, opts, lib) {
  const open = target.fresh;
  const rows = [];
  const info = {};
  let ids = 0;
  const newId = (label) => `${label}-${process.pid}-${ids++}`;
  // (a) batched appends
  if (opts.only.has('a')) {
    const rates = [];
    for (let run = 0; run < opts.runs; run++) {
      const store = await open();
      const { id } = await store.createSession({ format: 'pi', info: {} });
      const batches = Array.from({ length: 50 }, (_, b) => Array.from({ length: 1000 }, (_, i) => entry(b * 1000 + i)));
      const t = performance.now();
      for (let b = 0; b < batches.length; b++) await store.append(id, batches[b], { expectedVersion: b * 1000 });
      const s = (performance.now() - t) / 1000;
      const { version } = await store.getSession(id);
      await store.close();
      if (version !== 50_000)
        throw new Error(`${name}: expected 50,000 entries after the batched appends, found ${version}`);
      rates.push(50_000 / s);
    }
    rows.push(row(name, 'append, batches of 1,000 (50,000 entries)', 'entries/s', rates, 20_000));
  }
  // (b) single appends
  if (opts.only.has('b')) {
    const rates = [];
    for (let run = 0; run < opts.runs; run++) {
      const store = await open();
      const { id } = await store.createSession({ format: 'pi', info: {} });
      const t = performance.now();
      for (let i = 0; i < 1000; i++) await store.append(id, [entry(i)], { expectedVersion: i });
      rates.push(1000 / ((performance.now() - t) / 1000));
      await store.close();
    }
    rows.push(row(name, 'append, single entries (1,000)', 'entries/s', rates));
  }
  // (c) resume of a compacted 2,000-message session
  if (opts.only.has('c')) {
    const session = lib.parseSession(syntheticPi(2000), { format: 'pi' });
    const messages0 = session.entries.filter((e) => e.message).length;
    const store = await open();
    const stored = await lib.importSession(store, session, newId('resume'));
    const t = performance.now();
    const result = await lib.compact(session, { target: 50_000 });
    const compactMs = performance.now() - t;
    if (!result.entry) throw new Error(`${name}: the synthetic session did not compact`);
    const view = lib.activeMessages(session);
    await store.recordCompaction(
      stored.id,
      [result.entry],
      { messages: view, marker: result.marker, tokens: result.afterTokens },
      { expectedVersion: stored.version },
    );
    const times = [];
    for (let i = 0; i < opts.resumeRuns; i++) {
      const t1 = performance.now();
      const r = await store.resume(stored.id);
      times.push(performance.now() - t1);
      if (!r.fromSnapshot || r.messages.length !== view.length)
        throw new Error(`${name}: resume did not return the snapshot`);
    }
    rows.push(
      row(
        name,
        `resume, compacted 2,000-message session (${int(view.length)} messages from the snapshot)`,
        'ms',
        times,
        20,
      ),
    );
    info.resume = {
      messages: messages0,
      entries: session.entries.length,
      tokensBefore: result.beforeTokens,
      tokensAfter: result.afterTokens,
      snapshotMessages: view.length,
      compactMs: Math.round(compactMs),
    };
    // The same history without a snapshot: resume replays it (activeView of everything).
    const plain = await lib.importSession(store, lib.parseSession(syntheticPi(2000), { format: 'pi' }), newId('plain'));
    const plainTimes = [];
    for (let i = 0; i < Math.min(opts.resumeRuns, 5); i++) {
      const t1 = performance.now();
      await store.resume(plain.id);
      plainTimes.push(performance.now() - t1);
    }
    rows.push(row(name, 'resume, same 2,000 messages without a snapshot (full replay)', 'ms', plainTimes));
    await store.close();
  }
  // (d) import + export round trip of the 2.4 MB pi-mono transcript
  if (!opts.only.has('d')) {
    // not asked for
  } else if (existsSync(PI_MONO)) {
    const original = readFileSync(PI_MONO, 'utf8');
    const imports = [];
    const exports = [];
    for (let run = 0; run < opts.runs; run++) {
      const store = await open();
      let t = performance.now();
      const session = await lib.readSession(PI_MONO);
      const stored = await lib.importSession(store, session, newId('pi-mono'));
      imports.push(performance.now() - t);
      t = performance.now();
      const written = lib.writeSession(await lib.loadSession(store, stored.id));
      exports.push(performance.now() - t);
      await store.close();
      if (written !== original) throw new Error(`${name}: the pi-mono round trip is not byte-identical`);
    }
    rows.push(row(name, 'import 2.4 MB pi-mono transcript (read + store)', 'ms', imports, undefined, 'byte-identical'));
    rows.push(row(name, 'export it back (load + write)', 'ms', exports, undefined, 'byte-identical'));
    rows.push(
      row(
        name,
        'round trip (import + export)',
        'ms',
        imports.map((v, i) => v + exports[i]),
      ),
    );
  } else {
    rows.push({
      store: name,
      label: 'import + export of the 2.4 MB pi-mono transcript',
      skipped: `${PI_MONO} not found (set ABRIDGE_CORPUS)`,
    });
  }
  // (e) concurrent writers on one session
  if (opts.only.has('e')) {
    const W = opts.writers;
    const A = opts.writerAppends;
    const total = W * A;
    const pg = name === 'PostgreSQL';
    /**
     * One scenario: `procs` child processes, each running `loops` writers of `count` appends (or `count` SELECT 1 round
     * trips), started together; checked (appends) to hold exactly procs × loops × count entries, each writer's in order.
     */
    const scenario = async (procs, loops, count, mode) => {
      const label = `${mode}-${procs}x${loops}`;
      let id = '-';
      if (mode !== 'select1') {
        const store = await open();
        ({ id } = await store.createSession({ id: newId(`writers-${label}`), format: 'pi', info: {} }));
        await store.close();
      }
      const children = Array.from({ length: procs }, (_, w) =>
        runChild([SELF, '--writer', ...target.writerArgs(), id, `w${w}`, String(count), mode, String(loops)]),
      );
      await Promise.all(children.map((c) => c.ready));
      for (const c of children) c.go();
      const results = await Promise.all(children.map((c) => c.done));
      for (const r of results)
        if (r.code !== 0) throw new Error(`${name}: a ${label} writer failed (exit ${r.code}): ${r.stderr.trim()}`);
      const reports = results.map((r) => JSON.parse(r.stdout.trim().split('\n').pop()));
      const conflicts = reports.reduce((n, r) => n + r.conflicts, 0);
      const wall = Math.max(...reports.map((r) => r.end)) - Math.min(...reports.map((r) => r.start));
      const expected = procs * loops * count;
      const out = { rate: expected / (wall / 1000), wall, conflicts, expected };
      if (mode === 'select1') return out;
      const check = await target.again();
      const entries = await check.entries(id);
      await check.close();
      const byWriter = new Map();
      for (const e of entries) {
        if (!byWriter.has(e.raw.worker)) byWriter.set(e.raw.worker, []);
        byWriter.get(e.raw.worker).push(e.raw.i);
      }
      const inOrder =
        byWriter.size === procs * loops &&
        [...byWriter.values()].every((is) => is.length === count && is.every((v, i) => v === i));
      if (entries.length !== expected || !inOrder) {
        throw new Error(
          `${name}: ${procs} processes × ${loops} writers × ${count} appends gave ${entries.length} entries (expected exactly ${expected}, each writer in order)`,
        );
      }
      if (target.transactions) out.transactions = await target.transactions(id);
      return out;
    };
    const runs = { rt8: [], q8: [], rt1: [], q1: [], g8: [] };
    for (let run = 0; run < opts.runs; run++) {
      if (pg) runs.rt8.push(await scenario(W, 1, A, 'select1'));
      runs.q8.push(await scenario(W, 1, A, 'queued'));
      if (pg) runs.rt1.push(await scenario(1, 1, total, 'select1'));
      runs.q1.push(await scenario(1, 1, total, 'queued'));
      runs.g8.push(await scenario(1, W, A, 'queued'));
    }
    const rates = (xs) => xs.map((x) => x.rate);
    const ofBaseline = (xs, base) =>
      base.length
        ? `; ${Math.round(median(xs.map((x, i) => (100 * x.rate) / base[i].rate)))}% of the SELECT 1 baseline of the same runs`
        : '';
    const conflicts = (xs) => `${int(xs.reduce((n, x) => n + x.conflicts, 0))} conflicts`;
    const n = int(total);
    if (pg)
      rows.push(
        row(
          name,
          `baseline: ${W} processes × ${int(A)} SELECT 1 round trips (one pg.Client each; ${target.transport})`,
          'queries/s',
          rates(runs.rt8),
        ),
      );
    rows.push(
      row(
        name,
        `${W} writer processes × ${int(A)} appends, one session (queued: no expectedVersion${pg ? `; ${target.transport}` : ''})`,
        'appends/s',
        rates(runs.q8),
        pg ? 5000 : undefined,
        `exactly ${n} entries per run, ${conflicts(runs.q8)}${ofBaseline(runs.q8, runs.rt8)}`,
      ),
    );
    if (pg)
      rows.push(
        row(
          name,
          `baseline: 1 process × ${n} SELECT 1 round trips (${target.transport})`,
          'queries/s',
          rates(runs.rt1),
        ),
      );
    rows.push(
      row(
        name,
        `1 writer process × ${n} appends (queued${pg ? `; ${target.transport}` : ''})`,
        'appends/s',
        rates(runs.q1),
        undefined,
        `exactly ${n} entries per run${ofBaseline(runs.q1, runs.rt1)}`,
      ),
    );
    const tx =
      runs.g8[0]?.transactions === undefined
        ? ''
        : `; ${int(median(runs.g8.map((x) => x.transactions)))} transactions (median), ${median(runs.g8.map((x) => x.expected / x.transactions)).toFixed(1)} appends per commit`;
    rows.push(
      row(
        name,
        `${W} async writers in 1 process (one store) × ${int(A)} appends, one session (queued${pg ? `; ${target.transport}` : ''})`,
        'appends/s',
        rates(runs.g8),
        undefined,
        `exactly ${n} entries per run, ${conflicts(runs.g8)}${tx}${ofBaseline(runs.g8, runs.rt1)}`,
      ),
    );
    const optimistic = await scenario(W, 1, A, 'optimistic');
    rows.push(
      row(
        name,
        `${W} writer processes × ${int(A)} appends, one session (optimistic: expectedVersion, retry on CONFLICT; 1 run${pg ? `; ${target.transport}` : ''})`,
        'appends/s',
        [optimistic.rate],
        undefined,
        `exactly ${n} entries; ${int(optimistic.conflicts)} conflicts retried`,
      ),
    );
    info.writers = Object.fromEntries(
      Object.entries({ ...runs, optimistic: [optimistic] }).map(([k, xs]) => [
        k,
        xs.map((x) => ({
          rate: Math.round(x.rate),
          wallMs: Math.round(x.wall),
          conflicts: x.conflicts,
          ...(x.transactions === undefined ? {} : { transactions: x.transactions }),
        })),
      ]),
    );
  }
  return { rows, info };
}

/** A writer child: `ready` resolves when it has connected, `go()` starts it, `done` gives its exit code and output. */
function runChild(args) {
  const child = spawn(process.execPath, args, { stdio: ['pipe', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  let markReady;
  const ready = new Promise((res) => (markReady = res));
  child.stdout.on('data', (d) => {
    stdout += d;
    if (stdout.includes('ready\n')) markReady();
  });
  child.stderr.on('data', (d) => (stderr += d));
  const done = new Promise((res) =>
    child.on('close', (code) => {
      markReady();
      res({ code, stdout: stdout.replace('ready\n', ''), stderr });
    }),
  );
  return { ready, done, go: () => child.stdin.end('go\n') };
}

// ---------------------------------------------------------------------------------------------------------------------

async function main() {
  const argv = process.argv.slice(2);
  if (argv[0] === '--writer') return writer(argv.slice(1));
  const opts = parseArgs(argv);
  if (!existsSync(join(DIST, 'store', 'sqlite', 'index.js'))) {
    console.error('bench/store.js: dist/ is not built: run `npm run bench:store` (it builds first) or `npm run build`');
    process.exit(1);
  }
  const t0 = performance.now();
  const index = await dist('index.js');
  const lib = index;
  const { openSqliteStore } = await dist('store/sqlite/index.js');
  const info = {
    node: process.version,
    platform: `${process.platform}-${process.arch}`,
    cpus: cpus().length,
    cpu: cpus()[0]?.model,
  };

  const rows = [];
  const dir = mkdtempSync(join(tmpdir(), 'abridge-bench-store-'));
  try {
    let n = 0;
    const file = () => join(dir, `bench-${n}.db`);
    const sqliteInfo = await measureStore(
      'SQLite',
      {
        fresh: () => (n++, openSqliteStore(file())),
        again: () => openSqliteStore(file()),
        writerArgs: () => ['sqlite', file(), '-'],
      },
      opts,
      lib,
    );
    rows.push(...sqliteInfo.rows);
    info.sqlite = sqliteInfo.info;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }

  const url = process.env.ABRIDGE_PG_URL;
  if (!url) {
    info.postgres = {
      skipped: 'ABRIDGE_PG_URL is not set (start a throwaway server with eval "$(scripts/pg-test-server.sh start)")',
    };
  } else {
    const reason = await postgresUnavailable();
    if (reason) info.postgres = { skipped: reason };
    else {
      const { openPostgresStore } = await dist('store/postgres/index.js');
      const schema = `bench_${process.pid}_${Date.now().toString(36)}`;
      const via = await transport(url);
      try {
        const open = () => openPostgresStore(url, { schema });
        const transactions = (id) => countTransactions(url, schema, id);
        const pg = await measureStore(
          'PostgreSQL',
          {
            fresh: open,
            again: open,
            writerArgs: () => ['postgres', url, schema],
            transactions,
            transport: via.label,
          },
          opts,
          lib,
        );
        rows.push(...pg.rows);
        info.postgres = { transport: via.detail, ...pg.info };
      } finally {
        await dropSchema(url, schema);
      }
    }
  }
  if (info.postgres?.skipped) rows.push({ store: 'PostgreSQL', label: 'all measures', skipped: info.postgres.skipped });
  info.totalSeconds = Math.round((performance.now() - t0) / 100) / 10;

  if (opts.json) {
    console.log(JSON.stringify({ ...info, measures: rows }, null, 2));
    return;
  }
  console.log(`abridge store benchmark · node ${info.node} · ${info.platform} · ${info.cpus} × ${info.cpu ?? 'cpu'}`);
  const r = info.sqlite.resume;
  if (r)
    console.log(
      `resume session: ${int(r.messages)} messages (${int(r.entries)} entries), ${int(r.tokensBefore)} → ${int(r.tokensAfter)} tokens by compact() in ${int(r.compactMs)} ms, snapshot of ${int(r.snapshotMessages)} messages`,
    );
  if (info.postgres?.skipped) console.log(`PostgreSQL skipped: ${info.postgres.skipped}`);
  else if (info.postgres?.transport) console.log(`PostgreSQL: connected ${info.postgres.transport}`);
  console.log('');
  console.log(table(rows));
  console.log('');
  console.log(`total ${info.totalSeconds} s`);
}

/** Why the PostgreSQL measures cannot run (the store is not built, or pg is not installed), or undefined. */
async function postgresUnavailable() {
  if (!existsSync(join(DIST, 'store', 'postgres', 'index.js')))
    return 'the PostgreSQL store is not built (dist/store/postgres/index.js is missing)';
  try {
    await import('pg');
  } catch {
    return 'the pg package is not installed (npm install pg)';
  }
  return undefined;
}

/** How `url` reaches the server, as pg reads it: over TCP to host:port, or over the Unix socket in a directory. */
async function transport(url) {
  const { default: pg } = await import('pg');
  const { host, port } = new pg.Client({ connectionString: url });
  return host.startsWith('/')
    ? { label: 'over a Unix socket', detail: `over a Unix socket (${host}/.s.PGSQL.${port})` }
    : { label: 'over TCP', detail: `over TCP (${host}:${port})` };
}

/** How many transactions wrote the session's entries (each row's xmin is the transaction that inserted it). */
async function countTransactions(url, schema, sessionId) {
  const { default: pg } = await import('pg');
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query(
      `SELECT count(DISTINCT xmin::text) AS n FROM "${schema}".entries WHERE session_id = $1`,
      [sessionId],
    );
    return Number(rows[0].n);
  } finally {
    await client.end();
  }
}

async function dropSchema(url, schema) {
  const { default: pg } = await import('pg');
  const client = new pg.Client({ connectionString: url });
  try {
    await client.connect();
    await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  } catch (err) {
    console.error(`bench/store.js: could not drop schema ${schema}: ${err.message}`);
  } finally {
    await client.end().catch(() => {});
  }
}

main().catch((err) => {
  console.error(`bench/store.js: ${err?.stack ?? err}`);
  process.exit(1);
});
