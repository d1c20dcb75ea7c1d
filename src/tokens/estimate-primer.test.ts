import { Session } from 'node:inspector/promises';
import { describe, expect, it } from 'vitest';

// The estimator primes itself (see PRIMER in estimate.ts): a branch the primer does not take would be one V8 has no
// feedback for when it optimizes the estimator, and hitting it later throws the optimized code away. This test loads a
// fresh copy of the module under V8's block coverage, makes the first estimate (the empty string: only the primer
// runs), and expects every block of the estimator's functions to have run.
describe('the estimator primer', () => {
  it('takes every branch of the estimator', async () => {
    const session = new Session();
    session.connect();
    try {
      await session.post('Profiler.enable');
      await session.post('Profiler.startPreciseCoverage', { callCount: true, detailed: true });
      // Nothing else in this file imports the estimator, so this is its first load in this test's module graph.
      const fresh = await import('./estimate.js');
      expect(fresh.estimateTokens('')).toBe(0);
      const { result } = await session.post('Profiler.takePreciseCoverage');
      const script = result.find((s) => /\/tokens\/estimate\.ts$/.test(s.url));
      expect(script, 'the fresh copy of estimate.ts is in the coverage').toBeDefined();
      await session.post('Debugger.enable');
      const { scriptSource } = await session.post('Debugger.getScriptSource', { scriptId: script!.scriptId });
      const missed: string[] = [];
      const names = new Set<string>();
      for (const fn of script!.functions) {
        if (!['estimateTokens', 'price', 'unicodeSymbolTokens', 'countNewlines'].includes(fn.functionName)) continue;
        names.add(fn.functionName);
        for (const r of fn.ranges)
          if (r.count === 0)
            missed.push(
              `${fn.functionName}: ${scriptSource.slice(r.startOffset, r.endOffset).slice(0, 80) || r.startOffset}`,
            );
      }
      expect([...names].sort()).toEqual(['countNewlines', 'estimateTokens', 'price', 'unicodeSymbolTokens']);
      expect(missed).toEqual([]);
    } finally {
      await session.post('Profiler.stopPreciseCoverage').catch(() => {});
      await session.post('Debugger.disable').catch(() => {});
      session.disconnect();
    }
  });
});
