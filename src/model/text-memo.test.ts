import { describe, expect, it } from 'vitest';
import { TextMemo } from './text-memo.js';

describe('TextMemo', () => {
  it('computes a text once, and starts over when the texts held would pass the bound', () => {
    const memo = new TextMemo<number>(10);
    let calls = 0;
    const len = (t: string) => {
      calls++;
      return t.length;
    };
    expect(memo.get('abcd', len)).toBe(4);
    expect(memo.get('abcd', len)).toBe(4);
    expect(calls).toBe(1);
    expect(memo.get('efghij', len)).toBe(6); // 4 + 6 = 10: both held
    expect(memo.get('abcd', len)).toBe(4);
    expect(calls).toBe(2);
    expect(memo.get('k', len)).toBe(1); // 11 > 10: started over, only 'k' held
    expect(memo.get('abcd', len)).toBe(4);
    expect(calls).toBe(4);
  });
});
