#!/usr/bin/env node
/**
 * Reading benchmarks for abridge: how fast `abridge inspect` answers on a real transcript, and how much memory it
 * needs for a very large one. Run it through `npm run bench:read`, which builds first; this file only uses dist/.
 *
 *   node bench/read.js [--json] [--file transcript.jsonl] [--size-mb 100] [--runs 7] [--rss-runs 3]
 *                      [--no-cli] [--rss-via time|proc]
 *
 * --no-cli measures the library where the CLI would be used (what happens anyway while dist/cli/main.js is
 * missing); --rss-via forces one way of measuring the peak RSS. Both exist to exercise the fallbacks.
 *
 * (0) Cold start, each figure beside its trivial baseline, in the same run (fresh processes, interleaved, `--runs`
 *     rounds): a bare `node -e 0` against `import('abridge-context')` (target ≤ 1.4×); a bare parse of the transcript's lines
 *     (node reading the file and JSON.parse of each line) against `abridge inspect --json` of it (target ≤ 2.5×);
 *     and `compact()` of that session to 25% of its visible conversation, its first call in a fresh process against
 *     later calls in the same process (warm).
 * (a) Speed, on a real 2.4 MB pi transcript from the shared corpus (../shared/corpus, or $ABRIDGE_CORPUS):
 *     `node dist/cli/main.js inspect <file> --json` spawned `--runs` times (median and min wall time, target
 *     < 1 s), plus readSession and streamSession in this process. If dist/cli/main.js does not exist, the CLI row
 *     times readSession in-process instead and says so.
 * (b) Memory, on a generated ~100 MB pi JSONL in the OS temp dir (deterministic: same bytes every run): the peak
 *     RSS of a child `node dist/cli/main.js inspect <file> --json`, from `/usr/bin/time -v` when present, else by
 *     polling /proc/<pid>/status every 20 ms (max VmRSS and the last VmHWM). Target < 300 MB. Also its wall time
 *     and throughput. Without the CLI the child runs streamSession over the file instead. The file is deleted at
 *     the end.
 *
 * Prints a table; `--json` prints the figures as JSON instead. Exits 1 if a measured command fails, not when a
 * target is missed (targets are for people to read; machines differ).
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readFileSync, rmSync, statSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { generatePiSession } from './generate.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const INDEX = join(ROOT, 'dist', 'index.js');
const CLI = join(ROOT, 'dist', 'cli', 'main.js');
const CORPUS = process.env.ABRIDGE_CORPUS ?? resolve(ROOT, '..', 'shared', 'corpus');
const DEFAULT_FILE = join(CORPUS, 'pi', 'badlogic__pi-mono__before-compaction.jsonl');
const MB = 1024 * 1024;

function parseArgs(argv) {
  const opts = { json: false, file: DEFAULT_FILE, sizeMb: 100, runs: 7, rssRuns: 3, cli: true, rssVia: undefined };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const value = () => {
      const v = argv[++i];
      if (v === undefined) usage(`${a} needs a value`);
      return v;
    };
    if (a === '--json') opts.json = true;
    else if (a === '--file') opts.file = resolve(value());
    else if (a === '--size-mb') opts.sizeMb = positive(a, value());
    else if (a === '--runs') opts.runs = positive(a, value());
    else if (a === '--rss-runs') opts.rssRuns = positive(a, value());
    else if (a === '--no-cli') opts.cli = false;
    else if (a === '--rss-via') {
      opts.rssVia = value();
      if (opts.rssVia !== 'time' && opts.rssVia !== 'proc') usage('--rss-via takes time or proc');
    } else if (a === '-h' || a === '--help') usage();
    else usage(`unknown argument: ${a}`);
  }
  return opts;
}

function positive(name, v) {
  const n = Number(v);
  if (!Number.isFinite(n) || n <= 0) usage(`${name} must be a positive number`);
  return n;
}

function usage(error) {
  if (error) console.error(`bench/read.js: ${error}`);
  console.error(
    'usage: node bench/read.js [--json] [--file transcript.jsonl] [--size-mb 100] [--runs 7] [--rss-runs 3] [--no-cli] [--rss-via time|proc]',
  );
  process.exit(error ? 2 : 0);
}

// ---------------------------------------------------------------------------------------------------------------------
// Statistics and formatting

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
const min = (xs) => Math.min(...xs);
const max = (xs) => Math.max(...xs);

const fmt = {
  ratio: (v) => `${v.toFixed(2)}×`,
  ms: (v) => `${v < 100 ? v.toFixed(1) : Math.round(v).toLocaleString('en-US')} ms`,
  mb: (v) => `${v.toFixed(1)} MB`,
  mbps: (v) => `${v.toFixed(1)} MB/s`,
};

/** One row of the results: samples in `unit`, optionally with an upper-bound target. */
function measure(id, label, unit, samples, target) {
  const m = {
    id,
    label,
    unit,
    samples: samples.map((s) => Math.round(s * 100) / 100),
    median: median(samples),
    min: min(samples),
  };
  if (unit === 'MB/s') m.max = max(samples);
  if (target !== undefined) {
    m.target = target;
    m.ok = m.median < target;
  }
  return m;
}

