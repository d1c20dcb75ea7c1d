#!/usr/bin/env node
/**
 * Builds dist/ (npm run build):
 * 1. tsc writes the type declarations only (dist/**\/*.d.ts, the layout of src/), and type-checks.
 * 2. esbuild bundles the JavaScript: one file per entry point of package.json (`exports` and `bin`), at the path
 *    `exports` names, with the modules several entry points share in dist/chunks/. A cold `import('abridge-context')` then
 *    loads a handful of files instead of ~90 (Node's ESM loader costs about half a millisecond per module), and
 *    modules reached only through `import()` (tokenizers, the store commands, SDK clients) stay separate chunks,
 *    loaded when used. Dependencies stay external: npm installs them beside abridge.
 *    Source maps carry their sources (sourcesContent), since src/ is not shipped.
 * 3. The viewer's page files are copied to dist/analysis/view/.
 */
import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));

/** dist/x/y.js of package.json → src/x/y.ts. */
function sourceOf(target) {
  const m = /^\.\/dist\/(.+)\.js$/.exec(target);
  if (!m) throw new Error(`scripts/build.js: ${target}: expected ./dist/….js`);
  return join(root, 'src', `${m[1]}.ts`);
}

const targets = new Set(Object.values(pkg.bin ?? {}).map((t) => `./${t.replace(/^\.\//, '')}`));
for (const value of Object.values(pkg.exports))
  if (typeof value === 'object' && value.import) targets.add(value.import);
const entryPoints = [...targets].map(sourceOf);

rmSync(join(root, 'dist'), { recursive: true, force: true });

const tsc = spawnSync(
  process.execPath,
  [
    join(root, 'node_modules/typescript/bin/tsc'),
    '-p',
    'tsconfig.build.json',
    '--emitDeclarationOnly',
    '--sourceMap',
    'false',
  ],
  {
    cwd: root,
    stdio: 'inherit',
  },
);
if (tsc.status !== 0) process.exit(tsc.status ?? 1);

// Every other entry point also imports the main one (a side-effect import added at build time), so that the modules
// of `abridge` itself all reach the same set of entry points and land in one shared chunk: `import('abridge-context')` then
// reads two files, not the ~25 chunks esbuild would cut the library into by which subpaths use which module.
// Modules loaded through import() (the tools, the store commands, the configuration's schema…) are entry points of
// esbuild's splitting too: they get the same import. Found by their literal import('./…') in src/.
const mainEntry = sourceOf(pkg.exports['.'].import);
const lazy = new Set();
for (const file of readdirSync(join(root, 'src'), { recursive: true, encoding: 'utf8' })) {
  if (!file.endsWith('.ts') || /\.(test|suite|d)\.ts$/.test(file)) continue;
  const path = join(root, 'src', file);
  for (const m of readFileSync(path, 'utf8').matchAll(/\bimport\(\s*'(\.{1,2}\/[^']+)\.js'\s*\)/g))
    lazy.add(join(dirname(path), `${m[1]}.ts`));
}
const oneCore = {
  name: 'one-core',
  setup(b) {
    b.onLoad({ filter: /\.ts$/ }, (args) => {
      if (args.path === mainEntry || (!entryPoints.includes(args.path) && !lazy.has(args.path))) return undefined;
      const text = readFileSync(args.path, 'utf8');
      return { contents: `${text}\nimport ${JSON.stringify(mainEntry)};\n`, loader: 'ts' };
    });
  },
};

const result = await build({
  plugins: [oneCore],
  metafile: process.env.METAFILE !== undefined,
  entryPoints,
  outdir: join(root, 'dist'),
  outbase: join(root, 'src'),
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  packages: 'external',
  chunkNames: 'chunks/[name]-[hash]',
  sourcemap: 'linked',
  // Compiling the core chunk is most of what `import('abridge-context')` costs: without whitespace and with simpler syntax it
  // compiles faster (83.1 → 80.6 ms, 15 fresh processes each, beside 59.8 ms for bare node). Names are kept, so stack
  // traces and error class names read as written; the source map has the sources.
  minifyWhitespace: true,
  minifySyntax: true,
  // An uncaught error makes Node print the source line it was thrown from: without a limit that line is the whole
  // chunk (26 KB of code on the terminal). Wrapped, it is a line of code.
  lineLimit: 120,
  sourcesContent: true,
  logLevel: 'warning',
});

if (process.env.METAFILE) writeFileSync(process.env.METAFILE, JSON.stringify(result.metafile));
mkdirSync(join(root, 'dist/analysis'), { recursive: true });
cpSync(join(root, 'src/analysis/view'), join(root, 'dist/analysis/view'), { recursive: true });
