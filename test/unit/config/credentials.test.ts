import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  activeCredentialKey,
  checkCredentials,
  describe as describeConfig,
  isSecretKey,
  maskSecret,
} from '../../../src/config/credentials.js';
import { type EnvChainContext, resolveEnvChain } from '../../../src/config/env-chain.js';

let root: string;
function context(env: Record<string, string> = {}, sourceCheckout = false): EnvChainContext {
  return {
    env,
    cwd: join(root, 'project'),
    home: join(root, 'home'),
    packageRoot: join(root, 'pkg'),
    sourceCheckout,
  };
}

beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'flower-credentials-'));
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

describe('checkCredentials', () => {
  it.each([
    [{ ANTHROPIC_API_KEY: 'k' }, 'ANTHROPIC_API_KEY'],
    [{ ANTHROPIC_AUTH_TOKEN: 't' }, 'ANTHROPIC_AUTH_TOKEN'],
    [{ ANTHROPIC_API_KEY: 'k', ANTHROPIC_AUTH_TOKEN: 't' }, 'ANTHROPIC_API_KEY'],
    [{ ANTHROPIC_API_KEY: '', ANTHROPIC_AUTH_TOKEN: 't' }, 'ANTHROPIC_AUTH_TOKEN'],
  ])('usable with %j (uses %s)', (env, key) => {
    expect(checkCredentials(env, context(env))).toBeUndefined();
    expect(activeCredentialKey(env)).toBe(key);
  });

  it.each([[{}], [{ ANTHROPIC_API_KEY: '', ANTHROPIC_AUTH_TOKEN: '' }]])('missing with %j', (env) => {
    expect(checkCredentials(env, context(env))).toMatch(/^Missing credentials/);
  });

  it('lists every place of the chain in order, including the Claude Code fallback, and names flower setup', () => {
    const env = { XDG_CONFIG_HOME: join(root, 'xdg') };
    const message = checkCredentials(env, context(env, true))!;
    const lines = message.split('\n');
    expect(message).toContain('`flower setup`');
    expect(message).toContain(join(root, 'xdg', 'flower', '.env'));
    expect(lines.filter((line) => /^ {2}\d\. /.test(line))).toEqual([
      '  1. the process environment (exported variables)',
      '  2. $FLOWER_ENV (not set)',
      `  3. ${join(root, 'project', '.env')}`,
      `  4. ${join(root, 'xdg', 'flower', '.env')}`,
      `  5. ${join(root, 'pkg', '.env')} (the source checkout flower runs from)`,
      `  6. the "env" block of ${join(root, 'home', '.claude', 'settings.json')} (Claude Code's own token)`,
      `  7. the "env" block of ${join(root, 'home', '.claude', 'settings.local.json')} (Claude Code's own token)`,
    ]);
    expect(message).not.toMatch(/does not read|never reads/);
  });

  it('names the $FLOWER_ENV file when set, and leaves out the checkout when installed', () => {
    const env = { FLOWER_ENV: '/etc/flower.env' };
    const message = checkCredentials(env, context(env, false))!;
    expect(message).toContain('2. $FLOWER_ENV: /etc/flower.env');
    expect(message).not.toContain('source checkout');
  });

  it('points at an empty credential line that hides a later value', () => {
    mkdirSync(join(root, 'project'), { recursive: true });
    mkdirSync(join(root, 'home', '.config', 'flower'), { recursive: true });
    writeFileSync(join(root, 'project', '.env'), 'ANTHROPIC_AUTH_TOKEN=');
    writeFileSync(join(root, 'home', '.config', 'flower', '.env'), 'ANTHROPIC_AUTH_TOKEN=real');
    const ctx = context();
    const report = resolveEnvChain(ctx);
    const message = checkCredentials({ ANTHROPIC_AUTH_TOKEN: '' }, ctx, report)!;
    expect(message).toContain(`Note: ANTHROPIC_AUTH_TOKEN is empty in ${join(root, 'project', '.env')}:1`);
  });

  it('points at an empty credential line even when nothing else has a value', () => {
    mkdirSync(join(root, 'project'), { recursive: true });
    writeFileSync(join(root, 'project', '.env'), '\nANTHROPIC_API_KEY=');
    const ctx = context();
    const message = checkCredentials({ ANTHROPIC_API_KEY: '' }, ctx, resolveEnvChain(ctx))!;
    expect(message).toContain(`ANTHROPIC_API_KEY is set but empty (${join(root, 'project', '.env')}:2)`);
  });
});

describe('masking', () => {
  it.each([
    ['ANTHROPIC_API_KEY', true],
    ['ANTHROPIC_AUTH_TOKEN', true],
    ['MY_KEYRING', true],
    ['github_token', true],
    ['ANTHROPIC_BASE_URL', false],
    ['ANTHROPIC_MODEL', false],
  ])('%s is a secret: %s', (name, secret) => {
    expect(isSecretKey(name)).toBe(secret);
  });

  it('shows the first 4 characters and the length', () => {
    expect(maskSecret('sk-ant-api03-abcdefghijklmnop')).toBe('sk-a***(29 chars)');
  });

  it('never shows a short secret whole', () => {
    expect(maskSecret('abcd')).toBe('ab***(4 chars)');
    expect(maskSecret('a')).toBe('***(1 chars)');
    expect(maskSecret('12345678')).toBe('1234***(8 chars)');
  });
});

describe('describe', () => {
  it('lists the set known keys in order, masking secrets; other keys are left out', () => {
    const env = {
      ANTHROPIC_AUTH_TOKEN: 'gateway-token-123456',
      ANTHROPIC_BASE_URL: 'https://gw.example',
      ANTHROPIC_MODEL: 'claude-opus-5',
      ANTHROPIC_DEFAULT_HAIKU_MODEL: '',
      OTHER: 'x',
    };
    expect(describeConfig(env)).toEqual([
      { key: 'ANTHROPIC_AUTH_TOKEN', display: 'gate***(20 chars)' },
      { key: 'ANTHROPIC_BASE_URL', display: 'https://gw.example' },
      { key: 'ANTHROPIC_MODEL', display: 'claude-opus-5' },
    ]);
  });

  it('shows a URL without its password: the store URL, and a gateway URL with credentials in it', () => {
    const env = {
      FLOWER_STORE_URL: 'postgres://flower:hunter2@db.example:5432/tasks',
      ANTHROPIC_BASE_URL: 'https://user:gw-secret@gw.example',
    };
    expect(describeConfig(env)).toEqual([
      { key: 'ANTHROPIC_BASE_URL', display: 'https://user:***@gw.example' },
      { key: 'FLOWER_STORE_URL', display: 'postgres://flower:***@db.example:5432/tasks' },
    ]);
  });

  it('always shows the base URL, marked as the default when unset', () => {
    expect(describeConfig({})).toEqual([
      { key: 'ANTHROPIC_BASE_URL', display: 'https://api.anthropic.com (default)' },
    ]);
  });
});
