import fc from 'fast-check';
import { it } from 'vitest';
import { parseSession } from '../formats/read.js';
import { activeView } from '../model/view.js';
import { MemoryResultStore } from '../store/memory-result-store.js';
import { checkCompactionCase, randomCase, type CompactionLib } from '../test-support/random-session.js';
import { compact } from './compact.js';
import { checkInvariants, introducedViolations } from './invariants.js';
import { ExtractiveSummarizer } from './summarizers/extractive.js';
import { isHumanUser, unitsOf } from './turns.js';
const lib: CompactionLib = { parseSession, compact, activeView, checkInvariants, introducedViolations, unitsOf, isHumanUser, ExtractiveSummarizer, MemoryResultStore };
it('explore', async () => {
  const buckets = new Map<string, { n: number; example: unknown; msg: string }>();
  const t0 = Date.now();
  const N = Number(process.env.N ?? 1000);
  let i = 0;
  for (const c of fc.sample(randomCase, { numRuns: N, seed: Number(process.env.SEED ?? 1) })) {
    i++;
    const o = await checkCompactionCase(lib, c);
    for (const p of o.problems) {
      const key = p.replace(/\d+/g, '#').slice(0, 90);
      const b = buckets.get(key) ?? { n: 0, example: c, msg: p };
      b.n++;
      buckets.set(key, b);
    }
  }
  console.log('ms', Date.now() - t0, 'cases', i);
  for (const [k, b] of buckets) console.log(b.n, k, '\n   ', b.msg.slice(0, 600));
}, 600000);
