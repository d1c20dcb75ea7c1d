import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Problem } from '../model/types.js';
import { readJsonlBuffer, writeJsonl, type JsonlItem } from './jsonl.js';

// Through JSON once, so values are what a reader can get back (-0 is written as 0).
const record = fc
  .dictionary(fc.string({ maxLength: 6 }), fc.jsonValue({ maxDepth: 3 }), { maxKeys: 5 })
  .map((r) => JSON.parse(JSON.stringify(r)) as Record<string, unknown>);

/** A physical line: one object, two objects glued together, or garbage. */
const line = fc.oneof(
  { weight: 6, arbitrary: record.map((r) => ({ text: JSON.stringify(r), objects: [r] })) },
  {
    weight: 1,
    arbitrary: fc
      .tuple(record, record)
      .map(([a, b]) => ({ text: JSON.stringify(a) + JSON.stringify(b), objects: [a, b] })),
  },
  {
    weight: 1,
    arbitrary: fc
      .constantFrom('{"a":', 'not json', '[1,2]', '42', '{"x":1,}')
      .map((t) => ({ text: t, objects: [] as unknown[] })),
  },
);

function read(text: string) {
  const items: JsonlItem[] = [];
  const problems: Problem[] = [];
  const layout = readJsonlBuffer(text, { item: (i) => items.push(i), problem: (p) => problems.push(p) });
  return { items, problems, layout };
}

describe('JSONL reader properties', () => {
  it('never throws, recovers every intact object in order, and reports a problem for every other line', () => {
    fc.assert(
      fc.property(fc.array(line, { maxLength: 30 }), fc.boolean(), (lines, finalNewline) => {
        const text = lines.map((l) => l.text).join('\n') + (finalNewline && lines.length ? '\n' : '');
        const { items, problems } = read(text);
        const records = items.filter((i) => i.kind === 'record').map((i) => (i as { value: unknown }).value);
        expect(records).toEqual(
          lines.flatMap((l) => l.objects.filter((o) => typeof o === 'object' && o !== null && !Array.isArray(o))),
        );
        const badLines = lines.map((l, i) => ({ l, n: i + 1 })).filter(({ l }) => l.objects.length !== 1);
        for (const { n } of badLines) expect(problems.some((p) => p.line === n)).toBe(true);
      }),
      { numRuns: 300 },
    );
  });

  it('writing what was read gives back the same text', () => {
    fc.assert(
      fc.property(fc.array(line, { maxLength: 30 }), fc.nat(2), fc.boolean(), (lines, trailing, finalNewline) => {
        if (lines.length === 0) return;
        const text =
          lines.map((l) => l.text).join('\n') +
          (finalNewline ? '\n' : '') +
          (finalNewline ? '\n'.repeat(trailing) : '');
        const { items, layout } = read(text);
        const out = writeJsonl(
          items.map((i) => ({
            text: i.kind === 'record' ? JSON.stringify(i.value) : i.text,
            sameLineAsPrevious: i.kind === 'record' && i.sameLineAsPrevious,
            blankLinesBefore: i.blankLinesBefore,
          })),
          layout,
        );
        expect(out).toBe(text);
      }),
      { numRuns: 300 },
    );
  });
});
