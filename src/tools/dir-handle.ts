import { constants, type Dirent, type Stats } from 'node:fs';
import * as fsp from 'node:fs/promises';
import { AbridgeError } from '../errors.js';

const O_NOFOLLOW: number = constants.O_NOFOLLOW ?? 0;
const O_DIRECTORY: number = constants.O_DIRECTORY ?? 0;
const O_NONBLOCK: number = constants.O_NONBLOCK ?? 0;

/** Where the kernel exposes a process's open descriptors as directories one can resolve names in. */
const FD_DIR = '/proc/self/fd';

/**
 * An open directory, and every operation on a name directly inside it done relative to that open directory.
 *
 * Node has no openat/unlinkat/renameat, so a name is reached as `/proc/self/fd/<fd>/<name>` (Linux): the kernel jumps
 * straight to the directory the descriptor holds and resolves only `<name>` in it, whatever was renamed, swapped or
 * linked along the path since the directory was opened. Every directory is opened with O_DIRECTORY|O_NOFOLLOW, one
 * component at a time, so no symbolic link is ever followed on the way down; the final name is never followed either
 * (lstat, O_NOFOLLOW, and unlink/rename/rmdir/link act on the name itself). Where /proc/self/fd is not available this
 * cannot be done, and `DirHandle.openRoot` refuses (fails closed) instead of falling back to path strings.
 */
export class DirHandle {
  private closed = false;

  private constructor(
    private readonly fh: fsp.FileHandle,
    /** What this directory is called in messages (a virtual path). */
    readonly label: string,
  ) {}

  get fd(): number {
    return this.fh.fd;
  }

  /** Opens a trusted directory (its path is the caller's configuration) and checks that names can be resolved through it. */
  static async openRoot(path: string, label: string): Promise<DirHandle> {
    const fh = await fsp.open(path, constants.O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
    const dir = new DirHandle(fh, label);
    try {
      const [viaFd, direct] = await Promise.all([fsp.stat(`${FD_DIR}/${fh.fd}/`), fh.stat()]);
      if (viaFd.ino !== direct.ino || viaFd.dev !== direct.dev)
        throw new AbridgeError('INTERNAL', 'descriptor mismatch');
    } catch {
      await dir.close();
      throw new AbridgeError(
        'MISSING_DEPENDENCY',
        `The memory tool acts only through open directory handles, resolved via ${FD_DIR} (Linux); it is not available on this system (${process.platform}), so the memory tool refuses to act rather than follow paths that another process could swap for links.`,
      );
    }
    return dir;
  }

  /** The path of `name` inside this directory, resolved through the descriptor. */
  at(name: string): string {
    if (this.closed) throw new AbridgeError('INTERNAL', `directory handle for ${this.label} used after close`);
    if (name === '' || name === '.' || name === '..' || name.includes('/') || name.includes('\0'))
      throw new AbridgeError('INTERNAL', `not a single name: ${JSON.stringify(name)}`);
    return `${FD_DIR}/${this.fh.fd}/${name}`;
  }

  /** The directory itself, through the descriptor (for readdir). */
  private self(): string {
    if (this.closed) throw new AbridgeError('INTERNAL', `directory handle for ${this.label} used after close`);
    return `${FD_DIR}/${this.fh.fd}/`;
  }

  /** Opens the directory `name` inside this one, never following a link (ELOOP / ENOTDIR otherwise). */
  async openDir(name: string, label: string): Promise<DirHandle> {
    return new DirHandle(await fsp.open(this.at(name), constants.O_RDONLY | O_DIRECTORY | O_NOFOLLOW), label);
  }

  /** lstat of `name` (never followed). */
  lstat(name: string): Promise<Stats> {
    return fsp.lstat(this.at(name));
  }

  stat(): Promise<Stats> {
    return this.fh.stat();
  }

  /** Opens the file `name` for reading, never following a link and never blocking on a FIFO. */
  openRead(name: string): Promise<fsp.FileHandle> {
    return fsp.open(this.at(name), constants.O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
  }

  /** Creates `name` exclusively (never through a link) for writing. */
  createExclusive(name: string, mode: number): Promise<fsp.FileHandle> {
    return fsp.open(this.at(name), constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | O_NOFOLLOW, mode);
  }

  async readdir(): Promise<Dirent[]> {
    return fsp.readdir(this.self(), { withFileTypes: true });
  }

  mkdir(name: string, mode = 0o700): Promise<void> {
    return fsp.mkdir(this.at(name), { mode });
  }

  /** Removes the name (a link is removed itself, never what it points to). */
  unlink(name: string): Promise<void> {
    return fsp.unlink(this.at(name));
  }

  rmdir(name: string): Promise<void> {
    return fsp.rmdir(this.at(name));
  }

  /** Renames `name` here to `toName` in `to` (rename never follows either name). */
  rename(name: string, to: DirHandle, toName: string): Promise<void> {
    return fsp.rename(this.at(name), to.at(toName));
  }

  /** A new name `toName` in `to` for the file `name` here; fails with EEXIST rather than replace anything. */
  link(name: string, to: DirHandle, toName: string): Promise<void> {
    return fsp.link(this.at(name), to.at(toName));
  }

  /** fsync of the directory (best effort: not every platform can). */
  async sync(): Promise<void> {
    try {
      await this.fh.sync();
    } catch {
      // Some filesystems cannot fsync a directory.
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.fh.close().catch(() => undefined);
  }
}

/** Rewrites `/proc/self/fd/<n>` in a message to the label of the handle that held it (or `fallback`). */
export function labelFdPaths(message: string, labels: ReadonlyMap<number, string>, fallback: string): string {
  return message.replace(/\/proc\/self\/fd\/(\d+)\/?/g, (_m, fd: string) => {
    const label = labels.get(Number(fd)) ?? fallback;
    return label.endsWith('/') ? label : `${label}/`;
  });
}
