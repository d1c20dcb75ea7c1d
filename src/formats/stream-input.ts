import { close, constants, open as openFd } from 'node:fs';
import { open, stat } from 'node:fs/promises';
import { promisify } from 'node:util';
import type { Readable } from 'node:stream';
import { AbridgeError } from '../errors.js';

/** How long reading standard input, a pipe or a FIFO waits for a writer or for the next bytes before giving up. */
export const DEFAULT_INPUT_TIMEOUT_MS = 10_000;

/** True for the names of standard input: `-`, `/dev/stdin`, `/dev/fd/0`, `/proc/self/fd/0`. */
export function isStdinPath(path: string): boolean {
  return path === '-' || path === '/dev/stdin' || path === '/dev/fd/0' || path === '/proc/self/fd/0';
}

/**
 * Reads a source that is not a regular file whole: standard input (`-`, /dev/stdin) or a FIFO (named pipe). Returns
 * undefined for anything else (regular files are read by size, in chunks). A FIFO without a writer, or a source that
 * sends nothing for `timeoutMs`, is AbridgeError('INPUT_TIMEOUT') instead of a wait that never ends.
 */
export async function readStreamSource(
  path: string,
  timeoutMs = DEFAULT_INPUT_TIMEOUT_MS,
): Promise<Buffer | undefined> {
  if (isStdinPath(path)) {
    if (process.stdin.isTTY)
      throw new AbridgeError(
        'INVALID_INPUT',
        `${path}: standard input is a terminal; pipe a transcript into abridge (… | abridge inspect -) or name a file`,
      );
    return collect(process.stdin, path, timeoutMs, 'standard input');
  }
  let isFifo = false;
  try {
    isFifo = (await stat(path)).isFIFO();
  } catch {
    return undefined; // the regular reader reports a missing or unreadable file
  }
  if (!isFifo) return undefined;
  const fd = await openFifo(path, timeoutMs);
  // A pipe handle (non-blocking, on the event loop) can be given up on; a blocking read in the thread pool cannot.
  // node:net is loaded here, not at import: few readings are of a FIFO, and every import would pay for it.
  const { Socket } = await import('node:net');
  const socket = new Socket({ fd, readable: true, writable: false });
  return collect(socket, path, timeoutMs, 'the FIFO');
}

/** Opens a FIFO for reading; the open waits for a writer, at most `timeoutMs`. */
async function openFifo(path: string, timeoutMs: number): Promise<number> {
  // A plain descriptor, not a FileHandle: the socket below owns and closes it (a FileHandle would close it again).
  const opening = promisify(openFd)(path, constants.O_RDONLY);
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), timeoutMs);
  });
  const first = await Promise.race([opening, timedOut]).catch((err: unknown) => {
    clearTimeout(timer);
    throw new AbridgeError(
      'FILE_UNREADABLE',
      `${path}: cannot open the FIFO (${(err as NodeJS.ErrnoException).code ?? String(err)})`,
    );
  });
  clearTimeout(timer);
  if (first !== 'timeout') return first;
  // The open is still blocked in the thread pool: open the other end ourselves so that it returns, then close both.
  try {
    const writer = await open(path, constants.O_WRONLY | constants.O_NONBLOCK);
    await writer.close();
  } catch {
    // A writer arrived meanwhile (or the FIFO went away): the open returns either way.
  }
  await opening.then((fd) => close(fd, () => undefined)).catch(() => undefined);
  throw new AbridgeError(
    'INPUT_TIMEOUT',
    `${path}: no writer opened the FIFO within ${seconds(timeoutMs)}; nothing was read (start the writer first, or raise the wait with ABRIDGE_INPUT_TIMEOUT)`,
  );
}

function collect(stream: Readable, path: string, timeoutMs: number, what: string): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let bytes = 0;
    let timer: NodeJS.Timeout | undefined;
    const done = (err?: Error) => {
      clearTimeout(timer);
      stream.off('data', onData);
      stream.off('end', onEnd);
      stream.off('error', onError);
      if (err) {
        stream.destroy();
        reject(err);
      } else resolve(Buffer.concat(chunks, bytes));
    };
    const arm = () => {
      clearTimeout(timer);
      timer = setTimeout(() => {
        done(
          new AbridgeError(
            'INPUT_TIMEOUT',
            bytes === 0
              ? `${path}: nothing came from ${what} within ${seconds(timeoutMs)}; nothing was read (raise the wait with ABRIDGE_INPUT_TIMEOUT)`
              : `${path}: ${what} sent ${bytes} bytes, then nothing for ${seconds(timeoutMs)} without ending; the input was not used (raise the wait with ABRIDGE_INPUT_TIMEOUT)`,
          ),
        );
      }, timeoutMs);
    };
    const onData = (chunk: Buffer | string) => {
      const b = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
      chunks.push(b);
      bytes += b.length;
      arm();
    };
    const onEnd = () => done();
    const onError = (err: NodeJS.ErrnoException) =>
      done(new AbridgeError('FILE_UNREADABLE', `${path}: cannot read ${what} (${err.code ?? err.message})`));
    stream.on('data', onData);
    stream.on('end', onEnd);
    stream.on('error', onError);
    arm();
    stream.resume();
  });
}

function seconds(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${(ms / 1000).toFixed(1)} s`;
}
