import * as fs from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { FileResultStore } from '../store/file-result-store.js';
import { MemoryResultStore } from '../compaction/memory-result-store.js';
import { readResultTool } from './read-result.js';

const lines = (n: number) => Array.from({ length: n }, (_, i) => `line ${i}\n`).join('');
const range = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => `line ${from + i}\n`).join('');

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

describe('read_result', () => {
  it('describes itself with a JSON Schema for providers', () => {
    const tool = readResultTool(new MemoryResultStore());
    expect(tool.name).toBe('read_result');
    expect(tool.inputSchema).toMatchObject({
      type: 'object',
      required: ['ref_id'],
      properties: {
        ref_id: { type: 'string' },
        offset: { type: 'integer', minimum: 0 },
        limit: { type: 'integer', minimum: 1, maximum: 2000 },
      },
    });
  });

  it('answers the first 200 lines by default, with a header giving the next offset', async () => {
    const store = new MemoryResultStore();
    const { refId } = await store.put(lines(450));
    const out = await readResultTool(store).run({ ref_id: refId });
    expect(out).toBe(`[ref ${refId} · lines 0–199 of 450 · next: offset 200]\n${range(0, 200)}`);
  });

  it('reads from offset, limit lines, and says when the end is reached', async () => {
    const store = new MemoryResultStore();
    const { refId } = await store.put(lines(450));
    const tool = readResultTool(store);
    expect(await tool.run({ ref_id: refId, offset: 440, limit: 5 })).toBe(
      `[ref ${refId} · lines 440–444 of 450 · next: offset 445]\n${range(440, 445)}`,
    );
    expect(await tool.run({ ref_id: refId, offset: 445, limit: 100 })).toBe(
      `[ref ${refId} · lines 445–449 of 450 · end]\n${range(445, 450)}`,
    );
    expect(await tool.run({ ref_id: refId, offset: 449, limit: 1 })).toBe(
      `[ref ${refId} · line 449 of 450 · end]\nline 449\n`,
    );
    expect(await tool.run({ ref_id: refId, offset: 500 })).toBe(
      `[ref ${refId} · no lines at offset 500: the result has 450 lines (offsets 0–449) · end]`,
    );
    expect(await tool.run({ ref_id: refId, limit: 2000 })).toBe(
      `[ref ${refId} · lines 0–449 of 450 · end]\n${range(0, 450)}`,
    );
  });

  it('reading slice after slice by the header reproduces the result exactly', async () => {
    const store = new MemoryResultStore();
    const text = `${lines(1234)}tail without newline`;
    const { refId } = await store.put(text);
    const tool = readResultTool(store);
    let offset: number | null = 0;
    let got = '';
    while (offset !== null) {
      const out = await tool.run({ ref_id: refId, offset, limit: 300 });
      const header = out.slice(0, out.indexOf(']') + 1);
      got += out.slice(header.length + 1);
      const next = /next: offset ([\d,]+)\]$/.exec(header);
      offset = next ? Number(next[1]!.replace(/,/g, '')) : null;
    }
    expect(got).toBe(text);
  });

  it('an unknown ref is an error naming the ref', async () => {
    const tool = readResultTool(new MemoryResultStore());
    expect(await tool.run({ ref_id: 'r_0000000000000000' })).toBe(
      'Error: No stored result with ref_id "r_0000000000000000" in the in-memory result store. A ref_id is "r_" followed by 16 lowercase hex digits, e.g. "r_0123456789abcdef"; use one exactly as given where the result was offloaded.',
    );
    expect(await tool.run({ ref_id: 'abc' })).toBe(
      'Error: Invalid ref_id "abc": expected "r_" followed by 16 lowercase hex digits, e.g. "r_0123456789abcdef".',
    );
  });

  it('works over a file store too', async () => {
    const dir = fs.realpathSync(fs.mkdtempSync(join(tmpdir(), 'abridge-read-result-')));
    dirs.push(dir);
    const store = new FileResultStore(dir);
    const { refId } = await store.put('a\nb\nc');
    expect(await readResultTool(store).run({ ref_id: refId, offset: 1 })).toBe(
      `[ref ${refId} · lines 1–2 of 3 · end]\nb\nc`,
    );
    expect(await readResultTool(store).run({ ref_id: 'r_0000000000000000' })).toMatch(
      /^Error: No stored result with ref_id "r_0000000000000000" in the result store at /,
    );
  });

  it('rejects bad input with an error naming the field', async () => {
    const tool = readResultTool(new MemoryResultStore());
    const out = await Promise.all([
      tool.run({}),
      tool.run({ ref_id: 7 }),
      tool.run({ ref_id: 'r_0000000000000000', offset: -1 }),
      tool.run({ ref_id: 'r_0000000000000000', offset: 1.5 }),
      tool.run({ ref_id: 'r_0000000000000000', limit: 0 }),
      tool.run({ ref_id: 'r_0000000000000000', limit: 2001 }),
    ]);
    expect(out).toEqual([
      'Error: invalid input for read_result: ref_id: Invalid input: expected string, received undefined',
      'Error: invalid input for read_result: ref_id: Invalid input: expected string, received number',
      'Error: invalid input for read_result: offset: Too small: expected number to be >=0',
      'Error: invalid input for read_result: offset: Invalid input: expected int, received number',
      'Error: invalid input for read_result: limit: Too small: expected number to be >=1',
      'Error: invalid input for read_result: limit: Too big: expected number to be <=2000',
    ]);
  });
});

