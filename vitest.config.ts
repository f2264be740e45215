import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

// End-to-end tests start the real Claude Code binary (a ~400 MB executable) per test. On the
// 2-core CI machine more than two of them at once only makes each slower, so files run in at
// most two forked workers and individual e2e tests get generous timeouts.
//
// In CI a failed test is run once more before it counts: the e2e tests race a real child process
// (its reconnects, its exit, its background writes) on a shared 2-core machine, and a timing flake
// must not sink a whole submission. A test that fails twice still fails, and vitest reports every
// retry, so a flake stays visible in the log (look for "retry") and can be fixed at its cause.
//
// `flower-agent` and `flower-agent/testing` resolve to the sources here, so a test that imports the
// example workflow (which imports the package by name, as a user's file would) tests this checkout.
const source = (path: string) => fileURLToPath(new URL(path, import.meta.url));

export default defineConfig({
  resolve: {
    alias: [
      { find: /^flower-agent$/, replacement: source('./src/index.ts') },
      { find: /^flower-agent\/testing$/, replacement: source('./src/testing/index.ts') },
    ],
  },
  test: {
    include: ['test/**/*.test.ts'],
    pool: 'forks',
    maxWorkers: 2,
    testTimeout: 120_000,
    hookTimeout: 60_000,
    retry: process.env.CI ? 1 : 0,
    // The summary lists every skipped test and why, and every test that passed only on retry.
    reporters: ['default', './test/support/summary-reporter.ts'],
  },
});
