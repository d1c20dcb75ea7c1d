import { AbridgeError } from '../errors.js';
import { z } from 'zod';
import { defineTool, type AgentTool } from './tool.js';

/** What a compaction reports (a subset of `CompactionResult`, so any compaction function fits). */
export interface CompactContextOutcome {
  beforeTokens: number;
  afterTokens: number;
  beforeMessages: number;
  afterMessages: number;
  /** Strategies that did not run, and why (shown when nothing could be compacted). */
  skipped?: readonly { name: string; reason: string }[];
}

export interface CompactContextToolOptions {
  /**
   * Compacts the context now, e.g. `({ instructions }) => forceCompact(session, { store, instructions })`.
   * `instructions`: what the agent asked the summary to keep (absent when it asked nothing in particular).
   */
  compact: (input: { instructions?: string }) => Promise<CompactContextOutcome>;
}

/** The most an agent may ask the summary to keep, in characters: a focus, not a second transcript. */
export const MAX_COMPACT_INSTRUCTIONS = 2000;

export const compactContextInput = z
  .object({
    instructions: z
      .string()
      .max(MAX_COMPACT_INSTRUCTIONS)
      .optional()
      .describe(
        'What the summary of the earlier turns must keep or focus on: facts, decisions, file paths, open questions you will need next (e.g. "the failing test names and the fix we agreed on"). Leave it out to keep the default summary.',
      ),
  })
  .strict();

export type CompactContextInput = z.infer<typeof compactContextInput>;

const n = (x: number) => Math.round(x).toLocaleString('en-US');
const oneLine = (s: string) => s.replace(/\s+/g, ' ').trim();

/** The one line `compact_context` answers for an outcome. */
export function describeCompaction(r: CompactContextOutcome): string {
  if (r.afterTokens < r.beforeTokens) {
    const saved = ((r.beforeTokens - r.afterTokens) / r.beforeTokens) * 100;
    const pct = Math.round(saved) === 0 ? '<1' : String(Math.round(saved));
    return (
      `Compacted the context: ${n(r.beforeTokens)} → ${n(r.afterTokens)} tokens (−${pct}%); ${n(r.beforeMessages)} → ${n(r.afterMessages)} messages. ` +
      'Earlier turns are summarized; use read_result to read cleared tool output.'
    );
  }
  const why = (r.skipped ?? []).map((s) => `${oneLine(s.name)}: ${oneLine(s.reason)}`);
  return (
    `Nothing could be compacted (the context is ${n(r.beforeTokens)} tokens, ${n(r.beforeMessages)} messages): ` +
    (why.length > 0 ? `${why.join('; ')}.` : 'no strategy found anything to shorten.')
  ).replace(/\.\.$/, '.');
}

/**
 * `compact_context`: lets the agent compact its own context when it judges it useful (before a long task, after a
 * phase ends). Decoupled from sessions: the caller passes the compaction to run. Answers one line.
 */
export function compactContextTool(options: CompactContextToolOptions): AgentTool<CompactContextInput> {
  return defineTool({
    name: 'compact_context',
    description:
      'Compact your context now: earlier turns are summarized and old tool output is cleared (kept in a store; read it back with read_result). ' +
      'Use it when a phase of work is done or before a long task. Optional `instructions`: what the summary must keep. Answers with the tokens and messages before and after.',
    input: compactContextInput,
    async run(input) {
      const instructions = input.instructions?.trim();
      let outcome: CompactContextOutcome;
      try {
        outcome = await options.compact(instructions ? { instructions } : {});
      } catch (err) {
        throw new AbridgeError(
          'INTERNAL',
          `compaction failed: ${oneLine(err instanceof Error ? err.message : String(err))}`,
          {
            cause: err,
          },
        );
      }
      return describeCompaction(outcome);
    },
  });
}
