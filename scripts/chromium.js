// Headless Chromium for the viewer's benchmark, its screenshot and the tests (plain JS, run after a build; typed by
// chromium.d.ts, re-exported to the tests by test/support/browser.ts). Debian's `chromium` from PATH, a fresh
// profile, and the flags that keep it quiet on a machine without network.
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';

export const CHROMIUM_FLAGS = [
  '--headless=new',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

export function findChromium() {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    for (const name of ['chromium', 'chromium-browser']) if (dir && existsSync(join(dir, name))) return join(dir, name);
  }
  return undefined;
}

export async function launchChromium(options = {}) {
  const executablePath = findChromium();
  if (!executablePath) throw new Error('no chromium on PATH (Debian: apt-get install chromium)');
  const { chromium } = await import('playwright-core');
  const profile = mkdtempSync(join(tmpdir(), 'abridge-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath,
    headless: true,
    args: CHROMIUM_FLAGS,
    viewport: { width: 1400, height: 1000 },
    ...options,
  });
  return {
    context,
    close: async () => {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}