/** A ratio of two measured rows (median over median, min over min), with an upper bound it should stay within. */
function ratio(id, label, num, den, target) {
  const median = num.median / den.median;
  return {
    id,
    label,
    unit: '×',
    median,
    min: num.min / den.min,
    ...(target === undefined ? {} : { target, ok: median <= target }),
  };
}

function skipped(id, label, reason) {
  return { id, label, skipped: reason };
}

function table(rows) {
  const cells = rows.map((r) =>
    r.skipped
      ? [r.label, '—', '—', '—', `skipped: ${r.skipped}`]
      : [
          r.label,
          fmt[unitKey(r.unit)](r.median),
          // For a throughput the best run is the highest, which is what "min" means for the times above it.
          r.unit === 'MB/s' ? `${fmt.mbps(r.max)} (best)` : fmt[unitKey(r.unit)](r.min),
          r.target === undefined
            ? '—'
            : r.unit === '×'
              ? `≤ ${r.target}×`
              : `< ${r.target.toLocaleString('en-US')} ${r.unit}`,
          r.target === undefined ? '' : r.ok ? 'yes' : 'NO',
        ],
  );
  const head = ['measure', 'median', 'min', 'target', 'ok'];
  const widths = head.map((h, c) => Math.max(h.length, ...cells.map((r) => r[c].length)));
  const line = (r) =>
    `| ${r.map((v, c) => (c === 0 ? v.padEnd(widths[c]) : c === 4 ? v.padEnd(widths[c]) : v.padStart(widths[c]))).join(' | ')} |`;
  const rule = widths.map((w, c) => (c === 0 || c === 4 ? '-'.repeat(w + 2) : `${'-'.repeat(w + 1)}:`));
  return [line(head), `|${rule.join('|')}|`, ...cells.map(line)].join('\n');
}

const unitKey = (unit) => (unit === 'ms' ? 'ms' : unit === 'MB' ? 'mb' : unit === '×' ? 'ratio' : 'mbps');

// ---------------------------------------------------------------------------------------------------------------------
// Child processes

/**
 * Runs `node args…` and resolves when it exits: wall ms, exit code, stdout, stderr. With `rss`, also its peak resident
 * memory in bytes, measured with /usr/bin/time -v if available, else by polling /proc/<pid>/status.
 */
