#!/usr/bin/env node
/**
 * npm run bench:scale — what each command costs on a large session, beside the floor measured in the same run: a
 * fresh process reading the file and `JSON.parse` of each line (what any reader of the session must do). For every
 * size, each command runs in fresh processes under `/usr/bin/time -v` (or its own maxRSS where that is missing):
 * CPU time (user + system), wall time, peak RSS; then each command's ratios to the floor and its growth exponent
 * (the slope of log CPU time over log size between the smallest and the largest size).
 *
 *   node bench/scale.js [--sizes 10,50,100] [--runs 3] [--only import,export] [--loop 32000|128000|none] [--json]
 *
 * `--only` measures the named commands (comma-separated) and the floor, which every ratio needs.
 *
 * Sessions are generated pi JSONL (bench/generate.js: same bytes every run) in the OS temp dir, kept between runs.
 * Uses dist/ (run it through `npm run bench:scale`, which builds first). Then the agent loop: plain and compacting turns
 * at 2K / 8K / 32K entries of history (`--loop 128000`: on to 128K, the history in SQLite), each the median of the
 * medians of `--runs` fresh processes of bench/turn.js, with the slope per 1,000 entries; `--loop none` skips it.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { generatePiSession } from './generate.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const CLI = join(ROOT, 'dist', 'cli', 'main.js');
const args = process.argv.slice(2);
const opt = (name, fallback) => (args.includes(name) ? args[args.indexOf(name) + 1] : fallback);
const SIZES = opt('--sizes', '10,50,100').split(',').map(Number);
const RUNS = Number(opt('--runs', '3'));
const JSON_OUT = args.includes('--json');
const MB = 1024 * 1024;
const TIME = existsSync('/usr/bin/time') ? '/usr/bin/time' : undefined;
const dir = join(tmpdir(), 'abridge-bench-scale');
mkdirSync(dir, { recursive: true });

const FLOOR = `
const { createReadStream } = require('node:fs');
const { createInterface } = require('node:readline');
(async () => {
  let n = 0;
  for await (const line of createInterface({ input: createReadStream(process.argv[1]) })) if (line) { JSON.parse(line); n++; }
  if (n === 0) process.exit(1);
})();`;

/** One fresh process: CPU seconds, wall seconds, peak RSS in MiB. */
function measure(argv, cwd) {
  const t0 = process.hrtime.bigint();
  const r = TIME
    ? spawnSync(TIME, ['-v', process.execPath, ...argv], { encoding: 'utf8', cwd, maxBuffer: 256 * MB })
    : spawnSync(process.execPath, argv, { encoding: 'utf8', cwd, maxBuffer: 256 * MB });
  const wall = Number(process.hrtime.bigint() - t0) / 1e9;
  if (r.status !== 0) throw new Error(`${argv.join(' ')}: exit ${r.status}\n${r.stderr}`);
  const field = (name) => Number(new RegExp(`${name}: ([\\d.]+)`).exec(r.stderr)?.[1] ?? NaN);
  return {
    cpu: field('User time \\(seconds\\)') + field('System time \\(seconds\\)'),
    wall,
    rssMiB: field('Maximum resident set size \\(kbytes\\)') / 1024,
  };
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const COMMANDS = {
  floor: (file) => ['-e', FLOOR, file],
  inspect: (file) => [CLI, 'inspect', file, '--json'],
  'compact --out': (file, work) => [CLI, 'compact', file, '--budget', '60000', '--out', join(work, 'out.jsonl')],
  view: (file, work) => [CLI, 'view', file, '--out', join(work, 'out.html')],
  import: (file, work) => [CLI, 'import', file, '--db', join(work, 'store.sqlite'), '--id', 'bench'],
  export: (_file, work) => [
    CLI,
    'export',
    'bench',
    '--db',
    join(work, 'store.sqlite'),
    '--out',
    join(work, 'back.jsonl'),
  ],
};

const ONLY = opt('--only', undefined)
  ?.split(',')
  .map((s) => s.trim());
if (ONLY) {
  const unknown = ONLY.filter((n) => !(n in COMMANDS));
  if (unknown.length) {
    console.error(
      `--only: unknown command ${unknown.join(', ')}; expected some of ${Object.keys(COMMANDS).join(', ')}`,
    );
    process.exit(2);
  }
  for (const name of Object.keys(COMMANDS)) if (name !== 'floor' && !ONLY.includes(name)) delete COMMANDS[name];
}

const results = [];
for (const size of SIZES) {
  const file = join(dir, `session-${size}mb.jsonl`);
  if (!existsSync(file)) await generatePiSession(file, size * MB);
  const bytes = statSync(file).size;
  const row = { sizeMb: bytes / MB, commands: {} };
  for (const [name, argvOf] of Object.entries(COMMANDS)) {
    const runs = [];
    for (let k = 0; k < RUNS; k++) {
      const work = join(dir, `work-${size}`);
      // export reads what import stored: each export run gets the store of a fresh import.
      if (name === 'import' || name === 'export') rmSync(join(work, 'store.sqlite'), { force: true });
      mkdirSync(work, { recursive: true });
      if (name === 'export') measure(COMMANDS.import(file, work), ROOT);
      runs.push(measure(argvOf(file, work), ROOT));
    }
    row.commands[name] = {
      cpu: median(runs.map((r) => r.cpu)),
      wall: median(runs.map((r) => r.wall)),
      rssMiB: median(runs.map((r) => r.rssMiB)),
    };
  }
  results.push(row);
  if (!JSON_OUT) process.stderr.write(`measured ${size} MB\n`);
}

const first = results[0];
const last = results[results.length - 1];
const exponent = (name) =>
  results.length > 1
    ? Math.log(last.commands[name].cpu / first.commands[name].cpu) / Math.log(last.sizeMb / first.sizeMb)
    : NaN;

// The agent loop: plain and compacting turns as the history grows under a view that does not (bench/turn.js).
const LOOP = opt('--loop', '32000');
let loop;
if (LOOP !== 'none') {
  const turnArgs = [join(ROOT, 'bench', 'turn.js'), '--json'];
  if (Number(LOOP) > 32_000) turnArgs.push('--scale', LOOP, '--store', 'sqlite');
  const runs = [];
  for (let k = 0; k < RUNS; k++) {
    const r = spawnSync(process.execPath, turnArgs, { encoding: 'utf8', cwd: ROOT, maxBuffer: 64 * MB });
    if (r.status !== 0) throw new Error(`bench/turn.js: exit ${r.status}\n${r.stderr}`);
    runs.push(JSON.parse(r.stdout).scale.rows);
  }
  loop = runs[0].map((row, i) => ({
    history: row.history,
    view: median(runs.map((rs) => rs[i].view)),
    plainMs: median(runs.map((rs) => rs[i].plainMs)),
    compactingMs: median(runs.map((rs) => rs[i].compactingMs)),
  }));
  if (!JSON_OUT) process.stderr.write('measured the agent loop\n');
}
const loopSlope = (k) =>
  loop && loop.length > 1
    ? ((loop[loop.length - 1][k] - loop[0][k]) / (loop[loop.length - 1].history - loop[0].history)) * 1000
    : NaN;

if (JSON_OUT)
  console.log(JSON.stringify({ runs: RUNS, rss: TIME ? '/usr/bin/time -v' : 'none', results, loop }, null, 2));
else {
  console.log(`each command beside the parse floor of the same run (median of ${RUNS} fresh processes)\n`);
  console.log('| session | command | CPU s | × floor | wall s | peak RSS MiB | × file | growth exponent |');
  console.log('|--:|--|--:|--:|--:|--:|--:|--:|');
  for (const r of results)
    for (const [name, c] of Object.entries(r.commands))
      console.log(
        `| ${r.sizeMb.toFixed(0)} MB | ${name} | ${c.cpu.toFixed(2)} | ${(c.cpu / r.commands.floor.cpu).toFixed(1)} | ${c.wall.toFixed(2)} | ${c.rssMiB.toFixed(0)} | ${(c.rssMiB / r.sizeMb).toFixed(1)} | ${r === last ? exponent(name).toFixed(2) : ''} |`,
      );
  console.log(
    '\ntargets (issue 37) at 100 MB: compact --out ≤ 4× the floor, import / export / view ≤ 3×; peak RSS ≤ 1.5× the file; exponent ≤ 1.1',
  );
  if (loop) {
    console.log(
      `\nthe agent loop (bench/turn.js: a 200,000-token window compacting as it must; median of ${RUNS} fresh processes)\n`,
    );
    console.log('| history (entries) | view (messages) | plain turn ms | compacting turn ms |');
    console.log('|--:|--:|--:|--:|');
    for (const r of loop)
      console.log(
        `| ${r.history.toLocaleString('en-US')} | ${r.view} | ${r.plainMs.toFixed(3)} | ${r.compactingMs.toFixed(1)} |`,
      );
    console.log(
      `\nslope per 1,000 entries: plain ${loopSlope('plainMs').toFixed(4)} ms, compacting ${loopSlope('compactingMs').toFixed(2)} ms; targets: plain ≤ 1 ms, compacting ≤ 25 ms at 32K, flat to 128K`,
    );
  }
}
