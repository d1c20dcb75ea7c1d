import {
  chmodSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { writeFileAtomic } from './atomic-write.js';

const root = realpathSync(mkdtempSync(join(tmpdir(), 'abridge-atomic-')));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let n = 0;
const fresh = () => {
  const d = join(root, `case-${n++}`);
  mkdirSync(d);
  return d;
};

describe('writeFileAtomic', () => {
  it('creates a new file with mode 0600 and leaves no temp file', async () => {
    const d = fresh();
    await writeFileAtomic(join(d, 'out.jsonl'), 'hello\n');
    expect(readFileSync(join(d, 'out.jsonl'), 'utf8')).toBe('hello\n');
    expect(statSync(join(d, 'out.jsonl')).mode & 0o777).toBe(0o600);
    expect(readdirSync(d)).toEqual(['out.jsonl']);
  });

  it('writes what a producer gives, piece by piece past the buffer, in order', async () => {
    const d = fresh();
    const f = join(d, 'big.jsonl');
    await writeFileAtomic(f, async (write) => {
      for (let i = 0; i < 3000; i++) await write(`${String(i).padStart(4, '0')}${'x'.repeat(995)}\n`);
      await write(new Uint8Array([0x65, 0x6e, 0x64]));
    });
    const text = readFileSync(f, 'utf8');
    expect(text.length).toBe(3000 * 1000 + 3);
    expect(text.slice(0, 4)).toBe('0000');
    expect(text.slice(2999 * 1000, 2999 * 1000 + 4)).toBe('2999');
    expect(text.endsWith('xx\nend')).toBe(true);
    expect(readdirSync(d)).toEqual(['big.jsonl']);
  });

  it('leaves no file and no temp file when the producer fails midway', async () => {
    const d = fresh();
    const f = join(d, 'half.jsonl');
    await expect(
      writeFileAtomic(f, async (write) => {
        await write('x'.repeat(3 << 20));
        throw new Error('the input ended early');
      }),
    ).rejects.toMatchObject({ code: 'FILE_UNWRITABLE', message: expect.stringContaining('the input ended early') });
    expect(readdirSync(d)).toEqual([]);
  });

  it('keeps the mode of a file it replaces', async () => {
    const d = fresh();
    const f = join(d, 'a.txt');
    writeFileSync(f, 'old');
    chmodSync(f, 0o640);
    await writeFileAtomic(f, 'new');
    expect(readFileSync(f, 'utf8')).toBe('new');
    expect(statSync(f).mode & 0o777).toBe(0o640);
  });

  it('leaves the target untouched and removes its temp file when the write fails before the rename', async () => {
    const d = fresh();
    const f = join(d, 'keep.txt');
    writeFileSync(f, 'the original, whole');
    let temp = '';
    await expect(
      writeFileAtomic(f, 'x'.repeat(100_000), {
        beforeRename: (t) => {
          temp = t;
          expect(readFileSync(t, 'utf8').length).toBe(100_000);
          throw Object.assign(new Error('no space left'), { code: 'ENOSPC' });
        },
      }),
    ).rejects.toMatchObject({
      code: 'FILE_UNWRITABLE',
      message: `${f}: cannot write (ENOSPC: no space left on the device); the file was left as it was`,
    });
    expect(temp).not.toBe('');
    expect(readFileSync(f, 'utf8')).toBe('the original, whole');
    expect(readdirSync(d)).toEqual(['keep.txt']);
  });

  it('names the file and the reason: a directory, a missing folder, a folder it may not write', async () => {
    const d = fresh();
    mkdirSync(join(d, 'sub'));
    await expect(writeFileAtomic(join(d, 'sub'), 'x')).rejects.toMatchObject({
      code: 'FILE_UNWRITABLE',
      message: expect.stringContaining('sub: cannot write (EISDIR'),
    });
    await expect(writeFileAtomic(join(d, 'nope', 'f'), 'x')).rejects.toMatchObject({
      code: 'FILE_UNWRITABLE',
      message: expect.stringContaining('cannot write (ENOENT'),
    });
    if (process.getuid?.() !== 0) {
      const ro = join(d, 'ro');
      mkdirSync(ro);
      chmodSync(ro, 0o500);
      await expect(writeFileAtomic(join(ro, 'f'), 'x')).rejects.toMatchObject({
        code: 'FILE_UNWRITABLE',
        message: expect.stringContaining('EACCES'),
      });
    }
  });

  it('writes through a symbolic link: the link stays, its target gets the new content', async () => {
    const d = fresh();
    writeFileSync(join(d, 'real.txt'), 'old');
    symlinkSync('real.txt', join(d, 'link.txt'));
    await writeFileAtomic(join(d, 'link.txt'), 'new');
    expect(readFileSync(join(d, 'real.txt'), 'utf8')).toBe('new');
    expect(realpathSync(join(d, 'link.txt'))).toBe(join(d, 'real.txt'));
  });
});
