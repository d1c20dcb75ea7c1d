/**
 * writeSessionChunks: the text writeSession makes, in pieces that each end at the end of a line — what `compact --out`
 * streams to its file. Checked on the bundled example and a generated tree session, as read and after a compaction,
 * with a line of two records, and with every record redacted (an export).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compact } from '../compaction/compact.js';
import { ExtractiveSummarizer } from '../compaction/summarizers/extractive.js';
import { MemoryResultStore } from '../compaction/memory-result-store.js';
import { EXAMPLE_PI, generatedPiSession } from '../../test/support/fixture-transcripts.js';
import { jsonlChunks } from './jsonl.js';
import { writePiChunks } from './pi-write.js';
import { parseSession, readSession } from './read.js';
import { writeSession, writeSessionChunks } from './write.js';

const SECRET = 'ghp_4f9Kq2LmN8pR3sT6vW1xY5zA7bC0dE2gH4jK';

async function sessions() {
  const example = await readSession(EXAMPLE_PI);
  const generated = parseSession(generatedPiSession(), { source: 'generated' });
  const compacted = await readSession(EXAMPLE_PI);
  await compact(compacted, {
    target: 400,
    force: true,
    summarizer: new ExtractiveSummarizer(),
    store: new MemoryResultStore(),
  });
  expect(compacted.entries.some((e) => e.compaction?.source === 'abridge')).toBe(true);
  // Two records on one line (pi's own files hold such lines) and a secret in a user's record.
  const lines = generatedPiSession().trimEnd().split('\n');
  const secretLine = lines[2]!.replace(/"text":"/, `"text":"token ${SECRET} `);
  const shared = parseSession(`${[lines[0], `${lines[1]!}${lines[2]!}`, secretLine, ...lines.slice(3)].join('\n')}\n`, {
    source: 'shared',
  });
  expect(shared.entries.some((e) => e.sameLineAsPrevious)).toBe(true);
  return { example, generated, compacted, shared };
}

describe('writeSessionChunks', () => {
  it('joins to exactly what writeSession writes, each piece but the last ending a line', async () => {
    const all = await sessions();
    for (const [name, s] of Object.entries(all)) {
      for (const redactOriginal of [false, true]) {
        const whole = writeSession(s, 'pi', { redactOriginal });
        for (const size of [1, 300, 1 << 20]) {
          const pieces = [...writePiChunks(s, {}, size)];
          const chunks = [...writeSessionChunks(s, 'pi', { redactOriginal })];
          expect(chunks.join(''), `${name} redactOriginal=${redactOriginal}`).toBe(whole);
          if (!redactOriginal) expect(pieces.join(''), `${name} at ${size}`).toBe(writeSession(s, 'pi'));
          if (size === 1 && name !== 'shared') expect(pieces.length).toBeGreaterThan(3);
          for (const p of pieces.slice(0, -1)) expect(p.endsWith('\n'), `${name}: a piece ends a line`).toBe(true);
        }
      }
    }
    // The export's redaction reached the user's own record in the streamed text too.
    const exported = [...writeSessionChunks(all.shared, 'pi', { redactOriginal: true })].join('');
    expect(exported).not.toContain(SECRET);
    expect([...writeSessionChunks(all.shared, 'pi')].join('')).toContain(SECRET);
  });

  it('jsonlChunks: any records, any piece size — the pieces join to the whole, and never split a shared line', () => {
    const item = fc.record({
      text: fc.string({ maxLength: 40 }).map((t) => t.replace(/\n/g, ' ')),
      sameLineAsPrevious: fc.boolean(),
      blankLinesBefore: fc.nat(2),
      lazy: fc.boolean(),
    });
    fc.assert(
      fc.property(
        fc.array(item, { maxLength: 30 }),
        fc.integer({ min: 1, max: 200 }),
        fc.boolean(),
        fc.nat(2),
        (items, size, finalNewline, trailingBlankLines) => {
          const lines = items.map((it) => ({
            text: it.lazy ? () => it.text : it.text,
            sameLineAsPrevious: it.sameLineAsPrevious,
            blankLinesBefore: it.blankLinesBefore,
          }));
          const layout = { finalNewline, trailingBlankLines };
          const whole = [...jsonlChunks(lines, layout, Number.POSITIVE_INFINITY)].join('');
          const pieces = [...jsonlChunks(lines, layout, size)];
          expect(pieces.join('')).toBe(whole);
          let at = 0;
          for (const p of pieces.slice(0, -1)) {
            at += p.length;
            // A piece ends a line, and the record after it starts a line of its own.
            expect(whole[at - 1]).toBe('\n');
          }
          // The expected text, built the plain way.
          let expected = '';
          items.forEach((it, i) => {
            if (i > 0 && !it.sameLineAsPrevious) expected += '\n';
            expected += '\n'.repeat(it.blankLinesBefore) + it.text;
          });
          if (items.length && finalNewline) expected += '\n';
          expected += '\n'.repeat(trailingBlankLines);
          expect(whole).toBe(expected);
        },
      ),
    );
  });
});
