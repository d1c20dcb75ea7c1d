import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { AbridgeError } from '../errors.js';
import { memoryTool, type MemoryToolOptions } from './memory.js';
import { parseMemoryPath } from './memory-paths.js';

// Hooks into the fs functions the memory tool uses, to make a write fail or to race it (swap a file for a link).
const hooks = vi.hoisted(() => ({
  beforeOpen: undefined as ((path: string) => void) | undefined,
  beforeRename: undefined as ((from: string, to: string) => void) | undefined,
  failSync: undefined as Error | undefined,
  noProc: false,
}));
vi.mock('node:fs/promises', async (importOriginal) => {
  const actual = await importOriginal<typeof import('node:fs/promises')>();
  return {
    ...actual,
    open: async (...args: Parameters<typeof actual.open>) => {
      hooks.beforeOpen?.(String(args[0]));
      const fh = await actual.open(...args);
      const err = hooks.failSync;
      if (err) fh.sync = () => Promise.reject(err);
      return fh;
    },
    stat: async (...args: Parameters<typeof actual.stat>) => {
      if (hooks.noProc && String(args[0]).startsWith('/proc/self/fd'))
        throw Object.assign(new Error(`ENOENT: no such file or directory, stat '${String(args[0])}'`), {
          code: 'ENOENT',
        });
      return actual.stat(...args);
    },
    rename: async (from: fs.PathLike, to: fs.PathLike) => {
      hooks.beforeRename?.(String(from), String(to));
      return actual.rename(from, to);
    },
  };
});

afterEach(() => {
  hooks.beforeOpen = undefined;
  hooks.beforeRename = undefined;
  hooks.failSync = undefined;
  hooks.noProc = false;
});

const bases: string[] = [];
afterAll(() => {
  for (const b of bases) fs.rmSync(b, { recursive: true, force: true });
});

const SECRET = 'TOP-SECRET-4b1d9e: do not leak';

/**
 * A temp dir holding `memories/` (the root, not created yet) and `outside/` (a secret file and directory beside it).
 * Every answer is checked never to reveal the temp dir's real path nor the secret.
 */
function setup(options: Partial<MemoryToolOptions> = {}) {
  const base = fs.realpathSync(fs.mkdtempSync(join(tmpdir(), 'abridge-memory-')));
  bases.push(base);
  const root = join(base, 'memories');
  const outside = join(base, 'outside');
  fs.mkdirSync(join(outside, 'sub'), { recursive: true });
  fs.writeFileSync(join(outside, 'secret.txt'), SECRET);
  fs.writeFileSync(join(outside, 'sub', 'deep.txt'), SECRET);
  const tool = memoryTool({ root, ...options });
  const run = async (input: unknown): Promise<string> => {
    const out = await tool.run(input);
    expect(out).not.toContain(base);
    expect(out).not.toContain('TOP-SECRET');
    return out;
  };
  const file = (p: string) => join(root, ...p.split('/').filter(Boolean));
  const write = (p: string, text: string) => {
    fs.mkdirSync(join(file(p), '..'), { recursive: true });
    fs.writeFileSync(file(p), text);
  };
  const read = (p: string) => fs.readFileSync(file(p), 'utf8');
  const leftovers = () => listAll(root).filter((p) => /abridge-(tmp|deleting)/.test(p));
  return { base, root, outside, tool, run, file, write, read, leftovers };
}

function listAll(dir: string): string[] {
  if (!fs.existsSync(dir)) return [];
  const out: string[] = [];
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    out.push(p);
    if (e.isDirectory()) out.push(...listAll(p));
  }
  return out;
}

const HEADER = (p: string) =>
  `Here're the files and directories up to 2 levels deep in ${p}, excluding hidden items and node_modules:`;
const CONTENT = (p: string) => `Here's the content of ${p} with line numbers:`;
const NOT_FOUND = (p: string) => `Error: ${p} does not exist. View /memories to see what is there.`;
const LINK = (p: string) => `Error: ${p} is a symbolic link; the memory tool does not follow or change links.`;

