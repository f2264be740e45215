/**
 * The predicates behind issue 21's doctor and setup findings: an ignored FLOWER_WINDOW, a key name
 * in lower case, a `$VARIABLE` where the key belongs, the run's one-line notice, and which
 * credential wins over the one `flower setup` saves.
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  credentialBeforeUserFile,
  credentialHiding,
  fileCredential,
  overrideWords,
  useCredential,
} from '../../../src/config/credential-shadow.js';
import { isUnexpandedReference, unusableCredential } from '../../../src/config/credentials.js';
import { isMiscasedName, parseDotenv } from '../../../src/config/dotenv-parser.js';
import { chainMistakeLocations, chainMistakesNotice } from '../../../src/config/env-chain.js';
import { windowSettingProblem } from '../../../src/config/window.js';
import { type EnvFiles, envWorld } from '../../support/env-world.js';

/** `${MY_TOKEN}` as a .env file holds it (written without a template literal's placeholder). */
const BRACED = `$${'{'}MY_TOKEN}`;

let root: string;
beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'flower-mistakes-'));
  mkdirSync(join(root, 'project'), { recursive: true });
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

/** The chain for `exported` plus a project .env and a user .env, as a run would load it. */
const world = (exported: Record<string, string>, files: EnvFiles = {}) => envWorld(root, exported, files);

describe('windowSettingProblem', () => {
  it('is quiet for a value that is used, and for none', () => {
    for (const value of [undefined, '', '  ', '200000', '1_000_000', ' 300000 '])
      expect(windowSettingProblem(value)).toBeUndefined();
  });

  it('says a suffixed value is ignored and gives the number it meant', () => {
    expect(windowSettingProblem('200k')).toBe(
      'FLOWER_WINDOW=200k is not a whole number of tokens and is ignored; write the number itself, here 200000 (digits only, _ allowed)',
    );
    expect(windowSettingProblem('1M')).toContain('here 1000000');
    expect(windowSettingProblem('1.5m')).toContain('here 1500000');
  });

  it('gives an example for anything else that is ignored', () => {
    for (const value of ['abc', '0', '-5', '2e5', '200 k tokens'])
      expect(windowSettingProblem(value)).toMatch(/is ignored; write the number itself, e\.g\. 200000/);
  });
});

describe('a key name in lower case', () => {
  it('is a mistake for the prefixes flower, the SDK and Claude Code read, in any mixed case', () => {
    for (const name of [
      'anthropic_api_key',
      'Anthropic_Base_Url',
      'claude_code_effort_level',
      'flower_window',
    ])
      expect(isMiscasedName(name)).toBe(true);
    for (const name of [
      'ANTHROPIC_API_KEY',
      'FLOWER_WINDOW',
      'my_other_tool',
      'anthropicish',
      'export anthropic_api_key',
    ])
      expect(isMiscasedName(name)).toBe(false);
  });

  it('is reported with its line, and the value is still read under the name as written', () => {
    const parsed = parseDotenv('A=1\nanthropic_auth_token=tok\n');
    expect(parsed.entries.map((entry) => entry.key)).toEqual(['A', 'anthropic_auth_token']);
    expect(parsed.pitfalls).toEqual([
      {
        kind: 'lowercase-key',
        line: 2,
        key: 'anthropic_auth_token',
        message:
          'sets "anthropic_auth_token", which is not ANTHROPIC_AUTH_TOKEN (names are case-sensitive); write the name in capitals',
      },
    ]);
  });
});

describe('a $VARIABLE where the credential belongs', () => {
  it('is a whole-value reference only', () => {
    for (const value of ['$MY_TOKEN', BRACED, ' $_x1 ']) expect(isUnexpandedReference(value)).toBe(true);
    for (const value of ['sk-ant-$abc', '$', '$1', 'tok$en', '${MY_TOKEN', '$MY-TOKEN'])
      expect(isUnexpandedReference(value)).toBe(false);
  });

  it('makes the credential in use unusable, naming the key; a real value is usable', () => {
    expect(unusableCredential({ ANTHROPIC_AUTH_TOKEN: '$MY_TOKEN' })).toMatch(
      /^ANTHROPIC_AUTH_TOKEN is a variable reference, not a key/,
    );
    expect(unusableCredential({ ANTHROPIC_API_KEY: BRACED, ANTHROPIC_AUTH_TOKEN: 'real' })).toMatch(
      /^ANTHROPIC_API_KEY/,
    );
    expect(unusableCredential({ ANTHROPIC_AUTH_TOKEN: 'real-token' })).toBeUndefined();
    expect(unusableCredential({})).toBeUndefined();
  });
});

