import { randomBytes } from 'node:crypto';
import { constants, type Dirent, type Stats } from 'node:fs';
import * as fsp from 'node:fs/promises';
import { resolve, sep } from 'node:path';
import { z } from 'zod';
import { AbridgeError } from '../errors.js';
import { isAddressableName, MAX_DEPTH, MAX_PATH_BYTES, MEMORY_ROOT, parseMemoryPath, type MemoryPath } from './memory-paths.js';
import { defineTool, type AgentTool } from './tool.js';

/** Anthropic's tool type for the memory tool this implements (`{ type: 'memory_20250818', name: 'memory' }`). */
export const MEMORY_TOOL_TYPE = 'memory_20250818';
export const DEFAULT_MAX_FILE_BYTES = 256 * 1024;
export const DEFAULT_MAX_FILES = 1000;

export interface MemoryToolOptions {
  /** The real directory `/memories` maps to; created (with its parents) on first use. */
  root: string;
  /** Largest file a create, str_replace or insert may leave, and largest file view reads (bytes; default 256 KB). */
  maxFileBytes?: number;
  /** Most files and directories the root may hold, counted together (default 1,000). */
  maxFiles?: number;
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
    insert_line: z.number().int().min(0).optional().describe('insert: the line after which to insert (0 = at the start).'),
    insert_text: z.string().optional().describe('insert: the text to insert (a line break is added at its end when missing).'),
    old_path: z.string().optional().describe('rename: the file or directory to move.'),
    new_path: z.string().optional().describe('rename: where to move it (must not exist yet).'),
  })
  .superRefine((v, ctx) => {
    for (const key of REQUIRED[v.command]) {
      if ((v as Record<string, unknown>)[key] === undefined) ctx.addIssue({ code: 'custom', path: [key], message: `required by the ${v.command} command` });
    }
  });

export type MemoryInput = z.infer<typeof memoryInput>;

const fmt = (x: number) => x.toLocaleString('en-US');
const plural = (k: number, one: string, many = `${one}s`) => `${fmt(k)} ${k === 1 ? one : many}`;
const errno = (err: unknown) => (err as NodeJS.ErrnoException | undefined)?.code;
const virtualOf = (segments: readonly string[]) => (segments.length === 0 ? MEMORY_ROOT : `${MEMORY_ROOT}/${segments.join('/')}`);
const O_NOFOLLOW: number = constants.O_NOFOLLOW ?? 0;
const O_NONBLOCK: number = constants.O_NONBLOCK ?? 0;

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

const linkError = (v: string) => new AbridgeError('INVALID_INPUT', `${v} is a symbolic link; the memory tool does not follow or change links.`);
const notFound = (v: string) => new AbridgeError('FILE_NOT_FOUND', `${v} does not exist. View ${MEMORY_ROOT} to see what is there.`);
const escapeError = (v: string) =>
  new AbridgeError('INVALID_INPUT', `${v} resolves to a different place than it names (a link, or a name differing only in case); the memory tool refuses it.`);

interface Located {
  path: MemoryPath;
  /** The real path (root's realpath + segments). */
  real: string;
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

/** The memory directory: every operation checks paths textually, then segment by segment on disk, before it acts. */
class MemoryDirectory {
  private readonly root: string;
  private chain: Promise<unknown> = Promise.resolve();
  private realRootCache: string | undefined;

  constructor(
    root: string,
    readonly maxFileBytes: number,
    readonly maxFiles: number,
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
    let out = message;
    for (const p of [this.realRootCache, this.root]) if (p) out = out.split(p).join(MEMORY_ROOT);
    return out;
  }

  private async realRoot(): Promise<string> {
    await fsp.mkdir(this.root, { recursive: true });
    const real = await fsp.realpath(this.root);
    const st = await fsp.lstat(real);
    if (!st.isDirectory()) throw new AbridgeError('STORE_ERROR', `The memory root ${MEMORY_ROOT} is not a directory.`);
    this.realRootCache = real;
    return real;
  }

  private realOf(rootReal: string, segments: readonly string[]): string {
    return segments.length === 0 ? rootReal : `${rootReal}${sep}${segments.join(sep)}`;
  }

