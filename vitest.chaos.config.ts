import { defineConfig } from 'vitest/config';
import base from './vitest.config.js';

// The partition chaos test (test/chaos/): ten minutes of two machines contending for one task
// under resets, black-holes and kills. Run on its own with `npm run test:chaos` until it has
// proven itself in CI runs; then it moves into test/e2e/, which `npm test` runs. (Not
// mergeConfig: it would append to the base's include list instead of replacing it.)
export default defineConfig({
  ...base,
  test: { ...base.test, include: ['test/chaos/**/*.chaos.ts'], testTimeout: 20 * 60_000 },
});
