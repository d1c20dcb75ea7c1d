import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { request } from 'node:http';
import { connect } from 'node:net';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { BrowserContext } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildViewData } from '../analysis/view-data.js';
import { readSession } from '../formats/read.js';
import { CHROMIUM_FLAGS, findChromium, launchChromium } from '../../test/support/browser.js';
import { CLI, runCli, SMALL_PI_SESSION } from '../../test/support/cli.js';
import { corpusAvailable } from '../../test/support/corpus.js';
import { EXAMPLE_PI, fixtureTranscripts } from '../../test/support/fixture-transcripts.js';
import { abridgeCompactedTranscript, compactedByAbridge, VIEW_CASES } from '../../test/support/view-fixtures.js';

const dir = mkdtempSync(join(tmpdir(), 'abridge-view-test-'));

function abridge(...args: string[]) {
  return runCli(args, { cwd: dir });
}

const piSession = SMALL_PI_SESSION;
const small = join(dir, 'small.jsonl');
writeFileSync(small, `${piSession}\n`);

describe('abridge view', () => {
  it('writes one HTML file with the page data inlined, by default <name>.view.html', () => {
    const r = abridge('view', small);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const out = join(dir, 'small.view.html');
    expect(r.stdout).toBe(
      `wrote ${out} (0.1 MB: 1 request, 0 compactions, 3 messages); open it in a browser: ${pathToFileURL(out).href}\n`,
    );
    const html = readFileSync(out, 'utf8');
    const data = JSON.parse(/<script type="application\/json" id="data">(.*?)<\/script>/s.exec(html)![1]!);
    expect(data.points.reported).toEqual([130]);
    expect(data.records).toHaveLength(3);
  });

  it('bad input is exit 2 with one line saying what to give', () => {
    expect(abridge('view')).toMatchObject({
      code: 2,
      stderr: 'abridge: abridge view: give a transcript file, or --db <store> --session <id>\n',
    });
    expect(abridge('view', small, '--out', 'x.html', '--serve')).toMatchObject({
      code: 2,
      stderr: 'abridge: --out and --serve: choose one (a file, or a page served on 127.0.0.1)\n',
    });
    expect(abridge('view', small, '--serve', '--port', 'x')).toMatchObject({
      code: 2,
      stderr: 'abridge: --port: expected a port number from 0 to 65535, got "x"\n',
    });
    expect(abridge('view', '--db', join(dir, 'none.sqlite'))).toMatchObject({ code: 2 });
    expect(abridge('view', join(dir, 'missing.jsonl'))).toMatchObject({
      code: 2,
      stderr: `abridge: ${join(dir, 'missing.jsonl')}: no such file\n`,
    });
  });

  it('reads a stored session with --db and --session', () => {
    const db = join(dir, 'store.sqlite');
    expect(abridge('import', small, '--db', db, '--id', 'stored-1').code).toBe(0);
    const r = abridge('view', '--db', db, '--session', 'stored-1', '--out', 'stored.html');
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const html = readFileSync(join(dir, 'stored.html'), 'utf8');
    expect(html).toContain(`${db} · session stored-1`);
    expect(abridge('view', '--db', db, '--session', 'nope')).toMatchObject({
      code: 2,
      stderr: 'abridge: no session "nope" in this store\n',
    });
  });

  it('--serve serves the page on 127.0.0.1 until interrupted', async () => {
    const served = await serveView(small);
    try {
      const res = await fetch(served.url);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
      expect(await res.text()).toContain('<script type="application/json" id="data">');
      expect((await fetch(`${served.url}other`)).status).toBe(404);
    } finally {
      expect(await served.stop()).toBe(0);
    }
  });

  it('--serve answers only requests to the address it bound: another Host (DNS rebinding) gets 421, no Host 400', async () => {
    const served = await serveView(small);
    try {
      const port = served.port;
      for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, `LOCALHOST:${port}`]) {
        const r = await get(port, host);
        expect(r.status, host).toBe(200);
        expect(r.body, host).toContain('<script type="application/json" id="data">');
      }
      for (const host of [
        `evil.example:${port}`,
        'evil.example',
        `127.0.0.1:${port + 1}`,
        '127.0.0.1',
        `localhost.evil.example:${port}`,
        `127.0.0.1.nip.io:${port}`,
        `[::1]:${port}`,
        `0.0.0.0:${port}`,
      ]) {
        const r = await get(port, host);
        expect(r.status, host).toBe(421);
        expect(r.body, host).not.toContain('id="data"');
      }
      // HTTP/1.0 without a Host header: refused too, the page is not sent.
      const raw = await rawRequest(port, 'GET / HTTP/1.0\r\n\r\n');
      expect(raw).toMatch(/^HTTP\/1\.[01] 400 /);
      expect(raw).not.toContain('id="data"');
    } finally {
      expect(await served.stop()).toBe(0);
    }
  });

  it("--serve sends the page with a Content-Security-Policy header without 'unsafe-inline': hashes of its scripts and styles", async () => {
    const served = await serveView(small);
    try {
      const res = await fetch(served.url);
      const csp = res.headers.get('content-security-policy')!;
      const html = await res.text();
      expect(csp).toBeTruthy();
      expect(csp).not.toContain('unsafe-inline');
      expect(csp).not.toContain('unsafe-eval');
      expect(csp).toMatch(/(^|; )default-src 'none'(;|$)/);
      expect(csp).toMatch(/(^|; )frame-ancestors 'none'(;|$)/);
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
      // The page's own meta policy says the same (a page written to a file has no header).
      const meta = /<meta http-equiv="Content-Security-Policy" content="([^"]*)">/.exec(html)![1]!;
      expect(meta).not.toContain('unsafe-inline');
      // Every script and style element that runs is allowed by its hash, and nothing else is.
      const hashes = (kind: 'script' | 'style') =>
        [...html.matchAll(new RegExp(`<${kind}>([\\s\\S]*?)</${kind}>`, 'g'))].map(
          (m) => `'sha256-${createHash('sha256').update(m[1]!).digest('base64')}'`,
        );
      expect(hashes('script')).toHaveLength(2);
      expect(hashes('style')).toHaveLength(2);
      expect(/script-src ([^;]*)/.exec(meta)![1]!.split(' ').sort()).toEqual(hashes('script').sort());
      expect(/style-src ([^;]*)/.exec(meta)![1]!.split(' ').sort()).toEqual(hashes('style').sort());
      expect(csp.startsWith(meta)).toBe(true);
      // No inline event handler or style attribute in the page's markup.
      expect(html.replace(/<script[\s\S]*?<\/script>/g, '')).not.toMatch(/\son[a-z]+=|\sstyle=/i);
    } finally {
      expect(await served.stop()).toBe(0);
    }
  });
});

