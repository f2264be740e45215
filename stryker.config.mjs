// Mutation testing (StrykerJS, `npm run mutate`): each mutant changes one promise of a module and
// the tests that cover it must fail. The modules below are the walls that enforce by construction
// (issue 19); issue 22 widens the list to every module that carries a red line. Run a narrower set
// with `npm run mutate -- --mutate src/runtime/sandbox/policy.ts`.
//
// Tests: vitest.mutate.config.ts, the unit tests plus the end-to-end tests of the walls (real
// binary and bubblewrap), with per-test coverage so a mutant runs only the tests that reach it.
/** @type {import('@stryker-mutator/api/core').PartialStrykerOptions} */
export default {
  testRunner: 'vitest',
  vitest: { configFile: 'vitest.mutate.config.ts' },
  coverageAnalysis: 'perTest',
  mutate: [
    'src/runtime/sandbox/*.ts',
    'src/config/credential-stores.ts',
    'src/agents/guards/delegate.ts',
    'src/runtime/options.ts',
  ],
  concurrency: 2,
  timeoutMS: 60_000,
  reporters: ['clear-text', 'progress'],
  thresholds: { high: 90, low: 80, break: null },
  tempDirName: '.stryker-tmp',
};
