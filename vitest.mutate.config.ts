import { defineConfig } from 'vitest/config';
import base from './vitest.config.js';

// The tests StrykerJS runs against each mutant (stryker.config.mjs): every unit test, and the
// end-to-end tests of the walls the mutated modules build. (Not mergeConfig: it would append to the
// base's include list instead of replacing it.)
export default defineConfig({
  ...base,
  test: {
    ...base.test,
    include: ['test/unit/**/*.test.ts', 'test/e2e/sandbox-walls.test.ts'],
    retry: 0,
  },
});
