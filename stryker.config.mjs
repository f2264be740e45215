// Mutation testing (StrykerJS, `npm run mutate`): each mutant changes one promise of a module and
// the tests that cover it must fail. The modules are those whose header states a red line or an
// invariant an unattended run relies on (issues 19, 20, 22), each with the score it must keep.
// Narrow a run with `npm run mutate -- --mutate src/runtime/sandbox/policy.ts`.
//
// Tests: vitest.mutate.config.ts, the modules' unit tests and the walls' end-to-end tests (real
// binary and bubblewrap), with per-test coverage so a mutant runs only the tests that reach it.

/**
 * What is mutated, and the least score each must keep (killed and timed out over every mutant
 * not disabled as equivalent): 100 % for the locks, leases and transcript safety, 90 % elsewhere.
 * `test/mutation/scores.mjs` prints the scores per module and fails a run below its target.
 * A `path:from-to` entry mutates those lines only (the rest of the module predates StrykerJS).
 */
export const mutatedModules = [
  // The walls (issues 19, 20): the sandbox, the credential stores, the output sink.
  { path: 'src/runtime/sandbox/*.ts', target: 100 },
  { path: 'src/config/credential-stores.ts', target: 100 },
  { path: 'src/output/*.ts', target: 100 },
  { path: 'src/agents/guards/delegate.ts:60-155', target: 100 },
  { path: 'src/runtime/options.ts:129-136', target: 100 },
  // The fenced lease (issue 18): one owner per task across machines.
  { path: 'src/store/postgres/task-lease.ts', target: 100 },
  { path: 'src/runtime/ownership/lease-keeper.ts', target: 100 },
  // Locks, transcript safety, in-flight markers; a live holder must never look dead.
  { path: 'src/runtime/task-lock.ts', target: 100 },
  { path: 'src/runtime/locked-json-file.ts', target: 100 },
  { path: 'src/runtime/process-liveness.ts', target: 100 },
  { path: 'src/runtime/transcript-safety.ts', target: 100 },
  { path: 'src/runtime/in-flight.ts', target: 100 },
  { path: 'src/runtime/signals.ts', target: 90 },
  // A refused request stops at once.
  { path: 'src/runtime/fail-fast.ts', target: 90 },
  // The ledger and spend.
  { path: 'src/runtime/ledger.ts', target: 90 },
  { path: 'src/runtime/task-spend.ts', target: 90 },
  // The store layers and both backends.
  { path: 'src/store/rewriting-store.ts', target: 90 },
  { path: 'src/store/expire.ts', target: 90 },
  { path: 'src/store/mirror-guard.ts', target: 90 },
  { path: 'src/store/shared/write-behind.ts', target: 90 },
  { path: 'src/store/shared/mirrored-store.ts', target: 90 },
  { path: 'src/store/sqlite-session-store.ts', target: 90 },
  { path: 'src/store/postgres/session-store.ts', target: 90 },
  // Outbox and merge, gc selection, the checks runner.
  { path: 'src/runtime/shared/outbox.ts', target: 90 },
  { path: 'src/runtime/shared/merge.ts', target: 90 },
  { path: 'src/runtime/retention/collect.ts', target: 90 },
  { path: 'src/checks/runner.ts', target: 90 },
];

/** @type {import('@stryker-mutator/api/core').PartialStrykerOptions} */
export default {
  testRunner: 'vitest',
  vitest: { configFile: 'vitest.mutate.config.ts' },
  coverageAnalysis: 'perTest',
  mutate: mutatedModules.map((module) => module.path),
  concurrency: 2,
  timeoutMS: 60_000,
  reporters: ['clear-text', 'progress', 'html', 'json'],
  // Results carry over between runs: a rerun tests only mutants whose code or covering tests
  // changed. StrykerJS writes here the results of its own run only; `npm run mutate`
  // (test/mutation/run.mjs) starts it from, and merges it into, the committed record
  // test/mutation/results.json, which CI (.ci/mutate-changed) compares a change against.
  incremental: true,
  incrementalFile: 'reports/stryker-incremental.json',
  thresholds: { high: 90, low: 80, break: null },
  tempDirName: '.stryker-tmp',
  // Another run's sandbox (a narrower run beside this one) and the reports are no part of the
  // project: copied into this run's sandbox they changed under it and crashed it (observed).
  ignorePatterns: ['/.stryker-tmp*', '/reports'],
};