  /** lstat on every segment (no links, directories all the way down), then realpath containment of what exists. */
  private async locate(rootReal: string, path: MemoryPath): Promise<Located> {
    const segs = path.segments;
    let stat: Stats | undefined = await fsp.lstat(rootReal);
    let existing = 0;
    for (let i = 0; i < segs.length; i++) {
      const cur = this.realOf(rootReal, segs.slice(0, i + 1));
      let st: Stats;
      try {
        st = await fsp.lstat(cur);
      } catch (err) {
        if (errno(err) !== 'ENOENT') throw err;
        stat = undefined;
        break;
      }
      const v = virtualOf(segs.slice(0, i + 1));
      if (st.isSymbolicLink()) throw linkError(v);
      if (i < segs.length - 1 && !st.isDirectory()) throw new AbridgeError('INVALID_INPUT', `${v} is not a directory, so ${path.virtual} cannot exist.`);
      stat = st;
      existing = i + 1;
    }
    const deepest = this.realOf(rootReal, segs.slice(0, existing));
    if ((await fsp.realpath(deepest)) !== deepest) throw escapeError(virtualOf(segs.slice(0, existing)));
    return { path, real: this.realOf(rootReal, segs), stat, existing };
  }

  /** Checks that an existing path is a plain file the tool may use. */
  private checkFile(v: string, st: Stats): void {
    if (st.isSymbolicLink()) throw linkError(v);
    if (st.isDirectory()) throw new AbridgeError('INVALID_INPUT', `${v} is a directory, not a file.`);
    if (!st.isFile()) throw new AbridgeError('INVALID_INPUT', `${v} is not a regular file; the memory tool only handles files and directories.`);
    if (st.nlink > 1) {
      throw new AbridgeError('INVALID_INPUT', `${v} has ${fmt(st.nlink)} hard links; the memory tool refuses hard-linked files (a link could be a file outside ${MEMORY_ROOT}).`);
    }
  }

  /** Where an open file really is (Linux), or undefined where /proc is not available. */
  private async openedAt(fd: number): Promise<string | undefined> {
    try {
      return await fsp.readlink(`/proc/self/fd/${fd}`);
    } catch {
      return undefined;
    }
  }

  private async verifyOpened(fh: fsp.FileHandle, expected: string, v: string): Promise<void> {
    const at = await this.openedAt(fh.fd);
    if (at !== undefined ? at !== expected : (await fsp.realpath(expected)) !== expected) throw escapeError(v);
  }

