import { describe, expect, it } from 'vitest';
import { forceCompact } from '../compaction/compact.js';
import { parseSession } from '../formats/read.js';
import { MemoryResultStore } from '../compaction/memory-result-store.js';
import { PiTranscript } from '../../test/support/random-session.js';
import { compactContextTool, describeCompaction, type CompactContextOutcome } from './compact-context.js';
import { readResultTool } from './read-result.js';

const LINE =
  'Compacted the context: 158,213 → 54,833 tokens (−65%); 292 → 187 messages. Earlier turns are summarized; use read_result to read cleared tool output.';

const fixed = (r: CompactContextOutcome) => compactContextTool({ compact: async () => r });

describe('compact_context', () => {
  it('takes one optional input, instructions: a closed object schema that tells the model what it is for', () => {
    const tool = fixed({ beforeTokens: 1, afterTokens: 1, beforeMessages: 1, afterMessages: 1 });
    expect(tool.name).toBe('compact_context');
    const schema = tool.inputSchema as { properties: { instructions: { description: string } } };
    expect(tool.inputSchema).toEqual({
      type: 'object',
      properties: { instructions: { type: 'string', maxLength: 2000, description: expect.any(String) } },
      additionalProperties: false,
    });
    expect(tool.inputSchema).not.toHaveProperty('required');
    expect(schema.properties.instructions.description).toMatch(/^What the summary of the earlier turns must keep/);
    expect(tool.description).toContain('Optional `instructions`: what the summary must keep.');
  });

  it('passes the instructions to the compaction it runs, trimmed; none when absent or blank', async () => {
    const asked: { instructions?: string }[] = [];
    const tool = compactContextTool({
      compact: async (input) => {
        asked.push(input);
        return { beforeTokens: 10_000, afterTokens: 4_000, beforeMessages: 40, afterMessages: 12 };
      },
    });
    const line = await tool.run({ instructions: '  Keep the failing test names and the agreed fix.\n' });
    expect(line).toMatch(/^Compacted the context: 10,000 → 4,000 tokens \(−60%\)/);
    await tool.run({});
    await tool.run({ instructions: '   ' });
    expect(asked).toEqual([{ instructions: 'Keep the failing test names and the agreed fix.' }, {}, {}]);
  });

  it('rejects instructions that are not a string, or too long, naming the key; nothing is compacted', async () => {
    let runs = 0;
    const tool = compactContextTool({
      compact: async () => {
        runs++;
        return { beforeTokens: 1, afterTokens: 1, beforeMessages: 1, afterMessages: 1 };
      },
    });
    expect(await tool.run({ instructions: 42 })).toBe(
      'Error: invalid input for compact_context: instructions: Invalid input: expected string, received number',
    );
    expect(await tool.run({ instructions: 'x'.repeat(2001) })).toBe(
      'Error: invalid input for compact_context: instructions: Too big: expected string to have <=2000 characters',
    );
    expect(runs).toBe(0);
  });

  it('answers one line with tokens, the saving and messages', async () => {
    const tool = fixed({
      beforeTokens: 158_213,
      afterTokens: 54_833,
      beforeMessages: 292,
      afterMessages: 187,
      skipped: [],
    });
    expect(await tool.run({})).toBe(LINE);
    expect(await tool.run(undefined)).toBe(LINE);
    expect(await tool.run(null)).toBe(LINE);
  });

  it('rounds the saving, showing <1% rather than 0%', () => {
    expect(
      describeCompaction({ beforeTokens: 100_000, afterTokens: 99_800, beforeMessages: 10, afterMessages: 10 }),
    ).toBe(
      'Compacted the context: 100,000 → 99,800 tokens (−<1%); 10 → 10 messages. Earlier turns are summarized; use read_result to read cleared tool output.',
    );
    expect(describeCompaction({ beforeTokens: 1_000, afterTokens: 5, beforeMessages: 3, afterMessages: 1 })).toBe(
      'Compacted the context: 1,000 → 5 tokens (−100%); 3 → 1 messages. Earlier turns are summarized; use read_result to read cleared tool output.',
    );
  });

  it('says when nothing could be compacted, and why, on one line', async () => {
    const tool = fixed({
      beforeTokens: 3_210,
      afterTokens: 3_210,
      beforeMessages: 12,
      afterMessages: 12,
      skipped: [
        { name: 'clear-tool-results', reason: 'no tool results outside the\nprotected steps' },
        { name: 'summarize', reason: 'nothing old enough to summarize.' },
      ],
    });
    expect(await tool.run({})).toBe(
      'Nothing could be compacted (the context is 3,210 tokens, 12 messages): clear-tool-results: no tool results outside the protected steps; summarize: nothing old enough to summarize.',
    );
    expect(await fixed({ beforeTokens: 50, afterTokens: 50, beforeMessages: 2, afterMessages: 2 }).run({})).toBe(
      'Nothing could be compacted (the context is 50 tokens, 2 messages): no strategy found anything to shorten.',
    );
  });

  it('rejects unknown keys', async () => {
    const tool = fixed({ beforeTokens: 1, afterTokens: 1, beforeMessages: 1, afterMessages: 1 });
    expect(await tool.run({ target: 1000 })).toBe(
      'Error: invalid input for compact_context: input: Unrecognized key: "target"',
    );
    expect(await tool.run('now')).toBe(
      'Error: invalid input for compact_context: input: Invalid input: expected object, received string',
    );
  });

  it('a failing compaction is an error, not a throw', async () => {
    const tool = compactContextTool({
      compact: async () => {
        throw new Error('summarizer unavailable\n(timeout)');
      },
    });
    expect(await tool.run({})).toBe('Error: compaction failed: summarizer unavailable (timeout)');
  });

  it('runs a real forceCompact; cleared output is readable with read_result', async () => {
    const t = new PiTranscript();
    t.user('Refactor the parser. Keep the public API.');
    for (let i = 0; i < 14; i++) {
      const out = Array.from(
        { length: 80 },
        (_, k) => `file${i} line ${k}: some content to keep the result long enough`,
      ).join('\n');
      t.step({ text: `Reading file ${i}.`, calls: [{ name: 'read', args: { path: `src/file${i}.ts` }, result: out }] });
    }
    const session = parseSession(t.jsonl());
    const store = new MemoryResultStore();
    const tool = compactContextTool({ compact: () => forceCompact(session, { store, prefixTokens: 0 }) });
    const out = await tool.run({});
    expect(out).toMatch(
      /^Compacted the context: [\d,]+ → [\d,]+ tokens \(−\d+%\); \d+ → \d+ messages\. Earlier turns are summarized; use read_result to read cleared tool output\.$/,
    );
    const [, before, after] = /([\d,]+) → ([\d,]+) tokens/.exec(out)!;
    expect(Number(after!.replace(/,/g, ''))).toBeLessThanOrEqual(Number(before!.replace(/,/g, '')) / 2);
    const stored = await store.list();
    expect(stored.length).toBeGreaterThan(0);
    const read = await readResultTool(store).run({ ref_id: stored[0]!.refId, limit: 2 });
    expect(read).toMatch(
      new RegExp(`^\\[ref ${stored[0]!.refId} · lines 0–1 of 80 · next: offset 2\\]\\nfile\\d+ line 0: `),
    );
  });
});
