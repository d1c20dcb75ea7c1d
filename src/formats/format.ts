import type { EntryDraft, FormatId, Part, Problem, Session, SessionInfo } from '../model/types.js';
import { parseArguments } from '../model/parts.js';

/** What detection sees of a source: its first records when it is JSONL, the whole value when it is one JSON document. */
export interface DetectInput {
  /** Up to the first 50 objects of a JSONL source. */
  records?: Record<string, unknown>[];
  /** The parsed document, when the whole source is one JSON value (a request body, a `.traj`). */
  document?: unknown;
  /** The first characters of the source, for text formats. */
  head: string;
}

export interface DecodeContext {
  line?: number;
  /** The index the first entry returned by this `decode` call will have in the session. */
  readonly nextIndex: number;
  problem(p: Omit<Problem, 'line'> & { line?: number }): void;
}

export interface DecoderOptions {
  /** Of a file holding several sessions, the id of the one to read (default: the first). */
  instance?: string;
  /** Names the input in errors. */
  source?: string;
}

/** Turns the records of a JSONL transcript into entries, one record at a time (state lives in the decoder). */
export interface EntryDecoder {
  decode(record: Record<string, unknown>, ctx: DecodeContext): EntryDraft[];
  /** Session-level facts gathered while decoding, and problems only the whole file shows. */
  finish(): { info: SessionInfo; extra?: Record<string, unknown>; problems?: Problem[] };
}

export interface TranscriptFormat {
  id: FormatId;
  /** What a person calls it: "pi session JSONL". */
  label: string;
  container: 'jsonl' | 'json';
  /** Confidence 0…1 that the source is in this format. */
  detect(input: DetectInput): number;
  /** JSONL formats. */
  createDecoder?(options?: DecoderOptions): EntryDecoder;
  /** The format can hold several sessions in one file (OpenHands: one per benchmark instance); `instance` picks one. */
  severalSessions?: true;
  /** JSON-document formats: the whole document into a session. `source` names the input in problems. */
  readDocument?(document: unknown, source: string): Session;
  /**
   * Formats read whole whose file is not always one JSON value (Gemini CLI: one JSON document, or from April 2026 a
   * JSONL log of the same record that later lines update): the whole text into a session. Used instead of parsing the
   * text as JSON for `readDocument` when present.
   */
  readText?(text: string, source: string): Session;
  /**
   * Serializes a session in this format. Sessions read from this format are written back byte-identically; records
   * added since (abridge's compaction records) go through `redact` (secret redaction, src/redact) when it is given.
   */
  write?(session: Session, options?: { redact?: (text: string) => string }): string;
}

/** A transcript format we recognize but cannot read yet. */
export interface UnsupportedFormat {
  name: string;
  detect(input: DetectInput): number;
}

export function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export function asString(v: unknown): string | undefined {
  return typeof v === 'string' ? v : undefined;
}

/** Share of records for which `test` holds, 0 when there are none. */
export function share(
  records: readonly Record<string, unknown>[] | undefined,
  test: (r: Record<string, unknown>) => boolean,
): number {
  if (!records || records.length === 0) return 0;
  let n = 0;
  for (const r of records) if (test(r)) n++;
  return n / records.length;
}

/**
 * Chat-style tool calls as agents record them: `{id, function: {name, arguments}}` (arguments as JSON text), or the
 * same fields flat (`{id, name, arguments}`); anything not an object is skipped.
 */
export function chatToolCalls(calls: unknown[]): Part[] {
  const out: Part[] = [];
  for (const c of calls) {
    if (!isRecord(c)) continue;
    const fn = isRecord(c.function) ? c.function : c;
    out.push({
      type: 'tool-call',
      id: asString(c.id) ?? '',
      name: asString(fn.name) ?? '',
      arguments: parseArguments(fn.arguments),
    });
  }
  return out;
}
