import { deflateSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import type { ImagePart } from '../model/types.js';
import { PROVIDER_FAMILIES } from './family.js';
import { DEFAULT_IMAGE_TOKENS, imageDimensions, imageTokens } from './images.js';

// ---- Real, tiny images built byte by byte ----

const CRC_TABLE = (() => {
  const t = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    t[n] = c >>> 0;
  }
  return t;
})();

function crc32(buf: Buffer): number {
  let c = 0xffffffff;
  for (const b of buf) c = CRC_TABLE[(c ^ b) & 0xff]! ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

function pngChunk(type: string, data: Buffer): Buffer {
  const len = Buffer.alloc(4);
  len.writeUInt32BE(data.length);
  const body = Buffer.concat([Buffer.from(type, 'ascii'), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(body));
  return Buffer.concat([len, body, crc]);
}

/** A complete, decodable grayscale PNG (signature, IHDR, IDAT of zero scanlines, IEND). */
function png(width: number, height: number): Buffer {
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 0; // grayscale
  ihdr[10] = 0; // deflate
  ihdr[11] = 0; // adaptive filtering
  ihdr[12] = 0; // no interlace
  const raw = Buffer.alloc((width + 1) * height); // filter byte 0 + one byte per pixel, per row
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    pngChunk('IHDR', ihdr),
    pngChunk('IDAT', deflateSync(raw)),
    pngChunk('IEND', Buffer.alloc(0)),
  ]);
}

/** A valid GIF89a: logical screen width × height, a 2-color table, one 1×1 frame, trailer. */
function gif(width: number, height: number): Buffer {
  const screen = Buffer.alloc(7);
  screen.writeUInt16LE(width, 0);
  screen.writeUInt16LE(height, 2);
  screen[4] = 0x80; // global color table, 2 entries
  return Buffer.concat([
    Buffer.from('GIF89a', 'ascii'),
    screen,
    Buffer.from([0, 0, 0, 0xff, 0xff, 0xff]), // color table
    Buffer.from([0x2c, 0, 0, 0, 0, 1, 0, 1, 0, 0]), // image descriptor: 1×1 at 0,0
    Buffer.from([0x02, 0x02, 0x44, 0x01, 0x00]), // LZW min code size 2, one data sub-block, block terminator
    Buffer.from([0x3b]), // trailer
  ]);
}

function segment(marker: number, payload: Buffer): Buffer {
  const head = Buffer.alloc(4);
  head[0] = 0xff;
  head[1] = marker;
  head.writeUInt16BE(payload.length + 2, 2);
  return Buffer.concat([head, payload]);
}

const APP0 = segment(
  0xe0,
  Buffer.from([0x4a, 0x46, 0x49, 0x46, 0x00, 0x01, 0x01, 0x00, 0x00, 0x01, 0x00, 0x01, 0x00, 0x00]),
); // JFIF 1.1
const DQT = segment(0xdb, Buffer.concat([Buffer.from([0x00]), Buffer.alloc(64, 1)]));
const DHT = segment(
  0xc4,
  Buffer.concat([
    Buffer.from([0x00]),
    Buffer.from([0, 1, 5, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0]),
    Buffer.from([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]),
  ]),
);

function sof(marker: number, width: number, height: number): Buffer {
  const p = Buffer.alloc(15);
  p[0] = 8; // precision
  p.writeUInt16BE(height, 1);
  p.writeUInt16BE(width, 3);
  p[5] = 3; // components: Y, Cb, Cr
  p.set([1, 0x22, 0, 2, 0x11, 1, 3, 0x11, 1], 6);
  return segment(marker, p);
}

/** SOI, APP0 (JFIF), then whatever segments are given (a start-of-frame among them), EOI. */
function jpeg(...segments: Buffer[]): Buffer {
  return Buffer.concat([Buffer.from([0xff, 0xd8]), APP0, ...segments, Buffer.from([0xff, 0xd9])]);
}

function riff(chunk: string, payload: Buffer): Buffer {
  const header = Buffer.alloc(20);
  header.write('RIFF', 0, 'ascii');
  header.writeUInt32LE(4 + 8 + payload.length, 4);
  header.write('WEBP', 8, 'ascii');
  header.write(chunk, 12, 'ascii');
  header.writeUInt32LE(payload.length, 16);
  return Buffer.concat([header, payload]);
}

/** Extended WebP: a VP8X chunk holding canvas width − 1 and height − 1 as 24-bit little-endian. */
function webpVP8X(width: number, height: number): Buffer {
  const p = Buffer.alloc(10);
  p[0] = 0x10; // alpha flag
  p.writeUIntLE(width - 1, 4, 3);
  p.writeUIntLE(height - 1, 7, 3);
  return riff('VP8X', p);
}

/** Lossy WebP: VP8 frame tag, start code 9d 01 2a, 14-bit width and height. */
function webpVP8(width: number, height: number): Buffer {
  const p = Buffer.alloc(10);
  p.set([0x30, 0x01, 0x00, 0x9d, 0x01, 0x2a], 0);
  p.writeUInt16LE(width & 0x3fff, 6);
  p.writeUInt16LE(height & 0x3fff, 8);
  return riff('VP8 ', p);
}

