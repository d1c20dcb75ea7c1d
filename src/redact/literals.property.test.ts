// LiteralScanner.present(text) is exactly the literals `text.includes` finds: for any set of literals (one character,
// sharing their first pair, inside one another, non-ASCII) and any text made of them and of noise.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { LiteralScanner } from './literals.js';

const RUNS = Number(process.env.ABRIDGE_PROPERTY_RUNS ?? 200);

describe('LiteralScanner', () => {
  it('finds exactly the literals that occur, overlapping and nested ones too', () => {
    const alphabet = fc.constantFrom('a', 'b', 'ab', '-', '=', 'é', '😀', 'sk-', 'do', '\n');
    const literal = fc.array(alphabet, { minLength: 1, maxLength: 4 }).map((xs) => xs.join(''));
    fc.assert(
      fc.property(
        fc.array(literal, { minLength: 1, maxLength: 12 }),
        fc.array(fc.oneof(alphabet, fc.string({ maxLength: 6 })), { maxLength: 40 }),
        (literals, pieces) => {
          const text = pieces.join('');
          const scanner = new LiteralScanner(literals);
          const expected = new Set(literals.filter((l) => text.includes(l)));
          expect(scanner.present(text)).toEqual(expected);
          // The same scanner again (its per-call state starts over).
          const longer = `${literals[0]!}${text}${literals[0]!}`;
          expect(scanner.present(longer)).toEqual(new Set(literals.filter((l) => longer.includes(l))));
        },
      ),
      { numRuns: RUNS },
    );
  });

  it('a literal at the very end, a one-character text, and an empty set', () => {
    expect(new LiteralScanner(['xy', 'z']).present('aaxy')).toEqual(new Set(['xy']));
    expect(new LiteralScanner(['xy', 'z']).present('z')).toEqual(new Set(['z']));
    expect(new LiteralScanner(['xy']).present('x')).toEqual(new Set());
    expect(new LiteralScanner([]).present('anything')).toEqual(new Set());
  });
});
