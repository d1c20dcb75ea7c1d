import { createReadStream } from 'node:fs';

/**
 * Where bytes stop being UTF-8: the offset of the first byte of the first invalid sequence, `-1` when all of it is
 * valid, or `incomplete` (the offset of a sequence cut off by the end of `buf`, which more bytes may complete).
 */
export function utf8ErrorOffset(buf: Uint8Array): { invalid: number; incomplete: number } {
  let i = 0;
  while (i < buf.length) {
    const b = buf[i]!;
    if (b < 0x80) {
      i++;
      continue;
    }
    let need: number;
    let min: number;
    if (b >= 0xc2 && b <= 0xdf) {
      need = 1;
      min = 0x80;
    } else if (b >= 0xe0 && b <= 0xef) {
      need = 2;
      min = 0x800;
    } else if (b >= 0xf0 && b <= 0xf4) {
      need = 3;
      min = 0x10000;
    } else return { invalid: i, incomplete: -1 };
    let cp = b & (0x3f >> need);
    for (let k = 1; k <= need; k++) {
      if (i + k >= buf.length) return { invalid: -1, incomplete: i };
      const c = buf[i + k]!;
      if ((c & 0xc0) !== 0x80) return { invalid: i, incomplete: -1 };
      cp = (cp << 6) | (c & 0x3f);
      // Overlong, surrogate or past U+10FFFF: known invalid as soon as the second byte is seen.
      if (k === 1 && need >= 2) {
        const top = cp << (6 * (need - 1));
        if (top + (1 << (6 * (need - 1))) - 1 < min || (need === 2 && top >= 0xd800 && top <= 0xdfff) || top > 0x10ffff)
          return { invalid: i, incomplete: -1 };
      }
    }
    i += need + 1;
  }
  return { invalid: -1, incomplete: -1 };
}

/**
 * The first byte of a file that is not UTF-8, with its line (1-based) and its column in bytes (1-based), or
 * undefined when the whole file is UTF-8. Read as a stream: memory stays small whatever the file's size.
 */
export async function firstInvalidUtf8(
  path: string,
): Promise<{ offset: number; line: number; column: number } | undefined> {
  let carry: Uint8Array = new Uint8Array(0);
  let base = 0; // file offset of carry[0]
  let line = 1;
  let lineStart = 0;
  const locate = (buf: Uint8Array, upTo: number) => {
    for (let i = 0; i < upTo; i++)
      if (buf[i] === 0x0a) {
        line++;
        lineStart = base + i + 1;
      }
  };
  for await (const chunk of createReadStream(path, { highWaterMark: 1 << 20 }) as AsyncIterable<Buffer>) {
    const buf = carry.length ? Buffer.concat([carry, chunk]) : chunk;
    const { invalid, incomplete } = utf8ErrorOffset(buf);
    if (invalid !== -1) {
      locate(buf, invalid);
      return { offset: base + invalid, line, column: base + invalid - lineStart + 1 };
    }
    const keep = incomplete === -1 ? buf.length : incomplete;
    locate(buf, keep);
    carry = buf.subarray(keep);
    base += keep;
  }
  if (carry.length) return { offset: base, line, column: base - lineStart + 1 };
  return undefined;
}
