/**
 * The layering check (`npm run lint:deps`, .dependency-cruiser.cjs) must be able to fail: these tests run it over a
 * small tree laid out like src/ with deliberate violations — an import up the table, an import of compaction's logic
 * from store (only its ResultStore port is allowed), a type-only circle, a test helper imported from src/ — and over a
 * clean one.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const CONFIG = join(REPO, '.dependency-cruiser.cjs');
const BIN = join(REPO, 'node_modules', 'dependency-cruiser', 'bin', 'dependency-cruise.mjs');
const dirs: string[] = [];

afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

interface Violation {
  from: string;
  to: string;
  rule: { name: string };
}

/** Writes `files` into a fresh directory (with a tsconfig) and returns the checker's violations. */
function cruise(files: Record<string, string>): Violation[] {
  const root = mkdtempSync(join(tmpdir(), 'abridge-layering-'));
  dirs.push(root);
  const all = {
    'tsconfig.json': JSON.stringify({
      compilerOptions: { module: 'NodeNext', moduleResolution: 'NodeNext', strict: true },
    }),
    ...files,
  };
  for (const [path, text] of Object.entries(all)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), text);
  }
  let out: string;
  try {
    out = execFileSync(process.execPath, [BIN, 'src', 'test', '--config', CONFIG, '--output-type', 'json'], {
      cwd: root,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    });
  } catch (e) {
    // A violation makes the checker exit non-zero; its report is still on stdout.
    const err = e as { status: number; stdout: string };
    expect(err.status).toBeGreaterThan(0);
    out = err.stdout;
  }
  return (JSON.parse(out) as { summary: { violations: Violation[] } }).summary.violations;
}

const rules = (vs: Violation[]) => vs.map((v) => `${v.rule.name}: ${v.from} → ${v.to}`).sort();

describe('the layering check', () => {
  it('passes a tree that follows the table', () => {
    const vs = cruise({
      'src/model/types.ts': 'export interface Session { id: string }\n',
      'src/tokens/count.ts':
        "import type { Session } from '../model/types.js';\nexport const n = (s: Session): number => s.id.length;\n",
      'src/compaction/result-store.ts': 'export interface ResultStore { put(text: string): Promise<string> }\n',
      'src/compaction/compact.ts':
        "import { n } from '../tokens/count.js';\nimport type { ResultStore } from './result-store.js';\nexport const c = (s: ResultStore) => n;\n",
      'src/store/file.ts':
        "import type { ResultStore } from '../compaction/result-store.js';\nimport { AbridgeError } from '../errors.js';\nexport type F = ResultStore;\nexport const E = AbridgeError;\n",
      'src/errors.ts': 'export class AbridgeError extends Error {}\n',
      'src/compaction/compact.test.ts':
        "import { c } from './compact.js';\nimport type { F } from '../store/file.js';\nimport { h } from '../../test/support/h.js';\nexport const t: [unknown, F | undefined, unknown] = [c, undefined, h];\n",
      'test/support/h.ts': "import { n } from '../../src/tokens/count.js';\nexport const h = n;\n",
    });
    expect(rules(vs)).toEqual([]);
  });

  it('fails on an import up the table, on compaction logic from store, on a type-only circle and on test helpers in src/', () => {
    const vs = cruise({
      // The model may throw the typed error (errors.ts imports nothing), and use nothing else above it.
      'src/model/types.ts':
        "import { AbridgeError } from '../errors.js';\nimport { LIMIT } from '../defaults.js';\nexport type Session = { id: string; e?: AbridgeError; n?: typeof LIMIT };\n",
      'src/errors.ts': 'export class AbridgeError extends Error {}\n',
      'src/defaults.ts': 'export const LIMIT = 1;\n',
      'src/compaction/compact.ts':
        "import { MemoryStore } from '../store/memory.js';\nexport const c = () => new MemoryStore();\n",
      'src/store/memory.ts':
        "import { helper } from '../compaction/helper.js';\nexport class MemoryStore { h = helper; }\n",
      'src/compaction/helper.ts': 'export const helper = 1;\n',
      'src/prompt/builder.ts':
        "import { note } from './context-note.js';\nexport interface Section { name: string }\nexport const b = note;\n",
      'src/prompt/context-note.ts':
        "import type { Section } from './builder.js';\nexport const note = (s: Section) => s.name;\n",
      'src/tokens/replay.ts': "import { fixture } from '../../test/support/fixture.js';\nexport const r = fixture;\n",
      'test/support/fixture.ts': 'export const fixture = 1;\n',
      'src/gadgets/thing.ts': "import { helper } from '../compaction/helper.js';\nexport const t = helper;\n",
    });
    expect(rules(vs)).toEqual([
      'layer-compaction: src/compaction/compact.ts → src/store/memory.ts',
      'layer-model: src/model/types.ts → src/defaults.ts',
      'layer-store: src/store/memory.ts → src/compaction/helper.ts',
      'no-circular: src/prompt/builder.ts → src/prompt/context-note.ts',
      'no-tests-from-src: src/tokens/replay.ts → test/support/fixture.ts',
      'no-unlisted-folder: src/gadgets/thing.ts → src/compaction/helper.ts',
    ]);
  });
});
