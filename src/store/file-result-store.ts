import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  closeSync,
  constants,
  createReadStream,
  lstatSync,
  mkdirSync,
  openSync,
  renameSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { mkdir, open, readdir, rename, stat, unlink, type FileHandle } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { AbridgeError } from '../errors.js';
import {
  describeText,
  makeSlice,
  normalizeRange,
  resultNotFound,
  ContentAddressedStore,
  validateRefId,
  type ResultSlice,
  type StoredResult,
  type StoredResultMeta,
} from '../compaction/result-store.js';

export interface FileResultStoreOptions {
  /** Clock for createdAt (tests). */
  now?: () => Date;
  /**
   * Told of each ref about to be written that was not stored yet (its batch views tell it too): what a caller removes
   * again ({@link FileResultStore.remove}) when the work that stored them fails, so that no result is left unreferenced.
   */
  onCreating?: (refId: string) => void;
  /** @internal Test hook: what syncs the whole file system at a large batch's commit (true when it did). */
  syncFileSystem?: (dir: string) => Promise<boolean>;
}

const META_FILE = /^(r_[0-9a-f]{16})\.json$/;
const O_NOFOLLOW: number = constants.O_NOFOLLOW ?? 0;
const O_NONBLOCK: number = constants.O_NONBLOCK ?? 0;

/**
 * A ResultStore in a directory: `<refId>.txt` holds the text as UTF-8, `<refId>.json` its metadata.
 *
 * - A result exists once its `.json` exists: put writes the `.txt` first, then the `.json`, each atomically
 *   (temp file in the same directory, fsync, rename), so a crash leaves at worst a stray `.<name>.<pid>-<rand>.tmp`
 *   file, which list and read ignore.
 * - Content-addressed and idempotent: putting content already stored returns the stored metadata (from the first put)
 *   without writing. Processes putting the same content at once both succeed; the last rename wins, with identical text.
 * - read streams the `.txt` and stops after the last requested line; the line count is in the metadata.
 * - Nothing is cached, so several instances and processes can share a directory.
 * - Never follows a link: every file is opened with O_NOFOLLOW and must be a regular file owned by this process's user,
 *   so a link or a file planted in the folder is refused (STORE_ERROR naming the file), never read; errors never quote
 *   what such a file holds. Files are written 0600, the directory created 0700.
 * - `forSession(id)` gives one session's view: refs another session put cannot be read through it.
 */
export class FileResultStore extends ContentAddressedStore {
  readonly dir: string;
  private readonly now: () => Date;
  private readonly onCreating: ((refId: string) => void) | undefined;
  private readonly syncFileSystem: ((dir: string) => Promise<boolean>) | undefined;
  /** In a batch's view: the files written without a sync, synced together at commit. */
  private pending?: string[];
  /** In a batch's view: the folder was made (or found) by an earlier put of the batch. */
  private dirMade = false;

  constructor(dir: string, options: FileResultStoreOptions = {}) {
    super();
    this.dir = resolve(dir);
    this.now = options.now ?? (() => new Date());
    this.onCreating = options.onCreating;
    this.syncFileSystem = options.syncFileSystem;
  }

  /** Removes results (both files, whether or not they were complete); refs not stored are ignored. */
  async remove(refIds: Iterable<string>): Promise<void> {
    for (const refId of refIds) {
      validateRefId(refId);
      for (const path of [this.metaPath(refId), this.textPath(refId)])
        await unlink(path).catch((err: unknown) => {
          if (!isCode(err, 'ENOENT')) throw storeError(`Cannot remove result ${refId} from ${this.dir}`, err);
        });
    }
  }

  textPath(refId: string): string {
    return join(this.dir, `${refId}.txt`);
  }

  metaPath(refId: string): string {
    return join(this.dir, `${refId}.json`);
  }

