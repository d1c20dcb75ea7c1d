/**
 * Finding `abridge.config.json` without reading it: apart from ./config-file.ts so that a command can tell there is no
 * file (the common case) without loading the schema and zod behind it.
 */
import { statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';

export const CONFIG_FILE_NAME = 'abridge.config.json';
export const CONFIG_DIR_NAME = '.abridge';

/**
 * The nearest configuration file from `startDir` upward: in each directory `abridge.config.json`, then
 * `.abridge/abridge.config.json` (the first directory holding either ends the search). Undefined when there is none.
 */
export function findConfigFile(startDir: string): string | undefined {
  let dir = resolve(startDir);
  for (;;) {
    for (const candidate of [join(dir, CONFIG_FILE_NAME), join(dir, CONFIG_DIR_NAME, CONFIG_FILE_NAME)]) {
      if (isFile(candidate)) return candidate;
    }
    const parent = dirname(dir);
    if (parent === dir) return undefined;
    dir = parent;
  }
}

function isFile(path: string): boolean {
  try {
    return statSync(path, { throwIfNoEntry: false })?.isFile() ?? false;
  } catch {
    return false; // e.g. ENOTDIR when `.abridge` is a file, EACCES on a directory we cannot enter
  }
}