describe('memory tool: the commands', () => {
  it('is named memory, takes a flat object schema, and creates its root lazily', async () => {
    const { tool, run, root } = setup();
    expect(tool.name).toBe('memory');
    expect(tool.inputSchema.type).toBe('object');
    expect(tool.inputSchema.required).toEqual(['command']);
    expect(fs.existsSync(root)).toBe(false);
    expect(await run({ command: 'view', path: '/memories' })).toBe(`${HEADER('/memories')}\n0B\t/memories/`);
    expect(fs.statSync(root).isDirectory()).toBe(true);
  });

  it('create writes a new file (and its directories)', async () => {
    const { run, read } = setup();
    expect(await run({ command: 'create', path: '/memories/notes.md', file_text: 'alpha\nbeta\n' })).toBe(
      'File created successfully at: /memories/notes.md',
    );
    expect(read('notes.md')).toBe('alpha\nbeta\n');
    expect(await run({ command: 'create', path: '/memories/a/b/c.md', file_text: '' })).toBe(
      'File created successfully at: /memories/a/b/c.md',
    );
    expect(read('a/b/c.md')).toBe('');
    // Unicode letters and spaces are fine.
    expect(await run({ command: 'create', path: '/memories/café 日本.md', file_text: 'x' })).toBe(
      'File created successfully at: /memories/café 日本.md',
    );
  });

  it('create refuses an existing file, a directory and the root', async () => {
    const { run, write, read } = setup();
    write('notes.md', 'old');
    expect(await run({ command: 'create', path: '/memories/notes.md', file_text: 'new' })).toBe(
      'Error: /memories/notes.md already exists; edit it with str_replace or insert, or delete it first.',
    );
    expect(read('notes.md')).toBe('old');
    write('dir/x.md', 'x');
    expect(await run({ command: 'create', path: '/memories/dir', file_text: 'new' })).toBe(
      'Error: /memories/dir already exists as a directory.',
    );
    expect(await run({ command: 'create', path: '/memories', file_text: 'new' })).toBe(
      'Error: Cannot create /memories itself: give a file path such as /memories/notes.md.',
    );
    expect(await run({ command: 'create', path: '/memories/notes.md/x', file_text: 'new' })).toBe(
      'Error: /memories/notes.md is not a directory, so /memories/notes.md/x cannot exist.',
    );
  });

  it('view lists 2 levels with sizes, leaving out hidden items and node_modules', async () => {
    const { run, write } = setup();
    write('notes.md', 'alpha\nbeta\n');
    write('projects/abridge/todo.md', 'x'.repeat(2000));
    write('projects/readme.md', 'hi\n');
    write('.hidden', 'hidden');
    write('projects/node_modules/pkg/index.js', 'y'.repeat(5000));
    expect(await run({ command: 'view', path: '/memories' })).toBe(
      [
        HEADER('/memories'),
        '2.0K\t/memories/',
        '11B\t/memories/notes.md',
        '2.0K\t/memories/projects/',
        '2.0K\t/memories/projects/abridge/',
        '3B\t/memories/projects/readme.md',
      ].join('\n'),
    );
    expect(await run({ command: 'view', path: '/memories/projects/' })).toBe(
      [
        HEADER('/memories/projects'),
        '2.0K\t/memories/projects/',
        '2.0K\t/memories/projects/abridge/',
        '2.0K\t/memories/projects/abridge/todo.md',
        '3B\t/memories/projects/readme.md',
      ].join('\n'),
    );
  });

  it('view leaves out names no path could address, and says so', async () => {
    const { run, write } = setup();
    write('ok.md', 'a');
    write('bad:name', 'b');
    write('line\nbreak', 'c');
    expect(await run({ command: 'view', path: '/memories' })).toBe(
      [
        HEADER('/memories'),
        '1B\t/memories/',
        '1B\t/memories/ok.md',
        '(2 entries with names the memory tool cannot address not shown)',
      ].join('\n'),
    );
  });

  it('view shows a file with line numbers, whole or a range', async () => {
    const { run, write } = setup();
    write('n.md', 'one\ntwo\nthree\nfour');
    expect(await run({ command: 'view', path: '/memories/n.md' })).toBe(
      `${CONTENT('/memories/n.md')}\n     1\tone\n     2\ttwo\n     3\tthree\n     4\tfour`,
    );
    expect(await run({ command: 'view', path: '/memories/n.md', view_range: [2, 3] })).toBe(
      `${CONTENT('/memories/n.md')}\n     2\ttwo\n     3\tthree`,
    );
    expect(await run({ command: 'view', path: '/memories/n.md', view_range: [3, -1] })).toBe(
      `${CONTENT('/memories/n.md')}\n     3\tthree\n     4\tfour`,
    );
    expect(await run({ command: 'view', path: '/memories/n.md', view_range: [4, 99] })).toBe(
      `${CONTENT('/memories/n.md')}\n     4\tfour`,
    );
    expect(await run({ command: 'view', path: '/memories/n.md', view_range: [0, 2] })).toBe(
      'Error: Invalid view_range [0, 2]: the first line must be from 1 to 4 (/memories/n.md has 4 lines).',
    );
    expect(await run({ command: 'view', path: '/memories/n.md', view_range: [5, 6] })).toBe(
      'Error: Invalid view_range [5, 6]: the first line must be from 1 to 4 (/memories/n.md has 4 lines).',
    );
    expect(await run({ command: 'view', path: '/memories/n.md', view_range: [3, 2] })).toBe(
      'Error: Invalid view_range [3, 2]: the last line must be -1 (the end) or at least the first line (3).',
    );
    expect(await run({ command: 'view', path: '/memories', view_range: [1, 2] })).toBe(
      'Error: view_range applies to files; /memories is a directory.',
    );
    expect(
      (await run({ command: 'view', path: '/memories/n.md', view_range: [1] })).startsWith(
        'Error: invalid input for memory: view_range:',
      ),
    ).toBe(true);
    write('empty.md', '');
    expect(await run({ command: 'view', path: '/memories/empty.md' })).toBe('/memories/empty.md is empty (0 lines).');
  });

  it('view of a missing path says so', async () => {
    const { run } = setup();
    expect(await run({ command: 'view', path: '/memories/nope.md' })).toBe(NOT_FOUND('/memories/nope.md'));
    expect(await run({ command: 'view', path: '/memories/a/b/c' })).toBe(NOT_FOUND('/memories/a/b/c'));
  });

  it('str_replace replaces exactly one occurrence, literally', async () => {
    const { run, write, read } = setup();
    write('n.md', 'one\ntwo\nthree\nfour\nfive\nsix\n');
    expect(await run({ command: 'str_replace', path: '/memories/n.md', old_str: 'four', new_str: 'FOUR $& $1' })).toBe(
      `The memory file /memories/n.md has been edited. Lines 2–6 now read:\n     2\ttwo\n     3\tthree\n     4\tFOUR $& $1\n     5\tfive\n     6\tsix`,
    );
    expect(read('n.md')).toBe('one\ntwo\nthree\nFOUR $& $1\nfive\nsix\n');
    expect(await run({ command: 'str_replace', path: '/memories/n.md', old_str: 'one\ntwo\n', new_str: '' })).toBe(
      `The memory file /memories/n.md has been edited. Lines 1–3 now read:\n     1\tthree\n     2\tFOUR $& $1\n     3\tfive`,
    );
    write('one.md', 'x');
    expect(await run({ command: 'str_replace', path: '/memories/one.md', old_str: 'x', new_str: '' })).toBe(
      'The memory file /memories/one.md has been edited; it is now empty.',
    );
  });

  it('str_replace refuses 0 or several occurrences, saying how many and where', async () => {
    const { run, write, read } = setup();
    write('n.md', 'a cat\nno\na cat and a cat\n');
    expect(await run({ command: 'str_replace', path: '/memories/n.md', old_str: 'dog', new_str: 'x' })).toBe(
      'Error: No replacement was performed: old_str does not occur in /memories/n.md; it must match exactly, whitespace and line breaks included.',
    );
    expect(await run({ command: 'str_replace', path: '/memories/n.md', old_str: 'cat', new_str: 'x' })).toBe(
      'Error: No replacement was performed: old_str occurs 3 times in /memories/n.md (on lines 1, 3); it must occur exactly once, so include more of the surrounding text.',
    );
    expect(await run({ command: 'str_replace', path: '/memories/n.md', old_str: 'a cat\n', new_str: 'x' })).toBe(
      'Error: No replacement was performed: old_str occurs 2 times in /memories/n.md (on lines 1, 3); it must occur exactly once, so include more of the surrounding text.',
    );
    expect(await run({ command: 'str_replace', path: '/memories/n.md', old_str: '', new_str: 'x' })).toBe(
      'Error: old_str is empty; give the exact text to replace (it must occur exactly once).',
    );
    expect(read('n.md')).toBe('a cat\nno\na cat and a cat\n');
    expect(await run({ command: 'str_replace', path: '/memories/none.md', old_str: 'a', new_str: 'b' })).toBe(
      NOT_FOUND('/memories/none.md'),
    );
    expect(await run({ command: 'str_replace', path: '/memories', old_str: 'a', new_str: 'b' })).toBe(
      'Error: /memories is a directory, not a file.',
    );
    expect(await run({ command: 'str_replace', path: '/memories/n.md', old_str: 'a' })).toBe(
      'Error: invalid input for memory: new_str: required by the str_replace command',
    );
  });

  it('insert adds lines after insert_line', async () => {
    const { run, write, read } = setup();
    write('n.md', 'one\ntwo');
    expect(await run({ command: 'insert', path: '/memories/n.md', insert_line: 0, insert_text: 'zero' })).toBe(
      'The memory file /memories/n.md has been edited: inserted 1 line at the start; it now has 3 lines.',
    );
    expect(read('n.md')).toBe('zero\none\ntwo');
    expect(await run({ command: 'insert', path: '/memories/n.md', insert_line: 1, insert_text: 'a\nb\n' })).toBe(
      'The memory file /memories/n.md has been edited: inserted 2 lines after line 1; it now has 5 lines.',
    );
    expect(read('n.md')).toBe('zero\na\nb\none\ntwo');
    expect(await run({ command: 'insert', path: '/memories/n.md', insert_line: 5, insert_text: 'end' })).toBe(
      'The memory file /memories/n.md has been edited: inserted 1 line after line 5; it now has 6 lines.',
    );
    expect(read('n.md')).toBe('zero\na\nb\none\ntwo\nend\n');
    expect(await run({ command: 'insert', path: '/memories/n.md', insert_line: 7, insert_text: 'x' })).toBe(
      'Error: Invalid insert_line 7: /memories/n.md has 6 lines; use 0 (before the first line) to 6 (after the last).',
    );
    expect(await run({ command: 'insert', path: '/memories/n.md', insert_line: 1, insert_text: '' })).toBe(
      'Error: insert_text is empty; there is nothing to insert.',
    );
    expect(
      (await run({ command: 'insert', path: '/memories/n.md', insert_line: -1, insert_text: 'x' })).startsWith(
        'Error: invalid input for memory: insert_line:',
      ),
    ).toBe(true);
    write('empty.md', '');
    expect(await run({ command: 'insert', path: '/memories/empty.md', insert_line: 0, insert_text: 'first' })).toBe(
      'The memory file /memories/empty.md has been edited: inserted 1 line at the start; it now has 1 line.',
    );
    expect(read('empty.md')).toBe('first\n');
  });

  it('delete removes a file or a whole directory, never the root', async () => {
    const { run, write, file, root } = setup();
    write('a.md', 'a');
    write('d/x.md', 'x');
    write('d/e/y.md', 'y');
    expect(await run({ command: 'delete', path: '/memories/a.md' })).toBe('Deleted /memories/a.md.');
    expect(fs.existsSync(file('a.md'))).toBe(false);
    expect(await run({ command: 'delete', path: '/memories/d' })).toBe(
      'Deleted the directory /memories/d and everything in it (2 files, 1 subdirectory).',
    );
    expect(fs.readdirSync(root)).toEqual([]);
    expect(await run({ command: 'delete', path: '/memories/d' })).toBe(NOT_FOUND('/memories/d'));
    expect(await run({ command: 'delete', path: '/memories' })).toBe(
      'Error: Cannot delete /memories itself (the memory root); delete the files in it instead.',
    );
    expect(await run({ command: 'delete', path: '/memories/' })).toBe(
      'Error: Cannot delete /memories itself (the memory root); delete the files in it instead.',
    );
    expect(fs.existsSync(root)).toBe(true);
  });

  it('rename moves files and directories, never onto an existing path', async () => {
    const { run, write, read, file } = setup();
    write('a.md', 'A');
    write('b.md', 'B');
    write('d/x.md', 'X');
    expect(await run({ command: 'rename', old_path: '/memories/a.md', new_path: '/memories/archive/2026/a.md' })).toBe(
      'Renamed /memories/a.md to /memories/archive/2026/a.md.',
    );
    expect(read('archive/2026/a.md')).toBe('A');
    expect(fs.existsSync(file('a.md'))).toBe(false);
    expect(await run({ command: 'rename', old_path: '/memories/d', new_path: '/memories/e' })).toBe(
      'Renamed /memories/d to /memories/e.',
    );
    expect(read('e/x.md')).toBe('X');
    expect(await run({ command: 'rename', old_path: '/memories/b.md', new_path: '/memories/e/x.md' })).toBe(
      'Error: Cannot rename /memories/b.md to /memories/e/x.md: /memories/e/x.md already exists; delete it first or choose another name.',
    );
    expect(await run({ command: 'rename', old_path: '/memories/b.md', new_path: '/memories/e' })).toBe(
      'Error: Cannot rename /memories/b.md to /memories/e: /memories/e already exists; delete it first or choose another name.',
    );
    expect(read('b.md')).toBe('B');
    expect(read('e/x.md')).toBe('X');
    expect(await run({ command: 'rename', old_path: '/memories/e', new_path: '/memories/e/f' })).toBe(
      'Error: Cannot move /memories/e into itself (/memories/e/f).',
    );
    expect(await run({ command: 'rename', old_path: '/memories/zz.md', new_path: '/memories/y.md' })).toBe(
      NOT_FOUND('/memories/zz.md'),
    );
    expect(await run({ command: 'rename', old_path: '/memories', new_path: '/memories/y' })).toBe(
      'Error: Cannot rename /memories itself (the memory root).',
    );
    expect(await run({ command: 'rename', old_path: '/memories/b.md', new_path: '/memories/' })).toBe(
      'Error: Cannot rename /memories/b.md to /memories: that is the memory root.',
    );
    expect(await run({ command: 'rename', old_path: '/memories/b.md', new_path: '/memories/b.md/' })).toBe(
      'Error: old_path and new_path are the same (/memories/b.md).',
    );
    expect(await run({ command: 'rename', old_path: '/memories/b.md', new_path: '/etc/b.md' })).toBe(
      'Error: Invalid path "/etc/b.md": it is outside /memories; the memory tool only reaches paths under /memories/.',
    );
  });

  it('rename refuses a move that would nest contents too deep', async () => {
    const { run, write } = setup();
    write('d/1/2/3/4/5/6/7/8/9/10/11/12/13/x.md', 'x');
    expect(await run({ command: 'rename', old_path: '/memories/d', new_path: '/memories/a/b/c' })).toBe(
      'Error: Cannot move /memories/d to /memories/a/b/c: its contents would be 17 levels deep; the limit is 16.',
    );
  });

  it('input errors name the fields a command needs', async () => {
    const { run } = setup();
    expect(await run({ command: 'create', path: '/memories/x' })).toBe(
      'Error: invalid input for memory: file_text: required by the create command',
    );
    expect(await run({ command: 'rename', old_path: '/memories/x' })).toBe(
      'Error: invalid input for memory: new_path: required by the rename command',
    );
    expect(
      (await run({ command: 'shred', path: '/memories/x' })).startsWith('Error: invalid input for memory: command:'),
    ).toBe(true);
    expect((await run(undefined)).startsWith('Error: invalid input for memory: command:')).toBe(true);
  });
});

