import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { memoryTool } from './memory.js';

/**
 * The race of issue 13: another process swaps a directory inside the root with a symbolic link to a directory
 * outside, atomically and in a tight loop, while the memory tool works on paths through that directory. Whatever the
 * interleaving, nothing outside may be read, created, changed, moved or deleted.
 *
 * The swapper is the strongest available: python3 calling renameat2(…, RENAME_EXCHANGE) through ctypes (the name is
 * a directory one instant and a link the next, never missing); without python3 it falls back to a Node loop of
 * rename-aside + symlink + rename-back (not atomic, so weaker).
 */

const CANARY = 'CANARY-9f1c77: outside the memory root';
const ITERATIONS = 300;

const PYTHON_SWAPPER = String.raw`
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
renameat2 = getattr(libc, 'renameat2', None)
if renameat2 is None:
    sys.exit(3)
AT_FDCWD = -100
RENAME_EXCHANGE = 2
d, l, outside, stop = [p.encode() for p in sys.argv[1:5]]
swaps = 0
while not os.path.exists(stop):
    if renameat2(AT_FDCWD, d, AT_FDCWD, l, RENAME_EXCHANGE) == 0:
        swaps += 1
        continue
    # the tool deleted or moved the directory (or the link): put the pair back and go on
    try:
        if not os.path.lexists(d): os.mkdir(d)
        if not os.path.lexists(l): os.symlink(outside, l)
    except OSError:
        pass
sys.stdout.write(str(swaps))
`;

const NODE_SWAPPER = String.raw`
const fs = require('node:fs');
const [d, l, outside, stop] = process.argv.slice(1);
let swaps = 0;
while (!fs.existsSync(stop)) {
  try {
    fs.renameSync(d, d + '.aside');
    fs.symlinkSync(outside, d);
    fs.unlinkSync(d);
    fs.renameSync(d + '.aside', d);
    swaps++;
  } catch {
    try { if (!fs.existsSync(d)) fs.mkdirSync(d); } catch {}
  }
}
process.stdout.write(String(swaps));
`;

const bases: string[] = [];
afterAll(() => {
  for (const b of bases) fs.rmSync(b, { recursive: true, force: true });
});

/** Every entry below `dir` (never following links): path, kind, inode, mode, size and content hash. */
function fingerprint(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const name of fs.readdirSync(d).sort()) {
      const p = join(d, name);
      const st = fs.lstatSync(p);
      const kind = st.isSymbolicLink() ? 'link' : st.isDirectory() ? 'dir' : st.isFile() ? 'file' : 'other';
      const hash = st.isFile()
        ? createHash('sha256').update(fs.readFileSync(p)).digest('hex')
        : st.isSymbolicLink()
          ? fs.readlinkSync(p)
          : '';
      out.push(`${p.slice(dir.length)} ${kind} ino=${st.ino} mode=${st.mode.toString(8)} size=${st.size} ${hash}`);
      if (kind === 'dir') walk(p);
    }
  };
  walk(dir);
  return out;
}

function swapperCommand(): { cmd: string; args: string[]; kind: string } {
  if (
    process.platform === 'linux' &&
    spawnSync('python3', ['-c', 'import ctypes; ctypes.CDLL(None).renameat2'], { stdio: 'ignore' }).status === 0
  ) {
    return { cmd: 'python3', args: ['-c', PYTHON_SWAPPER], kind: 'renameat2(RENAME_EXCHANGE) via python3' };
  }
  return { cmd: process.execPath, args: ['-e', NODE_SWAPPER], kind: 'rename-aside + symlink (Node fallback)' };
}

