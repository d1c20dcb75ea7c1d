import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseSession } from '../formats/read.js';
import { activeView } from '../model/view.js';
import { MemoryResultStore } from './memory-result-store.js';
import {
  checkCompactionCase,
  randomCase,
  sessionJsonl,
  sessionSpec,
  type CompactionLib,
} from '../../test/support/random-session.js';
import { compact } from './compact.js';
import { checkInvariants, introducedViolations } from './invariants.js';
import { ExtractiveSummarizer } from './summarizers/extractive.js';
import { isHumanUser, unitsOf } from './turns.js';

const lib: CompactionLib = {
  parseSession,
  compact,
  activeView,
  checkInvariants,
  introducedViolations,
  unitsOf,
  isHumanUser,
  ExtractiveSummarizer,
  MemoryResultStore,
};

/** Random sessions per property: ABRIDGE_PROPERTY_RUNS (default 300; `npm run bench:compact` runs 10,000). */
const RUNS = Number(process.env.ABRIDGE_PROPERTY_RUNS ?? 300);
const SEED = process.env.ABRIDGE_PROPERTY_SEED === undefined ? undefined : Number(process.env.ABRIDGE_PROPERTY_SEED);
const params = { numRuns: RUNS, ...(SEED !== undefined ? { seed: SEED } : {}) };

describe('compaction invariants on random sessions', () => {
  it('the generator makes readable pi sessions with what the properties need (parallel calls, in one message or one each, errors, orphans, thinking, `!` commands, long answers)', () => {
    const seen = {
      parallel: 0,
      split: 0,
      errors: 0,
      orphans: 0,
      thinking: 0,
      synthetic: 0,
      huge: 0,
      commands: 0,
      answers: 0,
    };
    for (const spec of fc.sample(sessionSpec, { numRuns: 200, seed: 7 })) {
      const s = parseSession(sessionJsonl(spec));
      expect(s.format).toBe('pi');
      expect(s.problems).toEqual([]);
      const view = activeView(s);
      view.forEach((v, i) => {
        const next = view[i + 1]?.message;
        if (
          v.message.role === 'assistant' &&
          next?.role === 'assistant' &&
          next.parts.some((p) => p.type === 'tool-call')
        )
          if (v.message.parts.some((p) => p.type === 'tool-call')) seen.split++;
      });
      expect(view.some((v) => isHumanUser(v.message))).toBe(true);
      for (const v of view) {
        const calls = v.message.parts.filter((p) => p.type === 'tool-call').length;
        if (calls > 1) seen.parallel++;
        if (v.message.parts.some((p) => p.type === 'tool-result' && p.isError)) seen.errors++;
        if (v.message.parts.some((p) => p.type === 'thinking')) seen.thinking++;
        if (v.message.synthetic) seen.synthetic++;
        const text = v.message.parts.map((p) => (p.type === 'text' ? p.text : '')).join('');
        if (v.message.role === 'user' && text.startsWith('Ran `ls ')) seen.commands++;
        if (v.message.role === 'assistant' && text.length >= 500) seen.answers++;
        if (
          v.message.parts.some(
            (p) => p.type === 'tool-result' && p.content.some((c) => c.type === 'text' && c.text.length > 100_000),
          )
        )
          seen.huge++;
      }
      seen.orphans += checkInvariants(view).filter((x) => x.kind === 'call-without-result').length;
    }
    for (const [k, n] of Object.entries(seen)) expect(n, k).toBeGreaterThan(0);
  });

  it(
    `every compaction keeps the invariants, the protected messages and the archive (${RUNS} runs)`,
    async () => {
      await fc.assert(
        fc.asyncProperty(randomCase, async (c) => {
          // Let the test runner's messages through between cases (a long synchronous run starves its worker RPC).
          await new Promise((resolve) => setImmediate(resolve));
          const outcome = await checkCompactionCase(lib, c);
          expect(outcome.problems).toEqual([]);
          expect(outcome.violations).toBe(0);
        }),
        params,
      );
    },
    Math.max(60_000, RUNS * 250),
  ); // 10,000 runs take minutes on a loaded machine
});