describe('memory tool: path validation', () => {
  const cases: [string, string][] = [
    ['', 'Invalid path "": it is empty; memory paths look like /memories/notes.md.'],
    [
      'notes.md',
      'Invalid path "notes.md": it is not absolute; memory paths start with /memories, e.g. /memories/notes.md.',
    ],
    [
      'memories/notes.md',
      'Invalid path "memories/notes.md": it is not absolute; memory paths start with /memories, e.g. /memories/notes.md.',
    ],
    [
      './memories/x',
      'Invalid path "./memories/x": it is not absolute; memory paths start with /memories, e.g. /memories/notes.md.',
    ],
    [
      '/etc/passwd',
      'Invalid path "/etc/passwd": it is outside /memories; the memory tool only reaches paths under /memories/.',
    ],
    [
      '/memories-evil/x',
      'Invalid path "/memories-evil/x": it is outside /memories; the memory tool only reaches paths under /memories/.',
    ],
    [
      '/memoriesx',
      'Invalid path "/memoriesx": it is outside /memories; the memory tool only reaches paths under /memories/.',
    ],
    [
      '/Memories/x',
      'Invalid path "/Memories/x": it is outside /memories; the memory tool only reaches paths under /memories/.',
    ],
    [
      '//memories/x',
      'Invalid path "//memories/x": it is outside /memories; the memory tool only reaches paths under /memories/.',
    ],
    ['/memories/../x', 'Invalid path "/memories/../x": it contains a ".." segment; paths may not leave /memories.'],
    [
      '/memories/a/../../outside/secret.txt',
      'Invalid path "/memories/a/../../outside/secret.txt": it contains a ".." segment; paths may not leave /memories.',
    ],
    ['/memories/x/..', 'Invalid path "/memories/x/..": it contains a ".." segment; paths may not leave /memories.'],
    ['/memories/./x', 'Invalid path "/memories/./x": it contains a "." segment; write the path without it.'],
    ['/memories//x', 'Invalid path "/memories//x": it contains an empty segment ("//").'],
    ['/memories//', 'Invalid path "/memories//": it contains an empty segment ("//").'],
    [
      '/memories/%2e%2e/x',
      'Invalid path "/memories/%2e%2e/x": it contains "%"; paths are taken literally (percent-encoding such as %2e is not decoded) and "%" is not allowed.',
    ],
    [
      '/memories/..%2fx',
      'Invalid path "/memories/..%2fx": it contains "%"; paths are taken literally (percent-encoding such as %2e is not decoded) and "%" is not allowed.',
    ],
    [
      '/memories/a\\..\\..\\x',
      'Invalid path "/memories/a\\\\..\\\\..\\\\x": it contains a backslash; separate segments with "/".',
    ],
    ['/memories/a\0.md', 'Invalid path "/memories/a\\u0000.md": it contains a NUL byte.'],
    ['/memories/a\x1b[31m.md', 'Invalid path "/memories/a\\u001b[31m.md": it contains the control character U+001B.'],
    ['/memories/a\nb', 'Invalid path "/memories/a\\nb": it contains the control character U+000A.'],
    ['/memories/\u0085x', 'Invalid path "/memories/\u0085x": it contains the control character U+0085.'],
    [
      '/memories/．．/x',
      'Invalid path "/memories/．．/x": the segment "．．" changes under Unicode normalization (NFKC: ".."); fullwidth, ligature and other compatibility characters, and decomposed accents, are not allowed.',
    ],
    [
      '/memories/\u2024\u2024/x',
      'Invalid path "/memories/\u2024\u2024/x": the segment "\u2024\u2024" changes under Unicode normalization (NFKC: ".."); fullwidth, ligature and other compatibility characters, and decomposed accents, are not allowed.',
    ],
    [
      '/memories/\uFE52\uFE52/x',
      'Invalid path "/memories/\uFE52\uFE52/x": the segment "\uFE52\uFE52" changes under Unicode normalization (NFKC: ".."); fullwidth, ligature and other compatibility characters, and decomposed accents, are not allowed.',
    ],
    [
      '/memories/\uFB01le.md',
      'Invalid path "/memories/\uFB01le.md": the segment "\uFB01le.md" changes under Unicode normalization (NFKC: "file.md"); fullwidth, ligature and other compatibility characters, and decomposed accents, are not allowed.',
    ],
    [
      '/memories/cafe\u0301.md',
      'Invalid path "/memories/cafe\u0301.md": the segment "cafe\u0301.md" changes under Unicode normalization (NFKC: "caf\u00e9.md"); fullwidth, ligature and other compatibility characters, and decomposed accents, are not allowed.',
    ],
    ['/memories/.env', 'Invalid path "/memories/.env": the segment ".env" starts with "."; hidden names are reserved.'],
    ['/memories/...', 'Invalid path "/memories/...": the segment "..." starts with "."; hidden names are reserved.'],
    [
      '/memories/notes.',
      'Invalid path "/memories/notes.": the segment "notes." starts or ends with a space or ends with ".".',
    ],
    [
      '/memories/notes ',
      'Invalid path "/memories/notes ": the segment "notes " starts or ends with a space or ends with ".".',
    ],
    [
      '/memories/a:b',
      'Invalid path "/memories/a:b": the segment "a:b" contains ":" (U+003A); names may use letters, digits, spaces and  . _ - + @ , = ( ) # ~.',
    ],
    [
      '/memories/\u202Egnp.exe',
      'Invalid path "/memories/\u202Egnp.exe": the segment "\u202Egnp.exe" contains "\u202E" (U+202E); names may use letters, digits, spaces and  . _ - + @ , = ( ) # ~.',
    ],
    [
      '/memories/a\u200Bb',
      'Invalid path "/memories/a\u200Bb": the segment "a\u200Bb" contains "\u200B" (U+200B); names may use letters, digits, spaces and  . _ - + @ , = ( ) # ~.',
    ],
  ];
  const longSeg = 'a'.repeat(256);
  const deep = `/memories/${Array.from({ length: 17 }, () => 'd').join('/')}`;
  const long = `/memories/${Array.from({ length: 5 }, () => 'b'.repeat(250)).join('/')}`;
  cases.push(
    [
      `/memories/${longSeg}`,
      `Invalid path ${JSON.stringify(`/memories/${'a'.repeat(70)}…`)}: a segment is 256 bytes long; the limit is 255.`,
    ],
    [
      `/memories/${'é'.repeat(128)}`,
      `Invalid path ${JSON.stringify(`/memories/${'é'.repeat(70)}…`)}: a segment is 256 bytes long; the limit is 255.`,
    ],
    [
      long,
      `Invalid path ${JSON.stringify(`/memories/${'b'.repeat(70)}…`)}: it is 1,264 bytes long; the limit is 1,024.`,
    ],
    [deep, `Invalid path ${JSON.stringify(deep)}: it is 17 levels deep; the limit is 16.`],
  );

  it.each(cases)('rejects %j', async (path, message) => {
    const { run, base, root } = setup();
    const before = listAll(base);
    for (const input of [
      { command: 'view', path },
      { command: 'create', path, file_text: 'x' },
      { command: 'str_replace', path, old_str: 'a', new_str: 'b' },
      { command: 'insert', path, insert_line: 0, insert_text: 'x' },
      { command: 'delete', path },
      { command: 'rename', old_path: path, new_path: '/memories/ok.md' },
      { command: 'rename', old_path: '/memories/ok.md', new_path: path },
    ]) {
      expect(await run(input)).toBe(`Error: ${message}`);
    }
    expect(listAll(base)).toEqual(before);
    expect(fs.existsSync(root)).toBe(false);
  });

  it('accepts plain names, Unicode letters, the allowed punctuation, 16 levels and 255-byte segments', () => {
    expect(parseMemoryPath('/memories')).toEqual({ virtual: '/memories', segments: [] });
    expect(parseMemoryPath('/memories/')).toEqual({ virtual: '/memories', segments: [] });
    expect(parseMemoryPath('/memories/notes.md')).toEqual({ virtual: '/memories/notes.md', segments: ['notes.md'] });
    expect(parseMemoryPath('/memories/a b/c_d-e+f@g,h=(i)#j~k.md/')).toEqual({
      virtual: '/memories/a b/c_d-e+f@g,h=(i)#j~k.md',
      segments: ['a b', 'c_d-e+f@g,h=(i)#j~k.md'],
    });
    expect(parseMemoryPath('/memories/~').segments).toEqual(['~']);
    expect(parseMemoryPath('/memories/café/日本語.md').segments).toEqual(['café', '日本語.md']);
    expect(parseMemoryPath('/memories/a..b').segments).toEqual(['a..b']);
    expect(parseMemoryPath(`/memories/${'a'.repeat(255)}`).segments[0]).toHaveLength(255);
    expect(parseMemoryPath(`/memories/${Array.from({ length: 16 }, () => 'd').join('/')}`).segments).toHaveLength(16);
    expect(() => parseMemoryPath(42)).toThrow(AbridgeError);
  });
});

