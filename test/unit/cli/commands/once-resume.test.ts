import { describe, expect, it } from 'vitest';
import { resumeLine } from '../../../../src/cli/commands/once-action.js';

const global = { verbose: false, workbench: false, trim: false };

describe('resumeLine (once)', () => {
  it('names the session and the command that continues it', () => {
    expect(resumeLine('abc-123', { ...global, workspace: '/proj', runDir: '/proj/runs' }, '/proj')).toBe(
      'session abc-123 — continue it with: flower once --resume abc-123 "..."',
    );
  });

  it('adds -w and -r when they are not the defaults, quoting paths a shell would split', () => {
    expect(
      resumeLine('abc', { ...global, workspace: '/tmp/my proj', runDir: '/tmp/state' }, '/home/me'),
    ).toBe(
      'session abc — continue it with: flower -w \'/tmp/my proj\' -r /tmp/state once --resume abc "..."',
    );
  });
});