describe.runIf(process.platform === 'linux')(
  'memory tool: a directory swapped for a link in a tight loop by another process',
  () => {
    it(`${ITERATIONS} rounds of every command leave the outside tree untouched and never read it`, async () => {
      const base = fs.realpathSync(fs.mkdtempSync(join(tmpdir(), 'abridge-race-')));
      bases.push(base);
      const root = join(base, 'memories');
      const outside = join(base, 'outside');
      // The outside directory mirrors the names the tool works on, so any followed link would find something to act on.
      for (const dir of [outside, join(outside, 'sub'), join(outside, 'sub', 'deep'), join(outside, 'gone')])
        fs.mkdirSync(dir, { recursive: true });
      for (const f of ['x.md', 'sub/y.md', 'sub/deep/z.md', 'gone/w.md', 'keep.md'])
        fs.writeFileSync(join(outside, f), `${CANARY}\n${f}\n`);
      fs.mkdirSync(join(root, 'd', 'sub', 'deep'), { recursive: true });
      fs.writeFileSync(join(root, 'd', 'x.md'), 'x one\n');
      fs.writeFileSync(join(root, 'd', 'sub', 'y.md'), 'y one\n');
      fs.symlinkSync(outside, join(root, 'l'));
      const before = fingerprint(outside);

      const stop = join(base, 'stop');
      const { cmd, args, kind } = swapperCommand();
      const swapper: ChildProcess = spawn(cmd, [...args, join(root, 'd'), join(root, 'l'), outside, stop], {
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      let swapOutput = '';
      swapper.stdout!.on('data', (b: Buffer) => (swapOutput += b.toString()));
      const exited = new Promise<number | null>((res) => swapper.on('exit', (code) => res(code)));

      const tool = memoryTool({ root });
      const answers: string[] = [];
      const run = async (input: Record<string, unknown>) => {
        const out = await tool.run(input);
        answers.push(out);
        return out;
      };
      const counts = { ok: 0, refused: 0 };
      try {
        // Start once the swapper is seen at work (d has been a link at least once).
        for (let k = 0; k < 2000 && !fs.lstatSync(join(root, 'd'), { throwIfNoEntry: false })?.isSymbolicLink(); k++)
          await new Promise((r) => setTimeout(r, 1));
        for (let i = 0; i < ITERATIONS; i++) {
          const batch = [
            { command: 'create', path: `/memories/d/new-${i}.md`, file_text: `new ${i}\n` },
            { command: 'create', path: `/memories/d/sub/deep/n-${i}.md`, file_text: `deep ${i}\n` },
            { command: 'view', path: '/memories/d/x.md' },
            { command: 'view', path: '/memories/d/sub/y.md' },
            { command: 'view', path: '/memories/d' },
            { command: 'view', path: '/memories/d/sub' },
            { command: 'str_replace', path: '/memories/d/x.md', old_str: 'x', new_str: 'x' },
            { command: 'insert', path: '/memories/d/sub/y.md', insert_line: 0, insert_text: `line ${i}` },
            { command: 'str_replace', path: '/memories/d/keep.md', old_str: 'CANARY', new_str: 'pwned' },
            { command: 'rename', old_path: '/memories/d/x.md', new_path: `/memories/moved-${i}.md` },
            { command: 'rename', old_path: `/memories/moved-${i}.md`, new_path: '/memories/d/x.md' },
            { command: 'rename', old_path: '/memories/d/keep.md', new_path: `/memories/stolen-${i}.md` },
            { command: 'rename', old_path: '/memories/d/sub', new_path: `/memories/sub-${i}` },
            { command: 'rename', old_path: `/memories/sub-${i}`, new_path: '/memories/d/sub' },
            { command: 'delete', path: `/memories/d/new-${i}.md` },
            { command: 'delete', path: '/memories/d/sub/deep/z.md' },
            { command: 'delete', path: '/memories/d/gone' },
            { command: 'delete', path: `/memories/d/sub/deep/n-${i}.md` },
            ...(i % 10 === 9 ? [{ command: 'delete', path: '/memories/d' }] : []),
          ];
          for (const input of batch) {
            const out = await run(input);
            if (out.startsWith('Error:')) counts.refused++;
            else counts.ok++;
          }
        }
      } finally {
        fs.writeFileSync(stop, '');
      }
      const code = await exited;
      const swaps = Number(swapOutput);
      console.log(
        `memory race (${kind}): ${ITERATIONS} rounds, ${answers.length} commands (${counts.ok} done, ${counts.refused} refused) against ${swaps} swaps`,
      );

      expect(code).toBe(0);
      expect(swaps).toBeGreaterThan(0);
      // Nothing outside read …
      expect(answers.filter((a) => a.includes('CANARY'))).toEqual([]);
      expect(answers.filter((a) => a.includes(base))).toEqual([]);
      // … created, changed, moved or deleted, and no temp file left there.
      expect(fingerprint(outside)).toEqual(before);
      // Nothing outside was moved in either.
      const inside = fingerprint(root).filter((l) => !l.includes(' link '));
      const canaryInside = inside.filter((l) =>
        l.endsWith(createHash('sha256').update(`${CANARY}\nkeep.md\n`).digest('hex')),
      );
      expect(canaryInside).toEqual([]);
      expect(counts.ok).toBeGreaterThan(ITERATIONS); // and the tool kept working between swaps
    }, 600_000);
  },
);
