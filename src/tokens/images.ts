import * as D from '../defaults.js';
import type { ImagePart } from '../model/types.js';
import type { ProviderFamily } from './family.js';

/** An image whose dimensions are unknown (src/defaults.ts says why these). */
export const DEFAULT_IMAGE_TOKENS: Record<ProviderFamily, number> = D.DEFAULT_IMAGE_TOKENS;

export function imageTokens(part: ImagePart, family: ProviderFamily): number {
  let { width, height } = part;
  if ((width === undefined || height === undefined) && part.data) {
    const dims = imageDimensions(part.data);
    if (dims) ({ width, height } = dims);
  }
  if (!width || !height) return DEFAULT_IMAGE_TOKENS[family];
  switch (family) {
    // Unknown providers: priced like Anthropic, the most expensive published rule.
    case 'other':
    case 'claude': {
      let w = width;
      let h = height;
      const edge = Math.max(w, h);
      if (edge > 1568) {
        w = (w * 1568) / edge;
        h = (h * 1568) / edge;
      }
      const mp = w * h;
      if (mp > 1_150_000) {
        const s = Math.sqrt(1_150_000 / mp);
        w *= s;
        h *= s;
      }
      return Math.ceil((w * h) / 750);
    }
    case 'gpt': {
      let w = width;
      let h = height;
      const fit = Math.min(1, 2048 / Math.max(w, h));
      w *= fit;
      h *= fit;
      const short = Math.min(w, h);
      if (short > 768) {
        w *= 768 / short;
        h *= 768 / short;
      }
      return 85 + 170 * Math.ceil(w / 512) * Math.ceil(h / 512);
    }
    case 'gemini':
      if (width <= 384 && height <= 384) return 258;
      return 258 * Math.ceil(width / 768) * Math.ceil(height / 768);
  }
}

/** Width and height from the header of a base64 PNG, JPEG, GIF or WebP image; undefined for anything else. */
export function imageDimensions(base64: string): { width: number; height: number } | undefined {
  // 64 KB of base64 reaches the size header of practically every JPEG (it follows EXIF data).
  const body = base64.startsWith('data:') ? base64.slice(base64.indexOf(',') + 1) : base64;
  // Standard or URL-safe alphabet; line breaks and padding ignored.
  const clean = body
    .slice(0, 65536)
    .replace(/-/g, '+')
    .replace(/_/g, '/')
    .replace(/[^A-Za-z0-9+/]/g, '');
  const head = Buffer.from(clean, 'base64');
  if (head.length < 24) return undefined;
  // PNG: IHDR holds width and height at bytes 16..23.
  if (head[0] === 0x89 && head[1] === 0x50 && head[2] === 0x4e && head[3] === 0x47) {
    return { width: head.readUInt32BE(16), height: head.readUInt32BE(20) };
  }
  // GIF: logical screen size, little-endian, at bytes 6..9.
  if (head[0] === 0x47 && head[1] === 0x49 && head[2] === 0x46)
    return { width: head.readUInt16LE(6), height: head.readUInt16LE(8) };
  // WebP: RIFF....WEBP then a VP8 / VP8L / VP8X chunk.
  if (head.toString('ascii', 0, 4) === 'RIFF' && head.toString('ascii', 8, 12) === 'WEBP') {
    const chunk = head.toString('ascii', 12, 16);
    if (chunk === 'VP8X' && head.length >= 30)
      return { width: 1 + head.readUIntLE(24, 3), height: 1 + head.readUIntLE(27, 3) };
    if (chunk === 'VP8 ' && head.length >= 30)
      return { width: head.readUInt16LE(26) & 0x3fff, height: head.readUInt16LE(28) & 0x3fff };
    if (chunk === 'VP8L' && head.length >= 25) {
      const b = head.readUInt32LE(21);
      return { width: 1 + (b & 0x3fff), height: 1 + ((b >> 14) & 0x3fff) };
    }
    return undefined;
  }
  // JPEG: walk the markers to a start-of-frame.
  if (head[0] === 0xff && head[1] === 0xd8) {
    let i = 2;
    while (i + 9 < head.length) {
      if (head[i] !== 0xff) return undefined;
      const marker = head[i + 1]!;
      if (marker === 0xd8 || marker === 0x01 || (marker >= 0xd0 && marker <= 0xd7)) {
        i += 2;
        continue;
      }
      const len = head.readUInt16BE(i + 2);
      if (marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc) {
        return { width: head.readUInt16BE(i + 7), height: head.readUInt16BE(i + 5) };
      }
      i += 2 + len;
    }
  }
  return undefined;
}
