import { afterEach, describe, expect, it } from 'vitest';
import { applyModelFlag } from '../../../src/cli/machine-output/output-format.js';
import { modelOrigin, settingOrigin } from '../../../src/config/setting-origin.js';

describe('settingOrigin', () => {
  const before = process.env.ANTHROPIC_MODEL;
  afterEach(() => {
    if (before === undefined) delete process.env.ANTHROPIC_MODEL;
    else process.env.ANTHROPIC_MODEL = before;
  });

  it('names --model, not the shell, for a model the flag set (a refused --model was blamed on the shell)', () => {
    applyModelFlag('claude-nonexistent-1', process.env);
    expect(modelOrigin('claude-nonexistent-1', process.env)).toBe(
      'ANTHROPIC_MODEL, set by --model on the command line',
    );
  });

  it('keeps "the environment flower was given" for a map that is not the process environment', () => {
    const env: Record<string, string | undefined> = {};
    applyModelFlag('claude-other-1', env);
    expect(settingOrigin('ANTHROPIC_MODEL', env)).toBe(
      'ANTHROPIC_MODEL, set in the environment flower was given',
    );
  });
});
