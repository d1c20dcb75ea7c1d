// The layering of docs/architecture.md, checked by dependency-cruiser (`npm run lint:deps`, part of `npm test`).
//
// LAYERS lists, for each folder under src/, the folders its non-test code may import directly ("depends on"); what
// those may import is allowed too (the closure), so the arrows only point down the table. Type-only imports count
// (tsPreCompilationDeps), and so do type-only circles. Tests (`*.test.ts`) may import across layers (a compaction test
// may use a store), but no module under src/ may import a test or a test helper.
'use strict';

/** Folder → the folders it depends on. `compaction:port` is the ResultStore port only, not compaction's logic. */
const LAYERS = {
  model: [],
  redact: ['model'],
  formats: ['model', 'redact'],
  tokens: ['model'],
  budget: ['tokens'],
  compaction: ['tokens', 'budget', 'redact'],
  store: ['model', 'compaction:port'],
  prompt: ['tokens', 'budget', 'formats'],
  tools: ['compaction', 'store', 'prompt'],
  manager: ['model', 'redact', 'formats', 'tokens', 'budget', 'compaction', 'store', 'prompt', 'tools'],
  adapters: ['manager', 'formats'],
  analysis: ['manager', 'formats'],
  cli: ['manager', 'formats', 'adapters', 'analysis'],
};

/** The ResultStore port (and its in-memory default) that compaction owns and store implements. */
const PORT = '^src/compaction/(result-store|memory-result-store)\\.ts$';
/** Files at the top of src/ that every layer but model may use: errors, atomic writes, the defaults, the package's own files. */
const SHARED = '^src/(errors|atomic-write|defaults|package-file)\\.ts$';
/** The model may throw the typed error (errors.ts imports nothing), and nothing else above it. */
const ERRORS = '^src/errors\\.ts$';

function closure(folder, seen = new Set()) {
  for (const dep of LAYERS[folder]) {
    const name = dep.split(':')[0];
    if (seen.has(dep)) continue;
    seen.add(dep);
    if (!dep.includes(':')) closure(name, seen);
  }
  return seen;
}

const TESTS = '\\.test\\.ts$';

const layerRules = Object.keys(LAYERS).map((folder) => {
  const allowed = [...closure(folder)];
  const whole = allowed.filter((d) => !d.includes(':'));
  const pathNot = [`^src/(${[folder, ...whole].join('|')})/`];
  if (allowed.includes('compaction:port')) pathNot.push(PORT);
  pathNot.push(folder === 'model' ? ERRORS : SHARED);
  return {
    name: `layer-${folder}`,
    comment: `src/${folder}/ may import only ${allowed.length ? allowed.join(', ') : 'nothing else under src/'} (docs/architecture.md)`,
    severity: 'error',
    from: { path: `^src/${folder}/`, pathNot: TESTS },
    to: { path: '^src/', pathNot },
  };
});

module.exports = {
  forbidden: [
    ...layerRules,
    {
      name: 'no-circular',
      comment: 'No import cycle, type-only ones included.',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    {
      name: 'no-tests-from-src',
      comment: 'Code under src/ does not import tests or test helpers.',
      severity: 'error',
      from: { path: '^src/', pathNot: TESTS },
      to: { path: [TESTS, '^test/'] },
    },
    {
      name: 'no-unlisted-folder',
      comment: 'A new folder under src/ needs its row in LAYERS (.dependency-cruiser.cjs) and docs/architecture.md.',
      severity: 'error',
      from: { path: '^src/[^/]+/', pathNot: `^src/(${Object.keys(LAYERS).join('|')})/` },
      to: { path: '^src/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^(node_modules|dist)/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default'] },
  },
};
