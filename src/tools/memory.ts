import { randomBytes } from 'node:crypto';
import type { Dirent, Stats } from 'node:fs';
import * as fsp from 'node:fs/promises';
import { resolve } from 'node:path';
import { z } from 'zod';
import { DEFAULT_MAX_FILE_BYTES, DEFAULT_MAX_FILES } from '../defaults.js';
import { AbridgeError } from '../errors.js';
import {
  answerLimits,
  describeLimits,
  fitsAnswer,
  linesWithEnds,
  takeLines,
  type AnswerLimits,
} from './answer-limits.js';
import { DirHandle, labelFdPaths } from './dir-handle.js';
import {
  isAddressableName,
  MAX_DEPTH,
  MAX_PATH_BYTES,
  MEMORY_ROOT,
  parseMemoryPath,
  type MemoryPath,
} from './memory-paths.js';
import { defineTool, type AgentTool } from './tool.js';

/** Anthropic's tool type for the memory tool this implements (`{ type: 'memory_20250818', name: 'memory' }`). */
export const MEMORY_TOOL_TYPE = 'memory_20250818';
export { DEFAULT_MAX_FILE_BYTES, DEFAULT_MAX_FILES };

export interface MemoryToolOptions {
  /** The real directory `/memories` maps to; created (with its parents) on first use. */
  root: string;
  /** Largest file a create, str_replace or insert may leave, and largest file view reads (bytes; default 256 KB). */
  maxFileBytes?: number;
  /** Most files and directories the root may hold, counted together (default 1,000). */
  maxFiles?: number;
  /** Caps on one answer of view (default DEFAULT_ANSWER_LIMITS: 32 KB, 8,000 tokens, lines split past 2,000 characters). */
  limits?: Partial<AnswerLimits>;
}

export const MEMORY_COMMANDS = ['view', 'create', 'str_replace', 'insert', 'delete', 'rename'] as const;
export type MemoryCommand = (typeof MEMORY_COMMANDS)[number];

const REQUIRED: Record<MemoryCommand, readonly string[]> = {
  view: ['path'],
  create: ['path', 'file_text'],
  str_replace: ['path', 'old_str', 'new_str'],
  insert: ['path', 'insert_line', 'insert_text'],
  delete: ['path'],
  rename: ['old_path', 'new_path'],
};

export const memoryInput = z
  .object({
    command: z.enum(MEMORY_COMMANDS).describe('view, create, str_replace, insert, delete or rename.'),
    path: z.string().optional().describe('The file or directory, e.g. /memories/notes.md (every command but rename).'),
    view_range: z
      .array(z.number().int())
      .length(2)
      .optional()
      .describe('view of a file: [first, last] line to show, 1-based and inclusive; last = -1 reads to the end.'),
    file_text: z.string().optional().describe('create: the content of the new file.'),
    old_str: z.string().optional().describe('str_replace: the exact text to replace; it must occur exactly once.'),
    new_str: z.string().optional().describe('str_replace: the text to put in its place (may be empty).'),
    insert_line: z
      .number()
      .int()
      .min(0)
      .optional()
      .describe('insert: the line after which to insert (0 = at the start).'),
    insert_text: z
      .string()
      .optional()
      .describe('insert: the text to insert (a line break is added at its end when missing).'),
    old_path: z.string().optional().describe('rename: the file or directory to move.'),
    new_path: z.string().optional().describe('rename: where to move it (must not exist yet).'),
  })
  .superRefine((v, ctx) => {
    for (const key of REQUIRED[v.command]) {
      if ((v as Record<string, unknown>)[key] === undefined)
        ctx.addIssue({ code: 'custom', path: [key], message: `required by the ${v.command} command` });
    }
  });

export type MemoryInput = z.infer<typeof memoryInput>;

const fmt = (x: number) => x.toLocaleString('en-US');
const plural = (k: number, one: string, many = `${one}s`) => `${fmt(k)} ${k === 1 ? one : many}`;
const errno = (err: unknown) => (err as NodeJS.ErrnoException | undefined)?.code;
const virtualOf = (segments: readonly string[]) =>
  segments.length === 0 ? MEMORY_ROOT : `${MEMORY_ROOT}/${segments.join('/')}`;

/** `du -h`-like sizes: 512B, 1.5K, 2.0M. */
export function formatSize(bytes: number): string {
  if (bytes < 1024) return `${bytes}B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)}K`;
  return `${(bytes / (1024 * 1024)).toFixed(1)}M`;
}

/** The lines of `text` without terminators: each `\n` ends a line, a tail without one is a last line. */
function linesOf(text: string): string[] {
  if (text === '') return [];
  const parts = text.split('\n');
  if (text.endsWith('\n')) parts.pop();
  return parts;
}

/** Lines `from`..`to` (1-based, inclusive) as `cat -n` shows them. */
function numbered(lines: readonly string[], from: number, to: number): string {
  const out: string[] = [];
  for (let i = from; i <= to; i++) out.push(`${String(i).padStart(6)}\t${lines[i - 1] ?? ''}`);
  return out.join('\n');
}

