import { statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const found = new Map<string, string | undefined>();

/**
 * A file shipped with abridge (`package.json`, `data/catalog-snapshot.json`, the viewer's page files), looked for from
 * this module's folder upward: the nearest folder holding `relative` wins. A fixed `../../` from `import.meta.url`
 * would not do: the build bundles modules into entry files and shared chunks at different depths of dist/, and the
 * tests run the same code from src/. Undefined when no folder up to the root holds it.
 */
export function packageFile(relative: string): string | undefined {
  if (found.has(relative)) return found.get(relative);
  let dir = dirname(fileURLToPath(import.meta.url));
  let path: string | undefined;
  for (;;) {
    const candidate = join(dir, relative);
    if (isFile(candidate)) {
      path = candidate;
      break;
    }
    const parent = dirname(dir);
    if (parent === dir) break;
    dir = parent;
  }
  found.set(relative, path);
  return path;
}

function isFile(path: string): boolean {
  try {
    return statSync(path, { throwIfNoEntry: false })?.isFile() ?? false;
  } catch {
    return false;
  }
}
