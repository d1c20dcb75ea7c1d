// pathsIn scans in linear time what PATH_TOKEN (a quadratic regex on runs of `+`) finds: the same tokens, in order.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { PATH_TOKEN, pathsIn } from './records.js';
import { isFilePath } from './records.js';
import { trimEndOf } from '../model/text.js';

function reference(text: string): string[] {
  const out: string[] = [];
  for (const m of text.matchAll(PATH_TOKEN)) {
    const p = trimEndOf(m[1]!, '.,:;');
    if (isFilePath(p)) out.push(p);
  }
  return out;
}

const RUNS = Number(process.env.ABRIDGE_FUZZ_CASES ?? 2000);

describe('pathsIn finds what PATH_TOKEN finds', () => {
  it('on text made of the characters that matter (generated)', () => {
    const pieces = [
      'a',
      'b.ts',
      '+',
      '/',
      '.',
      '..',
      '~',
      ':',
      '$',
      '%',
      '@',
      '-',
      '_',
      ' ',
      'src',
      'x.py',
      '\n',
      'c++',
      '/.',
      '//',
    ];
    fc.assert(
      fc.property(fc.array(fc.constantFrom(...pieces), { maxLength: 40 }), (parts) => {
        const text = parts.join('');
        expect(pathsIn(text)).toEqual(reference(text));
      }),
      { numRuns: RUNS },
    );
  });

  it('on ordinary text and commands', () => {
    for (const text of [
      'edit src/app.ts and ./lib/x.js, then ~/notes/todo.md; see a+b.ts and c++/src/main.cpp',
      'cat ../a/b/c.json | jq .x > out/result.json 2>&1; rm -rf node_modules/.cache/',
      'Fixed .env and .gitignore; Makefile, README, go.mod; http://host:8080/api/v1/items.json',
      'x:+.+.+.a/b.ts +~/x/y.ts +../p/q.rs +/abs/path.go a+a+a+a/ z.ts',
    ])
      expect(pathsIn(text), text).toEqual(reference(text));
  });
});
