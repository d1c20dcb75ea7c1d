import type { DetectInput, TranscriptFormat } from './format.js';
import { isRecord } from './format.js';
import { JsonlParser } from './jsonl.js';
import { formats, recognizedButUnsupported } from './registry.js';

export type Detection =
  | { kind: 'supported'; format: TranscriptFormat; confidence: number }
  | { kind: 'unsupported'; name: string }
  | { kind: 'unknown'; reason: string };

const SAMPLE_RECORDS = 50;
const MIN_CONFIDENCE = 0.3;

/** How a source looks before any format is chosen: JSONL records, or one JSON document, or neither. */
export function sampleSource(head: string, complete: boolean, whole?: () => string): DetectInput {
  const text = head.charCodeAt(0) === 0xfeff ? head.slice(1) : head;
  const input: DetectInput = { head: text.slice(0, 4096) };
  const trimmed = text.trimStart();
  if (!trimmed.startsWith('{') && !trimmed.startsWith('[')) return input;

  const records: Record<string, unknown>[] = [];
  let firstLineParsed: boolean | undefined;
  let nonBlankLines = 0;
  const parser = new JsonlParser(
    {
      item(item) {
        if (firstLineParsed === undefined) firstLineParsed = item.kind === 'record';
        if (item.kind === 'record' && records.length < SAMPLE_RECORDS) records.push(item.value);
      },
      problem() {},
    },
    // Detection looks at a record's keys only: a record too deep (or a line too long) is for the reader to refuse,
    // with the file's name.
    { keepSourceText: false, maxDepth: Number.POSITIVE_INFINITY, maxLineBytes: Number.POSITIVE_INFINITY },
  );
  // Only whole lines of the head: a cut last line would look truncated.
  const lastNl = complete ? text.length : text.lastIndexOf('\n');
  const sample = lastNl > 0 ? text.slice(0, lastNl) : text;
  nonBlankLines = sample.split('\n').filter((l) => l.trim() !== '').length;
  parser.push(Buffer.from(sample));
  parser.end();

  if (firstLineParsed && records.length > 0 && (nonBlankLines > 1 || complete)) {
    input.records = records;
    if (complete && nonBlankLines === 1) input.document = records[0];
    return input;
  }
  try {
    input.document = JSON.parse(whole ? whole() : text);
  } catch {
    // Not one JSON document either; keep whatever records we found (a JSONL whose first line is damaged).
    if (records.length > 0) input.records = records;
  }
  return input;
}

export function detectFormat(input: DetectInput): Detection {
  let best: { format: TranscriptFormat; confidence: number } | undefined;
  for (const f of formats) {
    const c = safeDetect(() => f.detect(input));
    if (c > (best?.confidence ?? 0)) best = { format: f, confidence: c };
  }
  let unsupported: { name: string; confidence: number } | undefined;
  for (const u of recognizedButUnsupported) {
    const c = safeDetect(() => u.detect(input));
    if (c > (unsupported?.confidence ?? 0)) unsupported = { name: u.name, confidence: c };
  }
  if (unsupported && unsupported.confidence >= MIN_CONFIDENCE && unsupported.confidence > (best?.confidence ?? 0)) {
    return { kind: 'unsupported', name: unsupported.name };
  }
  if (best && best.confidence >= MIN_CONFIDENCE) return { kind: 'supported', ...best };
  const what = input.records
    ? `JSONL whose records match no known transcript format (first record keys: ${Object.keys(input.records[0] ?? {})
        .slice(0, 8)
        .join(', ')})`
    : input.document !== undefined
      ? `a JSON ${Array.isArray(input.document) ? 'array' : isRecord(input.document) ? `object (keys: ${Object.keys(input.document).slice(0, 8).join(', ')})` : 'value'} that matches no known format`
      : 'neither JSON nor JSONL, and no known text transcript format';
  return { kind: 'unknown', reason: what };
}

function safeDetect(fn: () => number): number {
  try {
    const c = fn();
    return Number.isFinite(c) ? c : 0;
  } catch {
    return 0;
  }
}