/** 1-based line of the character at `index`. */
function lineAt(text: string, index: number): number {
  let line = 1;
  for (let i = text.indexOf('\n'); i !== -1 && i < index; i = text.indexOf('\n', i + 1)) line++;
  return line;
}

const linkError = (v: string) =>
  new AbridgeError('INVALID_INPUT', `${v} is a symbolic link; the memory tool does not follow or change links.`);
const notFound = (v: string) =>
  new AbridgeError('FILE_NOT_FOUND', `${v} does not exist. View ${MEMORY_ROOT} to see what is there.`);
const changedError = (v: string) =>
  new AbridgeError(
    'CONFLICT',
    `${v} changed while the memory tool was using it (another process renamed or replaced it); nothing was done. Try again.`,
  );

interface Located {
  path: MemoryPath;
  /** The open directory holding the final segment, when every parent exists (undefined for the root itself). */
  parent: DirHandle | undefined;
  /** The final segment ('' for the root). */
  name: string;
  /** The final component's lstat, or undefined when it does not exist. */
  stat: Stats | undefined;
  /** How many leading segments exist (all of them when `stat` is set). */
  existing: number;
}

interface TreeEntry {
  virtual: string;
  kind: 'file' | 'dir' | 'link' | 'other';
  bytes: number;
  depth: number;
}

/** The handles one operation opened; all closed when it ends. */
class Scope {
  private readonly open: DirHandle[] = [];
  private rootHandle: DirHandle | undefined;

  constructor(
    private readonly rootPath: string,
    private readonly labels: Map<number, string>,
  ) {}

  async root(): Promise<DirHandle> {
    this.rootHandle ??= this.track(await DirHandle.openRoot(this.rootPath, MEMORY_ROOT));
    return this.rootHandle;
  }

  /** Opens the directory `name` in `parent` (never through a link); errors are translated for the model. */
  async openDir(parent: DirHandle, name: string, virtual: string, whole: string): Promise<DirHandle> {
    try {
      return this.track(await parent.openDir(name, virtual));
    } catch (err) {
      if (errno(err) === 'ELOOP') throw linkError(virtual);
      if (errno(err) === 'ENOTDIR') {
        const st = await parent.lstat(name).catch(() => undefined);
        if (st?.isSymbolicLink()) throw linkError(virtual);
        throw new AbridgeError('INVALID_INPUT', `${virtual} is not a directory, so ${whole} cannot exist.`);
      }
      throw err;
    }
  }

  track(h: DirHandle): DirHandle {
    this.labels.set(h.fd, h.label);
    this.open.push(h);
    return h;
  }

  async close(): Promise<void> {
    for (const h of this.open.splice(0).reverse()) await h.close();
  }
}

/**
 * The memory directory. Every operation checks the path textually, then walks it one component at a time through open
 * directory handles (O_DIRECTORY|O_NOFOLLOW; see dir-handle.ts) and acts on the final name relative to the handle of
 * its parent, so a directory swapped for a link by another process mid-operation can never lead outside the root.
 */
class MemoryDirectory {
  private readonly root: string;
  private chain: Promise<unknown> = Promise.resolve();
  private realRootCache: string | undefined;
  /** The virtual directory each descriptor stood for, to show `/proc/self/fd/<n>` paths in errors as /memories paths. */
  private readonly labels = new Map<number, string>();

  constructor(
    root: string,
    readonly maxFileBytes: number,
    readonly maxFiles: number,
    readonly limits: AnswerLimits,
  ) {
    this.root = resolve(root);
  }

