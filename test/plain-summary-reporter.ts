import type { RunnerTask, RunnerTestFile } from 'vitest';
import type { Reporter } from 'vitest/reporters';

/** Ends the run with the plain 'N passed, N failed, N skipped' line that CI log readers understand. */
export default class PlainSummaryReporter implements Reporter {
  onFinished(files: RunnerTestFile[] = []): void {
    let passed = 0;
    let failed = 0;
    let skipped = 0;
    const visit = (t: RunnerTask): void => {
      if (t.type === 'suite') {
        for (const c of t.tasks) visit(c);
        if (t.result?.state === 'fail' && t.tasks.length === 0) failed++;
        return;
      }
      const state = t.result?.state;
      if (state === 'pass') passed++;
      else if (state === 'fail') failed++;
      else skipped++;
    };
    for (const f of files) {
      visit(f);
      // A file that failed to load has no tests but is a failure.
      if (f.result?.state === 'fail' && f.tasks.length === 0) failed++;
    }
    process.stdout.write(`\n${passed} passed, ${failed} failed, ${skipped} skipped\n`);
  }
}