  async putWithRef(refId: string, text: string, meta?: StoredResultMeta): Promise<StoredResult> {
    validateRefId(refId);
    if (this.pending !== undefined) return this.putInBatch(refId, text, meta, this.pending);
    const existing = await this.existing(refId);
    if (existing) return existing;
    const stored = describeText(text, meta, this.now(), refId);
    this.onCreating?.(refId);
    try {
      await mkdir(this.dir, { recursive: true, mode: 0o700 });
      await writeAtomic(this.dir, `${refId}.txt`, text, true);
      await writeAtomic(this.dir, `${refId}.json`, `${JSON.stringify(stored, null, 2)}\n`, true);
      await syncDir(this.dir);
    } catch (err) {
      throw storeError(`Cannot store result ${refId} in ${this.dir}`, err);
    }
    return stored;
  }

  /**
   * A put inside a batch: the same files, written with synchronous calls. A compaction offloads thousands of small
   * results at once, and each asynchronous call is a hand-off to libuv's thread pool and back (measured: futex and
   * epoll took most of the system time of a 10 MB `compact --out`); a handful of small writes blocks the loop for
   * microseconds. The syncs, which do wait on the disk, stay asynchronous and concurrent, at the commit.
   */
  private async putInBatch(
    refId: string,
    text: string,
    meta: StoredResultMeta | undefined,
    pending: string[],
  ): Promise<StoredResult> {
    // Most refs are new: one lstat says so; a ref already there takes the checked path (links refused, size verified).
    const present = lstatSync(this.metaPath(refId), { throwIfNoEntry: false }) !== undefined;
    if (present) {
      const existing = await this.existing(refId);
      if (existing) return existing;
    }
    const stored = describeText(text, meta, this.now(), refId);
    this.onCreating?.(refId);
    try {
      if (!this.dirMade) {
        mkdirSync(this.dir, { recursive: true, mode: 0o700 });
        this.dirMade = true;
      }
      writeAtomicSync(this.dir, `${refId}.txt`, text);
      writeAtomicSync(this.dir, `${refId}.json`, `${JSON.stringify(stored, null, 2)}\n`);
      pending.push(`${refId}.txt`, `${refId}.json`);
    } catch (err) {
      throw storeError(`Cannot store result ${refId} in ${this.dir}`, err);
    }
    return stored;
  }

  /**
   * A view whose puts write each file atomically (temp file, rename) but sync nothing until `commit()`, which syncs
   * them all — several at a time — and the directory once: a compaction that offloads thousands of results spent most
   * of its time in one sync after another. Until the commit, a crash may leave a result's files empty or cut short;
   * a later put of the same content repairs them (it checks the text's size against the metadata).
   */
  batch(): { store: FileResultStore; commit(): Promise<void> } {
    const store = new FileResultStore(this.dir, {
      now: this.now,
      ...(this.onCreating ? { onCreating: this.onCreating } : {}),
      ...(this.syncFileSystem ? { syncFileSystem: this.syncFileSystem } : {}),
    });
    const pending: string[] = [];
    store.pending = pending;
    return {
      store,
      commit: async () => {
        const names = pending.splice(0);
        if (names.length === 0) return;
        // Thousands of files: one sync of their file system instead of one each (the kernel's time for the syncs
        // swung from 1 to 6 s of a 50 MB compaction's 10 with the disk's other load).
        if (names.length >= WHOLE_FS_SYNC_FROM && (await (this.syncFileSystem ?? syncFileSystem)(this.dir))) return;
        let next = 0;
        const worker = async () => {
          while (next < names.length) {
            const name = names[next++]!;
            try {
              await syncFile(join(this.dir, name));
            } catch (err) {
              throw storeError(`Cannot make result ${name} durable in ${this.dir}`, err);
            }
          }
        };
        await Promise.all(Array.from({ length: Math.min(SYNC_CONCURRENCY, names.length) }, worker));
        await syncDir(this.dir);
      },
    };
  }

