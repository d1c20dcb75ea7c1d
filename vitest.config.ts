import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    // Builds dist/ once when it is missing or older than the sources, and names the tests that will skip here.
    globalSetup: ['./test/global-setup.ts'],
    testTimeout: 60_000,
    pool: 'forks',
    reporters: ['default', './test/plain-summary-reporter.ts'],
  },
});
