#!/usr/bin/env node
// Writes docs/viewer.png, the README's picture of `abridge view`: a generated pi session (bench/view-session.js, invented
// content, with pi compactions and an MCP tool) rendered by the built CLI and photographed in headless Chromium.
// `npm run screenshot` builds first.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { generateSession } from '../bench/view-session.js';
import { launchChromium } from './chromium.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const OUT = join(ROOT, 'docs', 'viewer.png');
const dir = mkdtempSync(join(tmpdir(), 'abridge-screenshot-'));
try {
  const file = join(dir, 'example-session.jsonl');
  writeFileSync(file, generateSession(2.5 * 1024 * 1024, 7));
  const html = join(dir, 'example-session.html');
  // Relative to its folder, so the page names the file and not a temp path.
  const r = spawnSync(
    process.execPath,
    [join(ROOT, 'dist', 'cli', 'main.js'), 'view', 'example-session.jsonl', '--out', html],
    { encoding: 'utf8', cwd: dir },
  );
  if (r.status !== 0) throw new Error(`abridge view failed: ${r.stderr}`);
  const { context, close } = await launchChromium({ viewport: { width: 1400, height: 1250 }, deviceScaleFactor: 1 });
  try {
    const page = await context.newPage();
    await page.goto(`file://${html}`);
    await page.waitForSelector('body[data-ready="1"]');
    // The context just before the second compaction: the window nearly full, the tools that filled it.
    const at = await page.evaluate(
      () => JSON.parse(document.getElementById('data').textContent).compactions[1].beforePoint - 1,
    );
    await page.evaluate((i) => window.abridgeView.select(i), at);
    await page.screenshot({ path: OUT, clip: { x: 0, y: 0, width: 1400, height: 1250 } });
  } finally {
    await close();
  }
  process.stdout.write(`wrote ${OUT}\n`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
