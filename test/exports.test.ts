/**
 * The public surface, kept: every entry point of package.json `exports`, built, lists exactly the names of
 * test/exports.snapshot.json — the values a program can import (Object.keys of the module) and the types its .d.ts
 * declares (`type X`). A name added or removed fails here until the snapshot is updated on purpose:
 *
 *   npx vitest run test/exports.test.ts -u   (dist/ is built first by vitest's global setup when it is stale)
 *
 * Internals stay out of the entry points; tests import them by path.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  exports: Record<string, string | { types: string; import: string }>;
};
const entries = Object.entries(pkg.exports).flatMap(([subpath, target]) =>
  typeof target === 'string' ? [] : [{ subpath, ...target }],
);
/** Entry points whose files are not built (vitest's global setup builds dist/ before the tests run). */
const unbuilt = entries.flatMap((e) => [e.types, e.import]).filter((p) => !existsSync(join(ROOT, p)));

/** The names each .d.ts exports: `name` for a value, `type name` for a type or interface only. */
function declaredNames(): Map<string, string[]> {
  const files = entries.map((e) => join(ROOT, e.types));
  const program = ts.createProgram(files, {
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    skipLibCheck: true,
    noEmit: true,
  });
  const checker = program.getTypeChecker();
  const out = new Map<string, string[]>();
  for (const e of entries) {
    const source = program.getSourceFile(join(ROOT, e.types));
    const symbol = source && checker.getSymbolAtLocation(source);
    if (!symbol) throw new Error(`${e.types}: no module symbol (not built?)`);
    const names = checker.getExportsOfModule(symbol).map((s) => {
      const target = s.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(s) : s;
      return target.flags & ts.SymbolFlags.Value ? s.getName() : `type ${s.getName()}`;
    });
    out.set(e.subpath, names.sort());
  }
  return out;
}

describe('public exports', () => {
  it('lists every entry point of package.json', () => {
    expect(entries.map((e) => e.subpath)).toContain('.');
    expect(entries.length).toBeGreaterThanOrEqual(10);
    expect(unbuilt, 'files of package.json exports missing from dist/').toEqual([]);
  });

  it('each built entry point exports exactly the names of the snapshot, values and types', async () => {
    const declared = declaredNames();
    const surface: Record<string, string[]> = {};
    for (const e of entries) {
      const mod = (await import(pathToFileURL(join(ROOT, e.import)).href)) as Record<string, unknown>;
      const runtime = Object.keys(mod).sort();
      const names = declared.get(e.subpath)!;
      // What a program can import at run time is what the types declare as values (`default` included).
      expect(runtime, `${e.subpath}: values at run time vs. in ${e.types}`).toEqual(
        names.filter((n) => !n.startsWith('type ')),
      );
      surface[e.subpath] = names;
    }
    await expect(`${JSON.stringify(surface, null, 2)}\n`).toMatchFileSnapshot('./exports.snapshot.json');
  }, 120_000);

  it('keeps internals out of the core entry point', async () => {
    const core = (await import(pathToFileURL(join(ROOT, 'dist', 'index.js')).href)) as Record<string, unknown>;
    // Named in issue 15 as internals that were public through `export *`.
    for (const name of [
      'num',
      'toEpochMs',
      'FRAMING',
      'followEntries',
      'trackerFor',
      'wireMessage',
      'scoreUnit',
      'STRATEGIES',
      'parseMemoryPath',
      'MEMORY_ROOT',
    ]) {
      expect(core, name).not.toHaveProperty(name);
    }
    const tools = (await import(pathToFileURL(join(ROOT, 'dist', 'tools', 'index.js')).href)) as Record<
      string,
      unknown
    >;
    for (const name of ['parseMemoryPath', 'MEMORY_ROOT', 'isAddressableName', 'showPath', 'MAX_DEPTH'])
      expect(tools, name).not.toHaveProperty(name);
  });
});