  /** Runs operations one at a time (per tool instance), so limits and checks are not raced by the agent itself. */
  exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.chain.then(fn, fn);
    this.chain = run.catch(() => undefined);
    return run;
  }

  /** Rewrites real paths in a message to virtual ones, so errors never reveal where the root is. */
  sanitize(message: string): string {
    let out = labelFdPaths(message, this.labels, `${MEMORY_ROOT}/…`);
    for (const p of [this.realRootCache, this.root]) if (p) out = out.split(p).join(MEMORY_ROOT);
    return out;
  }

  /** Runs `fn` with a fresh set of handles on the (created if missing) root, closing them all afterwards. */
  private async scoped<T>(fn: (s: Scope) => Promise<T>): Promise<T> {
    await fsp.mkdir(this.root, { recursive: true });
    const real = await fsp.realpath(this.root);
    this.realRootCache = real;
    const scope = new Scope(real, this.labels);
    try {
      return await fn(scope);
    } finally {
      await scope.close();
    }
  }

  /** Opens every parent of `path` through handles (no links, directories all the way down), then lstats the final name. */
  private async locate(s: Scope, path: MemoryPath): Promise<Located> {
    const segs = path.segments;
    let dir = await s.root();
    if (segs.length === 0) return { path, parent: undefined, name: '', stat: await dir.stat(), existing: 0 };
    for (let i = 0; i < segs.length - 1; i++) {
      const next = await this.openExisting(s, dir, segs, i, path.virtual);
      if (!next) return { path, parent: undefined, name: segs[segs.length - 1]!, stat: undefined, existing: i };
      dir = next;
    }
    const name = segs[segs.length - 1]!;
    let stat: Stats;
    try {
      stat = await dir.lstat(name);
    } catch (err) {
      if (errno(err) !== 'ENOENT') throw err;
      return { path, parent: dir, name, stat: undefined, existing: segs.length - 1 };
    }
    if (stat.isSymbolicLink()) throw linkError(path.virtual);
    return { path, parent: dir, name, stat, existing: segs.length };
  }

  /** Opens segment `i` in `dir`, or undefined when it does not exist. */
  private async openExisting(
    s: Scope,
    dir: DirHandle,
    segs: readonly string[],
    i: number,
    whole: string,
  ): Promise<DirHandle | undefined> {
    try {
      return await s.openDir(dir, segs[i]!, virtualOf(segs.slice(0, i + 1)), whole);
    } catch (err) {
      if (errno(err) === 'ENOENT') return undefined;
      throw err;
    }
  }

  /** Checks that an existing path is a plain file the tool may use. */
  private checkFile(v: string, st: Stats): void {
    if (st.isSymbolicLink()) throw linkError(v);
    if (st.isDirectory()) throw new AbridgeError('INVALID_INPUT', `${v} is a directory, not a file.`);
    if (!st.isFile())
      throw new AbridgeError(
        'INVALID_INPUT',
        `${v} is not a regular file; the memory tool only handles files and directories.`,
      );
    if (st.nlink > 1) {
      throw new AbridgeError(
        'INVALID_INPUT',
        `${v} has ${fmt(st.nlink)} hard links; the memory tool refuses hard-linked files (a link could be a file outside ${MEMORY_ROOT}).`,
      );
    }
  }

  /** Reads a file: opened through its parent's handle without following links, then checked to be the file that was located, plain, and small enough. */
  private async readFile(loc: Located): Promise<{ text: string; stat: Stats }> {
    const v = loc.path.virtual;
    if (!loc.stat) throw notFound(v);
    this.checkFile(v, loc.stat);
    if (!loc.parent) throw notFound(v);
    let fh: fsp.FileHandle;
    try {
      fh = await loc.parent.openRead(loc.name);
    } catch (err) {
      if (errno(err) === 'ELOOP') throw linkError(v);
      if (errno(err) === 'ENOENT') throw notFound(v);
      throw err;
    }
    try {
      const st = await fh.stat();
      this.checkFile(v, st);
      if (st.ino !== loc.stat.ino || st.dev !== loc.stat.dev) throw changedError(v);
      if (st.size > this.maxFileBytes) {
        throw new AbridgeError(
          'INVALID_INPUT',
          `${v} is ${fmt(st.size)} bytes, over the ${fmt(this.maxFileBytes)}-byte limit for memory files; the memory tool will not read it.`,
        );
      }
      const text = (await fh.readFile()).toString('utf8');
      return { text, stat: st };
    } finally {
      await fh.close();
    }
  }

  /** Counts the files and directories below the root (links and all, hidden names aside), stopping past `stopAfter`. */
  private async countEntries(s: Scope, stopAfter: number): Promise<number> {
    let count = 0;
    const queue: DirHandle[] = [await s.root()];
    while (queue.length > 0 && count <= stopAfter) {
      const dir = queue.shift()!;
      let entries: Dirent[];
      try {
        entries = await dir.readdir();
      } catch {
        continue;
      }
      for (const e of entries) {
        if (e.name.startsWith('.')) continue;
        count++;
        if (e.isDirectory() && count <= stopAfter) {
          try {
            queue.push(s.track(await dir.openDir(e.name, `${dir.label}/${e.name}`)));
          } catch {
            // swapped or gone meanwhile: counted, not entered
          }
        }
      }
    }
    return count;
  }

  private async checkRoom(s: Scope, adding: number): Promise<void> {
    if (adding <= 0) return;
    const count = await this.countEntries(s, this.maxFiles);
    if (count + adding > this.maxFiles) {
      throw new AbridgeError(
        'INVALID_INPUT',
        `${MEMORY_ROOT} already holds ${fmt(count)} files and directories and this would add ${fmt(adding)}; the limit is ${fmt(this.maxFiles)}. Delete something first.`,
      );
    }
  }

  private checkSize(bytes: number, what: string): void {
    if (bytes > this.maxFileBytes) {
      throw new AbridgeError(
        'INVALID_INPUT',
        `${what} ${fmt(bytes)} bytes; a memory file may hold at most ${fmt(this.maxFileBytes)} bytes (${formatSize(this.maxFileBytes)}).`,
      );
    }
  }

  /** Opens the parents of `path`, creating the missing ones one at a time through the handle of the one above (never through a link). Returns the parent's handle. */
  private async ensureParents(s: Scope, path: MemoryPath): Promise<DirHandle> {
    const parents = path.segments.slice(0, -1);
    let dir = await s.root();
    for (let i = 0; i < parents.length; i++) {
      let next = await this.openExisting(s, dir, parents, i, path.virtual);
      if (!next) {
        try {
          await dir.mkdir(parents[i]!, 0o700);
        } catch (err) {
          if (errno(err) !== 'EEXIST') throw err;
        }
        next = await s.openDir(dir, parents[i]!, virtualOf(parents.slice(0, i + 1)), path.virtual);
      }
      dir = next;
    }
    return dir;
  }

  /**
   * Writes `text` to `path` atomically: a new temp file (O_EXCL, O_NOFOLLOW) in the parent directory, opened through
   * the parent's handle, written and fsynced, then renamed over the target within that same directory (rename replaces
   * a link rather than following it). On any failure the temp file is removed and the old content stays.
   */
  private async writeAtomic(s: Scope, path: MemoryPath, text: string, mode: number | undefined): Promise<void> {
    const v = path.virtual;
    const dir = await this.ensureParents(s, path);
    const name = path.segments[path.segments.length - 1]!;
    const tmp = `.abridge-tmp-${randomBytes(8).toString('hex')}`;
    const fh = await dir.createExclusive(tmp, 0o600);
    let renamed = false;
    try {
      try {
        if (mode !== undefined) await fh.chmod(mode & 0o777);
        await fh.writeFile(text, 'utf8');
        await fh.sync();
      } finally {
        await fh.close();
      }
      let st: Stats | undefined;
      try {
        st = await dir.lstat(name);
      } catch (err) {
        if (errno(err) !== 'ENOENT') throw err;
      }
      if (st) this.checkFile(v, st);
      await dir.rename(tmp, dir, name);
      renamed = true;
    } finally {
      if (!renamed) await dir.unlink(tmp).catch(() => undefined);
    }
    await dir.sync();
  }

  /** Everything below an open directory (never following links), depth-first in name order; depth 1 = its children. */
  private async tree(dir: DirHandle, dirVirtual: string, depth = 1, out: TreeEntry[] = []): Promise<TreeEntry[]> {
    const entries = (await dir.readdir()).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const e of entries) {
      const virtual = `${dirVirtual}/${e.name}`;
      let st: Stats;
      try {
        st = await dir.lstat(e.name);
      } catch (err) {
        if (errno(err) === 'ENOENT') continue; // gone meanwhile
        throw err;
      }
      if (st.isSymbolicLink()) out.push({ virtual, kind: 'link', bytes: 0, depth });
      else if (st.isDirectory()) {
        let sub: DirHandle;
        try {
          sub = await dir.openDir(e.name, virtual);
        } catch (err) {
          if (errno(err) === 'ENOENT') continue;
          // swapped for a link or a file since the lstat: shown (and treated) as a link, never entered
          out.push({ virtual, kind: 'link', bytes: 0, depth });
          continue;
        }
        this.labels.set(sub.fd, virtual);
        try {
          out.push({ virtual, kind: 'dir', bytes: 0, depth });
          await this.tree(sub, virtual, depth + 1, out);
        } finally {
          await sub.close();
        }
      } else if (st.isFile()) out.push({ virtual, kind: st.nlink > 1 ? 'other' : 'file', bytes: st.size, depth });
      else out.push({ virtual, kind: 'other', bytes: 0, depth });
    }
    return out;
  }

  /** The first entry below a directory the tool may not move or delete (a link, a hard-linked or special file). */
  private foreignIn(tree: readonly TreeEntry[]): TreeEntry | undefined {
    return tree.find((e) => e.kind === 'link' || e.kind === 'other');
  }

  private foreignError(what: string, e: TreeEntry): AbridgeError {
    const kind = e.kind === 'link' ? 'a symbolic link' : 'a hard-linked or special file';
    return new AbridgeError(
      'INVALID_INPUT',
      `${what}: it contains ${e.virtual}, ${kind}; the memory tool does not follow, move or delete links.`,
    );
  }

  /** The open directory `loc` names (the root, or a directory in its parent). */
  private async dirOf(s: Scope, loc: Located): Promise<DirHandle> {
    if (!loc.parent) return s.root();
    return s.openDir(loc.parent, loc.name, loc.path.virtual, loc.path.virtual);
  }

  view(rawPath: string, range: readonly number[] | undefined): Promise<string> {
    const path = parseMemoryPath(rawPath);
    return this.scoped(async (s) => {
      const loc = await this.locate(s, path);
      const v = path.virtual;
      if (!loc.stat) throw notFound(v);
      if (loc.stat.isDirectory()) {
        if (range) throw new AbridgeError('INVALID_INPUT', `view_range applies to files; ${v} is a directory.`);
        return this.listing(await this.dirOf(s, loc), v);
      }
      const { text } = await this.readFile(loc);
      const lines = linesOf(text);
      const n = lines.length;
      if (n === 0) return `${v} is empty (0 lines).`;
      let from = 1;
      let to = n;
      if (range) {
        const [a, b] = range as [number, number];
        const shown = `[${a}, ${b}]`;
        if (a < 1 || a > n) {
          throw new AbridgeError(
            'INVALID_INPUT',
            `Invalid view_range ${shown}: the first line must be from 1 to ${fmt(n)} (${v} has ${plural(n, 'line')}).`,
          );
        }
        if (b !== -1 && b < a)
          throw new AbridgeError(
            'INVALID_INPUT',
            `Invalid view_range ${shown}: the last line must be -1 (the end) or at least the first line (${fmt(a)}).`,
          );
        from = a;
        to = b === -1 ? n : Math.min(b, n);
      }
      const head = `Here's the content of ${v} with line numbers:`;
      const all = `${head}\n${numbered(lines, from, to)}`;
      if (fitsAnswer(all, this.limits)) return all;
      // Too big for one answer: the numbered lines that fit, and how to read on.
      const taken = takeLines(linesWithEnds(`${numbered(lines, from, to)}\n`), this.limits, {
        bytes: 300,
        tokens: 100,
      });
      const shown = Math.max(taken.whole, 1);
      const last = from + shown - 1;
      const notes = [
        `answer capped at ${describeLimits(this.limits)}: lines ${fmt(from)}–${fmt(last)} of ${fmt(n)} shown`,
      ];
      if (last < to) notes.push(`read on with view_range [${last + 1}, ${to === n ? -1 : to}]`);
      if (taken.cutChars !== undefined)
        notes.push(
          `line ${fmt(from)} is too long for one answer: only its first ${fmt(taken.cutChars)} characters are shown`,
        );
      if (taken.split > 0) notes.push(`lines over ${fmt(this.limits.maxLineChars)} characters are shown in pieces`);
      return `${head}\n[${notes.join('; ')}]\n${taken.text.replace(/\n$/, '')}`;
    });
  }

  private async listing(dir: DirHandle, v: string): Promise<string> {
    const all = await this.tree(dir, v);
    // Hidden items, node_modules and names no path could address are left out (with what is below them), sizes included.
    const visible: TreeEntry[] = [];
    const skipped: string[] = [];
    let omitted = 0;
    for (const e of all) {
      if (skipped.some((p) => e.virtual.startsWith(`${p}/`))) continue;
      const name = e.virtual.slice(e.virtual.lastIndexOf('/') + 1);
      if (name.startsWith('.') || name === 'node_modules' || !isAddressableName(name)) {
        if (!name.startsWith('.') && name !== 'node_modules') omitted++;
        skipped.push(e.virtual);
        continue;
      }
      visible.push(e);
    }
    const sizeUnder = (d: string) =>
      visible.reduce((n, e) => n + (e.kind === 'file' && e.virtual.startsWith(`${d}/`) ? e.bytes : 0), 0);
    const out = [
      `Here're the files and directories up to 2 levels deep in ${v}, excluding hidden items and node_modules:`,
      `${formatSize(sizeUnder(v))}\t${v}/`,
    ];
    for (const e of visible) {
      if (e.depth > 2) continue;
      if (e.kind === 'dir') out.push(`${formatSize(sizeUnder(e.virtual))}\t${e.virtual}/`);
      else if (e.kind === 'file') out.push(`${formatSize(e.bytes)}\t${e.virtual}`);
      else if (e.kind === 'link') out.push(`-\t${e.virtual} (symbolic link: not followed)`);
      else out.push(`-\t${e.virtual} (hard-linked or special file: not read)`);
    }
    if (omitted > 0)
      out.push(`(${plural(omitted, 'entry', 'entries')} with names the memory tool cannot address not shown)`);
    const text = out.join('\n');
    if (fitsAnswer(text, this.limits)) return text;
    // A root filled by someone else can hold far more than one answer: the entries that fit, and how to see the rest.
    const taken = takeLines(linesWithEnds(`${out.slice(2).join('\n')}\n`), this.limits, {
      bytes: Buffer.byteLength(out[0]! + out[1]!) + 300,
      tokens: 200,
    });
    const rest = out.length - 2 - taken.whole;
    return `${out[0]}\n${out[1]}\n${taken.text}(answer capped at ${describeLimits(this.limits)}: ${plural(rest, 'more entry', 'more entries')} not shown; view a subdirectory to see what is in it)`;
  }

  create(rawPath: string, fileText: string): Promise<string> {
    const path = parseMemoryPath(rawPath);
    const v = path.virtual;
    if (path.segments.length === 0)
      throw new AbridgeError(
        'INVALID_INPUT',
        `Cannot create ${MEMORY_ROOT} itself: give a file path such as ${MEMORY_ROOT}/notes.md.`,
      );
    this.checkSize(Buffer.byteLength(fileText, 'utf8'), 'file_text is');
    return this.scoped(async (s) => {
      const loc = await this.locate(s, path);
      if (loc.stat) {
        if (loc.stat.isDirectory()) throw new AbridgeError('CONFLICT', `${v} already exists as a directory.`);
        throw new AbridgeError(
          'CONFLICT',
          `${v} already exists; edit it with str_replace or insert, or delete it first.`,
        );
      }
      await this.checkRoom(s, path.segments.length - loc.existing);
      await this.writeAtomic(s, path, fileText, undefined);
      return `File created successfully at: ${v}`;
    });
  }

  strReplace(rawPath: string, oldStr: string, newStr: string): Promise<string> {
    const path = parseMemoryPath(rawPath);
    const v = path.virtual;
    return this.scoped(async (s) => {
      const loc = await this.locate(s, path);
      const { text, stat } = await this.readFile(loc);
      if (oldStr === '')
        throw new AbridgeError(
          'INVALID_INPUT',
          'old_str is empty; give the exact text to replace (it must occur exactly once).',
        );
      const at: number[] = [];
      for (let i = text.indexOf(oldStr); i !== -1; i = text.indexOf(oldStr, i + oldStr.length)) at.push(i);
      if (at.length === 0) {
        throw new AbridgeError(
          'INVALID_INPUT',
          `No replacement was performed: old_str does not occur in ${v}; it must match exactly, whitespace and line breaks included.`,
        );
      }
      if (at.length > 1) {
        const lines = [...new Set(at.map((i) => lineAt(text, i)))];
        const shown = lines.length > 10 ? `${lines.slice(0, 10).join(', ')}, …` : lines.join(', ');
        throw new AbridgeError(
          'INVALID_INPUT',
          `No replacement was performed: old_str occurs ${fmt(at.length)} times in ${v} (on ${lines.length === 1 ? 'line' : 'lines'} ${shown}); it must occur exactly once, so include more of the surrounding text.`,
        );
      }
      const start = at[0]!;
      const result = text.slice(0, start) + newStr + text.slice(start + oldStr.length);
      this.checkSize(Buffer.byteLength(result, 'utf8'), 'No replacement was performed: the result would be');
      await this.writeAtomic(s, path, result, stat.mode);
      const lines = linesOf(result);
      if (lines.length === 0) return `The memory file ${v} has been edited; it is now empty.`;
      const first = Math.max(1, lineAt(result, start) - 2);
      const last = Math.min(lines.length, lineAt(result, start + Math.max(0, newStr.length - 1)) + 2);
      return `The memory file ${v} has been edited. ${first === last ? `Line ${first} now reads` : `Lines ${first}–${last} now read`}:\n${numbered(lines, first, last)}`;
    });
  }

  insert(rawPath: string, insertLine: number, insertText: string): Promise<string> {
    const path = parseMemoryPath(rawPath);
    const v = path.virtual;
    return this.scoped(async (s) => {
      const loc = await this.locate(s, path);
      const { text, stat } = await this.readFile(loc);
      if (insertText === '')
        throw new AbridgeError('INVALID_INPUT', 'insert_text is empty; there is nothing to insert.');
      const n = linesOf(text).length;
      if (insertLine > n) {
        throw new AbridgeError(
          'INVALID_INPUT',
          `Invalid insert_line ${fmt(insertLine)}: ${v} has ${plural(n, 'line')}; use 0 (before the first line) to ${fmt(n)} (after the last).`,
        );
      }
      let offset = 0;
      for (let k = 0; k < insertLine; k++) {
        const nl = text.indexOf('\n', offset);
        offset = nl === -1 ? text.length : nl + 1;
      }
      const block = insertText.endsWith('\n') ? insertText : `${insertText}\n`;
      const glue = offset === text.length && text !== '' && !text.endsWith('\n') ? '\n' : '';
      const result = text.slice(0, offset) + glue + block + text.slice(offset);
      this.checkSize(Buffer.byteLength(result, 'utf8'), 'Nothing was inserted: the result would be');
      await this.writeAtomic(s, path, result, stat.mode);
      const added = linesOf(block).length;
      const where = insertLine === 0 ? 'at the start' : `after line ${fmt(insertLine)}`;
      return `The memory file ${v} has been edited: inserted ${plural(added, 'line')} ${where}; it now has ${plural(linesOf(result).length, 'line')}.`;
    });
  }

  delete(rawPath: string): Promise<string> {
    const path = parseMemoryPath(rawPath);
    const v = path.virtual;
    if (path.segments.length === 0)
      throw new AbridgeError(
        'INVALID_INPUT',
        `Cannot delete ${MEMORY_ROOT} itself (the memory root); delete the files in it instead.`,
      );
    return this.scoped(async (s) => {
      const loc = await this.locate(s, path);
      if (!loc.stat || !loc.parent) throw notFound(v);
      const parent = loc.parent;
      if (!loc.stat.isDirectory()) {
        this.checkFile(v, loc.stat);
        // unlink removes the name itself: had it been swapped for a link meanwhile, the link would go, not its target.
        await parent.unlink(loc.name);
        await parent.sync();
        return `Deleted ${v}.`;
      }
      const dir = await this.dirOf(s, loc);
      const st = await dir.stat();
      if (st.ino !== loc.stat.ino || st.dev !== loc.stat.dev) throw changedError(v);
      const tree = await this.tree(dir, v);
      const foreign = this.foreignIn(tree);
      if (foreign) throw this.foreignError(`Cannot delete ${v}`, foreign);
      // Detach first (one atomic rename to a hidden name in the root), check that what moved is the directory held
      // open, then empty it through its handle and remove it.
      const root = await s.root();
      const trash = `.abridge-deleting-${randomBytes(8).toString('hex')}`;
      await parent.rename(loc.name, root, trash);
      const moved = await root.lstat(trash);
      if (moved.ino !== st.ino || moved.dev !== st.dev) {
        await root.rename(trash, parent, loc.name).catch(() => undefined);
        throw changedError(v);
      }
      await this.emptyDir(dir);
      await root.rmdir(trash);
      await parent.sync();
      const files = tree.filter((e) => e.kind === 'file').length;
      const dirs = tree.filter((e) => e.kind === 'dir').length;
      return `Deleted the directory ${v} and everything in it (${plural(files, 'file')}, ${plural(dirs, 'subdirectory', 'subdirectories')}).`;
    });
  }

  /** Removes everything inside an open directory, walking by handles: a subdirectory is opened (never through a link) and emptied before it is removed; any other name is unlinked itself. */
  private async emptyDir(dir: DirHandle): Promise<void> {
    for (const e of await dir.readdir()) {
      const st = await dir.lstat(e.name).catch(() => undefined);
      if (!st) continue;
      if (st.isDirectory()) {
        let sub: DirHandle | undefined;
        try {
          sub = await dir.openDir(e.name, `${dir.label}/${e.name}`);
        } catch (err) {
          if (errno(err) === 'ENOENT') continue;
          // swapped for a link since the lstat: the link itself is removed below, its target is not touched
        }
        if (sub) {
          this.labels.set(sub.fd, sub.label);
          try {
            await this.emptyDir(sub);
          } finally {
            await sub.close();
          }
          await dir.rmdir(e.name);
          continue;
        }
      }
      await dir.unlink(e.name);
    }
  }

  rename(rawOld: string, rawNew: string): Promise<string> {
    const from = parseMemoryPath(rawOld);
    const to = parseMemoryPath(rawNew);
    if (from.segments.length === 0)
      throw new AbridgeError('INVALID_INPUT', `Cannot rename ${MEMORY_ROOT} itself (the memory root).`);
    if (to.segments.length === 0)
      throw new AbridgeError('CONFLICT', `Cannot rename ${from.virtual} to ${MEMORY_ROOT}: that is the memory root.`);
    if (from.virtual === to.virtual)
      throw new AbridgeError('INVALID_INPUT', `old_path and new_path are the same (${from.virtual}).`);
    if (to.virtual.startsWith(`${from.virtual}/`))
      throw new AbridgeError('INVALID_INPUT', `Cannot move ${from.virtual} into itself (${to.virtual}).`);
    return this.scoped(async (s) => {
      const src = await this.locate(s, from);
      if (!src.stat || !src.parent) throw notFound(from.virtual);
      const dst = await this.locate(s, to);
      const exists = () =>
        new AbridgeError(
          'CONFLICT',
          `Cannot rename ${from.virtual} to ${to.virtual}: ${to.virtual} already exists; delete it first or choose another name.`,
        );
      if (dst.stat) throw exists();
      const isDir = src.stat.isDirectory();
      if (isDir) {
        const tree = await this.tree(await this.dirOf(s, src), from.virtual);
        const foreign = this.foreignIn(tree);
        if (foreign) throw this.foreignError(`Cannot rename ${from.virtual}`, foreign);
        const deepest = tree.reduce((d, e) => Math.max(d, e.depth), 0);
        const longest = tree.reduce(
          (n, e) => Math.max(n, Buffer.byteLength(e.virtual.slice(from.virtual.length), 'utf8')),
          0,
        );
        if (to.segments.length + deepest > MAX_DEPTH) {
          throw new AbridgeError(
            'INVALID_INPUT',
            `Cannot move ${from.virtual} to ${to.virtual}: its contents would be ${to.segments.length + deepest} levels deep; the limit is ${MAX_DEPTH}.`,
          );
        }
        if (Buffer.byteLength(to.virtual, 'utf8') + longest > MAX_PATH_BYTES) {
          throw new AbridgeError(
            'INVALID_INPUT',
            `Cannot move ${from.virtual} to ${to.virtual}: a path inside it would be longer than ${fmt(MAX_PATH_BYTES)} bytes.`,
          );
        }
      } else {
        this.checkFile(from.virtual, src.stat);
      }
      await this.checkRoom(s, to.segments.length - 1 - dst.existing);
      const dir = await this.ensureParents(s, to);
      const name = to.segments[to.segments.length - 1]!;
      const srcParent = src.parent;
      if (!isDir) {
        // link() never replaces an existing name, so a file cannot be renamed over one that appeared meanwhile.
        let linked = false;
        try {
          await srcParent.link(src.name, dir, name);
          linked = true;
        } catch (err) {
          if (errno(err) === 'EEXIST') throw exists();
        }
        if (linked) {
          const made = await dir.lstat(name);
          if (made.ino !== src.stat.ino || made.dev !== src.stat.dev) {
            await dir.unlink(name).catch(() => undefined);
            throw changedError(from.virtual);
          }
          await srcParent.unlink(src.name);
        } else await this.renameChecked(srcParent, src.name, dir, name, exists);
      } else {
        await this.renameChecked(srcParent, src.name, dir, name, exists);
      }
      await dir.sync();
      await srcParent.sync();
      return `Renamed ${from.virtual} to ${to.virtual}.`;
    });
  }

  private async renameChecked(
    from: DirHandle,
    name: string,
    to: DirHandle,
    toName: string,
    exists: () => AbridgeError,
  ): Promise<void> {
    try {
      await to.lstat(toName);
      throw exists();
    } catch (err) {
      if (errno(err) !== 'ENOENT') throw err;
    }
    await from.rename(name, to, toName);
  }
}

