import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve, sep } from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { memoryTool } from './memory.js';
import { parseMemoryPath } from './memory-paths.js';

/**
 * Throws generated paths at every command of the memory tool and proves nothing escapes the root. Beside the root sit a
 * canary directory (a secret file, a nested one, a file hard-linked into the root) and a sibling named like the root
 * (`memories-evil`); inside the root, links lead to the canary and to the parent. After all runs, the parent temp dir
 * outside the root is unchanged (same paths, types, sizes, contents, mtimes, link targets), the planted links are
 * intact, no temp file is left, and no answer ever contained the secret or a real path.
 *
 * Runs: ABRIDGE_FUZZ_RUNS (default 5,000); seed: ABRIDGE_FUZZ_SEED (default: random, printed on failure).
 */

const RUNS = Number(process.env.ABRIDGE_FUZZ_RUNS ?? 5000);
const SEED = process.env.ABRIDGE_FUZZ_SEED === undefined ? undefined : Number(process.env.ABRIDGE_FUZZ_SEED);
const SECRET = 'CANARY-SECRET-9d41c7-never-readable';

const base = fs.realpathSync(fs.mkdtempSync(join(tmpdir(), 'abridge-memory-fuzz-')));
afterAll(() => fs.rmSync(base, { recursive: true, force: true }));
const root = join(base, 'memories');
const canary = join(base, 'canary');

function plant(): void {
  fs.mkdirSync(join(canary, 'sub'), { recursive: true });
  fs.writeFileSync(join(canary, 'secret.txt'), SECRET);
  fs.writeFileSync(join(canary, 'sub', 'deep.txt'), `${SECRET}\n${SECRET}\n`);
  fs.writeFileSync(join(canary, 'hard-secret.txt'), SECRET);
  fs.mkdirSync(join(base, 'memories-evil'));
  fs.writeFileSync(join(base, 'memories-evil', 'x'), SECRET);
  fs.mkdirSync(join(root, 'dir'), { recursive: true });
  fs.writeFileSync(join(root, 'notes.md'), 'notes\nmore notes\n');
  fs.writeFileSync(join(root, 'dir', 'real.md'), 'real\n');
  fs.symlinkSync(canary, join(root, 'link'));
  fs.symlinkSync(join(canary, 'secret.txt'), join(root, 'file-link'));
  fs.symlinkSync('../canary', join(root, 'rel'));
  fs.symlinkSync('..', join(root, 'up'));
  fs.symlinkSync(canary, join(root, 'dir', 'inner'));
  fs.symlinkSync(join(canary, 'nonexistent'), join(root, 'dangling'));
  fs.linkSync(join(canary, 'hard-secret.txt'), join(root, 'hard.md'));
}

const LINKS = ['link', 'file-link', 'rel', 'up', 'dir/inner', 'dangling'];

/** Every path under `dir` (not following links) with its type, size, mtime, content hash or link target; `skip` excluded. */
function snapshot(dir: string, skip?: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (d: string) => {
    for (const name of fs.readdirSync(d)) {
      const p = join(d, name);
      if (p === skip) continue;
      const st = fs.lstatSync(p);
      const key = relative(base, p);
      if (st.isSymbolicLink()) out[key] = `link -> ${fs.readlinkSync(p)}`;
      else if (st.isDirectory()) {
        out[key] = `dir mtime=${st.mtimeMs}`;
        walk(p);
      } else
        out[key] =
          `file ${st.size} mtime=${st.mtimeMs} sha=${createHash('sha256').update(fs.readFileSync(p)).digest('hex')}`;
    }
  };
  walk(dir);
  return out;
}

// Building blocks of paths: the root and look-alikes, separators, traversal (plain, encoded, Unicode), NUL and other
// control characters, backslashes, over-long segments, and the names of the links planted inside the root.
const NAMES = [
  'notes.md',
  'dir',
  'real.md',
  'new.md',
  'x',
  'secret.txt',
  'sub',
  'deep.txt',
  'canary',
  'hard.md',
  'memories',
  'memories-evil',
  '~',
  'node_modules',
];
const BLOCKS = [
  '/memories',
  '/memories/',
  'memories',
  '/memories-evil',
  '/memoriesx',
  '/Memories',
  '/',
  '//',
  '..',
  '.',
  '../',
  './',
  '%2e',
  '%2e%2e',
  '..%2f',
  '%2f',
  '%252e',
  '\\',
  '\\..',
  '..\\',
  '\0',
  '\x01',
  '\x1b',
  '\x7f',
  '\n',
  '\u0085',
  '．',
  '．．',
  '\u2024',
  '\u2024\u2024',
  '\uFE52',
  '\u3002',
  '\uFF0F',
  '\u2215',
  'ｍｅｍｏｒｉｅｓ',
  'e\u0301',
  '\u202E',
  '\u200B',
  ' ',
  ':',
  '*',
  'a'.repeat(256),
  'b'.repeat(255),
  'é'.repeat(128),
  '/tmp',
  base,
  canary,
  ...LINKS,
  ...NAMES,
];
const SEGMENTS = ['..', '.', '', '%2e%2e', '．．', '\u2024\u2024', '\\..', '\0', 'a'.repeat(256), ...LINKS, ...NAMES];

/** Concatenations of blocks, no separator implied. */
const rawPath = fc.array(fc.constantFrom(...BLOCKS), { maxLength: 10 }).map((xs) => xs.join(''));
/** A root-ish prefix and segments, some of them hostile. */
const segmentPath = fc
  .tuple(
    fc.constantFrom('/memories', '/memories/', '/memories-evil', 'memories', '/memoriesx', ''),
    fc.array(fc.constantFrom(...SEGMENTS), { maxLength: 18 }),
    fc.boolean(),
  )
  .map(([prefix, segs, slash]) => `${prefix}/${segs.join('/')}${slash ? '/' : ''}`);
