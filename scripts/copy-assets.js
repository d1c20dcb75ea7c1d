// Copies what tsc does not: the viewer page's template, style and script, next to the compiled module that inlines them.
import { cpSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
for (const dir of ['analysis/view']) {
  mkdirSync(join(root, 'dist', dir), { recursive: true });
  cpSync(join(root, 'src', dir), join(root, 'dist', dir), { recursive: true });
}
