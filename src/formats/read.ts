import { createReadStream, readFileSync } from 'node:fs';
import { open, readFile, stat } from 'node:fs/promises';
import { AbridgeError } from '../errors.js';
import { SessionBuilder } from '../model/session.js';
import type { Entry, FormatId, Problem, Session, SessionInfo } from '../model/types.js';
import { detectFormat, sampleSource } from './detect.js';
import type { DecodeContext, TranscriptFormat } from './format.js';
import {
  deepNestingOffset,
  MAX_JSON_DEPTH,
  nestedTooDeep,
  readJsonlBuffer,
  readJsonlStream,
  type JsonlItem,
  type JsonlOptions,
} from './jsonl.js';
import { getFormat } from './registry.js';
import { readStreamSource } from './stream-input.js';

export interface ReadOptions {
  /** Skip detection and read as this format: its id, or the format itself (a value from `abridge-context/formats`, or your own). */
  format?: FormatId | string | TranscriptFormat;
  /** Called with the bytes read so far while a large file is read. */
  onProgress?: (bytesRead: number, totalBytes: number) => void;
  /**
   * Standard input (`-`, /dev/stdin) and FIFOs are read whole as a stream; this is how long to wait for a writer or
   * for the next bytes before INPUT_TIMEOUT (default 10,000 ms).
   */
  inputTimeoutMs?: number;
  /**
   * Keep what writing the session back byte for byte needs (default true): the source text of JSONL records that
   * JSON.stringify would not reproduce (`Entry.rawText`). `false` saves a re-serialization of every record, for a
   * caller that only reads (inspect); other lines that are not records still keep their text.
   */
  keepSourceText?: boolean;
  /**
   * Of a file holding several sessions (OpenHands evaluation output: one per benchmark instance), the id of the one to
   * read; default the first (a `more-sessions` problem names the others). An error for a format that holds one.
   */
  instance?: string;
}

const HEAD_BYTES = 256 * 1024;

/** Reads a transcript file into a Session, detecting its format from its content. */
export async function readSession(path: string, options: ReadOptions = {}): Promise<Session> {
  const streamed = await readStreamSource(path, options.inputTimeoutMs);
  if (streamed) return parseStreamed(streamed, path, options);
  const builder = await readInto(path, options, 'keep');
  return builder.build();
}

/** Parses a transcript already in memory. `source` names it in messages. */
export function parseSession(data: string | Buffer, options: ReadOptions & { source?: string } = {}): Session {
  const source = options.source ?? '<input>';
  const text = typeof data === 'string' ? data : data.toString('utf8');
  const format = chooseFormat(
    options.format,
    () => sampleSource(text.slice(0, HEAD_BYTES), text.length <= HEAD_BYTES, () => text),
    source,
  );
  refuseInstance(format, options, source);
  if (format.container === 'json') return readDocumentText(format, text, source);
  const builder = new SessionBuilder(format.id);
  const decoder = createDecoder(format, options, source);
  const layout = readJsonlBuffer(
    typeof data === 'string' ? Buffer.from(data) : data,
    jsonlSink(builder, decoder, (e) => builder.add(e)),
    jsonlOptions(options, source),
  );
  finishJsonl(builder, decoder.finish(), layout);
  return builder.build();
}

export interface StreamResult {
  format: FormatId;
  info: SessionInfo;
  problems: Problem[];
  entries: number;
  finalNewline: boolean;
  /** Blank lines after the last record (JSONL), for writing the transcript back byte for byte. */
  trailingBlankLines?: number;
  /** Format-specific session data the decoder gathered (as `Session.extra`). */
  extra?: Record<string, unknown>;
}

export interface StreamOptions extends ReadOptions {
  /**
   * Called after each chunk of a JSONL file has been parsed (its entries already given to `onEntry`); reading waits
   * for the promise it returns, if any: a consumer that stores entries asynchronously keeps memory bounded this way.
   */
  pace?: () => Promise<void> | undefined;
  /** Called with the format chosen (given or detected), before the first entry is given to `onEntry`. */
  onFormat?: (format: FormatId) => void;
}

/**
 * Reads a transcript entry by entry without keeping the entries: `onEntry` sees each one once, in order. Memory stays
 * bounded by the longest line for JSONL formats (JSON-document formats are parsed whole).
 */
export async function streamSession(
  path: string,
  onEntry: (entry: Entry) => void,
  options: StreamOptions = {},
): Promise<StreamResult> {
  const streamed = await readStreamSource(path, options.inputTimeoutMs);
  if (streamed) {
    const session = parseStreamed(streamed, path, options);
    options.onFormat?.(session.format);
    for (const e of session.entries) onEntry(e);
    return {
      format: session.format,
      info: session.info,
      problems: session.problems,
      entries: session.entries.length,
      finalNewline: session.finalNewline ?? true,
      ...(session.extra ? { extra: session.extra } : {}),
    };
  }
  let count = 0;
  const builder = await readInto(path, options, (entry) => {
    count++;
    onEntry(entry);
  });
  const result: StreamResult = {
    format: builder.format,
    info: builder.info,
    problems: builder.problems,
    entries: count,
    finalNewline: builder.finalNewline ?? true,
  };
  if (builder.trailingBlankLines) result.trailingBlankLines = builder.trailingBlankLines;
  if (builder.extra) result.extra = builder.extra;
  return result;
}

