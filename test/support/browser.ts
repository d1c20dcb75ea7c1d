import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import type { BrowserContext } from 'playwright-core';

/**
 * Flags for headless Chromium on a machine without network: without the background-networking ones, Chromium keeps
 * trying to reach Google services and fills the log.
 */
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

/** The `chromium` executable on PATH (Debian's package), or undefined. */
export function findChromium(): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    for (const name of ['chromium', 'chromium-browser']) {
      const p = join(dir, name);
      if (dir && existsSync(p)) return p;
    }
  }
  return undefined;
}

/** Launches Chromium with a fresh profile; `close` ends it and removes the profile. */
export async function launchChromium(
  executablePath: string,
): Promise<{ context: BrowserContext; close: () => Promise<void> }> {
  const { chromium } = await import('playwright-core');
  const profile = mkdtempSync(join(tmpdir(), 'abridge-chromium-'));
  // A persistent context is how playwright takes a fresh user data dir (it refuses --user-data-dir in args).
  const context = await chromium.launchPersistentContext(profile, {
    executablePath,
    headless: true,
    args: CHROMIUM_FLAGS,
    viewport: { width: 1400, height: 1000 },
  });
  return {
    context,
    close: async () => {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}