  /** Reads a file: opened without following links, then checked to be the file that was located, plain, and small enough. */
  private async readFile(loc: Located): Promise<{ text: string; stat: Stats }> {
    const v = loc.path.virtual;
    if (!loc.stat) throw notFound(v);
    this.checkFile(v, loc.stat);
    let fh: fsp.FileHandle;
    try {
      fh = await fsp.open(loc.real, constants.O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
    } catch (err) {
      if (errno(err) === 'ELOOP') throw linkError(v);
      if (errno(err) === 'ENOENT') throw notFound(v);
      throw err;
    }
    try {
      const st = await fh.stat();
      this.checkFile(v, st);
      if (st.ino !== loc.stat.ino || st.dev !== loc.stat.dev) throw escapeError(v);
      if (st.size > this.maxFileBytes) {
        throw new AbridgeError('INVALID_INPUT', `${v} is ${fmt(st.size)} bytes, over the ${fmt(this.maxFileBytes)}-byte limit for memory files; the memory tool will not read it.`);
      }
      await this.verifyOpened(fh, loc.real, v);
      const text = (await fh.readFile()).toString('utf8');
      return { text, stat: st };
    } finally {
      await fh.close();
    }
  }

  /** Counts the files and directories below the root (links and all, hidden names aside), stopping past `stopAfter`. */
  private async countEntries(rootReal: string, stopAfter: number): Promise<number> {
    let count = 0;
    const queue = [rootReal];
    while (queue.length > 0 && count <= stopAfter) {
      const dir = queue.shift()!;
      let entries: Dirent[];
      try {
        entries = await fsp.readdir(dir, { withFileTypes: true });
      } catch {
        continue;
      }
      for (const e of entries) {
        if (e.name.startsWith('.')) continue;
        count++;
        if (e.isDirectory()) queue.push(`${dir}${sep}${e.name}`);
      }
    }
    return count;
  }

  private async checkRoom(rootReal: string, adding: number): Promise<void> {
    if (adding <= 0) return;
    const count = await this.countEntries(rootReal, this.maxFiles);
    if (count + adding > this.maxFiles) {
      throw new AbridgeError(
        'INVALID_INPUT',
        `${MEMORY_ROOT} already holds ${fmt(count)} files and directories and this would add ${fmt(adding)}; the limit is ${fmt(this.maxFiles)}. Delete something first.`,
      );
    }
  }

  private checkSize(bytes: number, what: string): void {
    if (bytes > this.maxFileBytes) {
      throw new AbridgeError('INVALID_INPUT', `${what} ${fmt(bytes)} bytes; a memory file may hold at most ${fmt(this.maxFileBytes)} bytes (${formatSize(this.maxFileBytes)}).`);
    }
  }

  /** Creates the missing parent directories of `path` one at a time, checking each (never through a link). Returns the parent's real path. */
  private async ensureParents(rootReal: string, path: MemoryPath): Promise<string> {
    const parents = path.segments.slice(0, -1);
    for (let i = 0; i < parents.length; i++) {
      const cur = this.realOf(rootReal, parents.slice(0, i + 1));
      const v = virtualOf(parents.slice(0, i + 1));
      try {
        await fsp.mkdir(cur);
      } catch (err) {
        if (errno(err) !== 'EEXIST') throw err;
      }
      const st = await fsp.lstat(cur);
      if (st.isSymbolicLink()) throw linkError(v);
      if (!st.isDirectory()) throw new AbridgeError('INVALID_INPUT', `${v} is not a directory, so ${path.virtual} cannot exist.`);
    }
    const dir = this.realOf(rootReal, parents);
    if ((await fsp.realpath(dir)) !== dir) throw escapeError(virtualOf(parents));
    return dir;
  }

  private async syncDir(dir: string): Promise<void> {
    let fh: fsp.FileHandle | undefined;
    try {
      fh = await fsp.open(dir, constants.O_RDONLY | (constants.O_DIRECTORY ?? 0) | O_NOFOLLOW);
      await fh.sync();
    } catch {
      // Best effort: some platforms cannot fsync a directory.
    } finally {
      await fh?.close();
    }
  }

  /**
   * Writes `text` to `path` atomically: a new temp file (O_EXCL, O_NOFOLLOW) in the same directory, written, fsynced and
   * checked to be where it should, then renamed over the target (rename replaces a link rather than following it).
   * On any failure the temp file is removed and the old content stays.
   */
  private async writeAtomic(rootReal: string, path: MemoryPath, text: string, mode: number | undefined): Promise<void> {
    const v = path.virtual;
    const dir = await this.ensureParents(rootReal, path);
    const target = `${dir}${sep}${path.segments[path.segments.length - 1]!}`;
    const tmp = `${dir}${sep}.abridge-tmp-${randomBytes(8).toString('hex')}`;
    const fh = await fsp.open(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | O_NOFOLLOW, 0o644);
    let renamed = false;
    try {
      try {
        if (mode !== undefined) await fh.chmod(mode & 0o777);
        await fh.writeFile(text, 'utf8');
        await fh.sync();
        await this.verifyOpened(fh, tmp, v);
      } finally {
        await fh.close();
      }
      let st: Stats | undefined;
      try {
        st = await fsp.lstat(target);
      } catch (err) {
        if (errno(err) !== 'ENOENT') throw err;
      }
      if (st) this.checkFile(v, st);
      await fsp.rename(tmp, target);
      renamed = true;
    } finally {
      if (!renamed) await fsp.unlink(tmp).catch(() => undefined);
    }
    await this.syncDir(dir);
  }

  /** Everything below a directory (not following links), depth-first in name order; depth 1 = its children. */
  private async tree(dirReal: string, dirVirtual: string, depth = 1, out: TreeEntry[] = []): Promise<TreeEntry[]> {
    const entries = (await fsp.readdir(dirReal, { withFileTypes: true })).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const e of entries) {
      const real = `${dirReal}${sep}${e.name}`;
      const virtual = `${dirVirtual}/${e.name}`;
      const st = await fsp.lstat(real);
      if (st.isSymbolicLink()) out.push({ virtual, kind: 'link', bytes: 0, depth });
      else if (st.isDirectory()) {
        out.push({ virtual, kind: 'dir', bytes: 0, depth });
        await this.tree(real, virtual, depth + 1, out);
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
    return new AbridgeError('INVALID_INPUT', `${what}: it contains ${e.virtual}, ${kind}; the memory tool does not follow, move or delete links.`);
  }

  async view(rawPath: string, range: readonly number[] | undefined): Promise<string> {
    const path = parseMemoryPath(rawPath);
    const rootReal = await this.realRoot();
    const loc = await this.locate(rootReal, path);
    const v = path.virtual;
    if (!loc.stat) throw notFound(v);
    if (loc.stat.isDirectory()) {
      if (range) throw new AbridgeError('INVALID_INPUT', `view_range applies to files; ${v} is a directory.`);
      return this.listing(loc);
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
        throw new AbridgeError('INVALID_INPUT', `Invalid view_range ${shown}: the first line must be from 1 to ${fmt(n)} (${v} has ${plural(n, 'line')}).`);
      }
      if (b !== -1 && b < a) throw new AbridgeError('INVALID_INPUT', `Invalid view_range ${shown}: the last line must be -1 (the end) or at least the first line (${fmt(a)}).`);
      from = a;
      to = b === -1 ? n : Math.min(b, n);
    }
    return `Here's the content of ${v} with line numbers:\n${numbered(lines, from, to)}`;
  }

  private async listing(loc: Located): Promise<string> {
    const v = loc.path.virtual;
    const all = await this.tree(loc.real, v);
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
    const sizeUnder = (dir: string) => visible.reduce((n, e) => n + (e.kind === 'file' && e.virtual.startsWith(`${dir}/`) ? e.bytes : 0), 0);
    const out = [`Here're the files and directories up to 2 levels deep in ${v}, excluding hidden items and node_modules:`, `${formatSize(sizeUnder(v))}\t${v}/`];
    for (const e of visible) {
      if (e.depth > 2) continue;
      if (e.kind === 'dir') out.push(`${formatSize(sizeUnder(e.virtual))}\t${e.virtual}/`);
      else if (e.kind === 'file') out.push(`${formatSize(e.bytes)}\t${e.virtual}`);
      else if (e.kind === 'link') out.push(`-\t${e.virtual} (symbolic link: not followed)`);
      else out.push(`-\t${e.virtual} (hard-linked or special file: not read)`);
    }
    if (omitted > 0) out.push(`(${plural(omitted, 'entry', 'entries')} with names the memory tool cannot address not shown)`);
    return out.join('\n');
  }

  async create(rawPath: string, fileText: string): Promise<string> {
    const path = parseMemoryPath(rawPath);
    const v = path.virtual;
    if (path.segments.length === 0) throw new AbridgeError('INVALID_INPUT', `Cannot create ${MEMORY_ROOT} itself: give a file path such as ${MEMORY_ROOT}/notes.md.`);
    this.checkSize(Buffer.byteLength(fileText, 'utf8'), 'file_text is');
    const rootReal = await this.realRoot();
    const loc = await this.locate(rootReal, path);
    if (loc.stat) {
      if (loc.stat.isDirectory()) throw new AbridgeError('CONFLICT', `${v} already exists as a directory.`);
      throw new AbridgeError('CONFLICT', `${v} already exists; edit it with str_replace or insert, or delete it first.`);
    }
    await this.checkRoom(rootReal, path.segments.length - loc.existing);
    await this.writeAtomic(rootReal, path, fileText, undefined);
    return `File created successfully at: ${v}`;
  }

  async strReplace(rawPath: string, oldStr: string, newStr: string): Promise<string> {
    const path = parseMemoryPath(rawPath);
    const v = path.virtual;
    const rootReal = await this.realRoot();
    const loc = await this.locate(rootReal, path);
    const { text, stat } = await this.readFile(loc);
    if (oldStr === '') throw new AbridgeError('INVALID_INPUT', 'old_str is empty; give the exact text to replace (it must occur exactly once).');
    const at: number[] = [];
    for (let i = text.indexOf(oldStr); i !== -1; i = text.indexOf(oldStr, i + oldStr.length)) at.push(i);
    if (at.length === 0) {
      throw new AbridgeError('INVALID_INPUT', `No replacement was performed: old_str does not occur in ${v}; it must match exactly, whitespace and line breaks included.`);
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
    await this.writeAtomic(rootReal, path, result, stat.mode);
    const lines = linesOf(result);
    if (lines.length === 0) return `The memory file ${v} has been edited; it is now empty.`;
    const first = Math.max(1, lineAt(result, start) - 2);
    const last = Math.min(lines.length, lineAt(result, start + Math.max(0, newStr.length - 1)) + 2);
    return `The memory file ${v} has been edited. ${first === last ? `Line ${first} now reads` : `Lines ${first}–${last} now read`}:\n${numbered(lines, first, last)}`;
  }

  async insert(rawPath: string, insertLine: number, insertText: string): Promise<string> {
    const path = parseMemoryPath(rawPath);
    const v = path.virtual;
    const rootReal = await this.realRoot();
    const loc = await this.locate(rootReal, path);
    const { text, stat } = await this.readFile(loc);
    if (insertText === '') throw new AbridgeError('INVALID_INPUT', 'insert_text is empty; there is nothing to insert.');
    const n = linesOf(text).length;
    if (insertLine > n) {
      throw new AbridgeError('INVALID_INPUT', `Invalid insert_line ${fmt(insertLine)}: ${v} has ${plural(n, 'line')}; use 0 (before the first line) to ${fmt(n)} (after the last).`);
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
    await this.writeAtomic(rootReal, path, result, stat.mode);
    const added = linesOf(block).length;
    const where = insertLine === 0 ? 'at the start' : `after line ${fmt(insertLine)}`;
    return `The memory file ${v} has been edited: inserted ${plural(added, 'line')} ${where}; it now has ${plural(linesOf(result).length, 'line')}.`;
  }

  async delete(rawPath: string): Promise<string> {
    const path = parseMemoryPath(rawPath);
    const v = path.virtual;
    if (path.segments.length === 0) throw new AbridgeError('INVALID_INPUT', `Cannot delete ${MEMORY_ROOT} itself (the memory root); delete the files in it instead.`);
    const rootReal = await this.realRoot();
    const loc = await this.locate(rootReal, path);
    if (!loc.stat) throw notFound(v);
    if (!loc.stat.isDirectory()) {
      this.checkFile(v, loc.stat);
      await fsp.unlink(loc.real);
      await this.syncDir(this.realOf(rootReal, path.segments.slice(0, -1)));
      return `Deleted ${v}.`;
    }
    const tree = await this.tree(loc.real, v);
    const foreign = this.foreignIn(tree);
    if (foreign) throw this.foreignError(`Cannot delete ${v}`, foreign);
    // Detach first (one atomic rename to a hidden name), then remove the detached tree.
    const trash = `${rootReal}${sep}.abridge-deleting-${randomBytes(8).toString('hex')}`;
    await fsp.rename(loc.real, trash);
    await removeTree(trash);
    await this.syncDir(this.realOf(rootReal, path.segments.slice(0, -1)));
    const files = tree.filter((e) => e.kind === 'file').length;
    const dirs = tree.filter((e) => e.kind === 'dir').length;
    return `Deleted the directory ${v} and everything in it (${plural(files, 'file')}, ${plural(dirs, 'subdirectory', 'subdirectories')}).`;
  }

  async rename(rawOld: string, rawNew: string): Promise<string> {
    const from = parseMemoryPath(rawOld);
    const to = parseMemoryPath(rawNew);
    if (from.segments.length === 0) throw new AbridgeError('INVALID_INPUT', `Cannot rename ${MEMORY_ROOT} itself (the memory root).`);
    if (to.segments.length === 0) throw new AbridgeError('CONFLICT', `Cannot rename ${from.virtual} to ${MEMORY_ROOT}: that is the memory root.`);
    if (from.virtual === to.virtual) throw new AbridgeError('INVALID_INPUT', `old_path and new_path are the same (${from.virtual}).`);
    if (to.virtual.startsWith(`${from.virtual}/`)) throw new AbridgeError('INVALID_INPUT', `Cannot move ${from.virtual} into itself (${to.virtual}).`);
    const rootReal = await this.realRoot();
    const src = await this.locate(rootReal, from);
    if (!src.stat) throw notFound(from.virtual);
    const dst = await this.locate(rootReal, to);
    const exists = () => new AbridgeError('CONFLICT', `Cannot rename ${from.virtual} to ${to.virtual}: ${to.virtual} already exists; delete it first or choose another name.`);
    if (dst.stat) throw exists();
    const isDir = src.stat.isDirectory();
    if (isDir) {
      const tree = await this.tree(src.real, from.virtual);
      const foreign = this.foreignIn(tree);
      if (foreign) throw this.foreignError(`Cannot rename ${from.virtual}`, foreign);
      const deepest = tree.reduce((d, e) => Math.max(d, e.depth), 0);
      const longest = tree.reduce((n, e) => Math.max(n, Buffer.byteLength(e.virtual.slice(from.virtual.length), 'utf8')), 0);
      if (to.segments.length + deepest > MAX_DEPTH) {
        throw new AbridgeError('INVALID_INPUT', `Cannot move ${from.virtual} to ${to.virtual}: its contents would be ${to.segments.length + deepest} levels deep; the limit is ${MAX_DEPTH}.`);
      }
      if (Buffer.byteLength(to.virtual, 'utf8') + longest > MAX_PATH_BYTES) {
        throw new AbridgeError('INVALID_INPUT', `Cannot move ${from.virtual} to ${to.virtual}: a path inside it would be longer than ${fmt(MAX_PATH_BYTES)} bytes.`);
      }
    } else {
      this.checkFile(from.virtual, src.stat);
    }
    await this.checkRoom(rootReal, to.segments.length - 1 - dst.existing);
    const dir = await this.ensureParents(rootReal, to);
    const target = `${dir}${sep}${to.segments[to.segments.length - 1]!}`;
    if (!isDir) {
      // link() never replaces an existing name, so a file cannot be renamed over one that appeared meanwhile.
      let linked = false;
      try {
        await fsp.link(src.real, target);
        linked = true;
      } catch (err) {
        if (errno(err) === 'EEXIST') throw exists();
      }
      if (linked) await fsp.unlink(src.real);
      else await this.renameChecked(target, src.real, exists);
    } else {
      await this.renameChecked(target, src.real, exists);
    }
    await this.syncDir(dir);
    await this.syncDir(this.realOf(rootReal, from.segments.slice(0, -1)));
    return `Renamed ${from.virtual} to ${to.virtual}.`;
  }

  private async renameChecked(target: string, source: string, exists: () => AbridgeError): Promise<void> {
    try {
      await fsp.lstat(target);
      throw exists();
    } catch (err) {
      if (errno(err) !== 'ENOENT') throw err;
    }
    await fsp.rename(source, target);
  }
}

/** Removes a tree without following links (entries are typed by readdir, which does not follow them). */
async function removeTree(dir: string): Promise<void> {
  for (const e of await fsp.readdir(dir, { withFileTypes: true })) {
    const p = `${dir}${sep}${e.name}`;
    if (e.isDirectory()) await removeTree(p);
    else await fsp.unlink(p);
  }
  await fsp.rmdir(dir);
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
 * /memories. Every path is checked textually (memory-paths.ts), then on disk: lstat on every segment (no symbolic links
 * anywhere, directories all the way down), realpath containment, files opened with O_NOFOLLOW and checked after opening
 * (same inode, not hard-linked, where expected via /proc/self/fd on Linux). Writes are atomic (temp file in the same
 * directory, fsync, rename). Limits: `maxFileBytes` per file, `maxFiles` files and directories in all.
 *
 * Residual risk: Node has no openat/renameat, so a process that can itself write inside the root and swaps a directory
 * for a link between the checks and the operation could still race it; the tool never creates links itself.
 */
export function memoryTool(options: MemoryToolOptions): AgentTool<MemoryInput> {
  const maxFileBytes = options.maxFileBytes ?? DEFAULT_MAX_FILE_BYTES;
  const maxFiles = options.maxFiles ?? DEFAULT_MAX_FILES;
  if (typeof options.root !== 'string' || options.root === '') throw new AbridgeError('INVALID_CONFIG', 'memoryTool needs root: the directory /memories maps to.');
  if (!Number.isSafeInteger(maxFileBytes) || maxFileBytes <= 0) throw new AbridgeError('INVALID_CONFIG', `Invalid maxFileBytes ${maxFileBytes}: expected a positive integer.`);
  if (!Number.isSafeInteger(maxFiles) || maxFiles <= 0) throw new AbridgeError('INVALID_CONFIG', `Invalid maxFiles ${maxFiles}: expected a positive integer.`);
  const dir = new MemoryDirectory(options.root, maxFileBytes, maxFiles);
  return defineTool({
    name: 'memory',
    description: DESCRIPTION,
    input: memoryInput,
    async run(input) {
      try {
        return await dir.exclusive(() => runCommand(dir, input));
      } catch (err) {
        if (err instanceof AbridgeError) throw err;
        throw new Error(dir.sanitize(err instanceof Error ? err.message : String(err)));
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