/** Bytes read at a time when paced: a consumer holds the entries of one chunk at most while they wait to be stored. */
const PACED_CHUNK = 256 * 1024;

/** The file's chunks, waiting after each for `pace` (see StreamOptions). */
async function* pacedChunks(path: string, pace: () => Promise<void> | undefined): AsyncIterable<Buffer> {
  for await (const chunk of createReadStream(path, { highWaterMark: PACED_CHUNK })) {
    yield chunk as Buffer;
    const wait = pace();
    if (wait) await wait;
  }
}

/** Standard input or a FIFO, read whole: detected and parsed like a file's content. */
function parseStreamed(data: Buffer, path: string, options: ReadOptions): Session {
  options.onProgress?.(data.length, data.length);
  const source = path === '-' ? '<stdin>' : path;
  if (data.length === 0)
    throw new AbridgeError(
      'INVALID_INPUT',
      `${source}: the input is empty (0 bytes came before it ended); expected a transcript`,
    );
  return parseSession(data, {
    ...(options.format ? { format: options.format } : {}),
    ...(options.keepSourceText === false ? { keepSourceText: false } : {}),
    ...(options.instance !== undefined ? { instance: options.instance } : {}),
    source,
  });
}

async function readInto(
  path: string,
  options: StreamOptions,
  mode: 'keep' | ((e: Entry) => void),
): Promise<SessionBuilder> {
  const size = await fileSize(path);
  const head = await readHead(path, Math.min(size, HEAD_BYTES));
  const complete = size <= HEAD_BYTES;
  let wholeText: string | undefined;
  const whole = () => (wholeText ??= readWholeSync(path));
  const format = chooseFormat(options.format, () => sampleSource(head, complete, () => whole()), path);
  refuseInstance(format, options, path);
  options.onFormat?.(format.id);

  if (format.container === 'json') {
    const session = readDocumentText(format, wholeText ?? (await readWhole(path)), path);
    const builder = new SessionBuilder(format.id);
    builder.info = session.info;
    builder.problems.push(...session.problems);
    if (session.extra) builder.extra = session.extra;
    for (const e of session.entries) {
      if (mode === 'keep') builder.entries.push(e);
      else mode(e);
    }
    if (mode !== 'keep') options.onProgress?.(size, size);
    return builder;
  }

  const builder = new SessionBuilder(format.id);
  const decoder = createDecoder(format, options, path);
  let index = 0;
  const add =
    mode === 'keep'
      ? (e: Omit<Entry, 'index'>) => builder.add(e)
      : (e: Omit<Entry, 'index'>) => {
          const entry = e as Entry;
          entry.index = index++;
          mode(entry);
          return entry;
        };
  let read = 0;
  const layout = await readJsonlStream(
    options.pace ? pacedChunks(path, options.pace) : path,
    jsonlSink(builder, decoder, add),
    (n) => {
      read += n;
      options.onProgress?.(read, size);
    },
    jsonlOptions(options, path),
  );
  finishJsonl(builder, decoder.finish(), layout);
  return builder;
}

function jsonlOptions(options: ReadOptions, source: string): JsonlOptions {
  return options.keepSourceText === false ? { keepSourceText: false, source } : { source };
}

function jsonlSink(
  builder: SessionBuilder,
  decoder: ReturnType<NonNullable<TranscriptFormat['createDecoder']>>,
  add: (e: Omit<Entry, 'index'>) => Entry,
) {
  let line = 0;
  let added = 0;
  const ctx: DecodeContext = {
    get line() {
      return line;
    },
    get nextIndex() {
      return added;
    },
    problem(p) {
      builder.problems.push({ line: p.line ?? line, kind: p.kind, message: p.message });
    },
  };
  return {
    item(item: JsonlItem) {
      line = item.line;
      if (item.kind === 'bad') {
        // Kept as an opaque entry so that writing the session back loses nothing.
        const bad: Omit<Entry, 'index'> = { kind: 'unknown', line: item.line, rawText: item.text };
        if (item.blankLinesBefore) bad.blankLinesBefore = item.blankLinesBefore;
        add(bad);
        added++;
        return;
      }
      let drafts;
      try {
        drafts = decoder.decode(item.value, ctx);
      } catch (err) {
        ctx.problem({
          kind: 'invalid-entry',
          message: `line ${item.line}: ${err instanceof Error ? err.message : String(err)}; kept as is`,
        });
        drafts = [{ kind: 'unknown' as const, raw: item.value }];
      }
      // A record whose text JSON.stringify would not reproduce keeps its text: writers of its format write that.
      if (item.text !== undefined && drafts[0]) drafts[0].rawText = item.text;
      drafts.forEach((d, i) => {
        d.line = item.line;
        if (i > 0) d.fromSameRecord = true;
        if (item.sameLineAsPrevious && i === 0) d.sameLineAsPrevious = true;
        if (item.blankLinesBefore && i === 0) d.blankLinesBefore = item.blankLinesBefore;
        add(d);
        added++;
      });
    },
    problem(p: Problem) {
      builder.problems.push(p);
    },
  };
}