/** Well-formed paths through the planted links and real directories, so the on-disk checks (not just the parser) are hit. */
const wellFormed = fc
  .array(fc.constantFrom(...LINKS, ...NAMES, 'a', 'b'), { minLength: 0, maxLength: 4 })
  .map((segs) => `/memories${segs.length ? '/' : ''}${segs.join('/')}`);
/** Paths that exist or get created often, so edits, renames and deletes also succeed. */
const known = fc.constantFrom(
  '/memories',
  '/memories/',
  '/memories/notes.md',
  '/memories/dir',
  '/memories/dir/real.md',
  '/memories/x',
  '/memories/new.md',
  '/memories/a/b.md',
  '/memories/a',
  '/memories/b',
);
const anyString = fc.string({ unit: 'binary', maxLength: 40 });
const path = fc.oneof(
  { weight: 3, arbitrary: known },
  { weight: 4, arbitrary: wellFormed },
  { weight: 3, arbitrary: segmentPath },
  { weight: 3, arbitrary: rawPath },
  { weight: 1, arbitrary: anyString },
);
const text = fc.constantFrom('', 'x', 'pwned\n', 'hello\nworld\n', 'CANARY');
const command = fc.oneof(
  fc.record({
    command: fc.constant('view'),
    path,
    view_range: fc.option(fc.tuple(fc.integer({ min: -2, max: 4 }), fc.integer({ min: -2, max: 4 })), {
      nil: undefined,
    }),
  }),
  fc.record({ command: fc.constant('create'), path, file_text: text }),
  fc.record({
    command: fc.constant('str_replace'),
    path,
    old_str: fc.constantFrom('CANARY', 'SECRET', 'notes', 'more notes', 'real', 'x', 'pwned', 'hello', ''),
    new_str: text,
  }),
  fc.record({ command: fc.constant('insert'), path, insert_line: fc.nat(3), insert_text: text }),
  fc.record({ command: fc.constant('delete'), path }),
  fc.record({ command: fc.constant('rename'), old_path: path, new_path: path }),
);

describe('memory tool fuzz: nothing escapes the root', () => {
  it(`${RUNS.toLocaleString('en-US')} generated commands leave everything outside the root untouched and never read the canary`, async () => {
    plant();
    const outsideBefore = snapshot(base, root);
    const linksBefore = LINKS.map((l) => fs.readlinkSync(join(root, l)));
    const hardBefore = fs.lstatSync(join(root, 'hard.md'));
    const tool = memoryTool({ root });
    const tally: Record<string, { ok: number; error: number }> = {};
    let runs = 0;

    await fc.assert(
      fc.asyncProperty(command, async (input) => {
        runs++;
        const out = await tool.run(input);
        expect(typeof out).toBe('string');
        expect(out).not.toContain(SECRET);
        expect(out).not.toContain('CANARY-SECRET');
        // No real path is revealed (unless the input itself held one and an error echoes it). An earlier command may
        // have made the real path a name under the root (`create /memories/tmp/abridge-memory-fuzz-…/x`): a listing
        // shows it as such, under /memories, which reveals nothing.
        if (!JSON.stringify(input).includes(base)) expect(out.replaceAll(`/memories${base}`, '')).not.toContain(base);
        const t = (tally[input.command] ??= { ok: 0, error: 0 });
        if (out.startsWith('Error:')) t.error++;
        else t.ok++;
        // The textual gate alone: whatever it accepts maps strictly inside the root.
        for (const p of 'path' in input ? [input.path] : [input.old_path, input.new_path]) {
          let segments: string[];
          try {
            segments = parseMemoryPath(p).segments;
          } catch {
            continue;
          }
          const real = resolve(root, ...segments);
          expect(real === root || real.startsWith(root + sep)).toBe(true);
          expect(real).toBe(segments.length ? `${root}${sep}${segments.join(sep)}` : root);
          for (const s of segments) expect(s).toMatch(/^[^./\\\0][^/\\\0]*$/);
        }
      }),
      { numRuns: RUNS, ...(SEED !== undefined ? { seed: SEED } : {}), endOnFailure: true },
    );

    console.log(
      `memory fuzz: ${runs.toLocaleString('en-US')} runs; ${Object.entries(tally)
        .map(([c, t]) => `${c} ${t.ok} ok / ${t.error} refused`)
        .join(', ')}`,
    );
    expect(snapshot(base, root)).toEqual(outsideBefore);
    expect(LINKS.map((l) => fs.readlinkSync(join(root, l)))).toEqual(linksBefore);
    const hardAfter = fs.lstatSync(join(root, 'hard.md'));
    expect([hardAfter.ino, hardAfter.nlink, hardAfter.mtimeMs]).toEqual([
      hardBefore.ino,
      hardBefore.nlink,
      hardBefore.mtimeMs,
    ]);
    expect(fs.readFileSync(join(canary, 'secret.txt'), 'utf8')).toBe(SECRET);
    const leftovers = Object.keys(snapshot(root)).filter((p) => /abridge-(tmp|deleting)/.test(p));
    expect(leftovers).toEqual([]);
    expect(runs).toBeGreaterThanOrEqual(RUNS);
    // The fuzz reached the filesystem: every command both succeeded and failed at some point.
    for (const c of ['view', 'create', 'str_replace', 'insert', 'delete', 'rename']) {
      expect(tally[c]?.error ?? 0).toBeGreaterThan(0);
      if (RUNS >= 1000) expect(tally[c]?.ok ?? 0).toBeGreaterThan(0);
    }
  }, 600_000);
});
