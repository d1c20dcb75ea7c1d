import { createReadStream } from 'node:fs';
import { AbridgeError } from '../errors.js';
import type { Problem } from '../model/types.js';

/** One JSON object read from a JSONL source. */
export interface JsonlRecord {
  kind: 'record';
  line: number;
  value: Record<string, unknown>;
  /** A second (third…) object found on the same physical line as the previous record. */
  sameLineAsPrevious: boolean;
  /** Blank lines just before this line (kept so that writing back is byte-identical). */
  blankLinesBefore?: number;
  /**
   * The record's exact source text, when serializing `value` again would not give it back: other spacing, escapes or
   * number forms, duplicate keys, a CR before the newline, a byte-order mark, or, for several values on one line, the
   * text between and after them. Writers write it instead of the value, so that nothing on the line is lost.
   */
  text?: string;
}

/** A line that yielded no object; its text is kept so that nothing is silently lost. */
export interface JsonlBadLine {
  kind: 'bad';
  line: number;
  text: string;
  blankLinesBefore?: number;
}

export type JsonlItem = JsonlRecord | JsonlBadLine;

export interface JsonlSink {
  item(item: JsonlItem): void;
  problem(problem: Problem): void;
}

export interface JsonlOptions {
  /**
   * Keep a record's source text when JSON.stringify would not give it back (default true): what writing the records
   * back byte for byte needs. `false` skips that check, a re-serialization of every record, for a reader that never
   * writes (it still keeps the text of lines that are not one object, and of a line's byte-order mark or CR).
   */
  keepSourceText?: boolean;
  /** Names the input in the errors below (a path, `<stdin>`). */
  source?: string;
  /**
   * The longest line read, in bytes (default {@link MAX_LINE_BYTES}, or the environment's `ABRIDGE_MAX_LINE_BYTES`):
   * a longer one is an error naming its line, raised before the line is held whole.
   */
  maxLineBytes?: number;
  /** The deepest nesting of a record's arrays and objects (default {@link MAX_JSON_DEPTH}); deeper is an error. */
  maxDepth?: number;
}

/**
 * The longest line abridge reads: 512 MiB less 24 bytes, the longest string V8 can hold (a line is decoded into one).
 */
export const MAX_LINE_BYTES = 2 ** 29 - 24;

/**
 * The deepest nesting of arrays and objects abridge reads. Counting, summarizing and writing walk records recursively
 * (JSON.stringify does): past a few thousand levels the stack runs out. Real transcripts nest a few dozen levels.
 */
export const MAX_JSON_DEPTH = 1000;

function lineLimit(options: JsonlOptions): number {
  if (options.maxLineBytes !== undefined) return options.maxLineBytes;
  const env = Number(process.env.ABRIDGE_MAX_LINE_BYTES);
  return Number.isInteger(env) && env > 0 ? Math.min(env, MAX_LINE_BYTES) : MAX_LINE_BYTES;
}

const mib = (bytes: number) =>
  bytes >= 1048576
    ? `${(bytes / 1048576).toFixed(bytes % 1048576 ? 1 : 0)} MiB`
    : `${bytes.toLocaleString('en-US')} bytes`;

/** The error for a line past the length limit. */
function lineTooLong(source: string | undefined, line: number, limit: number): AbridgeError {
  return new AbridgeError(
    'INVALID_INPUT',
    `${source ?? '<input>'}: line ${line} is longer than ${mib(limit)}, the longest line abridge can read (one record of that size is not a transcript abridge can hold in memory)`,
  );
}

/** The error for a record nested past the depth limit. */
export function nestedTooDeep(source: string | undefined, line: number | undefined, limit: number): AbridgeError {
  return new AbridgeError(
    'INVALID_INPUT',
    `${source ?? '<input>'}: ${line !== undefined ? `line ${line}: ` : ''}JSON nested more than ${limit.toLocaleString('en-US')} levels deep (arrays and objects within each other); abridge reads records up to that depth`,
  );
}

/** Whether a parsed JSON value nests arrays and objects more than `limit` levels deep (iterative: no recursion). */
export function nestsDeeperThan(value: unknown, limit: number): boolean {
  if (typeof value !== 'object' || value === null) return false;
  const stack: [object, number][] = [[value, 1]];
  while (stack.length > 0) {
    const [v, depth] = stack.pop()!;
    if (depth > limit) return true;
    const children = Array.isArray(v) ? v : Object.values(v);
    for (const c of children) if (typeof c === 'object' && c !== null) stack.push([c, depth + 1]);
  }
  return false;
}

