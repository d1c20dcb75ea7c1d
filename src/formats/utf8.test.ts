import { isUtf8 } from 'node:buffer';
import { writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { firstInvalidUtf8, utf8ErrorOffset } from './utf8.js';

const CASES = Number(process.env.ABRIDGE_FUZZ_CASES ?? 300);

describe('utf8ErrorOffset', () => {
  it('agrees with Node on whether bytes are UTF-8, and points at a byte the valid prefix cannot extend over', () => {
    const bytes = fc.oneof(
      fc.uint8Array({ maxLength: 24 }),
      fc.string({ unit: 'binary', maxLength: 12 }).map((s) => new Uint8Array(Buffer.from(s))),
      fc
        .tuple(fc.string({ unit: 'binary', maxLength: 8 }), fc.uint8Array({ minLength: 1, maxLength: 3 }))
        .map(([s, b]) => new Uint8Array(Buffer.concat([Buffer.from(s), b]))),
    );
    fc.assert(
      fc.property(bytes, (buf) => {
        const { invalid, incomplete } = utf8ErrorOffset(buf);
        expect(invalid === -1 && incomplete === -1).toBe(isUtf8(buf));
        if (invalid !== -1) expect(isUtf8(buf.subarray(0, invalid))).toBe(true);
        if (incomplete !== -1) expect(isUtf8(buf.subarray(0, incomplete))).toBe(true);
      }),
      { numRuns: CASES * 3 },
    );
  });

  it('knows overlong forms, surrogates and code points past U+10FFFF as invalid', () => {
    for (const bad of [
      [0xc0, 0x80],
      [0xe0, 0x80, 0x80],
      [0xed, 0xa0, 0x80],
      [0xf0, 0x80, 0x80, 0x80],
      [0xf4, 0x90, 0x80, 0x80],
      [0xff],
    ])
      expect(utf8ErrorOffset(new Uint8Array([0x61, ...bad])).invalid).toBe(1);
  });
});

describe('firstInvalidUtf8', () => {
  it('names the line, the byte of the line and the offset in the file, across chunk boundaries', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'abridge-utf8-'));
    const head = Buffer.from(`${'é'.repeat(700_000)}\nab`); // past the 1 MiB read chunk, a character cut at its edge
    const file = join(dir, 'f');
    writeFileSync(file, Buffer.concat([head, Buffer.from([0xe2, 0x28]), Buffer.from('\n')]));
    expect(await firstInvalidUtf8(file)).toEqual({ offset: head.length, line: 2, column: 3 });
    writeFileSync(file, head);
    expect(await firstInvalidUtf8(file)).toBeUndefined();
    writeFileSync(file, Buffer.concat([head, Buffer.from([0xf0, 0x9f])]));
    expect(await firstInvalidUtf8(file)).toEqual({ offset: head.length, line: 2, column: 3 });
  });
});