/** Lossless WebP: signature 0x2f then width − 1 and height − 1 in 14 bits each. */
function webpVP8L(width: number, height: number): Buffer {
  const p = Buffer.alloc(5);
  p[0] = 0x2f;
  p.writeUInt32LE(((width - 1) & 0x3fff) | (((height - 1) & 0x3fff) << 14), 1);
  return riff('VP8L', p);
}

const b64 = (b: Buffer) => b.toString('base64');

describe('imageDimensions from real headers', () => {
  it('reads PNG width and height from IHDR', () => {
    expect(imageDimensions(b64(png(640, 480)))).toEqual({ width: 640, height: 480 });
    expect(imageDimensions(b64(png(1, 1)))).toEqual({ width: 1, height: 1 });
    expect(imageDimensions(b64(png(3000, 17)))).toEqual({ width: 3000, height: 17 });
  });

  it('reads the GIF logical screen (little-endian)', () => {
    expect(imageDimensions(b64(gif(300, 200)))).toEqual({ width: 300, height: 200 });
    expect(imageDimensions(b64(gif(258, 513)))).toEqual({ width: 258, height: 513 });
  });

  it('walks JPEG markers to the start-of-frame, past APP0, DQT and DHT', () => {
    expect(imageDimensions(b64(jpeg(DQT, sof(0xc0, 800, 600), DHT)))).toEqual({ width: 800, height: 600 });
    // DHT (0xC4) sits in the SOF marker range but is not a frame: it must be skipped.
    expect(imageDimensions(b64(jpeg(DQT, DHT, sof(0xc0, 1024, 768))))).toEqual({ width: 1024, height: 768 });
    // Progressive (SOF2).
    expect(imageDimensions(b64(jpeg(DQT, DHT, sof(0xc2, 123, 4567))))).toEqual({ width: 123, height: 4567 });
  });

  it('reaches a JPEG frame behind a 40 KB EXIF segment', () => {
    const exif = segment(0xe1, Buffer.concat([Buffer.from('Exif\0\0', 'ascii'), Buffer.alloc(40_000, 0x20)]));
    const data = b64(jpeg(exif, DQT, sof(0xc0, 4032, 3024), DHT));
    expect(data.length).toBeGreaterThan(50_000);
    expect(imageDimensions(data)).toEqual({ width: 4032, height: 3024 });
  });

  it('reads WebP VP8X, VP8 and VP8L headers', () => {
    expect(imageDimensions(b64(webpVP8X(1920, 1080)))).toEqual({ width: 1920, height: 1080 });
    expect(imageDimensions(b64(webpVP8X(16_000, 9_000)))).toEqual({ width: 16_000, height: 9_000 });
    expect(imageDimensions(b64(webpVP8(400, 300)))).toEqual({ width: 400, height: 300 });
    expect(imageDimensions(b64(webpVP8L(77, 1000)))).toEqual({ width: 77, height: 1000 });
  });

  it('ignores line breaks in MIME-wrapped base64', () => {
    const wrapped = b64(png(321, 123)).replace(/.{76}/g, '$&\r\n');
    expect(wrapped).toContain('\r\n');
    expect(imageDimensions(wrapped)).toEqual({ width: 321, height: 123 });
  });

  it('returns undefined for what is not a known image, or too short to be one', () => {
    expect(imageDimensions('')).toBeUndefined();
    expect(imageDimensions('AAAA')).toBeUndefined();
    expect(imageDimensions(b64(Buffer.from('%PDF-1.7\n%âãÏÓ\n1 0 obj << /Type /Catalog >> endobj')))).toBeUndefined();
    expect(imageDimensions(b64(png(640, 480)).slice(0, 16))).toBeUndefined();
    // RIFF that is not WebP (a WAV file).
    expect(
      imageDimensions(b64(Buffer.concat([Buffer.from('RIFF\x24\0\0\0WAVEfmt ', 'latin1'), Buffer.alloc(24)]))),
    ).toBeUndefined();
  });
});

const img = (p: Partial<ImagePart> = {}): ImagePart => ({ type: 'image', ...p });

