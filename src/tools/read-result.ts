import { z } from 'zod';
import { formatSlice, MAX_READ_LIMIT, type ResultStore } from '../store/result-store.js';
import { defineTool, type AgentTool } from './tool.js';

export const readResultInput = z.object({
  ref_id: z.string().describe('The ref_id of a stored result, exactly as given where the result was cleared or offloaded (e.g. "r_0123456789abcdef").'),
  offset: z.number().int().min(0).optional().describe('The 0-based line to start reading at (default 0). The header of each slice says the offset to read next.'),
  limit: z.number().int().min(1).max(MAX_READ_LIMIT).optional().describe(`How many lines to read (default 200, at most ${MAX_READ_LIMIT}).`),
});

export type ReadResultInput = z.infer<typeof readResultInput>;

/**
 * `read_result`: reads a stored tool result (one cleared or offloaded from the context) a slice of lines at a time.
 * Answers the slice as `formatSlice` shows it: a header naming the lines and the offset to read next, then the text.
 * An unknown or malformed ref is answered as "Error: …" naming the ref.
 */
export function readResultTool(store: ResultStore): AgentTool<ReadResultInput> {
  return defineTool({
    name: 'read_result',
    description:
      'Read a tool result that was cleared or offloaded from the context, by its ref_id, a slice of lines at a time. ' +
      'The answer starts with a header like "[ref r_… · lines 0–199 of 1,234 · next: offset 200]"; call again with that offset to read on. ' +
      `Lines are 0-based; limit defaults to 200 (at most ${MAX_READ_LIMIT}).`,
    input: readResultInput,
    async run({ ref_id, offset, limit }) {
      const range: { offset?: number; limit?: number } = {};
      if (offset !== undefined) range.offset = offset;
      if (limit !== undefined) range.limit = limit;
      return formatSlice(await store.read(ref_id, range));
    },
  });
}
