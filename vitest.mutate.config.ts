import { defineConfig } from 'vitest/config';
import base from './vitest.config.js';

// The tests StrykerJS runs against each mutant (stryker.config.mjs): the unit tests of the walls'
// modules and of their users (the guards, the roles, the session options, the checks), and the
// end-to-end tests of the walls (real binary and bubblewrap). Every unit test would only make each
// mutant slower: the others never reach these modules' promises. Widen this list with the mutate
// list. (Not mergeConfig: it would append to the base's include list instead of replacing it.)
export default defineConfig({
  ...base,
  test: {
    ...base.test,
    include: [
      'test/unit/runtime/sandbox/*.test.ts',
      'test/unit/config/credential-stores.test.ts',
      'test/unit/output/*.test.ts',
      'test/unit/runtime/options.test.ts',
      'test/unit/agents/*.test.ts',
      'test/unit/checks/runner-walled.test.ts',
      'test/e2e/sandbox-walls.test.ts',
      // The lease's tests need FLOWER_TEST_POSTGRES_URL (two sessions, advisory locks).
      'test/unit/store/postgres/task-lease.test.ts',
      'test/unit/runtime/lease-keeper.test.ts',
      // Issue 22: the red-line modules' unit tests (runtime, the store's layers and backends,
      // the checks runner). Their end-to-end tests would add minutes per mutant: a promise only an
      // end-to-end test guards gets a unit test of its own instead.
      'test/unit/runtime/*.test.ts',
      'test/unit/store/shared/*.test.ts',
      'test/unit/store/postgres/*.test.ts',
      'test/unit/store/mirror-guard.test.ts',
      'test/unit/store/rewriting-store.test.ts',
      'test/unit/store/expire.test.ts',
      'test/unit/store/sqlite-session-store.test.ts',
      'test/unit/store/store-conformance.test.ts',
      'test/unit/store/layers.property.test.ts',
      'test/unit/checks/runner.test.ts',
    ],
    // StrykerJS runs vitest in worker threads, where process.umask() cannot be set; this file's
    // umask test needs a forked process, and it covers no mutated module.
    exclude: ['test/unit/agents/human-channel.test.ts'],
    retry: 0,
  },
});