describe('memory tool: limits', () => {
  it('refuses files over maxFileBytes, for create, str_replace, insert and view', async () => {
    const { run, write, read, file } = setup({ maxFileBytes: 10 });
    expect(await run({ command: 'create', path: '/memories/big.md', file_text: 'x'.repeat(11) })).toBe(
      'Error: file_text is 11 bytes; a memory file may hold at most 10 bytes (10B).',
    );
    expect(await run({ command: 'create', path: '/memories/big.md', file_text: 'é'.repeat(6) })).toBe(
      'Error: file_text is 12 bytes; a memory file may hold at most 10 bytes (10B).',
    );
    expect(await run({ command: 'create', path: '/memories/ok.md', file_text: 'x'.repeat(10) })).toBe(
      'File created successfully at: /memories/ok.md',
    );
    expect(
      await run({ command: 'str_replace', path: '/memories/ok.md', old_str: 'xxxxxxxxxx', new_str: 'y'.repeat(11) }),
    ).toBe(
      'Error: No replacement was performed: the result would be 11 bytes; a memory file may hold at most 10 bytes (10B).',
    );
    expect(await run({ command: 'insert', path: '/memories/ok.md', insert_line: 0, insert_text: 'z' })).toBe(
      'Error: Nothing was inserted: the result would be 12 bytes; a memory file may hold at most 10 bytes (10B).',
    );
    expect(read('ok.md')).toBe('x'.repeat(10));
    write('planted.md', 'p'.repeat(11));
    expect(await run({ command: 'view', path: '/memories/planted.md' })).toBe(
      'Error: /memories/planted.md is 11 bytes, over the 10-byte limit for memory files; the memory tool will not read it.',
    );
    expect(fs.existsSync(file('big.md'))).toBe(false);
  });

  it('the default size limit is 256 KB', async () => {
    const { run } = setup();
    expect(await run({ command: 'create', path: '/memories/big.md', file_text: 'x'.repeat(256 * 1024 + 1) })).toBe(
      'Error: file_text is 262,145 bytes; a memory file may hold at most 262,144 bytes (256.0K).',
    );
    expect(await run({ command: 'create', path: '/memories/max.md', file_text: 'x'.repeat(256 * 1024) })).toBe(
      'File created successfully at: /memories/max.md',
    );
  });

  it('refuses more than maxFiles files and directories', async () => {
    const { run } = setup({ maxFiles: 3 });
    expect(await run({ command: 'create', path: '/memories/a.md', file_text: 'a' })).toBe(
      'File created successfully at: /memories/a.md',
    );
    expect(await run({ command: 'create', path: '/memories/d/b.md', file_text: 'b' })).toBe(
      'File created successfully at: /memories/d/b.md',
    );
    expect(await run({ command: 'create', path: '/memories/c.md', file_text: 'c' })).toBe(
      'Error: /memories already holds 3 files and directories and this would add 1; the limit is 3. Delete something first.',
    );
    expect(await run({ command: 'rename', old_path: '/memories/a.md', new_path: '/memories/e/a.md' })).toBe(
      'Error: /memories already holds 3 files and directories and this would add 1; the limit is 3. Delete something first.',
    );
    expect(await run({ command: 'rename', old_path: '/memories/a.md', new_path: '/memories/d/a.md' })).toBe(
      'Renamed /memories/a.md to /memories/d/a.md.',
    );
    expect(await run({ command: 'delete', path: '/memories/d/a.md' })).toBe('Deleted /memories/d/a.md.');
    expect(await run({ command: 'create', path: '/memories/c.md', file_text: 'c' })).toBe(
      'File created successfully at: /memories/c.md',
    );
  });

  it('the default file limit is 1,000', async () => {
    const { run, write } = setup();
    for (let i = 0; i < 1000; i++) write(`f${i}.md`, '');
    expect(await run({ command: 'create', path: '/memories/one-more.md', file_text: '' })).toBe(
      'Error: /memories already holds 1,000 files and directories and this would add 1; the limit is 1,000. Delete something first.',
    );
  });
});

