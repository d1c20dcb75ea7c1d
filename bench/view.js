#!/usr/bin/env node
/**
 * The viewer on a large session: `npm run bench:view` (builds first; this file uses dist/ only).
 *
 *   node bench/view.js [--size-mb 40] [--runs 3] [--json]
 *
 * Generates a deterministic pi session of about --size-mb (bench/view-session.js: thousands of requests, tool results
 * of varied sizes, pi compactions) in the OS temp dir, then measures, median of --runs:
 *   - `abridge view <file> --out page.html` (a child process: read, analyse, render, write), and the page's size;
 *   - the page in headless Chromium (Debian's chromium on PATH): from navigation to the page saying it is ready
 *     (chart drawn, breakdown and conversation list rendered), and a search over every message's full text;
 * beside two trivial baselines: JSON.parse of every line of the transcript in Node, and Chromium loading a plain HTML
 * page that holds the transcript's text and JSON.parses its lines (the least a page about this transcript can do; a
 * <pre> of the whole text takes minutes to lay out). The temp files are deleted at the end.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, statSync, writeFileSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { findChromium, launchChromium } from '../scripts/chromium.js';
import { generateSession } from './view-session.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const CLI = join(ROOT, 'dist', 'cli', 'main.js');
const args = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = args.indexOf(name);
  return i === -1 ? dflt : Number(args[i + 1]);
};
const sizeMb = opt('--size-mb', 40);
const runs = opt('--runs', 3);
const json = args.includes('--json');
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const MB = 1024 * 1024;

const dir = mkdtempSync(join(tmpdir(), 'abridge-bench-view-'));
try {
  const file = join(dir, 'session.jsonl');
  const text = generateSession(sizeMb * MB);
  writeFileSync(file, text);
  const out = join(dir, 'page.html');

  const parse = [];
  for (let i = 0; i < runs; i++) {
    const t = performance.now();
    const t0 = readFileSync(file, 'utf8');
    for (const line of t0.split('\n')) if (line) JSON.parse(line);
    parse.push(performance.now() - t);
  }

  // Wall time, and (with /usr/bin/time) CPU time and peak RSS: on a shared machine the wall time mostly measures the
  // wait for a core.
  const generate = [];
  const cpu = [];
  const rss = [];
  const timeBin = existsSync('/usr/bin/time') ? '/usr/bin/time' : undefined;
  const timeOut = join(dir, 'time.txt');
  for (let i = 0; i < runs; i++) {
    const cmd = [process.execPath, CLI, 'view', file, '--out', out];
    const t = performance.now();
    const r = timeBin
      ? spawnSync(timeBin, ['-f', '%U %S %M', '-o', timeOut, ...cmd], { encoding: 'utf8' })
      : spawnSync(cmd[0], cmd.slice(1), { encoding: 'utf8' });
    generate.push(performance.now() - t);
    if (r.status !== 0) throw new Error(`abridge view failed: ${r.stderr}`);
    if (timeBin) {
      const [user, sys, kb] = readFileSync(timeOut, 'utf8').trim().split('\n').at(-1).split(' ').map(Number);
      cpu.push((user + sys) * 1000);
      rss.push(kb * 1024);
    }
    if (i === 0 && !json) process.stdout.write(r.stdout);
  }
  const htmlBytes = statSync(out).size;

  const plain = join(dir, 'plain.html');
  // `<\/` is a valid escape inside JSON strings, so the lines still parse.
  writeFileSync(
    plain,
    `<!doctype html><meta charset="utf-8"><title>plain</title><script id="t" type="text/plain">${text.replace(/<\//g, '<\\/')}</script><script>for (const l of document.getElementById('t').textContent.split('\\n')) if (l) JSON.parse(l); document.title = 'parsed';</script>`,
  );

  const browser = {};
  if (!findChromium()) browser.skipped = 'no chromium on PATH (Debian: apt-get install chromium)';
  else {
    const { context, close } = await launchChromium();
    try {
      const ready = [];
      const search = [];
      const plainLoad = [];
      const errors = [];
      for (let i = 0; i < runs; i++) {
        const page = await context.newPage();
        page.on('pageerror', (e) => errors.push(e.message));
        const t = performance.now();
        await page.goto(`file://${out}`, { waitUntil: 'commit', timeout: 120_000 });
        await page.waitForSelector('body[data-ready="1"]', { timeout: 120_000 });
        ready.push(performance.now() - t);
        const s = performance.now();
        const found = await page.evaluate(() => window.abridgeView.search('mcp__docs__search'));
        search.push(performance.now() - s);
        if (found === 0) errors.push('search found nothing');
        await page.close();
        const p = await context.newPage();
        const t2 = performance.now();
        await p.goto(`file://${plain}`, { waitUntil: 'load', timeout: 120_000 });
        if ((await p.title()) !== 'parsed') errors.push('the baseline page did not parse its text');
        plainLoad.push(performance.now() - t2);
        await p.close();
      }
      Object.assign(browser, {
        ready: median(ready),
        readyRuns: ready,
        search: median(search),
        plain: median(plainLoad),
        plainRuns: plainLoad,
        errors,
      });
    } finally {
      await close();
    }
  }

  const requests = (text.match(/"role":"assistant"/g) ?? []).length;
  const figures = {
    transcriptBytes: text.length,
    lines: text.split('\n').length - 1,
    requests,
    runs,
    jsonParseMs: median(parse),
    generateMs: median(generate),
    generateRuns: generate,
    generateCpuMs: cpu.length ? median(cpu) : undefined,
    generatePeakRss: rss.length ? median(rss) : undefined,
    htmlBytes,
    browser,
  };
  if (json) process.stdout.write(`${JSON.stringify(figures, null, 2)}\n`);
  else {
    const ms = (x) => (x === undefined ? '—' : `${Math.round(x).toLocaleString('en-US')} ms`);
    const rows = [
      [
        'transcript (generated pi session)',
        `${(text.length / MB).toFixed(1)} MB, ${figures.lines.toLocaleString('en-US')} lines, ${requests.toLocaleString('en-US')} requests`,
      ],
      ['baseline: JSON.parse of every line (Node)', ms(figures.jsonParseMs)],
      [
        'abridge view → HTML (child process, median)',
        `${ms(figures.generateMs)}  (runs: ${generate.map((x) => Math.round(x)).join(', ')})`,
      ],
      [
        'abridge view: CPU time (user + sys), peak RSS',
        timeBin
          ? `${ms(figures.generateCpuMs)}, ${Math.round(figures.generatePeakRss / MB)} MB`
          : '— (no /usr/bin/time)',
      ],
      ['page size', `${(htmlBytes / MB).toFixed(1)} MB`],
      [
        'Chromium: page ready (chart, breakdown, list)',
        browser.skipped ?? `${ms(browser.ready)}  (runs: ${browser.readyRuns.map((x) => Math.round(x)).join(', ')})`,
      ],
      ['Chromium: first search over all full texts', browser.skipped ?? ms(browser.search)],
      [
        'baseline: Chromium loads the text, JSON.parse per line',
        browser.skipped ?? `${ms(browser.plain)}  (runs: ${browser.plainRuns.map((x) => Math.round(x)).join(', ')})`,
      ],
    ];
    const w = Math.max(...rows.map((r) => r[0].length));
    for (const [k, v] of rows) process.stdout.write(`${k.padEnd(w)}  ${v}\n`);
    if (browser.errors?.length) process.stdout.write(`page errors: ${browser.errors.join('; ')}\n`);
  }
  if (browser.errors?.length) process.exitCode = 1;
} finally {
  rmSync(dir, { recursive: true, force: true });
}