  async read(refId: string, range?: { offset?: number; limit?: number }): Promise<ResultSlice> {
    validateRefId(refId);
    const { offset, limit } = normalizeRange(range);
    const stored = await this.loadMeta(refId);
    if (!stored) throw resultNotFound(refId, `the result store at ${this.dir}`);
    if (limit === 0 || offset >= stored.lines) {
      const fh = await this.openOwn(`${refId}.txt`).catch((err: unknown) => {
        throw this.textError(refId, err);
      });
      if (!fh) throw this.textError(refId, Object.assign(new Error('missing'), { code: 'ENOENT' }));
      await fh.close();
      return makeSlice(stored, '', offset, limit);
    }
    return makeSlice(stored, await this.readLines(refId, offset, limit), offset, limit);
  }

  async stat(refId: string): Promise<StoredResult | undefined> {
    validateRefId(refId);
    return this.loadMeta(refId);
  }

  async list(): Promise<StoredResult[]> {
    let names: string[];
    try {
      names = await readdir(this.dir);
    } catch (err) {
      if (isCode(err, 'ENOENT')) return [];
      throw storeError(`Cannot list the result store at ${this.dir}`, err);
    }
    const out: StoredResult[] = [];
    for (const name of names) {
      const refId = META_FILE.exec(name)?.[1];
      if (!refId) continue;
      const stored = await this.loadMeta(refId);
      if (stored) out.push(stored);
    }
    // createdAt has millisecond resolution; the refId makes the order of same-millisecond results stable.
    return out.sort((a, b) =>
      a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : a.refId < b.refId ? -1 : 1,
    );
  }

  /** The stored metadata if both files are present and sound; undefined means (re)write them. */
  private async existing(refId: string): Promise<StoredResult | undefined> {
    let stored: StoredResult | undefined;
    try {
      stored = await this.loadMeta(refId);
    } catch {
      return undefined; // corrupt metadata: put repairs it
    }
    if (!stored) return undefined;
    try {
      const fh = await this.openOwn(`${refId}.txt`);
      if (!fh) return undefined;
      try {
        return (await fh.stat()).size === stored.bytes ? stored : undefined;
      } finally {
        await fh.close();
      }
    } catch {
      return undefined;
    }
  }