async function runNode(args, { rss = false, timeMs = 0, rssVia, cwd } = {}) {
  const useTime = rss && rssVia !== 'proc' && TIME_BIN !== undefined;
  if (rss && rssVia === 'time' && TIME_BIN === undefined) throw new Error('--rss-via time: /usr/bin/time not found');
  const cmd = useTime ? TIME_BIN : process.execPath;
  const cmdArgs = useTime ? ['-v', process.execPath, ...args] : args;
  const started = performance.now();
  const child = spawn(cmd, cmdArgs, { stdio: ['ignore', 'pipe', 'pipe'], ...(cwd ? { cwd } : {}) });
  const out = [];
  const err = [];
  child.stdout.on('data', (d) => out.push(d));
  child.stderr.on('data', (d) => err.push(d));

  let polled;
  let timer;
  if (rss && !useTime) {
    polled = { maxRss: 0, hwm: 0 };
    const poll = () => {
      try {
        const status = readFileSync(`/proc/${child.pid}/status`, 'utf8');
        const kb = (name) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? 0);
        polled.maxRss = Math.max(polled.maxRss, kb('VmRSS'));
        // VmHWM is the kernel's own high-water mark: the last value read before exit is the best figure we get.
        polled.hwm = Math.max(polled.hwm, kb('VmHWM'));
      } catch {
        // The process is gone (or /proc is unavailable).
      }
    };
    poll();
    timer = setInterval(poll, 20);
  }

  let killer;
  if (timeMs) killer = setTimeout(() => child.kill('SIGKILL'), timeMs);
  const [code, signal] = await once(child, 'close');
  const wallMs = performance.now() - started;
  clearInterval(timer);
  clearTimeout(killer);

  const stderr = Buffer.concat(err).toString('utf8');
  const result = {
    code: code ?? (signal ? 128 : 1),
    signal,
    wallMs,
    stdout: Buffer.concat(out).toString('utf8'),
    stderr,
  };
  if (useTime) {
    const kb = /Maximum resident set size \(kbytes\): (\d+)/.exec(stderr);
    result.peakRssBytes = kb ? Number(kb[1]) * 1024 : undefined;
    result.rssSource = '/usr/bin/time -v';
    // GNU time reports the child's exit status as its own.
    result.stderr = stderr.replace(/\n?\tCommand being timed:[\s\S]*$/, '');
  } else if (rss) {
    result.peakRssBytes = Math.max(polled.maxRss, polled.hwm) * 1024 || undefined;
    result.rssSource = '/proc polling';
  }
  return result;
}

const TIME_BIN = ['/usr/bin/time'].find((p) => {
  try {
    return statSync(p).isFile();
  } catch {
    return false;
  }
});

function failure(what, r) {
  const tail = r.stderr.trim().split('\n').slice(-8).join('\n');
  return new Error(`${what} exited with ${r.signal ?? `code ${r.code}`}${tail ? `:\n${tail}` : ''}`);
}

// ---------------------------------------------------------------------------------------------------------------------
// The benchmarks

async function timeInProcess(fn, runs) {
  const samples = [];
  for (let i = 0; i < runs; i++) {
    const t = performance.now();
    await fn();
    samples.push(performance.now() - t);
  }
  return samples;
}

async function benchSpeed(opts, lib, rows, info) {
  const file = opts.file;
  if (!existsSync(file)) {
    const reason = `corpus file not found: ${file}`;
    rows.push(skipped('read-session', 'readSession, in process', reason));
    rows.push(skipped('stream-session', 'streamSession, in process', reason));
    return;
  }
  const size = statSync(file).size;
  const what = `${basename(file)} (${(size / 1e6).toFixed(1)} MB), ${opts.runs}×`;
  info.file = { ...info.file, path: file, bytes: size };

  // With the CLI, its `inspect --json` was timed by benchColdStart beside its baseline.
  if (!(opts.cli && existsSync(CLI))) {
    const samples = await timeInProcess(() => lib.readSession(file), opts.runs);
    const why = opts.cli ? 'no dist/cli/main.js yet' : '--no-cli';
    rows.push(
      measure('cli-inspect', `${why}: readSession in process instead of the CLI, ${what}`, 'ms', samples, 1000),
    );
  }

  const read = await timeInProcess(() => lib.readSession(file), opts.runs);
  rows.push(measure('read-session', `readSession, in process, same file, ${opts.runs}×`, 'ms', read));
  const stream = await timeInProcess(() => lib.streamSession(file, () => {}), opts.runs);
  rows.push(measure('stream-session', `streamSession, in process, same file, ${opts.runs}×`, 'ms', stream));
}

// The trivial baseline of inspect: what any reader of the file pays (node, the file read, JSON.parse of each line).
const PARSE_CHILD = `
const { readFileSync } = await import('node:fs');
let n = 0;
for (const line of readFileSync(process.argv[1], 'utf8').split('\\n')) if (line.trim()) { JSON.parse(line); n++; }
if (n === 0) process.exit(1);
`;

