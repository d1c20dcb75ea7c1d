// The one-pass search for the rules' heads (findSecrets runs a rule only when its head occurs) must never lose a match:
// on random text with planted secrets, near misses and heads run together, the matches are those of every rule run
// over the whole text.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { issuerSamples } from '../../test/support/secrets.js';
import { findSecrets } from './redact.js';
import { SECRET_RULES, type SecretRule } from './rules.js';

const RUNS = Number(process.env.ABRIDGE_PROPERTY_RUNS ?? 200);
/**
 * The same rules without their heads and hints: each one scans the whole text, as before the one-pass search for the
 * literals that let findSecrets skip a rule.
 */
const WITHOUT_HEADS: SecretRule[] = SECRET_RULES.map(({ head: _head, hints: _hints, ...rule }) => rule);

describe("findSecrets' search for heads", () => {
  it('finds exactly what every rule run over the whole text finds', () => {
    const samples = issuerSamples(7);
    const heads = [...new Set(SECRET_RULES.flatMap((r) => (r.head ? [r.head] : [])))];
    const piece = fc.oneof(
      fc.constantFrom(...samples.map((s) => s.secret)),
      fc.constantFrom(...samples.map((s) => s.nearMiss)),
      fc.constantFrom(...heads),
      fc.string({ maxLength: 40 }),
      fc.constantFrom(' ', '\n', '"', '\\n', '=', ':', '/', 'x'),
    );
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 30 }), (pieces) => {
        const text = pieces.join('');
        expect(findSecrets(text)).toEqual(findSecrets(text, WITHOUT_HEADS));
      }),
      { numRuns: RUNS },
    );
  });

  it('a head inside another head, and heads overlapping, each count', () => {
    const samples = issuerSamples(3);
    for (const s of samples) {
      const text = `x${s.secret.slice(0, 3)}${s.secret} ${s.secret}${s.secret.slice(0, 2)}`;
      expect(findSecrets(text)).toEqual(findSecrets(text, WITHOUT_HEADS));
    }
  });
});