describe('read_result: capped answers', () => {
  it('2,000 lines of 4 KB come back as one answer within the cap, with the offset to read on; reading on reaches the end', async () => {
    const store = new MemoryResultStore();
    const line = (i: number) => `${String(i).padStart(5, '0')} ${'x'.repeat(4090)}\n`;
    const text = Array.from({ length: 2000 }, (_, i) => line(i)).join('');
    const { refId } = await store.put(text);
    const tool = readResultTool(store);
    const first = await tool.run({ ref_id: refId, limit: 2000 });
    expect(Buffer.byteLength(first)).toBeLessThanOrEqual(32 * 1024);
    expect(first.split('\n')[0]).toBe(`[ref ${refId} · lines 0–6 of 2,000 · next: offset 7]`);
    expect(first.split('\n')[1]).toBe(
      '[answer capped at 32,768 bytes / 8,000 tokens: 7 of the 2,000 lines asked for are shown; read on with offset 7; lines over 2,000 characters are shown in pieces, each piece on a line of its own]',
    );
    // With lines under the split length, following the headers reads every line exactly once.
    const whole = readResultTool(store, { limits: { maxLineChars: 5000 } });
    let offset = 0;
    let seen = '';
    for (let k = 0; k < 400 && offset !== -1; k++) {
      const out = await whole.run({ ref_id: refId, offset, limit: 2000 });
      expect(Buffer.byteLength(out)).toBeLessThanOrEqual(32 * 1024);
      const next = /next: offset ([\d,]+)/.exec(out.split('\n')[0]!)?.[1];
      seen += out
        .split('\n')
        .slice(out.split('\n')[1]!.startsWith('[answer capped') ? 2 : 1)
        .join('\n');
      offset = next === undefined ? -1 : Number(next.replace(/,/g, ''));
    }
    expect(seen).toBe(text);
  });

  it('a 5 MB single line is cut to the cap and says so; long lines are split into pieces', async () => {
    const store = new MemoryResultStore();
    const { refId } = await store.put(`${'y'.repeat(5_000_000)}\nshort\n`);
    const out = await readResultTool(store).run({ ref_id: refId });
    expect(Buffer.byteLength(out)).toBeLessThanOrEqual(32 * 1024);
    expect(out.split('\n')[0]).toBe(`[ref ${refId} · line 0 of 2 · next: offset 1]`);
    expect(out).toContain('line 0 is 5,000,001 characters long: only its first');
    expect(out).toContain('lines over 2,000 characters are shown in pieces');
    const small = readResultTool(store, { limits: { maxLineChars: 100, maxBytes: 100_000, maxTokens: 100_000 } });
    const { refId: r2 } = await store.put(`${'z'.repeat(250)}\nend\n`);
    expect(await small.run({ ref_id: r2 })).toBe(
      `[ref ${r2} · lines 0–1 of 2 · end]\n[lines over 100 characters are shown in pieces, each piece on a line of its own]\n${'z'.repeat(100)}\n${'z'.repeat(100)}\n${'z'.repeat(50)}\nend\n`,
    );
  });

  it('a 1 MB ref_id is refused without being echoed', async () => {
    const huge = `r_${'a'.repeat(1_000_000)}`;
    const out = await readResultTool(new MemoryResultStore()).run({ ref_id: huge });
    expect(out.length).toBeLessThan(300);
    expect(out).toBe(
      `Error: Invalid ref_id "r_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"… (1,000,002 characters): expected "r_" followed by 16 lowercase hex digits, e.g. "r_0123456789abcdef".`,
    );
  });
});
