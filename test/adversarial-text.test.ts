// Regular expressions on untrusted text run in linear time (issue 34, item 2). For each scanner of transcript, tool or
// model text, 1 MB of an attack on the patterns it used to run (a long run of the class a pattern repeats, with a tail
// that makes it fail; many near-prefixes) must take at most 5× as long as 1 MB of ordinary text through the same
// scanner, measured in the same run (medians of 3), with a floor of 50 ms so that a tiny ordinary time does not make
// it flaky. Before the rewrite, 128 KB of spaces in a reply's path line made `compact` take 18 s, and Aider's run
// header took 58 s on 256 KB.
//
// A fuzzed property does the same with attacks made of random units of each scanner's characters
// (ABRIDGE_FUZZ_CASES per scanner, default 2; `bench/adversarial.js` prints the timings as a table).
import fc from 'fast-check';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { medianMs, ordinaryText, type Scanner, scanners } from './support/adversarial.js';

/** 1 MB (ABRIDGE_ADVERSARIAL_SIZE to try another size: a quadratic scan takes minutes on 1 MB). */
const SIZE = Number(process.env.ABRIDGE_ADVERSARIAL_SIZE ?? 1 << 20);
const FUZZ_SIZE = 1 << 17;
const FUZZ_CASES = Number(process.env.ABRIDGE_FUZZ_CASES ?? 2);
const RATIO = 5;
const FLOOR_MS = 50;
/** The tree under test: this one's src/, or another (ABRIDGE_ADVERSARIAL_SRC, e.g. main's, to see the test fail there). */
const SRC = process.env.ABRIDGE_ADVERSARIAL_SRC ?? fileURLToPath(new URL('../src/', import.meta.url));

const list = await scanners(SRC);
/** Within the ratio of ordinary text, or under the floor. */
const allowed = (ordinary: number) => Math.max(RATIO * ordinary, FLOOR_MS);

describe('scanners of untrusted text take linear time: 1 MB of an attack vs 1 MB of ordinary text', () => {
  beforeAll(() => {
    // Warm each scanner (compilation, caches) so that the first timing is not the cold one.
    for (const s of list) s.run(s.frame(ordinaryText(4096)));
  });
  it.each(list.map((s) => [s.name, s] as [string, Scanner]))('%s', (_name, s) => {
    const attack = s.frame(s.attack(SIZE));
    const ordinary = s.frame(ordinaryText(SIZE));
    const tOrdinary = medianMs(() => s.run(ordinary));
    const tAttack = medianMs(() => s.run(attack));
    expect(
      tAttack,
      `${s.name}: ${tAttack.toFixed(1)} ms on the attack, ${tOrdinary.toFixed(1)} ms on ordinary text`,
    ).toBeLessThanOrEqual(allowed(tOrdinary));
  });
});

describe('fuzzed attacks: random runs of each scanner characters stay within the ratio', () => {
  it.each(list.map((s) => [s.name, s] as [string, Scanner]))(
    '%s',
    (_name, s) => {
      const tOrdinary = medianMs(() => s.run(s.frame(ordinaryText(FUZZ_SIZE))));
      fc.assert(
        fc.property(
          fc.array(fc.constantFrom(...s.alphabet), { minLength: 1, maxLength: 6 }),
          fc.constantFrom('', 'x', '\u0001', '\n', ']'),
          (unit, tail) => {
            const text = unit.join('');
            const core = text.repeat(Math.ceil(FUZZ_SIZE / text.length)).slice(0, FUZZ_SIZE) + tail;
            const input = s.frame(core);
            const t = medianMs(() => s.run(input), 1);
            // A slow single run is timed again (the machine may have been busy): a super-linear scan stays slow.
            return t <= allowed(tOrdinary) || medianMs(() => s.run(input)) <= allowed(tOrdinary);
          },
        ),
        { numRuns: FUZZ_CASES },
      );
      // Each case scans 128 KB at least once (up to ~20 ms for the heaviest scanners): thousands need more than a minute.
    },
    Math.max(60_000, FUZZ_CASES * 60),
  );
});