  /**
   * Opens a file of the store for reading: never through a link (O_NOFOLLOW), never blocking on a FIFO, and only a
   * regular file owned by this process's user. undefined when it does not exist; STORE_ERROR naming the file (never
   * what a link points to nor what the file holds) otherwise.
   */
  private async openOwn(name: string): Promise<FileHandle | undefined> {
    let fh: FileHandle;
    try {
      fh = await open(join(this.dir, name), constants.O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
    } catch (err) {
      if (isCode(err, 'ENOENT') || isCode(err, 'ENOTDIR')) return undefined;
      if (isCode(err, 'ELOOP') || isCode(err, 'EMLINK'))
        throw new AbridgeError(
          'STORE_ERROR',
          `${name} in ${this.where()} is a symbolic link; the result store does not follow links. Remove it.`,
        );
      throw err;
    }
    try {
      const st = await fh.stat();
      if (!st.isFile())
        throw new AbridgeError(
          'STORE_ERROR',
          `${name} in ${this.where()} is not a regular file; the result store reads only its own files. Remove it.`,
        );
      const uid = process.getuid?.();
      if (uid !== undefined && st.uid !== uid) {
        throw new AbridgeError(
          'STORE_ERROR',
          `${name} in ${this.where()} belongs to another user (uid ${st.uid}); the result store reads only files it wrote. Remove it.`,
        );
      }
      return fh;
    } catch (err) {
      await fh.close();
      throw err;
    }
  }

  private where(): string {
    return `the result store at ${this.dir}`;
  }

  /** The metadata of `refId`, undefined if there is none; STORE_ERROR if the file is unreadable or corrupt. */
  private async loadMeta(refId: string): Promise<StoredResult | undefined> {
    const file = this.metaPath(refId);
    let raw: string;
    try {
      const fh = await this.openOwn(`${refId}.json`);
      if (!fh) return undefined;
      try {
        raw = await fh.readFile('utf8');
      } finally {
        await fh.close();
      }
    } catch (err) {
      throw storeError(`Cannot read result metadata ${file}`, err);
    }
    let value: unknown;
    try {
      value = JSON.parse(raw);
    } catch {
      // The parser's message would quote the file: say where, not what.
      throw new AbridgeError(
        'STORE_ERROR',
        `Corrupt result metadata ${file}: not valid JSON. Delete it (and ${refId}.txt) or put the result again to rewrite it.`,
      );
    }
    const problem = metaProblem(value, refId);
    if (problem) {
      throw new AbridgeError(
        'STORE_ERROR',
        `Corrupt result metadata ${file}: ${problem}. Delete it (and ${refId}.txt) or put the result again to rewrite it.`,
      );
    }
    return pickStored(value as StoredResult);
  }

  /** Lines [offset, offset + limit) of the text file, scanning bytes for `\n` (never inside a UTF-8 sequence) and stopping at the last one. */
  private async readLines(refId: string, offset: number, limit: number): Promise<string> {
    const end = offset + limit;
    const parts: Buffer[] = [];
    let line = 0;
    let fh: FileHandle | undefined;
    try {
      fh = await this.openOwn(`${refId}.txt`);
      if (!fh)
        throw Object.assign(new Error(`ENOENT: no such file, open '${this.textPath(refId)}'`), { code: 'ENOENT' });
      // The stream reads the handle opened (and checked) above; the path only names it.
      for await (const chunk of createReadStream(this.textPath(refId), {
        fd: fh,
        autoClose: false,
      }) as AsyncIterable<Buffer>) {
        let pos = 0;
        while (line < offset) {
          const nl = chunk.indexOf(10, pos);
          if (nl === -1) break;
          pos = nl + 1;
          line++;
        }
        if (line < offset) continue;
        const start = pos;
        while (line < end) {
          const nl = chunk.indexOf(10, pos);
          if (nl === -1) {
            pos = chunk.length;
            break;
          }
          pos = nl + 1;
          line++;
        }
        parts.push(chunk.subarray(start, pos));
        if (line >= end) break; // leaving the loop closes the stream
      }
    } catch (err) {
      throw this.textError(refId, err);
    } finally {
      await fh?.close();
    }
    return Buffer.concat(parts).toString('utf8');
  }

  private textError(refId: string, err: unknown): AbridgeError {
    if (isCode(err, 'ENOENT')) {
      return new AbridgeError(
        'RESULT_NOT_FOUND',
        `The result with ref_id "${refId}" has metadata ${this.metaPath(refId)} but its text file ${this.textPath(refId)} is missing; put the result again to restore it.`,
      );
    }
    return storeError(`Cannot read result text ${this.textPath(refId)}`, err);
  }
}

/** Writes `dir/name` atomically: a temp file in the same directory, fsync, rename over. */
async function writeAtomic(dir: string, name: string, data: string, sync = true): Promise<void> {
  const final = join(dir, name);
  const tmp = join(dir, `.${name}.${process.pid}-${randomBytes(6).toString('hex')}.tmp`);
  const fh = await open(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | O_NOFOLLOW, 0o600);
  try {
    try {
      await fh.writeFile(data, 'utf8');
      if (sync) await fh.sync();
    } finally {
      await fh.close();
    }
    await rename(tmp, final);
  } catch (err) {
    await unlink(tmp).catch(() => undefined);
    // Windows refuses to rename over a file another process has open; that file is a complete, identical copy.
    if (
      process.platform === 'win32' &&
      (isCode(err, 'EPERM') || isCode(err, 'EACCES') || isCode(err, 'EEXIST')) &&
      (await stat(final).then(
        () => true,
        () => false,
      ))
    )
      return;
    throw err;
  }
}

/** Per process: one random prefix (a pid reused after a crash does not meet its predecessor's leftovers), then a count. */
const tempPrefix = randomBytes(3).toString('hex');
let tempCounter = 0;

/** writeAtomic without the sync, in synchronous calls (a batch's put; the commit syncs). */
function writeAtomicSync(dir: string, name: string, data: string): void {
  const final = join(dir, name);
  // Unique within the process by a counter, across processes by the pid (O_EXCL refuses a clash): no random bytes per file.
  const tmp = join(dir, `.${name}.${process.pid}-${tempPrefix}${(tempCounter++).toString(36)}.tmp`);
  const fd = openSync(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | O_NOFOLLOW, 0o600);
  try {
    try {
      writeFileSync(fd, data, 'utf8');
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, final);
  } catch (err) {
    try {
      unlinkSync(tmp);
    } catch {
      // already gone
    }
    if (
      process.platform === 'win32' &&
      (isCode(err, 'EPERM') || isCode(err, 'EACCES') || isCode(err, 'EEXIST')) &&
      lstatSync(final, { throwIfNoEntry: false }) !== undefined
    )
      return;
    throw err;
  }
}

/** Syncs a file the store wrote (never through a link). */
async function syncFile(path: string): Promise<void> {
  const fh = await open(path, constants.O_RDWR | O_NOFOLLOW);
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

/** From this many files, a batch's commit syncs the file system they are on once (where it can) instead of each. */
const WHOLE_FS_SYNC_FROM = 64;

/**
 * syncfs(2) of the file system holding `dir`, through coreutils' `sync -f` (Node has no binding for it): every file
 * written before it returns is on the disk. Linux only; false when it cannot run or fails, and the caller syncs each
 * file instead.
 */
export function syncFileSystem(dir: string): Promise<boolean> {
  if (process.platform !== 'linux') return Promise.resolve(false);
  return new Promise((done) => {
    execFile('sync', ['-f', dir], { timeout: 60_000 }, (err) => done(err === null));
  });
}

/** Syncs at a time in a batch's commit: the file system's journal commits them together (measured: ~2× one by one). */
const SYNC_CONCURRENCY = 8;

/** Makes the renames durable; not possible on every platform, so best effort. */
async function syncDir(dir: string): Promise<void> {
  try {
    const fh = await open(dir, 'r');
    try {
      await fh.sync();
    } finally {
      await fh.close();
    }
  } catch {
    // e.g. EISDIR / EPERM on Windows
  }
}

function metaProblem(v: unknown, refId: string): string | undefined {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return 'expected a JSON object';
  const o = v as Record<string, unknown>;
  if (o.refId !== refId) return `refId is ${JSON.stringify(o.refId)}, expected "${refId}"`;
  for (const key of ['bytes', 'chars', 'lines'] as const) {
    const x = o[key];
    if (typeof x !== 'number' || !Number.isSafeInteger(x) || x < 0)
      return `${key} is ${JSON.stringify(x)}, expected a non-negative integer`;
  }
  if (typeof o.createdAt !== 'string' || Number.isNaN(Date.parse(o.createdAt)))
    return `createdAt is ${JSON.stringify(o.createdAt)}, expected an ISO timestamp`;
  for (const key of ['tool', 'callId', 'sessionId'] as const) {
    if (o[key] !== undefined && typeof o[key] !== 'string')
      return `${key} is ${JSON.stringify(o[key])}, expected a string`;
  }
  if (o.entry !== undefined && typeof o.entry !== 'number')
    return `entry is ${JSON.stringify(o.entry)}, expected a number`;
  return undefined;
}

function pickStored(o: StoredResult): StoredResult {
  const out: StoredResult = { refId: o.refId, bytes: o.bytes, chars: o.chars, lines: o.lines, createdAt: o.createdAt };
  if (o.tool !== undefined) out.tool = o.tool;
  if (o.callId !== undefined) out.callId = o.callId;
  if (o.sessionId !== undefined) out.sessionId = o.sessionId;
  if (o.entry !== undefined) out.entry = o.entry;
  return out;
}

function isCode(err: unknown, code: string): boolean {
  return typeof err === 'object' && err !== null && (err as { code?: unknown }).code === code;
}

function storeError(what: string, err: unknown): AbridgeError {
  if (err instanceof AbridgeError) return err;
  const e = new AbridgeError('STORE_ERROR', `${what}: ${err instanceof Error ? err.message : String(err)}`);
  e.cause = err;
  return e;
}
