import { randomBytes } from 'node:crypto';
import { constants, type Stats } from 'node:fs';
import { type FileHandle, lstat, open, readlink, realpath, rename, stat, unlink } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { AbridgeError } from './errors.js';

export interface AtomicWriteOptions {
  /** Mode of a new file (default 0o600: transcripts hold whatever the session held). An existing file keeps its own. */
  mode?: number;
  /** @internal Test hook: runs after the temp file is written and synced, before the rename. */
  beforeRename?: (tempPath: string) => void | Promise<void>;
}

/**
 * Writes `data` to `path` so that a reader (or a crash) sees either the old file or the whole new one, never half:
 * a new temp file in the same folder (O_EXCL), written, fsynced, renamed over the target, then the folder fsynced so
 * the rename survives a power loss. On any error the temp file is removed, the target is untouched and the error is
 * AbridgeError('FILE_UNWRITABLE') naming the file and the reason (EACCES, ENOSPC, EISDIR, EROFS, EFBIG…).
 *
 * A target that is a symbolic link is written through it (the link stays a link, its target file is replaced).
 */
export async function writeFileAtomic(
  path: string,
  data: string | Uint8Array | AtomicProducer,
  options: AtomicWriteOptions = {},
): Promise<void> {
  const target = await resolveTarget(path);
  const dir = dirname(target);
  const existing = await stat(target).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return undefined;
    throw writeError(path, err);
  });
  if (existing?.isDirectory()) throw writeError(path, Object.assign(new Error('is a directory'), { code: 'EISDIR' }));
  const mode = existing ? existing.mode & 0o7777 : (options.mode ?? 0o600);
  const temp = join(dir, `.${basename(target)}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`);
  let created = false;
  try {
    const fh = await open(
      temp,
      constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | (constants.O_NOFOLLOW ?? 0),
      mode,
    );
    created = true;
    try {
      // The umask narrows the mode given to open; an existing file's mode is restored exactly.
      if (existing) await fh.chmod(mode);
      if (typeof data === 'function') await produceInto(fh, data);
      else await fh.writeFile(data);
      await fh.sync();
    } finally {
      await fh.close();
    }
    await options.beforeRename?.(temp);
    await rename(temp, target);
    created = false;
  } catch (err) {
    if (created) await unlink(temp).catch(() => undefined);
    throw err instanceof AbridgeError ? err : writeError(path, err);
  }
  await syncDir(dir);
}

/**
 * Writes a file as it is made: `produce` is given `write`, which takes the next piece (awaiting it keeps memory to the
 * buffer below). Used for outputs too large to hold whole (an export, a page, a compacted transcript of 100 MB); the
 * file still appears only once `produce` has finished and the data is synced — a kill -9 midway leaves no file.
 */
export type AtomicProducer = (write: (chunk: string | Uint8Array) => Promise<void>) => Promise<void>;

/** Pieces gathered up to this many bytes before one write system call. */
const WRITE_BUFFER = 1 << 20;

async function produceInto(fh: FileHandle, produce: AtomicProducer): Promise<void> {
  let pending: Buffer[] = [];
  let size = 0;
  const flush = async () => {
    if (size === 0) return;
    const buf = pending.length === 1 ? pending[0]! : Buffer.concat(pending, size);
    pending = [];
    size = 0;
    let off = 0;
    while (off < buf.length) off += (await fh.write(buf, off, buf.length - off)).bytesWritten;
  };
  await produce(async (chunk) => {
    const buf =
      typeof chunk === 'string' ? Buffer.from(chunk) : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    if (buf.length === 0) return;
    pending.push(buf);
    size += buf.length;
    if (size >= WRITE_BUFFER) await flush();
  });
  await flush();
}

/** The file a write to `path` lands in: `path` itself, or the file a symbolic link at `path` points to. */
async function resolveTarget(path: string): Promise<string> {
  const abs = resolve(path);
  let st: Stats;
  try {
    st = await lstat(abs);
  } catch {
    return abs;
  }
  if (!st.isSymbolicLink()) return abs;
  try {
    return await realpath(abs);
  } catch {
    // A dangling link: write the file it names.
    return resolve(dirname(abs), await readlink(abs));
  }
}

/** Makes the rename durable. Some file systems refuse to fsync a directory: then the rename is as durable as they allow. */
async function syncDir(dir: string): Promise<void> {
  let fh;
  try {
    fh = await open(dir, constants.O_RDONLY | (constants.O_DIRECTORY ?? 0));
    await fh.sync();
  } catch {
    // EINVAL/EISDIR/EPERM on some platforms and file systems: nothing more can be done.
  } finally {
    await fh?.close().catch(() => undefined);
  }
}

const REASONS: Record<string, string> = {
  EACCES: 'permission denied',
  EPERM: 'operation not permitted',
  ENOSPC: 'no space left on the device',
  EDQUOT: 'disk quota exceeded',
  EISDIR: 'is a directory',
  ENOTDIR: 'a part of the path is not a directory',
  ENOENT: 'the folder does not exist',
  EROFS: 'read-only file system',
  EFBIG: 'file too large (the file size limit, ulimit -f, was reached)',
  EIO: 'input/output error',
  ELOOP: 'too many symbolic links',
  ENAMETOOLONG: 'the name is too long',
  EXDEV: 'the temp file and the target are on different devices',
};

/** True for the error codes of a file system refusing a write (as opposed to a bug). */
export function isWriteErrorCode(code: unknown): code is string {
  return typeof code === 'string' && code in REASONS;
}

/** AbridgeError('FILE_UNWRITABLE'): one line naming the file and the reason. */
export function writeError(path: string, err: unknown, untouched = true): AbridgeError {
  const code = (err as NodeJS.ErrnoException | null)?.code;
  const reason = isWriteErrorCode(code)
    ? `${code}: ${REASONS[code]}`
    : err instanceof Error
      ? err.message
      : String(err);
  const out = new AbridgeError(
    'FILE_UNWRITABLE',
    `${path}: cannot write (${reason})${untouched ? '; the file was left as it was' : ''}`,
  );
  (out as { cause?: unknown }).cause = err;
  return out;
}
