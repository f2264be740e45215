import { describe, expect, it } from 'vitest';
import {
  currentValue,
  effectiveAfterSave,
  hiddenAfterSaveNotice,
  overriddenKeys,
  overrideNotice,
  savedValues,
} from '../../../../src/cli/commands/setup-action.js';
import type { EnvChainReport, EnvSetting, EnvSource } from '../../../../src/config/env-chain.js';

const processSource: EnvSource = { kind: 'process', label: 'process environment' };
const userFile: EnvSource = { kind: 'user', path: '/home/ada/.config/flower/.env', label: 'user .env' };
const projectFile: EnvSource = { kind: 'project', path: '/proj/.env', label: 'project .env' };

function report(settings: EnvSetting[]): EnvChainReport {
  return {
    sources: [],
    winners: new Map(settings.map((setting) => [setting.key, setting])),
    additions: {},
    shadowWarnings: [],
  };
}

describe('currentValue (what Enter keeps)', () => {
  const chain = report([
    { key: 'ANTHROPIC_BASE_URL', value: 'https://gw.example', source: processSource },
    { key: 'ANTHROPIC_MODEL', value: 'm-file', source: userFile, line: 2 },
  ]);
  const env = { ANTHROPIC_BASE_URL: 'https://gw.example', ANTHROPIC_MODEL: 'm-file' };

  it("is the file's own value when the file has one", () => {
    expect(currentValue('ANTHROPIC_MODEL', { ANTHROPIC_MODEL: 'm-file' }, env, chain)).toEqual({
      value: 'm-file',
    });
  });

  it('is the value in force from elsewhere, with where it comes from, when the file has none', () => {
    expect(currentValue('ANTHROPIC_BASE_URL', {}, env, chain)).toEqual({
      value: 'https://gw.example',
      from: 'process environment',
    });
    expect(currentValue('FLOWER_WINDOW', {}, env, chain)).toBeUndefined();
  });
});

describe('currentValue when an earlier source wins over the file (issue 21)', () => {
  it("marks the file's value as beaten, naming the winner, instead of calling it the value in force", () => {
    const chain = report([
      { key: 'ANTHROPIC_API_KEY', value: 'sk-shell', source: processSource },
      { key: 'ANTHROPIC_BASE_URL', value: 'https://project', source: projectFile, line: 4 },
    ]);
    const env = { ANTHROPIC_API_KEY: 'sk-shell', ANTHROPIC_BASE_URL: 'https://project' };
    expect(currentValue('ANTHROPIC_API_KEY', { ANTHROPIC_API_KEY: 'sk-file' }, env, chain)).toEqual({
      value: 'sk-file',
      beatenBy: 'the exported one',
    });
    expect(currentValue('ANTHROPIC_BASE_URL', { ANTHROPIC_BASE_URL: 'https://file' }, env, chain)).toEqual({
      value: 'https://file',
      beatenBy: 'the one in /proj/.env:4',
    });
    // The same value in both places, or an empty earlier one, beats nothing.
    expect(currentValue('ANTHROPIC_API_KEY', { ANTHROPIC_API_KEY: 'sk-shell' }, env, chain)).toEqual({
      value: 'sk-shell',
    });
  });
});

describe('what setup says about a credential that wins over the file', () => {
  const exported = { key: 'ANTHROPIC_API_KEY', value: 'sk-ant-old-1234', source: processSource };
  const inProject = { key: 'ANTHROPIC_AUTH_TOKEN', value: 'tok-project', source: projectFile, line: 2 };

  it('before the first question: for `flower setup`, and for the gate, which uses the new key for this run', () => {
    expect(overrideNotice(exported, false)).toBe(
      '! ANTHROPIC_API_KEY is exported in your shell (sk-a***(15 chars)), which wins over this file: ' +
        'a key saved here is used only after you run `unset ANTHROPIC_API_KEY` and remove the export from your shell profile.',
    );
    expect(overrideNotice(inProject, true)).toBe(
      '! ANTHROPIC_AUTH_TOKEN is set in /proj/.env:2 (tok-***(11 chars)), which wins over this file: ' +
        'a key entered here is used for this run, and later runs use that one again until you delete that line.',
    );
  });

  it('after saving', () => {
    expect(hiddenAfterSaveNotice(exported, false)).toBe(
      '! ANTHROPIC_API_KEY is exported in your shell (sk-a***(15 chars)), which is used instead of the key saved here: ' +
        'to use the saved one, run `unset ANTHROPIC_API_KEY` and remove the export from your shell profile.',
    );
    expect(hiddenAfterSaveNotice(exported, true)).toMatch(
      /^! This run uses the key saved here, but ANTHROPIC_API_KEY is exported in your shell .* and wins again at the next start/,
    );
  });

  it('leaves the credential out of the per-key override notes (the dialog said which one wins)', () => {
    const chain = report([exported, { key: 'ANTHROPIC_MODEL', value: 'm', source: processSource }]);
    expect(overriddenKeys(chain, ['ANTHROPIC_API_KEY', 'ANTHROPIC_AUTH_TOKEN', 'ANTHROPIC_MODEL'])).toEqual([
      'ANTHROPIC_MODEL is also set in process environment, which takes precedence over the file just written',
    ]);
  });

  it("savedValues is the file's values once the updates are applied", () => {
    expect(
      savedValues(
        { ANTHROPIC_API_KEY: 'old', KEEP: 'x' },
        { ANTHROPIC_API_KEY: null, ANTHROPIC_AUTH_TOKEN: 't' },
      ),
    ).toEqual({ KEEP: 'x', ANTHROPIC_AUTH_TOKEN: 't' });
  });
});

describe('effectiveAfterSave (what the next run sees)', () => {
  it('takes the new values, except where an earlier source keeps winning', () => {
    const chain = report([
      { key: 'ANTHROPIC_API_KEY', value: 'sk-shell', source: processSource },
      { key: 'ANTHROPIC_BASE_URL', value: 'https://project', source: projectFile, line: 1 },
      { key: 'ANTHROPIC_MODEL', value: 'old-model', source: userFile, line: 3 },
    ]);
    const env = {
      ANTHROPIC_API_KEY: 'sk-shell',
      ANTHROPIC_BASE_URL: 'https://project',
      ANTHROPIC_MODEL: 'old-model',
    };
    expect(
      effectiveAfterSave(env, chain, {
        ANTHROPIC_API_KEY: 'sk-new',
        ANTHROPIC_BASE_URL: 'https://new',
        ANTHROPIC_MODEL: null,
        FLOWER_WINDOW: '300000',
      }),
    ).toEqual({
      ANTHROPIC_API_KEY: 'sk-shell',
      ANTHROPIC_BASE_URL: 'https://project',
      FLOWER_WINDOW: '300000',
    });
  });
});