describe('memory tool: atomic writes', () => {
  it('leaves no temp files behind, success or failure', async () => {
    const { run, leftovers } = setup({ maxFileBytes: 100 });
    await run({ command: 'create', path: '/memories/a/n.md', file_text: 'one\ntwo\n' });
    await run({ command: 'str_replace', path: '/memories/a/n.md', old_str: 'one', new_str: '1' });
    await run({ command: 'insert', path: '/memories/a/n.md', insert_line: 2, insert_text: 'three' });
    await run({ command: 'str_replace', path: '/memories/a/n.md', old_str: 'two', new_str: 'x'.repeat(200) });
    await run({ command: 'rename', old_path: '/memories/a', new_path: '/memories/b' });
    await run({ command: 'delete', path: '/memories/b' });
    expect(leftovers()).toEqual([]);
  });

  it('a failing rename leaves the old content, no temp file, and no real path in the error', async () => {
    const { run, write, read, file, leftovers } = setup();
    write('n.md', 'old\n');
    hooks.beforeRename = (from, to) => {
      throw Object.assign(new Error(`EIO: i/o error, rename '${from}' -> '${to}'`), { code: 'EIO' });
    };
    const out = await run({ command: 'str_replace', path: '/memories/n.md', old_str: 'old', new_str: 'new' });
    expect(out).toMatch(
      /^Error: EIO: i\/o error, rename '\/memories\/\.abridge-tmp-[0-9a-f]{16}' -> '\/memories\/n\.md'$/,
    );
    expect(read('n.md')).toBe('old\n');
    expect(await run({ command: 'insert', path: '/memories/n.md', insert_line: 0, insert_text: 'x' })).toMatch(
      /^Error: EIO/,
    );
    expect(read('n.md')).toBe('old\n');
    expect(await run({ command: 'create', path: '/memories/new.md', file_text: 'x' })).toMatch(/^Error: EIO/);
    expect(fs.existsSync(file('new.md'))).toBe(false);
    expect(leftovers()).toEqual([]);
  });

  it('a failing fsync leaves the old content and no temp file', async () => {
    const { run, write, read, leftovers } = setup();
    write('n.md', 'old\n');
    hooks.failSync = Object.assign(new Error('ENOSPC: no space left on device, fsync'), { code: 'ENOSPC' });
    expect(await run({ command: 'str_replace', path: '/memories/n.md', old_str: 'old', new_str: 'new' })).toBe(
      'Error: ENOSPC: no space left on device, fsync',
    );
    expect(read('n.md')).toBe('old\n');
    expect(leftovers()).toEqual([]);
  });

  it('keeps the file mode on edits', async () => {
    const { run, write, file } = setup();
    write('n.md', 'old\n');
    fs.chmodSync(file('n.md'), 0o600);
    await run({ command: 'str_replace', path: '/memories/n.md', old_str: 'old', new_str: 'new' });
    expect(fs.statSync(file('n.md')).mode & 0o777).toBe(0o600);
  });
});

