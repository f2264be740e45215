/** A host check's result, built by hand for tests of what flower makes of it. */
import type { CheckRun } from '../../../src/checks/runner.js';

export function checkRun(fields: Partial<CheckRun> = {}): CheckRun {
  return {
    item: 'tests pass — check: `npm test`',
    description: 'tests pass',
    command: 'npm test',
    exitCode: 0,
    signal: null,
    timedOut: false,
    passed: true,
    durationS: 1.5,
    outputPath: '/ws/.flower/artifacts/checks/1/item-1.log',
    outputBytes: 12,
    cutBytes: 0,
    tail: 'all good',
    ...fields,
  };
}
