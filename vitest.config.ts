import { defineConfig } from 'vitest/config';

// End-to-end tests start the real Claude Code binary (a ~400 MB executable) per test. On the
// 2-core CI machine more than two of them at once only makes each slower, so files run in at
// most two forked workers and individual e2e tests get generous timeouts.
export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    pool: 'forks',
    maxWorkers: 2,
    testTimeout: 120_000,
    hookTimeout: 60_000,
    reporters: ['default'],
  },
});
