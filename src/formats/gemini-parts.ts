import { base64ByteSize } from '../model/parts.js';
import type { Part, ResultContentPart } from '../model/types.js';
import { asString, isRecord } from './format.js';

/**
 * A Gemini API media part (`inlineData`, base64, or `fileData`, a URI) — as Gemini CLI and Qwen Code record them:
 * images count as images, other media as files; undefined for any other part.
 */
export function mediaPart(p: Record<string, unknown>): ResultContentPart | undefined {
  const inline = isRecord(p.inlineData) ? p.inlineData : undefined;
  const file = isRecord(p.fileData) ? p.fileData : undefined;
  if (!inline && !file) return undefined;
  const mediaType = asString(inline?.mimeType) ?? asString(file?.mimeType);
  const part: ResultContentPart = mediaType?.startsWith('image/') ? { type: 'image' } : { type: 'file' };
  if (mediaType) part.mediaType = mediaType;
  const data = asString(inline?.data);
  if (data !== undefined) {
    part.data = data;
    part.byteSize = base64ByteSize(data);
  }
  const url = asString(file?.fileUri);
  if (url) part.url = url;
  const name = asString(inline?.displayName) ?? asString(file?.displayName);
  if (name && part.type === 'file') part.name = name;
  return part;
}

/** A Gemini API `functionCall` part as a tool call (its `id` when the model gave one, else empty for the reader to fill). */
export function functionCallPart(fc: Record<string, unknown>): Part {
  return { type: 'tool-call', id: asString(fc.id) ?? '', name: asString(fc.name) ?? '', arguments: fc.args ?? {} };
}
