import { describe, expect, it } from 'vitest';
import { questionWait, UNATTENDED_NOTICE } from '../../../../src/cli/interaction/question-wait.js';

describe('questionWait', () => {
  it('keeps the timeout on a terminal', () => {
    expect(questionWait({ timeoutSeconds: 1800, timeoutGiven: false, stdinIsTerminal: true })).toEqual({
      timeoutSeconds: 1800,
    });
  });

  it('off a terminal, never waits unless --timeout was typed, and says so', () => {
    expect(questionWait({ timeoutSeconds: 1800, timeoutGiven: false, stdinIsTerminal: false })).toEqual({
      timeoutSeconds: 0,
      notice: UNATTENDED_NOTICE,
    });
    expect(questionWait({ timeoutSeconds: 120, timeoutGiven: true, stdinIsTerminal: false })).toEqual({
      timeoutSeconds: 120,
    });
  });
});
