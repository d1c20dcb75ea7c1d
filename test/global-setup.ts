/**
 * Vitest's global setup (vitest.config.ts): runs once, before any test file, in the parent process.
 *
 * 1. dist/ is built (`npm run build`) when it is missing, incomplete or older than what it is built from, so that the
 *    tests of the CLI, the child processes and the export snapshot run the current code on a fresh clone too, and no
 *    test builds anything inside its own timeout. Skip with ABRIDGE_TEST_BUILD=0 (the tests then use dist/ as it is).
 *    In watch mode it is checked again before each rerun.
 * 2. The tests that skip for want of something outside the repository (the corpus of real transcripts, a PostgreSQL
 *    server, Chromium, the Claude Code CLI, root) are named once, with what would make them run.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { TestProject } from 'vitest/node';
import { findChromium } from '../scripts/chromium.js';
import { CORPUS_DIR, corpusAvailable } from './support/corpus.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** The newest file dist/ is built from: the sources of src/ (tests left out), the viewer's page files, the build's own inputs. */
function newestInput(): { path: string; mtimeMs: number } {
  let newest = { path: '', mtimeMs: 0 };
  const consider = (path: string) => {
    const mtimeMs = statSync(path).mtimeMs;
    if (mtimeMs > newest.mtimeMs) newest = { path, mtimeMs };
  };
  for (const file of readdirSync(join(ROOT, 'src'), { recursive: true, encoding: 'utf8' })) {
    const path = join(ROOT, 'src', file);
    if (/\.(test|suite)\.ts$/.test(file) || file.endsWith('.mjs') || !statSync(path).isFile()) continue;
    if (file.endsWith('.ts') || file.startsWith(join('analysis', 'view'))) consider(path);
  }
  for (const file of ['package.json', 'tsconfig.json', 'tsconfig.build.json', 'scripts/build.js'])
    consider(join(ROOT, file));
  return newest;
}

/** What dist/ must hold after a build: every entry point of package.json (`exports`, `bin`) with its declarations. */
function expectedOutputs(): string[] {
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
    bin?: Record<string, string>;
    exports: Record<string, string | { types?: string; import?: string }>;
  };
  const out = new Set<string>(Object.values(pkg.bin ?? {}));
  for (const target of Object.values(pkg.exports)) {
    if (typeof target !== 'object') continue;
    if (target.import) out.add(target.import);
    if (target.types) out.add(target.types);
  }
  out.add('dist/analysis/view/page.html');
  return [...out].map((p) => join(ROOT, p));
}

/** Why dist/ must be built, or undefined when it is current. */
export function buildReason(): string | undefined {
  const outputs = expectedOutputs();
  const missing = outputs.filter((p) => !existsSync(p));
  if (missing.length === outputs.length) return 'dist/ is missing';
  if (missing.length > 0) return `dist/ is incomplete (no ${relative(ROOT, missing[0]!)})`;
  const oldest = Math.min(...outputs.map((p) => statSync(p).mtimeMs));
  const input = newestInput();
  if (input.mtimeMs > oldest) return `dist/ is older than ${relative(ROOT, input.path)}`;
  return undefined;
}

function ensureBuilt(): void {
  if (process.env.ABRIDGE_TEST_BUILD === '0') return;
  const reason = buildReason();
  if (!reason) return;
  console.error(`[global setup] building dist/ (npm run build) because ${reason}`);
  const started = performance.now();
  // Its output to stderr, as these notes: stdout stays the reporter's (`vitest list --json`).
  const r = spawnSync(process.execPath, [join(ROOT, 'scripts/build.js')], { cwd: ROOT, stdio: ['ignore', 2, 2] });
  if (r.status !== 0)
    throw new Error(
      `npm run build failed (exit ${r.status ?? r.signal}; its errors are above): the tests run the built package. ` +
        'Fix the build, or set ABRIDGE_TEST_BUILD=0 to run with dist/ as it is.',
    );
  console.error(`[global setup] built dist/ in ${((performance.now() - started) / 1000).toFixed(1)} s`);
}

/** One line per kind of test that will skip here, with what would make it run. */
function skipNotes(): string[] {
  const notes: string[] = [];
  if (!corpusAvailable())
    notes.push(
      `the tests over real transcripts: no corpus at ${CORPUS_DIR} (set ABRIDGE_CORPUS to a copy of ../shared/corpus); ` +
        'every module is still tested on the fixtures in the repository',
    );
  if (!process.env.ABRIDGE_PG_URL)
    notes.push(
      'the PostgreSQL store: ABRIDGE_PG_URL is not set (see scripts/pg-test-server.sh; .ci/run starts a server)',
    );
  if (!findChromium()) notes.push('the viewer in Chromium: no chromium on PATH (Debian: apt-get install chromium)');
  if (!process.env.ABRIDGE_CLAUDE_BIN)
    notes.push(
      'the Claude Code resume test: ABRIDGE_CLAUDE_BIN is not set (scripts/install-claude-code.sh; .ci/run does)',
    );
  if (!process.env.ABRIDGE_CODEX_BIN)
    notes.push('the Codex resume test: ABRIDGE_CODEX_BIN is not set (scripts/install-codex.sh; .ci/run does)');
  if (process.getuid?.() !== 0) notes.push('the read-only store as user nobody: needs root');
  if (!existsSync('/dev/full')) notes.push('standard output on a full disk: no /dev/full');
  return notes;
}

export default function setup(project: TestProject): void {
  ensureBuilt();
  project.onTestsRerun(() => ensureBuilt());
  const notes = skipNotes();
  if (notes.length > 0)
    console.error(`[global setup] these tests skip here:\n${notes.map((n) => `  - ${n}`).join('\n')}`);
}