/** `abridge view <file> --serve` in a child process, once it says where it serves. */
async function serveView(file: string): Promise<{ url: string; port: number; stop: () => Promise<number | null> }> {
  const child = spawn(process.execPath, [CLI, 'view', file, '--serve'], {
    cwd: dir,
    env: { ...process.env, NO_COLOR: '1' },
  });
  const exited = new Promise<number | null>((done) => child.once('exit', (code) => done(code)));
  const url = await new Promise<string>((done, fail) => {
    let out = '';
    child.stdout.on('data', (b: Buffer) => {
      out += b.toString();
      const m = /serving (http:\/\/127\.0\.0\.1:\d+\/) \(Ctrl-C to stop\)\n/.exec(out);
      if (m) done(m[1]!);
    });
    child.once('exit', (code) => fail(new Error(`exited ${code}: ${out}`)));
  });
  return {
    url,
    port: Number(new URL(url).port),
    stop: () => {
      child.kill('SIGINT');
      return exited;
    },
  };
}

/** A GET of / on 127.0.0.1:port with the Host header given (what a DNS-rebinding page's request carries). */
function get(port: number, host: string): Promise<{ status: number; body: string }> {
  return new Promise((done, fail) => {
    const req = request({ host: '127.0.0.1', port, path: '/', headers: { host } }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => done({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', fail);
    req.end();
  });
}

/** Bytes sent as they are, the whole answer back (the server closes an HTTP/1.0 connection). */
function rawRequest(port: number, text: string): Promise<string> {
  return new Promise((done, fail) => {
    const socket = connect(port, '127.0.0.1', () => socket.end(text));
    let out = '';
    socket.setEncoding('utf8');
    socket.on('data', (c: string) => (out += c));
    socket.on('end', () => done(out));
    socket.on('error', fail);
  });
}

// Injected before the page's own scripts (by the browser's debugging protocol, which the page's CSP does not govern):
// every Content-Security-Policy violation the page causes, kept for the test to read.
const CSP_VIOLATIONS = `window.__cspViolations = [];
document.addEventListener('securitypolicyviolation', (e) => {
  window.__cspViolations.push(e.violatedDirective + ' ' + e.blockedURI + ' ' + (e.sample || ''));
});`;

// Run in the page (as source text: this project's TypeScript has no DOM types). The chart's canvas: its size, how many
// colours it holds and the share of pixels drawn.
const CANVAS_INK = `(() => {
  const c = document.querySelector('#chart canvas');
  if (!c) return undefined;
  const px = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
  const colours = new Set();
  let inked = 0;
  for (let i = 0; i < px.length; i += 4) {
    if (px[i + 3] > 0) inked++;
    colours.add((px[i] << 16) | (px[i + 1] << 8) | px[i + 2]);
  }
  return { width: c.width, height: c.height, colours: colours.size, inked: inked / (px.length / 4) };
})()`;

// A PNG (base64) decoded by the page: its size and the standard deviation of its pixels' luminance (0 when blank).
const PNG_SPREAD = `async (b64) => {
  const img = new Image();
  img.src = 'data:image/png;base64,' + b64;
  await img.decode();
  const c = document.createElement('canvas');
  c.width = img.width;
  c.height = img.height;
  const g = c.getContext('2d');
  g.drawImage(img, 0, 0);
  const px = g.getImageData(0, 0, c.width, c.height).data;
  let sum = 0;
  let sq = 0;
  const n = px.length / 4;
  for (let i = 0; i < px.length; i += 4) {
    const l = 0.299 * px[i] + 0.587 * px[i + 1] + 0.114 * px[i + 2];
    sum += l;
    sq += l * l;
  }
  return { width: c.width, height: c.height, sd: Math.sqrt(sq / n - (sum / n) ** 2) };
}`;

const chromium = findChromium();
if (!chromium)
  console.log('skipping the viewer tests in Chromium: no chromium on PATH (Debian: apt-get install chromium)');
else if (!corpusAvailable())
  console.log('the viewer tests in Chromium: ../shared/corpus not found, on the fixture transcripts only');

(chromium ? describe : describe.skip)('abridge view in Chromium', () => {
  let context: BrowserContext;
  let close: () => Promise<void>;
  const shots = mkdtempSync(join(tmpdir(), 'abridge-view-shots-'));
  beforeAll(async () => {
    ({ context, close } = await launchChromium());
  }, 60_000);
  afterAll(async () => close?.());

  it("the page --serve sends runs in Chromium under its CSP without 'unsafe-inline'; another host name for 127.0.0.1 (DNS rebinding) gets 421", async () => {
    const served = await serveView(VIEW_CASES.pi);
    let rebinding: Awaited<ReturnType<typeof launchChromium>> | undefined;
    try {
      const page = await context.newPage();
      const errors: string[] = [];
      page.on('console', (m) => {
        if (m.type() === 'error' || m.type() === 'warning') errors.push(`${m.type()}: ${m.text()}`);
      });
      page.on('pageerror', (e) => errors.push(`pageerror: ${e.message}`));
      await page.addInitScript(CSP_VIOLATIONS);
      const res = await page.goto(served.url);
      expect(res!.status()).toBe(200);
      expect(res!.headers()['content-security-policy']).not.toContain('unsafe-inline');
      await page.waitForSelector('body[data-ready="1"]');
      const chart = (await page.evaluate(CANVAS_INK)) as { colours: number; inked: number } | undefined;
      expect(chart!.colours).toBeGreaterThan(8);
      expect(chart!.inked).toBeGreaterThan(0.1);
      // What the page styles from its script: the breakdown's swatches and bars, the list's rows one under another.
      const styled = (await page.evaluate(`(() => ({
        swatch: getComputedStyle(document.querySelector('#contextBody .sw')).backgroundColor,
        bar: document.querySelector('#contextBody td.bar span').getBoundingClientRect().width,
        rows: [...document.querySelectorAll('#listInner .row')].slice(0, 3).map((r) => r.offsetTop),
      }))()`)) as { swatch: string; bar: number; rows: number[] };
      expect(styled.swatch).toMatch(/^rgb\(/);
      expect(styled.swatch).not.toBe('rgba(0, 0, 0, 0)');
      expect(styled.bar).toBeGreaterThan(0);
      expect(styled.rows).toHaveLength(3);
      expect(styled.rows[1]! - styled.rows[0]!).toBeGreaterThan(0);
      expect(styled.rows[2]! - styled.rows[1]!).toBe(styled.rows[1]! - styled.rows[0]!);
      await page.locator('#listInner .row').nth(1).click();
      await page.waitForSelector('#fulltext:not(:empty)');
      const first = page.locator('details.compaction').first();
      await first.locator('summary').click();
      expect(await first.locator('pre.summary').isVisible()).toBe(true);
      expect(await page.evaluate('window.__cspViolations')).toEqual([]);
      expect(errors).toEqual([]);
      await page.close();

      // A page at another name that resolves to 127.0.0.1: same address and port, and the server refuses it.
      rebinding = await launchChromium({
        args: [...CHROMIUM_FLAGS, '--host-resolver-rules=MAP rebind.test 127.0.0.1'],
      });
      const foreign = await rebinding.context.newPage();
      const refused = await foreign.goto(`http://rebind.test:${served.port}/`);
      expect(refused!.status()).toBe(421);
      expect(await foreign.content()).not.toContain('id="data"');
    } finally {
      await rebinding?.close();
      expect(await served.stop()).toBe(0);
    }
  }, 120_000);

  const cases: [string, () => Promise<string>][] = [
    // Made in the repository: run everywhere.
    ['fixture: pi, compacted by abridge', async () => (await compactedByAbridge(EXAMPLE_PI)).file],
    [
      'fixture: Claude Code, compacted by abridge',
      async () =>
        (await compactedByAbridge((await fixtureTranscripts()).find((f) => f.folder === 'claude-code')!.file)).file,
    ],
    // Real transcripts, where the corpus is.
    ...(corpusAvailable()
      ? ([
          ['pi (with compactions of its own)', async () => VIEW_CASES.pi],
          ['Claude Code (compact_boundary)', async () => VIEW_CASES.claudeCode],
          ['Codex (compacted)', async () => VIEW_CASES.codex],
          ['a session compacted by abridge', async () => (await abridgeCompactedTranscript()).file],
        ] as [string, () => Promise<string>][])
      : []),
  ];
  for (const [name, transcript] of cases) {
    it(name, async () => {
      const file = await transcript();
      const out = join(dir, `${name.replace(/\W+/g, '-')}.html`);
      const r = abridge('view', file, '--out', out);
      expect(r.stderr).toBe('');
      expect(r.code).toBe(0);
      // What the page must show, from the library (the marker's summary, the texts a search looks in).
      const session = await readSession(file);
      const { data, texts } = buildViewData(session);
      const summary = session.entries.find((e) => e.compaction)!.compaction!.summary;

      const page = await context.newPage();
      const errors: string[] = [];
      page.on('console', (m) => {
        if (m.type() === 'error' || m.type() === 'warning') errors.push(`${m.type()}: ${m.text()}`);
      });
      page.on('pageerror', (e) => errors.push(`pageerror: ${e.message}`));
      page.on('request', (req) => {
        if (!req.url().startsWith('file:') && !req.url().startsWith('data:')) errors.push(`network: ${req.url()}`);
      });
      await page.addInitScript(CSP_VIOLATIONS);
      await page.goto(`file://${out}`);
      await page.waitForSelector('body[data-ready="1"]');
      // The page's meta policy: no 'unsafe-inline' (hashes of its scripts and styles), and nothing it does breaks it.
      const policy = String(
        await page.evaluate(
          `document.querySelector('meta[http-equiv="Content-Security-Policy"]').getAttribute('content')`,
        ),
      );
      expect(policy).toMatch(/script-src 'sha256-/);
      expect(policy).not.toContain('unsafe-inline');

      // The chart: uPlot's canvas, drawn (many colours, most of the plot not blank).
      const chart = (await page.evaluate(CANVAS_INK)) as
        | { width: number; height: number; colours: number; inked: number }
        | undefined;
      expect(chart).toBeDefined();
      expect(chart!.width).toBeGreaterThan(400);
      expect(chart!.colours).toBeGreaterThan(8);
      expect(chart!.inked).toBeGreaterThan(0.1);
      expect(await page.locator('.u-legend .u-series').count()).toBe(data.categories.length + 7);

      // The /context breakdown follows the slider.
      await page.locator('#at').fill('0');
      expect(await page.locator('#contextTitle').textContent()).toBe('Context as of request 1 (/context)');

      // A compaction expands and shows its summary.
      const first = page.locator('details.compaction').first();
      await first.locator('summary').click();
      expect(await first.getAttribute('open')).toBe('');
      expect(await first.locator('pre.summary').textContent()).toBe(summary);
      expect(await first.locator('pre.summary').isVisible()).toBe(true);

      // Search finds a known string: a word from the middle of the conversation, in as many messages as the texts hold.
      const known = texts[Math.floor(texts.length / 2)]!.match(/[A-Za-z][A-Za-z0-9_.-]{7,}/)?.[0] ?? 'assistant';
      const expected = texts.filter(
        (t, i) =>
          t.toLowerCase().includes(known.toLowerCase()) ||
          (data.records[i]!.tools ?? []).join(' ').toLowerCase().includes(known.toLowerCase()),
      ).length;
      await page.fill('#search', known);
      await page.press('#search', 'Enter');
      // Polled from the test (page.waitForFunction would evaluate its string with eval, which the page's CSP forbids).
      const want = `${expected.toLocaleString('en-US')} message`;
      let info = '';
      for (let i = 0; i < 200 && !info.startsWith(want); i++) {
        info = String(await page.evaluate(`document.getElementById('searchInfo').textContent`));
        if (!info.startsWith(want)) await new Promise((r) => setTimeout(r, 50));
      }
      expect(info.startsWith(want), info).toBe(true);
      expect(expected).toBeGreaterThan(0);
      await page.locator('#listInner .row').first().click();
      await page.waitForSelector('#fulltext mark');
      expect((await page.locator('#fulltext mark').first().textContent())!.toLowerCase()).toBe(known.toLowerCase());

      // A screenshot, saved, and not blank: decoded by the page itself, its pixels must vary.
      const png = await page.screenshot({ path: join(shots, `${name.replace(/\W+/g, '-')}.png`), fullPage: true });
      expect(existsSync(join(shots, `${name.replace(/\W+/g, '-')}.png`))).toBe(true);
      const spread = (await page.evaluate(`(${PNG_SPREAD})(${JSON.stringify(png.toString('base64'))})`)) as {
        width: number;
        height: number;
        sd: number;
      };
      expect(spread.width).toBe(1400);
      expect(spread.height).toBeGreaterThan(1000);
      expect(spread.sd).toBeGreaterThan(10);
      expect(await page.evaluate('window.__cspViolations')).toEqual([]);
      expect(errors).toEqual([]);
      await page.close();
    }, 120_000);
  }
});
