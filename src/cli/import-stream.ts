import { open } from 'node:fs/promises';
import { parseSession, streamSession, type ReadOptions, type StreamResult } from '../formats/read.js';
import type { Entry, FormatId } from '../model/types.js';
import { isAsRead, transcriptLayout, type SessionStore, type StoredSession } from '../store/session-store.js';

/**
 * Formats an import reads as a stream. Their decoders change an entry after handing it over only in `finish()`, and
 * then only its compaction marker (what it archived, where its kept entries start): entries with a marker are held
 * back and stored last, once the marker is complete; every other entry is stored as it comes. Other formats (decoders
 * that complete an earlier entry from a later record, JSON documents read whole) are read whole, as before.
 */
const STREAMED_FORMATS: readonly FormatId[] = ['pi', 'claude-code'];

/** What detection reads of a file (read.ts's HEAD_BYTES): the id and format are looked for in its whole lines. */
const HEAD_BYTES = 256 * 1024;

export interface StreamedImportOptions {
  /** The stored session's id (`--id`); default the transcript's own id. */
  id?: string;
  /** How to read the transcript (format, instance, progress). */
  read: ReadOptions;
  /** Called with the reading's result before COMMIT: what it throws (invalid UTF-8) leaves nothing stored. */
  check: (result: StreamResult) => Promise<void>;
}

/** Thrown inside the transaction when the stream cannot be stored as it was begun: rolls back, then read whole. */
class ReadWhole extends Error {}

/**
 * Imports a transcript file entry by entry into `store` (createSessionFrom: one transaction, batches of about one
 * megabyte of the file, memory bounded by a batch). Returns undefined, having stored nothing, when the transcript is
 * not one to stream (standard input, a format read whole, an id that only the end of the file names): the caller then
 * reads it whole.
 */
export async function importStreamed(
  store: SessionStore,
  file: string,
  options: StreamedImportOptions,
): Promise<StoredSession | undefined> {
  if (file === '-') return undefined;
  const head = await peek(file, options.read);
  if (!head || !STREAMED_FORMATS.includes(head.format)) return undefined;
  // The stored id is needed before the first entry is stored; the transcript's own id is known from its first
  // records (pi's header, Claude Code's sessionId). Checked again at the end, when the whole file has been read.
  const id = options.id ?? head.id;

  let batch: Entry[] = [];
  const queue: Entry[][] = [];
  // Entries whose compaction marker the decoder completes in finish(): stored last (see STREAMED_FORMATS).
  const held: Entry[] = [];
  let asRead = true;
  let ended = false;
  let readError: unknown;
  let stopped: unknown;
  let wakeReader: (() => void) | undefined;
  let wakeStore: (() => void) | undefined;
  const wake = (w: (() => void) | undefined) => w?.();

  const reading = streamSession(
    file,
    (e) => {
      if (asRead && !isAsRead(e)) asRead = false;
      if (e.compaction) held.push(e);
      else batch.push(e);
    },
    {
      ...options.read,
      pace: () => {
        if (stopped !== undefined) return Promise.reject(stopped);
        if (batch.length > 0) {
          queue.push(batch);
          batch = [];
          wake(wakeStore);
        }
        // One batch waits at most while the next is read: the reader pauses until the store has taken it.
        if (queue.length === 0) return undefined;
        return new Promise<void>((resolve) => {
          wakeReader = resolve;
        });
      },
    },
  ).then(
    (result) => {
      if (batch.length > 0) queue.push(batch);
      if (held.length > 0) queue.push(held);
      batch = [];
      ended = true;
      wake(wakeStore);
      return result;
    },
    (err: unknown) => {
      readError = err;
      ended = true;
      wake(wakeStore);
      return undefined;
    },
  );

  async function* batches(): AsyncIterable<Entry[]> {
    for (;;) {
      const next = queue.shift();
      if (next) {
        if (queue.length === 0) wake(wakeReader);
        yield next;
        continue;
      }
      if (ended) {
        if (readError !== undefined) throw readError;
        return;
      }
      wake(wakeReader);
      await new Promise<void>((resolve) => {
        wakeStore = resolve;
      });
    }
  }

  try {
    return await store.createSessionFrom(
      { ...(id !== undefined ? { id } : {}), format: head.format, info: {} },
      batches(),
      {
        finish: async ({ entries }) => {
          const result = (await reading)!;
          await options.check(result);
          // Stored under another id or format than the whole file names: undo, and read it whole.
          if (result.format !== head.format || (options.id ?? result.info.id) !== id) throw new ReadWhole();
          const layout = transcriptLayout(result, asRead ? entries : undefined);
          return {
            format: result.format,
            info: result.info,
            ...(result.extra ? { extra: result.extra } : {}),
            ...(layout ? { layout } : {}),
          };
        },
      },
    );
  } catch (err) {
    stopped = err;
    wake(wakeReader);
    await reading;
    if (err instanceof ReadWhole) return undefined;
    throw err;
  }
}

/**
 * The format and the session id the first whole lines of `file` show (at most HEAD_BYTES), or undefined when they
 * show none: not a regular file, not a transcript abridge reads (the whole read then says why).
 */
async function peek(file: string, read: ReadOptions): Promise<{ format: FormatId; id?: string } | undefined> {
  let text: Buffer;
  try {
    const fh = await open(file, 'r');
    try {
      const st = await fh.stat();
      if (!st.isFile() || st.size === 0) return undefined;
      const buf = Buffer.alloc(Math.min(st.size, HEAD_BYTES));
      const { bytesRead } = await fh.read(buf, 0, buf.length, 0);
      text = buf.subarray(0, bytesRead);
      if (st.size > bytesRead) {
        const end = text.lastIndexOf(0x0a);
        if (end < 0) return undefined;
        text = text.subarray(0, end + 1);
      }
    } finally {
      await fh.close();
    }
  } catch {
    return undefined;
  }
  try {
    const session = parseSession(text, {
      ...(read.format !== undefined ? { format: read.format } : {}),
      ...(read.instance !== undefined ? { instance: read.instance } : {}),
      keepSourceText: false,
      source: file,
    });
    return session.info.id !== undefined ? { format: session.format, id: session.info.id } : { format: session.format };
  } catch {
    return undefined;
  }
}