describe('memory tool: links never lead outside the root', () => {
  /** Plants: link → outside dir, file-link → outside file, dir/inner → outside dir, rel → ../outside, hard.md = hard link to an outside file. */
  function planted() {
    const s = setup();
    s.write('notes.md', 'notes\n');
    s.write('dir/real.md', 'real\n');
    fs.symlinkSync(s.outside, s.file('link'));
    fs.symlinkSync(join(s.outside, 'secret.txt'), s.file('file-link'));
    fs.symlinkSync(s.outside, s.file('dir/inner'));
    fs.symlinkSync('../outside', s.file('rel'));
    fs.writeFileSync(join(s.outside, 'hard-secret.txt'), SECRET);
    fs.linkSync(join(s.outside, 'hard-secret.txt'), s.file('hard.md'));
    const snapshot = () =>
      listAll(s.outside).map((p) => {
        const st = fs.lstatSync(p);
        return [p, st.mtimeMs, st.isFile() ? fs.readFileSync(p, 'utf8') : 'dir'];
      });
    const links = () => ['link', 'file-link', 'dir/inner', 'rel'].map((l) => fs.readlinkSync(s.file(l)));
    return { ...s, before: snapshot(), beforeLinks: links(), snapshot, links };
  }

  const through = ['/memories/link', '/memories/file-link', '/memories/rel', '/memories/dir/inner'];

  it('view refuses links and paths through them; the listing shows links without following them', async () => {
    const p = planted();
    for (const l of through) {
      expect(await p.run({ command: 'view', path: l })).toBe(LINK(l));
      expect(await p.run({ command: 'view', path: `${l}/secret.txt` })).toBe(LINK(l));
      expect(await p.run({ command: 'view', path: `${l}/sub/deep.txt` })).toBe(LINK(l));
    }
    expect(await p.run({ command: 'view', path: '/memories' })).toBe(
      [
        HEADER('/memories'),
        '11B\t/memories/',
        '5B\t/memories/dir/',
        '-\t/memories/dir/inner (symbolic link: not followed)',
        '5B\t/memories/dir/real.md',
        '-\t/memories/file-link (symbolic link: not followed)',
        '-\t/memories/hard.md (hard-linked or special file: not read)',
        '-\t/memories/link (symbolic link: not followed)',
        '6B\t/memories/notes.md',
        '-\t/memories/rel (symbolic link: not followed)',
      ].join('\n'),
    );
    expect(await p.run({ command: 'view', path: '/memories/hard.md' })).toBe(
      'Error: /memories/hard.md has 2 hard links; the memory tool refuses hard-linked files (a link could be a file outside /memories).',
    );
  });

  it('nothing can be written, edited, deleted or renamed through a link', async () => {
    const p = planted();
    for (const l of through) {
      for (const target of [l, `${l}/secret.txt`, `${l}/new.md`, `${l}/sub/new.md`]) {
        expect(await p.run({ command: 'create', path: target, file_text: 'pwned' })).toBe(LINK(l));
        expect(await p.run({ command: 'str_replace', path: target, old_str: 'TOP', new_str: 'pwned' })).toBe(LINK(l));
        expect(await p.run({ command: 'insert', path: target, insert_line: 0, insert_text: 'pwned' })).toBe(LINK(l));
        expect(await p.run({ command: 'delete', path: target })).toBe(LINK(l));
        expect(await p.run({ command: 'rename', old_path: '/memories/notes.md', new_path: target })).toBe(LINK(l));
        expect(await p.run({ command: 'rename', old_path: target, new_path: '/memories/moved' })).toBe(LINK(l));
      }
    }
    expect(await p.run({ command: 'delete', path: '/memories/dir' })).toBe(
      'Error: Cannot delete /memories/dir: it contains /memories/dir/inner, a symbolic link; the memory tool does not follow, move or delete links.',
    );
    expect(await p.run({ command: 'rename', old_path: '/memories/dir', new_path: '/memories/elsewhere/dir' })).toBe(
      'Error: Cannot rename /memories/dir: it contains /memories/dir/inner, a symbolic link; the memory tool does not follow, move or delete links.',
    );
    const hard =
      'Error: /memories/hard.md has 2 hard links; the memory tool refuses hard-linked files (a link could be a file outside /memories).';
    expect(await p.run({ command: 'str_replace', path: '/memories/hard.md', old_str: 'TOP', new_str: 'x' })).toBe(hard);
    expect(await p.run({ command: 'insert', path: '/memories/hard.md', insert_line: 0, insert_text: 'x' })).toBe(hard);
    expect(await p.run({ command: 'delete', path: '/memories/hard.md' })).toBe(hard);
    expect(await p.run({ command: 'rename', old_path: '/memories/hard.md', new_path: '/memories/h.md' })).toBe(hard);
    expect(await p.run({ command: 'delete', path: '/memories' })).toBe(
      'Error: Cannot delete /memories itself (the memory root); delete the files in it instead.',
    );
    expect(p.snapshot()).toEqual(p.before);
    expect(p.links()).toEqual(p.beforeLinks);
    expect(p.read('notes.md')).toBe('notes\n');
    expect(p.read('dir/real.md')).toBe('real\n');
  });

  it('a file swapped for a link just before it is opened is not read (O_NOFOLLOW)', async () => {
    const p = planted();
    const target = p.file('notes.md');
    // The tool opens names through its directory handle (/proc/self/fd/<n>/notes.md).
    hooks.beforeOpen = (path) => {
      if (path.endsWith('/notes.md')) {
        hooks.beforeOpen = undefined;
        fs.rmSync(target);
        fs.symlinkSync(join(p.outside, 'secret.txt'), target);
      }
    };
    expect(await p.run({ command: 'view', path: '/memories/notes.md' })).toBe(LINK('/memories/notes.md'));
  });

  it('a file swapped for a link just before the write lands replaces the link, not the file outside', async () => {
    const p = planted();
    const target = p.file('notes.md');
    hooks.beforeRename = (_from, to) => {
      if (to.endsWith('/notes.md')) {
        hooks.beforeRename = undefined;
        fs.rmSync(target);
        fs.symlinkSync(join(p.outside, 'secret.txt'), target);
      }
    };
    expect(
      await p.run({ command: 'str_replace', path: '/memories/notes.md', old_str: 'notes', new_str: 'edited' }),
    ).toBe('The memory file /memories/notes.md has been edited. Line 1 now reads:\n     1\tedited');
    expect(fs.lstatSync(target).isFile()).toBe(true);
    expect(p.read('notes.md')).toBe('edited\n');
    expect(p.snapshot()).toEqual(p.before);
  });

  it('a root given through a link is used at its real location', async () => {
    const s = setup();
    fs.mkdirSync(s.root);
    const alias = join(s.base, 'alias');
    fs.symlinkSync(s.root, alias);
    const tool = memoryTool({ root: alias });
    expect(await tool.run({ command: 'create', path: '/memories/x.md', file_text: 'x' })).toBe(
      'File created successfully at: /memories/x.md',
    );
    expect(s.read('x.md')).toBe('x');
  });

  it.runIf(process.platform !== 'win32')('refuses a FIFO without blocking on it', async () => {
    const s = setup();
    fs.mkdirSync(s.root);
    try {
      execFileSync('mkfifo', [s.file('pipe')]);
    } catch {
      return;
    }
    expect(await s.run({ command: 'view', path: '/memories/pipe' })).toBe(
      'Error: /memories/pipe is not a regular file; the memory tool only handles files and directories.',
    );
    expect(await s.run({ command: 'str_replace', path: '/memories/pipe', old_str: 'a', new_str: 'b' })).toBe(
      'Error: /memories/pipe is not a regular file; the memory tool only handles files and directories.',
    );
  });
});

