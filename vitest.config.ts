import { configDefaults, defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
    // test/node22/ needs libraries that require Node ≥ 22 (Mastra): only scripts/node22-check.sh runs it.
    exclude: [...configDefaults.exclude, ...(process.env.ABRIDGE_NODE22 === '1' ? [] : ['test/node22/**'])],
    // Builds dist/ once when it is missing or older than the sources, and names the tests that will skip here.
    globalSetup: ['./test/global-setup.ts'],
    testTimeout: 60_000,
    pool: 'forks',
    reporters: ['default', './test/plain-summary-reporter.ts'],
  },
});