const DESCRIPTION = `A persistent memory directory, ${MEMORY_ROOT}, that outlives this conversation: check it before starting a task, and record progress, decisions and facts worth keeping as you go (assume the context may be reset at any time).
Commands:
- view {path, view_range?}: a directory lists its files and directories 2 levels deep with sizes; a file shows its lines numbered; view_range [first, last] (1-based, last = -1 for the end) shows part of it.
- create {path, file_text}: a new file (fails if it exists).
- str_replace {path, old_str, new_str}: replaces old_str, which must occur exactly once.
- insert {path, insert_line, insert_text}: inserts text after line insert_line (0 = at the start).
- delete {path}: a file, or a directory and everything in it.
- rename {old_path, new_path}: moves a file or directory (new_path must not exist).
Paths look like ${MEMORY_ROOT}/notes.md or ${MEMORY_ROOT}/project/todo.md: names use letters, digits, spaces and . _ - + @ , = ( ) # ~ (no leading ".", no ".."); at most 16 levels.`;

/**
 * The memory tool (Anthropic's memory_20250818 command set) over one real directory, `root`, shown to the model as
 * /memories. Every path is checked textually (memory-paths.ts), then acted on only through verified directory handles:
 * each component opened with O_DIRECTORY|O_NOFOLLOW relative to the one above (via /proc/self/fd on Linux, since Node
 * has no openat), the final name lstat'ed through its parent's handle and never followed, files opened with O_NOFOLLOW
 * and checked after opening (same inode, not hard-linked), recursive delete walking by handles. So another process
 * swapping a directory for a link mid-operation cannot make it read, write, move or delete anything outside the root
 * (src/tools/memory.race.test.ts). Where /proc/self/fd is not available the tool refuses to act (fails closed). Writes
 * are atomic (temp file in the same directory, fsync, rename). Limits: `maxFileBytes` per file, `maxFiles` files and
 * directories in all.
 */
