import type { BrowserContext } from 'playwright-core';

/** Flags for headless Chromium on a machine without network (see chromium.js). */
export const CHROMIUM_FLAGS: readonly string[];
/** The `chromium` executable on PATH (Debian's package), or undefined. */
export function findChromium(): string | undefined;
/** Launches Chromium from PATH with a fresh profile; `close` ends it and removes the profile. */
export function launchChromium(
  options?: Record<string, unknown>,
): Promise<{ context: BrowserContext; close: () => Promise<void> }>;
