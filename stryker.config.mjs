// Mutation testing (StrykerJS, `npm run mutate`): each mutant changes one promise of a module and
// the tests that cover it must fail. The modules below are the walls that enforce by construction
// (issue 19); issue 22 widens the list to every module that carries a red line. Run a narrower set
// with `npm run mutate -- --mutate src/runtime/sandbox/policy.ts`.
//
// Tests: vitest.mutate.config.ts, the walls' unit tests and their end-to-end tests (real binary
// and bubblewrap), with per-test coverage so a mutant runs only the tests that reach it.
/** @type {import('@stryker-mutator/api/core').PartialStrykerOptions} */
export default {
  testRunner: 'vitest',
  vitest: { configFile: 'vitest.mutate.config.ts' },
  coverageAnalysis: 'perTest',
  mutate: [
    'src/runtime/sandbox/*.ts',
    'src/config/credential-stores.ts',
    // The output sink (issue 20): every human-facing byte passes through it.
    'src/output/*.ts',
    // The delegate guard's glance wall (the rest of the guard predates StrykerJS: issue 22).
    'src/agents/guards/delegate.ts:60-155',
    // The session options' sandbox lines (the rest of the module predates StrykerJS: issue 22).
    'src/runtime/options.ts:119-126',
    // The fenced lease (issue 18): one owner per task across machines.
    'src/store/postgres/task-lease.ts',
    'src/runtime/ownership/lease-keeper.ts',
    // Issue 22: every other module whose header states a red line.
    // Locks, transcript safety and in-flight markers (target 100 %).
    'src/runtime/task-lock.ts',
    'src/runtime/locked-json-file.ts',
    'src/runtime/transcript-safety.ts',
    'src/runtime/in-flight.ts',
    'src/runtime/signals.ts',
    // A live holder must never look dead (the /proc start field), and a refused request must stop at once.
    'src/runtime/process-liveness.ts',
    'src/runtime/fail-fast.ts',
    // The ledger and spend.
    'src/runtime/ledger.ts',
    'src/runtime/task-spend.ts',
    // The store layers and both backends.
    'src/store/rewriting-store.ts',
    'src/store/mirror-guard.ts',
    'src/store/shared/write-behind.ts',
    'src/store/shared/mirrored-store.ts',
    'src/store/sqlite-session-store.ts',
    'src/store/postgres/session-store.ts',
    // Outbox and merge, gc selection, the checks runner.
    'src/runtime/shared/outbox.ts',
    'src/runtime/shared/merge.ts',
    'src/runtime/retention/collect.ts',
    'src/checks/runner.ts',
  ],
  concurrency: 2,
  timeoutMS: 60_000,
  reporters: ['clear-text', 'progress', 'html', 'json'],
  // Results carry over between runs: a rerun tests only mutants whose code or covering tests
  // changed. Kept in reports/, uncommitted until CI runs StrykerJS on a change (issue 22).
  incremental: true,
  incrementalFile: 'reports/stryker-incremental.json',
  thresholds: { high: 90, low: 80, break: null },
  tempDirName: '.stryker-tmp',
  // Another run's sandbox (a narrower run beside this one) and the reports are no part of the
  // project: copied into this run's sandbox they changed under it and crashed it (observed).
  ignorePatterns: ['/.stryker-tmp*', '/reports'],
};