describe("the run's notice of configuration mistakes", () => {
  it('counts what doctor lists and names the first place, never a value', () => {
    const { report, env } = world(
      {},
      { project: 'ANTHROPIC_MODEL=m # big\nanthropic_api_key=sk-secret\nFLOWER_WINDOW=200k\n' },
    );
    const file = join(root, 'project', '.env');
    expect(chainMistakeLocations(report, env)).toEqual([`${file}:1`, `${file}:2`, `${file}:3`]);
    expect(chainMistakesNotice(report, env)).toBe(
      `! the configuration has 3 likely mistakes (first at ${file}:1); \`flower doctor\` shows what and how to fix it`,
    );
  });

  it('says "a likely mistake" for one, counts an exported FLOWER_WINDOW, and is quiet without any', () => {
    const exported = world({ FLOWER_WINDOW: '128k' });
    expect(chainMistakesNotice(exported.report, exported.env)).toBe(
      '! the configuration has a likely mistake (at process environment); `flower doctor` shows what and how to fix it',
    );
    const clean = world({ FLOWER_WINDOW: '128000' }, { project: 'ANTHROPIC_MODEL=m\n' });
    expect(chainMistakesNotice(clean.report, clean.env)).toBeUndefined();
  });
});

describe('the credential that wins over the one flower setup saves', () => {
  it('is an exported or project credential, the API key first; the user file never is', () => {
    expect(
      credentialBeforeUserFile(world({ ANTHROPIC_AUTH_TOKEN: 't', ANTHROPIC_API_KEY: 'k' }).report)?.key,
    ).toBe('ANTHROPIC_API_KEY');
    expect(
      credentialBeforeUserFile(world({}, { project: 'ANTHROPIC_AUTH_TOKEN=p\n' }).report)?.source.kind,
    ).toBe('project');
    expect(
      credentialBeforeUserFile(world({}, { project: '', user: 'ANTHROPIC_API_KEY=u\n' }).report),
    ).toBeUndefined();
    expect(
      credentialBeforeUserFile(world({ ANTHROPIC_API_KEY: '' }, { project: '' }).report),
    ).toBeUndefined();
  });

  it('hides a saved credential unless it is the same value, or a saved API key beats an earlier token', () => {
    const apiKey = world({ ANTHROPIC_API_KEY: 'old' }).report;
    expect(credentialHiding(apiKey, { key: 'ANTHROPIC_API_KEY', value: 'new' })?.value).toBe('old');
    expect(credentialHiding(apiKey, { key: 'ANTHROPIC_AUTH_TOKEN', value: 'new' })?.value).toBe('old');
    expect(credentialHiding(apiKey, { key: 'ANTHROPIC_API_KEY', value: 'old' })).toBeUndefined();
    expect(credentialHiding(apiKey, undefined)).toBeUndefined();
    const token = world({ ANTHROPIC_AUTH_TOKEN: 'old' }).report;
    expect(credentialHiding(token, { key: 'ANTHROPIC_AUTH_TOKEN', value: 'new' })?.value).toBe('old');
    expect(credentialHiding(token, { key: 'ANTHROPIC_API_KEY', value: 'sk-ant-new' })).toBeUndefined();
  });

  it('is named with how to take it out of the way, masked', () => {
    const exported = credentialBeforeUserFile(world({ ANTHROPIC_API_KEY: 'sk-ant-old-key-1234' }).report)!;
    expect(overrideWords(exported)).toEqual({
      where: 'ANTHROPIC_API_KEY is exported in your shell (sk-a***(19 chars))',
      undo: 'run `unset ANTHROPIC_API_KEY` and remove the export from your shell profile',
    });
    const inProject = credentialBeforeUserFile(
      world({}, { project: 'X=1\nANTHROPIC_AUTH_TOKEN=project-tok\n' }).report,
    )!;
    expect(overrideWords(inProject)).toEqual({
      where: `ANTHROPIC_AUTH_TOKEN is set in ${join(root, 'project', '.env')}:2 (proj***(11 chars))`,
      undo: 'delete that line',
    });
  });

  it('useCredential makes one credential the one in use; fileCredential reads it from a file, API key first', () => {
    const env: Record<string, string | undefined> = { ANTHROPIC_API_KEY: 'old', OTHER: 'x' };
    useCredential(env, 'ANTHROPIC_AUTH_TOKEN', 'new');
    expect(env).toEqual({ ANTHROPIC_AUTH_TOKEN: 'new', OTHER: 'x' });
    expect(fileCredential({ ANTHROPIC_AUTH_TOKEN: 't', ANTHROPIC_API_KEY: 'k' })).toEqual({
      key: 'ANTHROPIC_API_KEY',
      value: 'k',
    });
    expect(fileCredential({ ANTHROPIC_API_KEY: '', ANTHROPIC_AUTH_TOKEN: 't' })).toEqual({
      key: 'ANTHROPIC_AUTH_TOKEN',
      value: 't',
    });
    expect(fileCredential({})).toBeUndefined();
  });
});
