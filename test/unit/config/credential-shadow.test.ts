import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { hiddenSavedCredential } from '../../../src/config/credential-shadow.js';
import { envWorld } from '../../support/env-world.js';

let root: string;
const SAVED = '/home/ada/.config/flower/.env';

beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'flower-shadow-'));
  mkdirSync(join(root, 'project'), { recursive: true });
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

/** The chain for `exported` (the process environment) and a project .env, as a run would see it. */
const world = (exported: Record<string, string>, project?: string) => envWorld(root, exported, { project });

describe('hiddenSavedCredential', () => {
  it('names an exported key that is used instead of the saved one, and how to undo it', () => {
    const { report, env } = world({ ANTHROPIC_API_KEY: 'sk-ant-shell-key-1234' });
    expect(hiddenSavedCredential(report, env, { ANTHROPIC_API_KEY: 'sk-ant-saved-5678' }, SAVED)).toBe(
      'ANTHROPIC_API_KEY exported in your shell (sk-a***(21 chars)) is used instead of the ANTHROPIC_API_KEY ' +
        `that flower setup saved in ${SAVED} (sk-a***(17 chars)); run \`unset ANTHROPIC_API_KEY\` to use the saved one`,
    );
  });

  it('also when the hiding value is the other credential kind, or comes from the project .env', () => {
    const shell = world({ ANTHROPIC_API_KEY: 'sk-ant-shell-key-1234' });
    expect(
      hiddenSavedCredential(shell.report, shell.env, { ANTHROPIC_AUTH_TOKEN: 'gw-token' }, SAVED),
    ).toContain('is used instead of the ANTHROPIC_AUTH_TOKEN that flower setup saved');
    const project = world({}, 'ANTHROPIC_AUTH_TOKEN=project-token-1\n');
    const fromProject = hiddenSavedCredential(
      project.report,
      project.env,
      { ANTHROPIC_AUTH_TOKEN: 'saved-token' },
      SAVED,
    );
    expect(fromProject).toContain(
      `ANTHROPIC_AUTH_TOKEN set in ${join(root, 'project', '.env')}:1 (proj***(15 chars)) is used instead`,
    );
    expect(fromProject).toMatch(/remove it from there to use the saved one$/);
  });

  it('is quiet when the saved credential is the one in use, or nothing was saved', () => {
    const same = world({ ANTHROPIC_API_KEY: 'sk-ant-same' });
    expect(
      hiddenSavedCredential(same.report, same.env, { ANTHROPIC_API_KEY: 'sk-ant-same' }, SAVED),
    ).toBeUndefined();
    expect(hiddenSavedCredential(same.report, same.env, {}, SAVED)).toBeUndefined();
    const none = world({});
    expect(
      hiddenSavedCredential(none.report, none.env, { ANTHROPIC_API_KEY: 'sk-ant-x' }, SAVED),
    ).toBeUndefined();
  });
});
