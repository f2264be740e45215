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
    'src/agents/guards/delegate.ts:60-153',
    // The session options' sandbox lines (the rest of the module predates StrykerJS: issue 22).
    'src/runtime/options.ts:119-126',
  ],
  concurrency: 2,
  timeoutMS: 60_000,
  reporters: ['clear-text', 'progress'],
  thresholds: { high: 90, low: 80, break: null },
  tempDirName: '.stryker-tmp',
};