/**
 * Where JSON text nests arrays and objects more than `limit` levels deep: the offset of the bracket that goes past it,
 * or -1. A scan of the text (strings skipped), for a document before it is parsed.
 */
export function deepNestingOffset(text: string, limit: number): number {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++;
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) {
      if (++depth > limit) return i;
    } else if (c === 0x7d || c === 0x5d) depth--;
  }
  return -1;
}

const NEWLINE = 0x0a;
const strictUtf8 = new TextDecoder('utf-8', { fatal: true });
const lenientUtf8 = new TextDecoder('utf-8', { fatal: false });

/**
 * Splits JSONL bytes into lines and parses each. Never throws on content: every line that is not one JSON object becomes
 * a problem record, recoverable objects are recovered, and reading goes on. Memory is bounded by the longest line.
 */
export class JsonlParser {
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private lineNo = 0;
  /** Physical lines seen so far. */
  get lines(): number {
    return this.lineNo;
  }
  private sawAnyByte = false;
  /** Whether the input ended with a newline (known after `end`). */
  finalNewline = true;
  /** Blank lines after the last non-blank line (known after `end`). */
  trailingBlankLines = 0;
  private blanks = 0;
  private readonly keepText: boolean;
  private readonly source: string | undefined;
  private readonly maxLine: number;
  private readonly maxDepth: number;

  constructor(
    private readonly sink: JsonlSink,
    options: JsonlOptions = {},
  ) {
    this.keepText = options.keepSourceText ?? true;
    this.source = options.source;
    this.maxLine = lineLimit(options);
    this.maxDepth = options.maxDepth ?? MAX_JSON_DEPTH;
  }

  push(chunk: Buffer): void {
    if (chunk.length === 0) return;
    this.sawAnyByte = true;
    let start = 0;
    for (;;) {
      const nl = chunk.indexOf(NEWLINE, start);
      if (nl === -1) break;
      if (this.pendingBytes + (nl - start) > this.maxLine)
        throw lineTooLong(this.source, this.lineNo + 1, this.maxLine);
      let lineBuf = chunk.subarray(start, nl);
      if (this.pendingBytes > 0) {
        this.pending.push(lineBuf);
        lineBuf = Buffer.concat(this.pending, this.pendingBytes + lineBuf.length);
        this.pending = [];
        this.pendingBytes = 0;
      }
      this.line(lineBuf, false);
      start = nl + 1;
    }
    if (start < chunk.length) {
      const rest = chunk.subarray(start);
      // Refused as soon as the line is known to be too long: the rest of it is never held.
      if (this.pendingBytes + rest.length > this.maxLine) throw lineTooLong(this.source, this.lineNo + 1, this.maxLine);
      // Copy: the caller may reuse its buffer.
      this.pending.push(Buffer.from(rest));
      this.pendingBytes += rest.length;
    }
  }

  end(): void {
    if (this.pendingBytes > 0) {
      const lineBuf = Buffer.concat(this.pending, this.pendingBytes);
      this.pending = [];
      this.pendingBytes = 0;
      this.finalNewline = false;
      this.line(lineBuf, true);
    } else if (!this.sawAnyByte) {
      this.finalNewline = false;
    }
  }

