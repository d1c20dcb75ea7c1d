/** The corpus transcripts the benches read: every file of the given folders (sorted, not the .md notes). */
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

/** Files of `folders` under `corpus` (a folder that is missing is skipped), those whose path holds `only` if given. */
export function corpusFiles(corpus, folders, only) {
  const out = [];
  for (const folder of folders) {
    let names;
    try {
      names = readdirSync(join(corpus, folder));
    } catch {
      continue;
    }
    for (const n of names.sort()) {
      const path = join(corpus, folder, n);
      if (!statSync(path).isFile() || n.endsWith('.md')) continue;
      if (only && !path.includes(only)) continue;
      out.push(path);
    }
  }
  return out;
}
