import { describe, expect, it } from 'vitest';
import { classifyFailure } from '../../../src/runtime/resilience.js';

// Failures no retry can fix, added with issue 10: retrying them only burned the attempt budget.
describe('classifyFailure: setups that cannot start or cannot be read', () => {
  it.each([
    ['an environment the kernel refuses', 'Error: spawn E2BIG'],
    [
      'the size check before it',
      'HUGE is 2.0 MB; the agent process cannot start ... (the system refuses it: E2BIG). Shorten it',
    ],
    ['a damaged session database', 'SessionStore.load() failed: database disk image is malformed'],
    [
      'a file that is no database',
      'Session database /x/sessions.db: could not open (file is not a database)',
    ],
  ])('%s is fatal', (_label, text) => {
    expect(classifyFailure(text)).toBe('fatal');
  });
});
