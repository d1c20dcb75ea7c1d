/**
 * What `npm pack` ships is what the README documents a user gets — the built package (dist/: JavaScript, type
 * declarations, source maps of src/, the viewer's page files), the config schema, the model-catalog snapshot,
 * README.md, LICENSE and package.json — and nothing else: no sources, tests, benchmarks, scripts, CI files, docs,
 * examples, caches, nor declarations or maps of test files. Every path package.json names (`exports`, `bin`, `main`,
 * `types`) is in the tarball.
 *
 * `npm pack --dry-run --json --ignore-scripts` lists the files without running `prepack` (the build): it needs dist/
 * built (`npm run build`, which `npm test` runs first).
 */
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

interface PackResult {
  name: string;
  size: number;
  unpackedSize: number;
  files: { path: string; size: number }[];
}

/** What may ship, by path. Anything matching none of these is a file the package should not carry. */
const ALLOWED: RegExp[] = [
  /^package\.json$/,
  /^README\.md$/,
  /^LICENSE$/,
  /^CHANGELOG\.md$/,
  /^schema\/[\w.-]+\.schema\.json$/,
  /^data\/[\w.-]+\.json$/,
  /^dist\/(?:[\w.-]+\/)*[\w.-]+\.(?:js|d\.ts|js\.map)$/,
  /^dist\/analysis\/view\/page\.(?:html|css|js)$/,
];

/** Never in the tarball, whatever `files` says. */
const FORBIDDEN: RegExp[] = [
  /^src\//,
  /^test\//,
  /^bench\//,
  /^scripts\//,
  /^examples\//,
  /^docs\//,
  /^\.ci\//,
  /^\.cache\//,
  /(?:^|\/)node_modules\//,
  /\.(?:test|spec|property\.test)\.(?:js|d\.ts|js\.map|ts)$/,
  /^dist\/.*\.ts$(?<!\.d\.ts)/,
  /\.tsbuildinfo$/,
  /(?:^|\/)tsconfig[\w.-]*\.json$/,
  /^\.readme-check\//,
];

function pack(): Promise<PackResult> {
  return new Promise((done, fail) =>
    execFile(
      'npm',
      ['pack', '--dry-run', '--json', '--ignore-scripts'],
      { cwd: ROOT, maxBuffer: 64 * 1024 * 1024 },
      (err, stdout, stderr) => {
        if (err) return fail(new Error(`npm pack --dry-run failed: ${stderr}`));
        // npm may print notices before the JSON; the JSON array is the last thing on stdout.
        const start = stdout.indexOf('[');
        done((JSON.parse(stdout.slice(start)) as PackResult[])[0]!);
      },
    ),
  );
}

/** Every file path a package.json field names: `exports` targets (nested conditions too), `bin`, `main`, `types`. */
function namedPaths(pkg: Record<string, unknown>): string[] {
  const out: string[] = [];
  const walk = (v: unknown): void => {
    if (typeof v === 'string') out.push(v.replace(/^\.\//, ''));
    else if (v && typeof v === 'object') for (const x of Object.values(v)) walk(x);
  };
  walk(pkg.exports);
  walk(pkg.bin);
  walk(pkg.main);
  walk(pkg.types);
  return [...new Set(out)];
}

describe.skipIf(!existsSync(join(ROOT, 'dist', 'index.js')))('npm pack', () => {
  let result: PackResult;
  let paths: string[];
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as Record<string, unknown>;

  beforeAll(async () => {
    result = await pack();
    paths = result.files.map((f) => f.path).sort();
  }, 120_000);

  it('ships package.json, README.md, LICENSE, the schema, the catalog snapshot and the built package', () => {
    expect(result.name).toBe(pkg.name);
    for (const p of ['package.json', 'README.md', 'LICENSE', 'dist/index.js', 'dist/index.d.ts'])
      expect(paths).toContain(p);
    expect(paths.filter((p) => p.startsWith('schema/'))).not.toEqual([]);
    expect(paths.filter((p) => p.startsWith('data/'))).not.toEqual([]);
    // The LICENSE shipped is the licence package.json names.
    expect(pkg.license).toBe('MIT');
    expect(readFileSync(join(ROOT, 'LICENSE'), 'utf8')).toMatch(/^MIT License\n/);
  });

  it('every path package.json names is in the tarball', () => {
    const named = namedPaths(pkg);
    expect(named.length).toBeGreaterThan(10);
    expect(named.filter((p) => !paths.includes(p))).toEqual([]);
  });

  it('nothing else: no sources, tests, benchmarks, scripts, CI files, docs or examples', () => {
    expect(paths.filter((p) => FORBIDDEN.some((r) => r.test(p)))).toEqual([]);
    expect(paths.filter((p) => !ALLOWED.some((r) => r.test(p)))).toEqual([]);
  });

  it('every declaration and source map in dist/ is of a shipped module of src/ (none of test files or support code)', () => {
    for (const p of paths.filter((x) => x.endsWith('.d.ts'))) {
      // dist/x/y.d.ts is the declaration of src/x/y.ts.
      const source = p.replace(/^dist\//, 'src/').replace(/\.d\.ts$/, '.ts');
      expect(existsSync(join(ROOT, source)), `${p}: no ${source}`).toBe(true);
    }
    for (const p of paths.filter((x) => x.endsWith('.js.map'))) {
      expect(paths, `${p} without its .js`).toContain(p.replace(/\.map$/, ''));
      const map = JSON.parse(readFileSync(join(ROOT, p), 'utf8')) as { sources: string[]; sourcesContent?: string[] };
      // Sources carry their content (src/ is not shipped), and are abridge's own modules: no test code, no dependency.
      expect(map.sourcesContent?.length ?? 0, p).toBe(map.sources.length);
      for (const s of map.sources) {
        const file = resolve(ROOT, dirname(p), s);
        expect(file.startsWith(join(ROOT, 'src') + '/'), `${p}: source ${s} is outside src/`).toBe(true);
        expect(s, p).not.toMatch(/\.test\.ts$|node_modules/);
      }
    }
  });

  it('stays small (under 2 MB packed, 8 MB unpacked)', () => {
    expect(result.size).toBeLessThan(2 * 1024 * 1024);
    expect(result.unpackedSize).toBeLessThan(8 * 1024 * 1024);
  });
});
