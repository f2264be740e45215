import { describe, expect, it } from 'vitest';
import { currentValue, effectiveAfterSave } from '../../../../src/cli/commands/setup-action.js';
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