  private line(buf: Buffer, unterminated: boolean): void {
    const lineNo = ++this.lineNo;
    let bytes = buf;
    let bom = false;
    if (lineNo === 1 && bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) {
      bytes = bytes.subarray(3);
      bom = true;
    }
    let text: string;
    try {
      text = strictUtf8.decode(bytes);
    } catch {
      text = lenientUtf8.decode(bytes);
      this.sink.problem({
        line: lineNo,
        kind: 'invalid-utf8',
        message: `line ${lineNo} is not valid UTF-8; invalid bytes were replaced with U+FFFD`,
      });
    }
    let cr = false;
    if (text.endsWith('\r')) {
      text = text.slice(0, -1);
      cr = true;
    }
    if (text.trim() === '') {
      this.blanks++;
      this.trailingBlankLines = this.blanks;
      return;
    }
    const blanks = this.blanks;
    this.blanks = 0;
    this.trailingBlankLines = 0;
    parseLine(
      text,
      lineNo,
      unterminated,
      bom ? '\ufeff' : '',
      cr ? '\r' : '',
      this.keepText,
      (v) => {
        if (this.maxDepth !== Number.POSITIVE_INFINITY && nestsDeeperThan(v, this.maxDepth))
          throw nestedTooDeep(this.source, lineNo, this.maxDepth);
      },
      blanks > 0
        ? {
            item: (it) =>
              this.sink.item(it.kind === 'record' && it.sameLineAsPrevious ? it : { ...it, blankLinesBefore: blanks }),
            problem: (p) => this.sink.problem(p),
          }
        : this.sink,
    );
  }
}

function parseLine(
  text: string,
  lineNo: number,
  unterminated: boolean,
  before: string,
  after: string,
  keepText: boolean,
  checkDepth: (value: unknown) => void,
  sink: JsonlSink,
): void {
  const source = `${before}${text}${after}`;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    const pieces = splitConcatenated(text);
    for (const v of pieces.values) checkDepth(v);
    const objects = pieces.values.filter(isObject).length;
    if (pieces.complete && pieces.values.length > 1 && objects > 0) {
      // Each object keeps the text from the end of the object before it up to its own end (non-objects, spacing and
      // anything after the last object included), so the pieces written back in order are the line again.
      let otherChars = text.length;
      pieces.values.forEach((v, i) => {
        if (isObject(v)) otherChars -= pieces.ends[i]! - pieces.starts[i]!;
      });
      sink.problem({
        line: lineNo,
        kind: 'multiple-objects',
        message: `line ${lineNo} holds ${pieces.values.length} JSON values on one line; ${objects === 1 ? 'its object was read as a record' : `its ${objects} objects were read as separate records`}${otherChars ? `, and ${otherChars} other character${otherChars > 1 ? 's' : ''} (spacing, values that are not objects, other text) ${otherChars > 1 ? 'were' : 'was'} kept as text` : ''}; writing the session back reproduces the line byte for byte`,
      });
      let from = 0;
      let lastObject = -1;
      pieces.values.forEach((v, i) => {
        if (isObject(v)) lastObject = i;
      });
      let first = true;
      pieces.values.forEach((v, i) => {
        if (!isObject(v)) return;
        const end = i === lastObject ? text.length : pieces.ends[i]!;
        const piece = `${first ? before : ''}${text.slice(from, end)}${i === lastObject ? after : ''}`;
        from = end;
        const item: JsonlRecord = { kind: 'record', line: lineNo, value: v, sameLineAsPrevious: !first };
        if (piece !== JSON.stringify(v)) item.text = piece;
        sink.item(item);
        first = false;
      });
      return;
    }
    if (!pieces.complete) {
      sink.problem({
        line: lineNo,
        kind: 'truncated-line',
        message: `line ${lineNo} ends inside an unfinished JSON value${unterminated ? ' at the end of the file' : ''} (a truncated write?); it was skipped`,
      });
    } else {
      const reason = err instanceof Error ? err.message : String(err);
      sink.problem({
        line: lineNo,
        kind: 'invalid-json',
        message: `line ${lineNo} is not valid JSON (${reason}); it was skipped`,
      });
    }
    sink.item({ kind: 'bad', line: lineNo, text: source });
    return;
  }
  checkDepth(value);
  if (!isObject(value)) {
    const what = Array.isArray(value) ? 'an array' : value === null ? 'null' : `a ${typeof value}`;
    sink.problem({
      line: lineNo,
      kind: 'not-an-object',
      message: `line ${lineNo} is ${what}, not a JSON object; it was skipped`,
    });
    sink.item({ kind: 'bad', line: lineNo, text: source });
    return;
  }
  const item: JsonlRecord = { kind: 'record', line: lineNo, value, sameLineAsPrevious: false };
  // Most lines are what JSON.stringify writes; the others keep their text so that writing back changes nothing.
  if (before || after || (keepText && JSON.stringify(value) !== text)) item.text = source;
  sink.item(item);
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * Splits text holding several top-level JSON values written back to back (`{…}{…}`), the way a crashed or racing
 * writer leaves them. `complete` is false when the text ends inside an unfinished value.
 */