// compact() to 25% of the visible conversation (as bench:compact does): the first call, then warm calls on fresh
// copies of the session (compact adds a marker entry to the session it is given).
const COMPACT_CHILD = `
const [indexUrl, file, warmRuns] = process.argv.slice(1);
const lib = await import(indexUrl);
const text = await lib.readSession(file);
const target = (() => {
  const snap = lib.contextBreakdown(text);
  const fixed = snap.components.unrecorded;
  return fixed + Math.round((snap.used - fixed) * 0.25);
})();
const times = [];
for (let i = 0; i <= Number(warmRuns); i++) {
  const session = await lib.readSession(file);
  const t = performance.now();
  await lib.compact(session, { target });
  times.push(performance.now() - t);
}
process.stdout.write(JSON.stringify({ first: times[0], warm: times.slice(2) }));
`;

/** Cold start beside its baselines: fresh processes, the commands of one round run one after the other. */
async function benchColdStart(opts, rows, info) {
  const file = opts.file;
  const cli = opts.cli && existsSync(CLI);
  const commands = [
    ['node-bare', ['-e', '0']],
    // Resolved by its name from the package's own folder, as a dependent would (package.json `exports`).
    ['import', ['--input-type=module', '-e', "await import('abridge-context')"]],
  ];
  const haveFile = existsSync(file);
  if (haveFile) {
    commands.push(['bare-parse', ['--input-type=module', '-e', PARSE_CHILD, file]]);
    if (cli) commands.push(['cli-inspect', [CLI, 'inspect', file, '--json']]);
    commands.push(['compact', ['--input-type=module', '-e', COMPACT_CHILD, pathToFileURL(INDEX).href, file, '6']]);
  }
  const samples = Object.fromEntries(commands.map(([id]) => [id, []]));
  const compactRuns = [];
  for (let round = 0; round < opts.runs; round++) {
    for (const [id, args] of commands) {
      const r = await runNode(args, { timeMs: 120_000, cwd: ROOT });
      if (r.code !== 0) throw failure(`node ${args.join(' ').slice(0, 80)}`, r);
      samples[id].push(r.wallMs);
      if (id === 'compact') compactRuns.push(JSON.parse(r.stdout));
      if (id === 'cli-inspect' && round === 0) {
        const report = JSON.parse(r.stdout);
        info.file = { path: file, bytes: statSync(file).size, format: report.format, entries: report.entries?.total };
      }
    }
  }
  const n = `${opts.runs} fresh processes`;
  const bare = measure('node-bare', `baseline: \`node -e 0\`, ${n}`, 'ms', samples['node-bare']);
  const imp = measure('import', `\`import('abridge-context')\` (node -e), ${n}`, 'ms', samples.import);
  rows.push(bare, imp, ratio('import-ratio', "import('abridge-context') / bare node", imp, bare, 1.4));
  if (!haveFile) {
    rows.push(skipped('cli-inspect', 'CLI `inspect --json`, corpus file', `corpus file not found: ${file}`));
    return;
  }
  const what = `${basename(file)} (${(statSync(file).size / 1e6).toFixed(1)} MB)`;
  const parse = measure(
    'bare-parse',
    `baseline: read ${what} + JSON.parse each line, ${n}`,
    'ms',
    samples['bare-parse'],
  );
  rows.push(parse);
  if (cli) {
    const inspect = measure(
      'cli-inspect',
      `CLI \`inspect --json\`, same file, ${n}`,
      'ms',
      samples['cli-inspect'],
      1000,
    );
    rows.push(inspect, ratio('inspect-ratio', 'inspect --json / bare parse', inspect, parse, 2.5));
  } else {
    rows.push(
      skipped('cli-inspect', 'CLI `inspect --json`, corpus file', opts.cli ? 'no dist/cli/main.js yet' : '--no-cli'),
    );
  }
  const first = measure(
    'compact-fresh',
    `compact() to 25% of the visible conversation, first call of a fresh process, ${n}`,
    'ms',
    compactRuns.map((r) => r.first),
  );
  const warm = measure(
    'compact-warm',
    `compact(), same session, warm (calls 3–7 of each process, ${compactRuns.length * 5} calls)`,
    'ms',
    compactRuns.flatMap((r) => r.warm),
  );
  rows.push(first, warm, ratio('compact-ratio', 'compact() fresh / warm', first, warm));
}

const STREAM_CHILD = `
const [indexUrl, file] = process.argv.slice(1);
const { streamSession } = await import(indexUrl);
const r = await streamSession(file, () => {});
process.stdout.write(JSON.stringify({ format: r.format, entries: { total: r.entries }, problems: r.problems.length }));
`;