function finishJsonl(
  builder: SessionBuilder,
  finished: { info: SessionInfo; extra?: Record<string, unknown>; problems?: Problem[] },
  layout: { finalNewline: boolean; trailingBlankLines: number },
): void {
  builder.info = finished.info;
  if (finished.extra) builder.extra = finished.extra;
  if (finished.problems) builder.problems.push(...finished.problems);
  builder.finalNewline = layout.finalNewline;
  builder.trailingBlankLines = layout.trailingBlankLines;
  builder.problems.sort((a, b) => a.line - b.line);
}

/** The format's decoder, given the instance to read when the format holds several sessions a file. */
function createDecoder(format: TranscriptFormat, options: ReadOptions, source: string) {
  return options.instance === undefined
    ? format.createDecoder!()
    : format.createDecoder!({ instance: options.instance, source });
}

function refuseInstance(format: TranscriptFormat, options: ReadOptions, source: string): void {
  if (options.instance !== undefined && !format.severalSessions)
    throw new AbridgeError(
      'INVALID_INPUT',
      `${source}: --instance: the ${format.label} format holds one session a file; there is no instance to choose`,
    );
}

function chooseFormat(
  requested: string | TranscriptFormat | undefined,
  sample: () => ReturnType<typeof sampleSource>,
  source: string,
): TranscriptFormat {
  if (typeof requested === 'object') return requested;
  if (requested) return getFormat(requested);
  const detection = detectFormat(sample());
  if (detection.kind === 'supported') return detection.format;
  if (detection.kind === 'unsupported') {
    throw new AbridgeError(
      'UNSUPPORTED_FORMAT',
      `${source}: recognized as ${detection.name}, a format abridge has no reader for yet`,
    );
  }
  throw new AbridgeError(
    'UNRECOGNIZED_FORMAT',
    `${source}: unrecognized transcript format: ${detection.reason} (use --format to name one)`,
  );
}

function readDocumentText(format: TranscriptFormat, text: string, source: string): Session {
  const body = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  // A JSON document nested too deep is refused before anything walks it: every count and write of a record recurses.
  if (/^\s*[[{]/.test(body.slice(0, 64))) {
    const deep = deepNestingOffset(body, MAX_JSON_DEPTH);
    if (deep !== -1) throw nestedTooDeep(source, lineAt(body, deep), MAX_JSON_DEPTH);
  }
  if (format.readText) return format.readText(body, source);
  let document: unknown;
  try {
    document = JSON.parse(body);
  } catch (err) {
    throw new AbridgeError(
      'INVALID_INPUT',
      `${source}: not valid JSON for the ${format.label} format (${err instanceof Error ? err.message : String(err)})`,
    );
  }
  return format.readDocument!(document, source);
}

async function fileSize(path: string): Promise<number> {
  try {
    const s = await stat(path);
    if (s.isDirectory())
      throw new AbridgeError('FILE_UNREADABLE', `${path}: is a directory, expected a transcript file`);
    return s.size;
  } catch (err) {
    if (err instanceof AbridgeError) throw err;
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') throw new AbridgeError('FILE_NOT_FOUND', `${path}: no such file`);
    throw new AbridgeError('FILE_UNREADABLE', `${path}: cannot read (${code ?? String(err)})`);
  }
}

async function readHead(path: string, bytes: number): Promise<string> {
  try {
    const fh = await open(path, 'r');
    try {
      const buf = Buffer.alloc(bytes);
      const { bytesRead } = await fh.read(buf, 0, bytes, 0);
      return buf.subarray(0, bytesRead).toString('utf8');
    } finally {
      await fh.close();
    }
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new AbridgeError('FILE_UNREADABLE', `${path}: cannot read (${code ?? String(err)})`);
  }
}

async function readWhole(path: string): Promise<string> {
  try {
    return await readFile(path, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new AbridgeError('FILE_UNREADABLE', `${path}: cannot read (${code ?? String(err)})`);
  }
}

/** Detection of a JSON document needs the whole text; this runs only for sources that are not JSONL. */
function readWholeSync(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new AbridgeError('FILE_UNREADABLE', `${path}: cannot read (${code ?? String(err)})`);
  }
}

/** The 1-based line of an offset in text. */
function lineAt(text: string, offset: number): number {
  let line = 1;
  for (let i = text.indexOf('\n'); i !== -1 && i < offset; i = text.indexOf('\n', i + 1)) line++;
  return line;
}