export function memoryTool(options: MemoryToolOptions): AgentTool<MemoryInput> {
  const maxFileBytes = options.maxFileBytes ?? DEFAULT_MAX_FILE_BYTES;
  const maxFiles = options.maxFiles ?? DEFAULT_MAX_FILES;
  if (typeof options.root !== 'string' || options.root === '')
    throw new AbridgeError('INVALID_CONFIG', 'memoryTool needs root: the directory /memories maps to.');
  if (!Number.isSafeInteger(maxFileBytes) || maxFileBytes <= 0)
    throw new AbridgeError('INVALID_CONFIG', `Invalid maxFileBytes ${maxFileBytes}: expected a positive integer.`);
  if (!Number.isSafeInteger(maxFiles) || maxFiles <= 0)
    throw new AbridgeError('INVALID_CONFIG', `Invalid maxFiles ${maxFiles}: expected a positive integer.`);
  const dir = new MemoryDirectory(options.root, maxFileBytes, maxFiles, answerLimits(options.limits));
  return defineTool({
    name: 'memory',
    description: DESCRIPTION,
    input: memoryInput,
    async run(input) {
      try {
        return await dir.exclusive(() => runCommand(dir, input));
      } catch (err) {
        if (err instanceof AbridgeError) throw err;
        // No `cause`: the original message names paths outside the memory root, which sanitize() takes out.
        throw new AbridgeError('STORE_ERROR', dir.sanitize(err instanceof Error ? err.message : String(err)));
      }
    },
  });
}

function runCommand(dir: MemoryDirectory, i: MemoryInput): Promise<string> {
  switch (i.command) {
    case 'view':
      return dir.view(i.path!, i.view_range);
    case 'create':
      return dir.create(i.path!, i.file_text!);
    case 'str_replace':
      return dir.strReplace(i.path!, i.old_str!, i.new_str!);
    case 'insert':
      return dir.insert(i.path!, i.insert_line!, i.insert_text!);
    case 'delete':
      return dir.delete(i.path!);
    case 'rename':
      return dir.rename(i.old_path!, i.new_path!);
  }
}