async function benchMemory(opts, rows, info) {
  const path = join(tmpdir(), `abridge-bench-${process.pid}.jsonl`);
  const cleanup = () => rmSync(path, { force: true });
  process.once('SIGINT', () => {
    cleanup();
    process.exit(130);
  });
  try {
    const t = performance.now();
    const generated = await generatePiSession(path, opts.sizeMb * MB);
    info.generated = {
      path,
      bytes: generated.bytes,
      entries: generated.entries,
      ms: Math.round(performance.now() - t),
    };

    const cli = opts.cli && existsSync(CLI);
    const args = cli
      ? [CLI, 'inspect', path, '--json']
      : ['--input-type=module', '-e', STREAM_CHILD, '--', pathToFileURL(INDEX).href, path];
    const rss = [];
    const wall = [];
    let source;
    for (let i = 0; i < opts.rssRuns; i++) {
      const r = await runNode(args, { rss: true, timeMs: 300_000, rssVia: opts.rssVia });
      if (r.code !== 0)
        throw failure(cli ? 'node dist/cli/main.js inspect <100 MB file> --json' : 'streamSession child', r);
      if (r.peakRssBytes === undefined) throw new Error(`could not measure the peak RSS (${r.rssSource})`);
      if (i === 0) {
        const report = JSON.parse(r.stdout);
        info.generated.format = report.format;
        info.generated.readEntries = report.entries?.total;
      }
      rss.push(r.peakRssBytes / MB);
      wall.push(r.wallMs);
      source = r.rssSource;
    }
    const mb = generated.bytes / MB;
    const who = cli
      ? 'CLI `inspect --json`'
      : `${opts.cli ? 'no dist/cli/main.js yet' : '--no-cli'}: child running streamSession`;
    const what = `${Math.round(mb)} MB generated pi JSONL, ${opts.rssRuns}×`;
    rows.push(measure('large-peak-rss', `peak RSS, ${who}, ${what} (${source})`, 'MB', rss, 300));
    rows.push(measure('large-wall', `wall time, same runs`, 'ms', wall));
    rows.push(
      measure(
        'large-throughput',
        `throughput, same runs`,
        'MB/s',
        wall.map((ms) => mb / (ms / 1000)),
      ),
    );
  } finally {
    cleanup();
  }
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const started = performance.now();
  if (!existsSync(INDEX)) {
    console.error(`bench/read.js: ${INDEX} not found; build first (npm run build), or run npm run bench:read`);
    process.exit(1);
  }
  const lib = await import(pathToFileURL(INDEX).href);
  const rows = [];
  const info = {
    node: process.version,
    platform: `${process.platform} ${process.arch}`,
    cpus: cpus().length,
    cpu: cpus()[0]?.model?.trim(),
    cli: opts.cli && existsSync(CLI),
  };

  await benchColdStart(opts, rows, info);
  await benchSpeed(opts, lib, rows, info);
  await benchMemory(opts, rows, info);
  info.totalSeconds = Math.round((performance.now() - started) / 100) / 10;

  if (opts.json) {
    console.log(JSON.stringify({ ...info, measures: rows }, null, 2));
    return;
  }
  console.log(`abridge read benchmark · node ${info.node} · ${info.platform} · ${info.cpus} × ${info.cpu ?? 'cpu'}`);
  if (!info.cli)
    console.log(
      `note: ${opts.cli ? 'dist/cli/main.js does not exist yet' : '--no-cli'}, so the CLI rows measure the library in its place`,
    );
  if (info.file)
    console.log(
      `corpus file: ${info.file.path}${info.file.format ? ` (${info.file.format}, ${info.file.entries} entries)` : ''}`,
    );
  const g = info.generated;
  console.log(
    `generated:   ${g.path} (${(g.bytes / MB).toFixed(1)} MB, ${g.entries.toLocaleString('en-US')} lines, written in ${g.ms} ms; read back as ${g.format}, ${g.readEntries?.toLocaleString('en-US')} entries; deleted)`,
  );
  console.log('');
  console.log(table(rows));
  console.log('');
  console.log(`total ${info.totalSeconds} s`);
}

main().catch((err) => {
  console.error(`bench/read.js: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
