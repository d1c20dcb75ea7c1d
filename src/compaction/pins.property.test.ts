import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseSession } from '../formats/read.js';
import { activeView } from '../model/view.js';
import { compactionSpec, sessionJsonl, sessionSpec } from '../../test/support/random-session.js';
import { compact } from './compact.js';
import { checkInvariants, introducedViolations } from './invariants.js';
import { MemoryResultStore } from './memory-result-store.js';
import { ExtractiveSummarizer } from './summarizers/extractive.js';

/** Random sessions per property: ABRIDGE_PROPERTY_RUNS (default 300), a third of them here (two compactions each). */
const RUNS = Math.max(20, Math.round(Number(process.env.ABRIDGE_PROPERTY_RUNS ?? 300) / 3));
const SEED = process.env.ABRIDGE_PROPERTY_SEED === undefined ? undefined : Number(process.env.ABRIDGE_PROPERTY_SEED);
const params = { numRuns: RUNS, ...(SEED !== undefined ? { seed: SEED } : {}) };

describe('pins on random sessions', () => {
  it(
    `every pinned message is byte-identical in the compacted view, whatever the strategies and target (${RUNS} runs)`,
    async () => {
      await fc.assert(
        fc.asyncProperty(
          sessionSpec,
          fc.array(compactionSpec, { minLength: 1, maxLength: 2 }),
          fc.array(fc.double({ min: 0, max: 1, noNaN: true, maxExcluded: true }), { minLength: 1, maxLength: 4 }),
          fc.boolean(),
          async (spec, compactions, picks, byField) => {
            await new Promise((resolve) => setImmediate(resolve));
            const session = parseSession(sessionJsonl(spec));
            const messages = activeView(session).filter((v) => v.entry !== undefined);
            const pins = new Set(picks.map((x) => messages[Math.floor(x * messages.length)]!.entry!));
            // A host's field on the message, or the entries named in the options: the same pins.
            if (byField) for (const e of pins) session.entries[e]!.message!.pinned = true;
            const original = new Map([...pins].map((e) => [e, JSON.stringify(session.entries[e]!.message)]));
            const store = new MemoryResultStore();
            for (const c of compactions) {
              const view0 = activeView(session);
              const probe = await compact(session, {
                target: Number.MAX_SAFE_INTEGER,
                strategies: [],
                prefixTokens: 0,
              });
              const target = Math.max(1, Math.round((probe.beforeTokens * c.targetPercent) / 100));
              const result = await compact(session, {
                target,
                force: true,
                store,
                prefixTokens: 0,
                summarizer: new ExtractiveSummarizer(),
                ...(byField ? {} : { pinned: pins }),
                ...(c.strategies ? { strategies: c.strategies } : {}),
                ...(c.keepLastSteps !== undefined ? { keepLastSteps: c.keepLastSteps } : {}),
                ...(c.keepRecentTokens !== undefined ? { keepRecentTokens: c.keepRecentTokens } : {}),
                options: {
                  ...(c.clearing ? { clearing: c.clearing } : {}),
                  ...(c.offload ? { offload: c.offload } : {}),
                  ...(c.headTail ? { headTail: c.headTail } : {}),
                  ...(c.stubInputs ? { stubInputs: c.stubInputs } : {}),
                },
              });
              expect(result.violations).toEqual([]);
              const view = activeView(session);
              for (const [e, json] of original) {
                const shown = view.filter((v) => v.entry === e);
                expect(shown, `entry ${e} in view`).toHaveLength(1);
                expect(JSON.stringify(shown[0]!.message), `entry ${e} verbatim`).toBe(json);
              }
              // Pins stay and are named among what must stay; the pairs stay whole around them.
              expect(introducedViolations(checkInvariants(view0), checkInvariants(view))).toEqual([]);
              for (const e of pins)
                expect(result.protectedParts.map((p) => p.what)).toContain(`pinned message (entry ${e})`);
            }
          },
        ),
        params,
      );
    },
    Math.max(60_000, RUNS * 500),
  );
});
