import type { CompactionMarker, Part, ResultContentPart, TextPart, Usage } from './types.js';

/** The characters of a part that a model reads as text. Media and opaque signatures count zero. */
export function partTextLength(part: Part): number {
  switch (part.type) {
    case 'text':
      return part.text.length;
    case 'thinking':
      return part.redacted ? 0 : part.text.length;
    case 'tool-call':
      return part.name.length + argumentsText(part.arguments).length;
    case 'tool-result':
      return part.content.reduce((n, c) => n + (c.type === 'text' ? c.text.length : 0), 0);
    case 'compaction':
      return part.marker.summary.length;
    case 'image':
    case 'file':
      return 0;
  }
}

/** The argument names agents' tools give a file or directory they act on (read, write, edit, list). */
export const PATH_KEYS: readonly string[] = [
  'path',
  'file_path',
  'filePath',
  'filepath', // Continue
  'absolute_path', // Gemini CLI and Qwen Code's read_file
  'file',
  'filename',
  'notebook_path',
  'target_file',
  'paths',
  'files',
];

export function argumentsText(args: unknown): string {
  if (typeof args === 'string') return args;
  if (args === undefined) return '';
  return JSON.stringify(args) ?? '';
}

/** Arguments arrive as JSON text in most wire formats; keep the parsed value when it parses, the text otherwise. */
export function parseArguments(text: unknown): unknown {
  if (typeof text !== 'string') return text ?? {};
  if (text.trim() === '') return {};
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

export function textPart(text: string): TextPart {
  return { type: 'text', text };
}

/** Tool output given as a string or as a list of blocks, into result content parts. */
export function resultContent(content: unknown): ResultContentPart[] {
  if (content === undefined || content === null) return [];
  if (typeof content === 'string') return [textPart(content)];
  if (!Array.isArray(content)) return [textPart(JSON.stringify(content))];
  const out: ResultContentPart[] = [];
  for (const block of content) {
    if (typeof block === 'string') out.push(textPart(block));
    else if (block && typeof block === 'object') {
      const b = block as Record<string, unknown>;
      if (typeof b.text === 'string') out.push(textPart(b.text));
      else if (b.type === 'image' || b.type === 'input_image' || b.type === 'image_url') out.push(imageFrom(b));
      else out.push(textPart(JSON.stringify(b)));
    }
  }
  return out;
}

/** Bytes of base64 data once decoded, without decoding it. */
export function base64ByteSize(data: string): number {
  let pad = 0;
  if (data.endsWith('==')) pad = 2;
  else if (data.endsWith('=')) pad = 1;
  return Math.max(0, Math.floor((data.length * 3) / 4) - pad);
}

/** An image block of any of the formats we read: pi/AI SDK `{data, mimeType}`, Anthropic `{source}`, OpenAI urls. */
export function imageFrom(b: Record<string, unknown>): ResultContentPart {
  const source = (b.source ?? {}) as Record<string, unknown>;
  const mediaType =
    str(b.mimeType) ?? str(b.mediaType) ?? str(b.media_type) ?? str(source.media_type) ?? dataUrlType(b);
  const data = str(b.data) ?? str(source.data) ?? (typeof b.image === 'string' ? b.image : undefined);
  const url =
    str(b.url) ??
    str(source.url) ??
    str(b.image_url) ??
    str((b.image_url as Record<string, unknown> | undefined)?.url) ??
    undefined;
  const part: ResultContentPart = { type: 'image' };
  if (mediaType) part.mediaType = mediaType;
  if (data && !data.startsWith('http')) {
    const base64 = data.replace(/^data:[^,]*,/, '');
    part.byteSize = base64ByteSize(base64);
    part.data = base64;
  } else if (url?.startsWith('data:')) part.byteSize = base64ByteSize(url.replace(/^data:[^,]*,/, ''));
  if (url && !url.startsWith('data:')) part.url = url;
  return part;
}

function dataUrlType(b: Record<string, unknown>): string | undefined {
  const u = str(b.image_url) ?? str((b.image_url as Record<string, unknown> | undefined)?.url) ?? str(b.url);
  const m = u?.match(/^data:([^;,]+)/);
  return m?.[1];
}

function str(v: unknown): string | undefined {
  return typeof v === 'string' ? v : undefined;
}

export function num(v: unknown): number {
  return typeof v === 'number' && Number.isFinite(v) ? v : 0;
}

/**
 * What a compaction says as text: its summary, or — for a provider's own compaction whose summary is opaque (OpenAI's
 * is encrypted) — a note that says so, for any request or transcript that cannot send the provider's item itself.
 */
export function compactionText(marker: CompactionMarker): string {
  if (marker.summary.trim() !== '' || !marker.native) return marker.summary;
  return `[The conversation before this point was compacted by ${marker.native.provider}; its summary is encrypted and only ${marker.native.provider} can read it.]`;
}

/** The prompt the provider billed: input + cache reads + cache writes. */
export function promptTokens(u: Usage): number {
  return u.input + u.cacheRead + u.cacheWrite;
}

/**
 * The prompt as it was sent: what was billed plus what the provider's own context management removed before billing
 * (`Usage.cleared`). What a count of the request's messages is compared with.
 */
export function sentTokens(u: Usage): number {
  return promptTokens(u) + (u.cleared ?? 0);
}

/** The largest distance from the epoch a Date can hold (ms): beyond it, `new Date(t).toISOString()` throws. */
const MAX_DATE_MS = 8.64e15;

/** Whether `ms` (epoch milliseconds) is a time a Date can hold: finite and within ±8.64e15 (years −271,821 to 275,760). */
export function isDateMs(ms: unknown): ms is number {
  return typeof ms === 'number' && Number.isFinite(ms) && Math.abs(ms) <= MAX_DATE_MS;
}

/** The epoch as an ISO string: the time written for a record that has none (or none a date can hold). */
export const EPOCH_ISO = '1970-01-01T00:00:00.000Z';

/** `new Date(ms).toISOString()` for a time a Date can hold; undefined (not a RangeError) for any other value. */
export function isoTime(ms: number | undefined): string | undefined {
  return isDateMs(ms) ? new Date(ms).toISOString() : undefined;
}

/** ISO string or epoch number → epoch milliseconds; undefined for what is not a time a Date can hold. */
export function toEpochMs(v: unknown): number | undefined {
  if (typeof v === 'number' && Number.isFinite(v)) {
    const ms = v < 1e11 ? v * 1000 : v;
    return Math.abs(ms) <= MAX_DATE_MS ? ms : undefined;
  }
  if (typeof v === 'string') {
    const t = Date.parse(v);
    return Number.isNaN(t) ? undefined : t;
  }
  return undefined;
}