describe('memory tool: capped answers', () => {
  it('view of a big file shows the lines that fit and the view_range to read on', async () => {
    const { run, write } = setup({ limits: { maxBytes: 4096 } });
    write('big.md', Array.from({ length: 500 }, (_, i) => `line ${i + 1} ${'w'.repeat(40)}`).join('\n'));
    const out = await run({ command: 'view', path: '/memories/big.md' });
    expect(Buffer.byteLength(out)).toBeLessThanOrEqual(4096);
    const [head, note, first] = out.split('\n');
    expect(head).toBe(CONTENT('/memories/big.md'));
    expect(note).toMatch(
      /^\[answer capped at 4,096 bytes \/ 8,000 tokens: lines 1–(\d+) of 500 shown; read on with view_range \[(\d+), -1\]\]$/,
    );
    const [, last, next] = /lines 1–(\d+) of 500 shown; read on with view_range \[(\d+), -1\]/.exec(note!)!;
    expect(Number(next)).toBe(Number(last) + 1);
    expect(first).toBe(`     1\tline 1 ${'w'.repeat(40)}`);
    expect(out.split('\n').at(-1)).toBe(`${String(last).padStart(6)}\tline ${last} ${'w'.repeat(40)}`);
    const on = await run({ command: 'view', path: '/memories/big.md', view_range: [Number(next), -1] });
    expect(on.split('\n')[2]).toBe(`${String(next).padStart(6)}\tline ${next} ${'w'.repeat(40)}`);
  });

  it('view of a root filled by someone else stays within the cap (default 32 KB)', async () => {
    const { run, root } = setup();
    fs.mkdirSync(root, { recursive: true });
    for (let d = 0; d < 40; d++) {
      fs.mkdirSync(join(root, `dir-${d}-${'n'.repeat(60)}`));
      for (let f = 0; f < 40; f++)
        fs.writeFileSync(join(root, `dir-${d}-${'n'.repeat(60)}`, `file-${f}-${'m'.repeat(60)}.md`), 'x');
    }
    const out = await run({ command: 'view', path: '/memories' });
    expect(Buffer.byteLength(out)).toBeLessThanOrEqual(32 * 1024);
    expect(out.split('\n').at(-1)).toMatch(
      /^\(answer capped at 32,768 bytes \/ 8,000 tokens: [\d,]+ more entries not shown; view a subdirectory to see what is in it\)$/,
    );
  });

  it('a 1 MB path is refused without being echoed', async () => {
    const { run } = setup();
    const out = await run({ command: 'view', path: `/memories/${'a'.repeat(1_000_000)}` });
    expect(out.length).toBeLessThan(300);
    expect(out).toMatch(/^Error: Invalid path "\/memories\/a+…": it is 1,000,010 bytes long; the limit is 1,024\.$/);
  });
});

describe('memory tool: fails closed without /proc/self/fd', () => {
  it('refuses every command, touching nothing, where names cannot be resolved through open directory handles', async () => {
    const { run, write, read } = setup();
    write('n.md', 'kept\n');
    hooks.noProc = true;
    for (const input of [
      { command: 'view', path: '/memories/n.md' },
      { command: 'create', path: '/memories/new.md', file_text: 'x' },
      { command: 'delete', path: '/memories/n.md' },
    ]) {
      expect(await run(input)).toMatch(
        /^Error: The memory tool acts only through open directory handles, resolved via \/proc\/self\/fd \(Linux\); it is not available on this system/,
      );
    }
    hooks.noProc = false;
    expect(read('n.md')).toBe('kept\n');
  });
});