export function splitConcatenated(text: string): {
  values: unknown[];
  starts: number[];
  ends: number[];
  complete: boolean;
} {
  const values: unknown[] = [];
  const starts: number[] = [];
  const ends: number[] = [];
  let depth = 0;
  let inString = false;
  let escaped = false;
  let start = -1;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (escaped) escaped = false;
      else if (c === 0x5c) escaped = true;
      else if (c === 0x22) inString = false;
      continue;
    }
    if (c === 0x22) {
      inString = true;
      if (depth === 0 && start === -1) start = i;
    } else if (c === 0x7b || c === 0x5b) {
      if (depth === 0 && start === -1) start = i;
      depth++;
    } else if (c === 0x7d || c === 0x5d) {
      depth--;
      if (depth < 0) return { values, starts, ends, complete: true };
      if (depth === 0 && start !== -1) {
        try {
          values.push(JSON.parse(text.slice(start, i + 1)));
          starts.push(start);
          ends.push(i + 1);
        } catch {
          return { values, starts, ends, complete: true };
        }
        start = -1;
      }
    }
  }
  return { values, starts, ends, complete: depth === 0 && !inString };
}

/** Reads a JSONL file (or stream) chunk by chunk; items arrive at the sink in order. */
export async function readJsonlStream(
  source: string | AsyncIterable<Buffer | string>,
  sink: JsonlSink,
  onBytes?: (bytes: number) => void,
  options: JsonlOptions = {},
): Promise<{ finalNewline: boolean; lines: number; trailingBlankLines: number }> {
  const parser = new JsonlParser(sink, options);
  const stream = typeof source === 'string' ? createReadStream(source, { highWaterMark: 1 << 20 }) : source;
  for await (const chunk of stream) {
    const buf = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    parser.push(buf);
    onBytes?.(buf.length);
  }
  parser.end();
  return { finalNewline: parser.finalNewline, lines: parser.lines, trailingBlankLines: parser.trailingBlankLines };
}

/** The same, over bytes or text already in memory. */
export function readJsonlBuffer(
  data: Buffer | string,
  sink: JsonlSink,
  options: JsonlOptions = {},
): { finalNewline: boolean; trailingBlankLines: number } {
  const parser = new JsonlParser(sink, options);
  parser.push(typeof data === 'string' ? Buffer.from(data) : data);
  parser.end();
  return { finalNewline: parser.finalNewline, trailingBlankLines: parser.trailingBlankLines };
}

/** A record to write: its text, or what makes it when it is written (a large session's lines are not all held at once). */
export interface JsonlLine {
  text: string | (() => string);
  sameLineAsPrevious?: boolean | undefined;
  blankLinesBefore?: number | undefined;
}

/** Serializes records back to JSONL, keeping records that shared a line on one line. */
export function writeJsonl(
  items: Iterable<JsonlLine>,
  layout: { finalNewline?: boolean; trailingBlankLines?: number } = {},
): string {
  return [...jsonlChunks(items, layout, Number.POSITIVE_INFINITY)].join('');
}

/**
 * The same text in pieces of about `chunkChars` characters, each ending at the end of a line (so that what works
 * line by line, like redaction, sees whole lines): a writer streams them to a file without holding the whole.
 */
export function* jsonlChunks(
  items: Iterable<JsonlLine>,
  layout: { finalNewline?: boolean; trailingBlankLines?: number } = {},
  chunkChars = 1 << 20,
): Generator<string> {
  let out: string[] = [];
  let size = 0;
  let first = true;
  for (const it of items) {
    if (!first && !it.sameLineAsPrevious) {
      out.push('\n');
      // The line before is whole: a piece may end here.
      if (size >= chunkChars) {
        yield out.join('');
        out = [];
        size = 0;
      }
    }
    if (it.blankLinesBefore) out.push('\n'.repeat(it.blankLinesBefore));
    const text = typeof it.text === 'string' ? it.text : it.text();
    out.push(text);
    size += text.length;
    first = false;
  }
  if (!first && (layout.finalNewline ?? true)) out.push('\n');
  if (layout.trailingBlankLines) out.push('\n'.repeat(layout.trailingBlankLines));
  if (out.length) yield out.join('');
}