describe('image token rules', () => {
  it('Anthropic: width × height / 750, rounded up', () => {
    expect(imageTokens(img({ width: 1000, height: 1000 }), 'claude')).toBe(Math.ceil(1e6 / 750));
    expect(imageTokens(img({ width: 1000, height: 1000 }), 'claude')).toBe(1334);
    expect(imageTokens(img({ width: 200, height: 100 }), 'claude')).toBe(27);
  });

  it('Anthropic: a 4000×3000 photo is fitted within 1568 px and then 1.15 megapixels', () => {
    // 1568 on the long edge → 1568 × 1176 = 1.84 MP, then scaled to 1.15 MP with the same aspect.
    const w1 = 1568;
    const h1 = (3000 * 1568) / 4000;
    expect(h1).toBe(1176);
    const s = Math.sqrt(1_150_000 / (w1 * h1));
    const expected = Math.ceil((w1 * s * h1 * s) / 750);
    expect(expected).toBe(1534);
    expect(imageTokens(img({ width: 4000, height: 3000 }), 'claude')).toBe(1534);
    // Only the edge rule applies to a long strip: 5000×500 → 1568×156.8.
    expect(imageTokens(img({ width: 5000, height: 500 }), 'claude')).toBe(Math.ceil((1568 * 156.8) / 750));
    // Nothing exceeds the 1.15 MP budget.
    for (const [w, h] of [
      [8000, 8000],
      [1568, 1568],
      [1200, 1000],
      [10_000, 7],
    ] as const) {
      expect(imageTokens(img({ width: w, height: h }), 'claude')).toBeLessThanOrEqual(1534);
    }
  });

  it('OpenAI high detail: 85 + 170 per 512-px tile after fitting 2048 and a 768-px short side', () => {
    expect(imageTokens(img({ width: 1024, height: 1024 }), 'gpt')).toBe(765);
    // OpenAI's own worked example: 2048 × 4096 → 1024 × 2048 → 768 × 1536 → 2 × 3 tiles → 1105.
    expect(imageTokens(img({ width: 2048, height: 4096 }), 'gpt')).toBe(1105);
    expect(imageTokens(img({ width: 256, height: 256 }), 'gpt')).toBe(255);
    expect(imageTokens(img({ width: 513, height: 100 }), 'gpt')).toBe(85 + 2 * 170);
  });

  it('Gemini: 258 up to 384 px on both sides, else 258 per 768-px tile', () => {
    expect(imageTokens(img({ width: 384, height: 384 }), 'gemini')).toBe(258);
    expect(imageTokens(img({ width: 10, height: 300 }), 'gemini')).toBe(258);
    expect(imageTokens(img({ width: 385, height: 100 }), 'gemini')).toBe(258);
    expect(imageTokens(img({ width: 1000, height: 1000 }), 'gemini')).toBe(4 * 258);
    expect(imageTokens(img({ width: 1536, height: 769 }), 'gemini')).toBe(4 * 258);
  });

  it('other providers: priced like Anthropic, downscaling included', () => {
    expect(imageTokens(img({ width: 1000, height: 1000 }), 'other')).toBe(1334);
    expect(imageTokens(img({ width: 30, height: 25 }), 'other')).toBe(1);
    expect(imageTokens(img({ width: 4000, height: 3000 }), 'other')).toBe(
      imageTokens(img({ width: 4000, height: 3000 }), 'claude'),
    );
  });

  it('reads dimensions from the data when the part does not give them', () => {
    expect(imageTokens(img({ data: b64(png(1000, 1000)) }), 'claude')).toBe(1334);
    expect(imageTokens(img({ data: b64(jpeg(DQT, sof(0xc0, 1024, 1024), DHT)) }), 'gpt')).toBe(765);
    expect(imageTokens(img({ data: b64(gif(300, 200)) }), 'gemini')).toBe(258);
    expect(imageTokens(img({ data: b64(webpVP8X(4000, 3000)) }), 'claude')).toBe(1534);
    // One known side is not enough: the header decides.
    expect(imageTokens(img({ width: 1000, data: b64(png(200, 100)) }), 'claude')).toBe(27);
  });

  it('declared dimensions win over the header', () => {
    expect(imageTokens(img({ width: 1000, height: 1000, data: b64(png(200, 100)) }), 'claude')).toBe(1334);
  });

  it('uses the documented default per family when dimensions are unknown', () => {
    expect(DEFAULT_IMAGE_TOKENS).toEqual({ claude: 1600, gpt: 765, gemini: 258, other: 1000 });
    for (const family of PROVIDER_FAMILIES) {
      expect(imageTokens(img(), family)).toBe(DEFAULT_IMAGE_TOKENS[family]);
      expect(imageTokens(img({ url: 'https://example.com/a.png', mediaType: 'image/png' }), family)).toBe(
        DEFAULT_IMAGE_TOKENS[family],
      );
      expect(imageTokens(img({ data: 'AAAA', byteSize: 3 }), family)).toBe(DEFAULT_IMAGE_TOKENS[family]);
      expect(imageTokens(img({ width: 500 }), family)).toBe(DEFAULT_IMAGE_TOKENS[family]);
      expect(imageTokens(img({ width: 0, height: 0 }), family)).toBe(DEFAULT_IMAGE_TOKENS[family]);
    }
  });

  it('the defaults are what each rule gives for the largest image kept without downscaling', () => {
    // Claude keeps ~1.15 MP: about 1,534–1,600 tokens; the default sits at the top of that range.
    expect(imageTokens(img({ width: 1092, height: 1092 }), 'claude')).toBeGreaterThan(1500);
    expect(imageTokens(img({ width: 1092, height: 1092 }), 'claude')).toBeLessThanOrEqual(DEFAULT_IMAGE_TOKENS.claude);
    expect(imageTokens(img({ width: 1024, height: 1024 }), 'gpt')).toBe(DEFAULT_IMAGE_TOKENS.gpt);
    expect(imageTokens(img({ width: 384, height: 384 }), 'gemini')).toBe(DEFAULT_IMAGE_TOKENS.gemini);
  });
});
