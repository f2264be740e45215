import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  applyEnvChain,
  chainWarnings,
  type EnvChainContext,
  type EnvSourceKind,
  lookupSources,
  resolveEnvChain,
} from '../../../src/config/env-chain.js';

let root: string;
let world: { home: string; cwd: string; xdg: string; checkout: string };

function write(path: string, text: string): string {
  mkdirSync(join(path, '..'), { recursive: true });
  writeFileSync(path, text);
  return path;
}

function context(env: Record<string, string> = {}, sourceCheckout = false): EnvChainContext {
  return { env, cwd: world.cwd, home: world.home, packageRoot: world.checkout, sourceCheckout };
}

function value(ctx: EnvChainContext, key: string, explicit?: string): string | undefined {
  const target: Record<string, string | undefined> = { ...ctx.env };
  applyEnvChain(resolveEnvChain(ctx, explicit), target);
  return target[key];
}

function winnerKind(ctx: EnvChainContext, key: string): EnvSourceKind | undefined {
  return resolveEnvChain(ctx).winners.get(key)?.source.kind;
}

beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'flower-env-chain-'));
  world = {
    home: join(root, 'home'),
    cwd: join(root, 'project'),
    xdg: join(root, 'xdg'),
    checkout: join(root, 'checkout'),
  };
  for (const dir of Object.values(world)) mkdirSync(dir, { recursive: true });
});

afterEach(() => rmSync(root, { recursive: true, force: true }));

describe('each step of the lookup chain', () => {
  it('1. the process environment wins over every file and is never overwritten', () => {
    write(join(world.cwd, '.env'), 'ANTHROPIC_API_KEY=from-project');
    const ctx = context({ ANTHROPIC_API_KEY: 'from-process' });
    expect(value(ctx, 'ANTHROPIC_API_KEY')).toBe('from-process');
    expect(winnerKind(ctx, 'ANTHROPIC_API_KEY')).toBe('process');
    expect(resolveEnvChain(ctx).additions).not.toHaveProperty('ANTHROPIC_API_KEY');
  });

  it('1. even an empty exported value is not overwritten', () => {
    write(join(world.cwd, '.env'), 'ANTHROPIC_API_KEY=from-project');
    expect(value(context({ ANTHROPIC_API_KEY: '' }), 'ANTHROPIC_API_KEY')).toBe('');
  });

  it('2. $FLOWER_ENV beats the project .env; a relative path resolves against the cwd', () => {
    write(join(world.cwd, 'custom.env'), 'ANTHROPIC_API_KEY=from-flower-env');
    write(join(world.cwd, '.env'), 'ANTHROPIC_API_KEY=from-project');
    const ctx = context({ FLOWER_ENV: 'custom.env' });
    expect(value(ctx, 'ANTHROPIC_API_KEY')).toBe('from-flower-env');
    expect(resolveEnvChain(ctx).winners.get('ANTHROPIC_API_KEY')?.source.path).toBe(
      join(world.cwd, 'custom.env'),
    );
  });

  it('2. an unset $FLOWER_ENV is reported as not set', () => {
    const sources = resolveEnvChain(context()).sources;
    expect(sources.find((report) => report.source.kind === 'flower-env')?.status).toBe('not-set');
  });

  it('3. the project .env beats the user .env', () => {
    write(join(world.cwd, '.env'), 'ANTHROPIC_API_KEY=from-project');
    write(join(world.home, '.config', 'flower', '.env'), 'ANTHROPIC_API_KEY=from-user');
    expect(value(context(), 'ANTHROPIC_API_KEY')).toBe('from-project');
  });

  it('4. the user .env lives under ~/.config/flower by default', () => {
    write(join(world.home, '.config', 'flower', '.env'), 'ANTHROPIC_API_KEY=from-user');
    expect(value(context(), 'ANTHROPIC_API_KEY')).toBe('from-user');
    expect(winnerKind(context(), 'ANTHROPIC_API_KEY')).toBe('user');
  });

  it('4. ... and under $XDG_CONFIG_HOME/flower when that is set', () => {
    write(join(world.home, '.config', 'flower', '.env'), 'ANTHROPIC_API_KEY=from-home-config');
    write(join(world.xdg, 'flower', '.env'), 'ANTHROPIC_API_KEY=from-xdg');
    expect(value(context({ XDG_CONFIG_HOME: world.xdg }), 'ANTHROPIC_API_KEY')).toBe('from-xdg');
    // An empty XDG_CONFIG_HOME counts as unset.
    expect(value(context({ XDG_CONFIG_HOME: '' }), 'ANTHROPIC_API_KEY')).toBe('from-home-config');
  });

  it('5. the source checkout .env is read only when running from a checkout, after the user .env', () => {
    write(join(world.checkout, '.env'), 'ANTHROPIC_API_KEY=from-checkout\nANTHROPIC_MODEL=checkout-model');
    write(join(world.home, '.config', 'flower', '.env'), 'ANTHROPIC_API_KEY=from-user');
    expect(value(context({}, true), 'ANTHROPIC_API_KEY')).toBe('from-user');
    expect(value(context({}, true), 'ANTHROPIC_MODEL')).toBe('checkout-model');
    expect(value(context({}, false), 'ANTHROPIC_MODEL')).toBeUndefined();
    expect(lookupSources(context({}, false)).map((source) => source.kind)).not.toContain('checkout');
  });

  it('6. Claude Code settings.json lends only the known keys, after every .env file', () => {
    write(
      join(world.home, '.claude', 'settings.json'),
      JSON.stringify({
        env: { ANTHROPIC_AUTH_TOKEN: 'claude-token', ANTHROPIC_MODEL: 'claude-model', OTHER_SETTING: 'x' },
        permissions: { allow: ['Bash'] },
      }),
    );
    write(join(world.cwd, '.env'), 'ANTHROPIC_MODEL=project-model');
    const ctx = context();
    expect(value(ctx, 'ANTHROPIC_AUTH_TOKEN')).toBe('claude-token');
    expect(value(ctx, 'ANTHROPIC_MODEL')).toBe('project-model');
    expect(value(ctx, 'OTHER_SETTING')).toBeUndefined();
    expect(winnerKind(ctx, 'ANTHROPIC_AUTH_TOKEN')).toBe('claude-settings');
  });

  it('6. settings.json beats settings.local.json per key; local fills the gaps', () => {
    write(
      join(world.home, '.claude', 'settings.json'),
      JSON.stringify({ env: { ANTHROPIC_AUTH_TOKEN: 'main' } }),
    );
    write(
      join(world.home, '.claude', 'settings.local.json'),
      JSON.stringify({ env: { ANTHROPIC_AUTH_TOKEN: 'local', ANTHROPIC_BASE_URL: 'https://local.example' } }),
    );
    expect(value(context(), 'ANTHROPIC_AUTH_TOKEN')).toBe('main');
    expect(value(context(), 'ANTHROPIC_BASE_URL')).toBe('https://local.example');
    expect(winnerKind(context(), 'ANTHROPIC_BASE_URL')).toBe('claude-settings-local');
  });

  it('6. empty and non-string values in settings.json are ignored (a later file can fill them)', () => {
    write(
      join(world.home, '.claude', 'settings.json'),
      JSON.stringify({ env: { ANTHROPIC_AUTH_TOKEN: '', ANTHROPIC_MODEL: 42 } }),
    );
    write(
      join(world.home, '.claude', 'settings.local.json'),
      JSON.stringify({ env: { ANTHROPIC_AUTH_TOKEN: 'local' } }),
    );
    expect(value(context(), 'ANTHROPIC_AUTH_TOKEN')).toBe('local');
    expect(value(context(), 'ANTHROPIC_MODEL')).toBeUndefined();
  });

  it.each([
    ['invalid JSON', '{ "env": { "ANTHROPIC_AUTH_TOKEN": ', 'invalid'],
    ['a JSON array', '[1, 2]', 'read'],
    ['an env block that is a string', '{"env": "oops"}', 'read'],
  ])('6. a broken settings.json (%s) is skipped, never fatal', (_name, text, status) => {
    write(join(world.home, '.claude', 'settings.json'), text);
    write(
      join(world.home, '.claude', 'settings.local.json'),
      JSON.stringify({ env: { ANTHROPIC_AUTH_TOKEN: 'local' } }),
    );
    const report = resolveEnvChain(context());
    expect(report.sources.find((source) => source.source.kind === 'claude-settings')?.status).toBe(status);
    expect(value(context(), 'ANTHROPIC_AUTH_TOKEN')).toBe('local');
  });

  it('6. an unreadable settings.json is reported and skipped', () => {
    // Tests may run as root, which reads any file whatever its mode; a directory in the file's
    // place cannot be read by anyone.
    mkdirSync(join(world.home, '.claude', 'settings.json'), { recursive: true });
    const report = resolveEnvChain(context());
    expect(report.sources.find((source) => source.source.kind === 'claude-settings')?.status).toBe(
      'unreadable',
    );
  });

  it('missing files are reported as missing and change nothing', () => {
    const report = resolveEnvChain(context());
    expect(report.sources.map((source) => [source.source.kind, source.status])).toEqual([
      ['process', 'read'],
      ['flower-env', 'not-set'],
      ['project', 'missing'],
      ['user', 'missing'],
      ['claude-settings', 'missing'],
      ['claude-settings-local', 'missing'],
    ]);
    expect(report.additions).toEqual({});
  });
});

describe('per-key merging', () => {
  it('a base URL from the project and a token from the user file combine', () => {
    write(join(world.cwd, '.env'), 'ANTHROPIC_BASE_URL=https://gateway.example');
    write(
      join(world.home, '.config', 'flower', '.env'),
      'ANTHROPIC_AUTH_TOKEN=user-token\nANTHROPIC_BASE_URL=https://other',
    );
    const report = resolveEnvChain(context());
    expect(report.additions).toEqual({
      ANTHROPIC_BASE_URL: 'https://gateway.example',
      ANTHROPIC_AUTH_TOKEN: 'user-token',
    });
    expect(report.winners.get('ANTHROPIC_BASE_URL')).toMatchObject({ source: { kind: 'project' }, line: 1 });
    expect(report.winners.get('ANTHROPIC_AUTH_TOKEN')).toMatchObject({ source: { kind: 'user' }, line: 1 });
  });

  it('every key of a .env file is loaded, not only the known ones', () => {
    write(join(world.cwd, '.env'), 'MY_TOOL_SETTING=1\nFLOWER_WINDOW=200000');
    expect(resolveEnvChain(context()).additions).toEqual({ MY_TOOL_SETTING: '1', FLOWER_WINDOW: '200000' });
  });

  it('the same file reached twice is read once', () => {
    write(join(world.cwd, '.env'), 'ANTHROPIC_API_KEY=k');
    const report = resolveEnvChain(context({ FLOWER_ENV: join(world.cwd, '.env') }));
    expect(report.sources.find((source) => source.source.kind === 'project')?.status).toBe('duplicate');
    expect(report.winners.get('ANTHROPIC_API_KEY')?.source.kind).toBe('flower-env');
  });

  it('records the pitfalls of every file read', () => {
    write(join(world.cwd, '.env'), 'export ANTHROPIC_API_KEY=x');
    write(join(world.home, '.config', 'flower', '.env'), 'ANTHROPIC_MODEL=$M');
    const report = resolveEnvChain(context());
    expect(report.sources.flatMap((source) => source.pitfalls.map((pitfall) => pitfall.kind))).toEqual([
      'export-prefix',
      'variable-reference',
    ]);
  });
});

describe('the empty-value trap', () => {
  it('an empty value claims the key and hides the later real value, with a warning naming both', () => {
    write(join(world.cwd, '.env'), '# project\nANTHROPIC_AUTH_TOKEN=');
    write(join(world.home, '.config', 'flower', '.env'), 'ANTHROPIC_AUTH_TOKEN=real-token');
    const ctx = context();
    expect(value(ctx, 'ANTHROPIC_AUTH_TOKEN')).toBe('');
    const [warning] = resolveEnvChain(ctx).shadowWarnings;
    expect(warning?.key).toBe('ANTHROPIC_AUTH_TOKEN');
    expect(warning?.message).toContain(`${join(world.cwd, '.env')}:2`);
    expect(warning?.message).toContain(join(world.home, '.config', 'flower', '.env'));
  });

  it('an empty exported variable also shadows the files, and says so', () => {
    write(join(world.cwd, '.env'), 'ANTHROPIC_API_KEY=file-key');
    const [warning] = resolveEnvChain(context({ ANTHROPIC_API_KEY: '' })).shadowWarnings;
    expect(warning?.message).toContain('process environment');
  });

  it('an empty value with nothing behind it is no shadow warning', () => {
    write(join(world.cwd, '.env'), 'ANTHROPIC_AUTH_TOKEN=');
    expect(resolveEnvChain(context()).shadowWarnings).toEqual([]);
  });
});

describe('explicit path', () => {
  it('reads only that file: no project, user, checkout or Claude Code fallback', () => {
    const explicit = write(join(root, 'only.env'), 'ANTHROPIC_MODEL=explicit-model');
    write(join(world.cwd, '.env'), 'ANTHROPIC_API_KEY=project');
    write(join(world.home, '.config', 'flower', '.env'), 'ANTHROPIC_BASE_URL=https://user');
    write(join(world.checkout, '.env'), 'CLAUDE_CODE_EFFORT_LEVEL=high');
    write(
      join(world.home, '.claude', 'settings.json'),
      JSON.stringify({ env: { ANTHROPIC_AUTH_TOKEN: 't' } }),
    );
    const ctx = context({ FLOWER_ENV: join(world.cwd, '.env') }, true);
    const report = resolveEnvChain(ctx, explicit);
    expect(report.additions).toEqual({ ANTHROPIC_MODEL: 'explicit-model' });
    expect(report.sources.map((source) => source.source.kind)).toEqual(['process', 'explicit']);
  });

  it('still never overrides the process environment', () => {
    const explicit = write(join(root, 'only.env'), 'ANTHROPIC_MODEL=explicit-model');
    expect(value(context({ ANTHROPIC_MODEL: 'shell' }), 'ANTHROPIC_MODEL', explicit)).toBe('shell');
  });
});

describe('chainWarnings', () => {
  it('lists pitfalls with file and line, unusable sources, a missing $FLOWER_ENV file and shadowing', () => {
    write(join(world.cwd, '.env'), 'export A=1\nANTHROPIC_AUTH_TOKEN=');
    write(join(world.home, '.config', 'flower', '.env'), 'ANTHROPIC_AUTH_TOKEN=real');
    write(join(world.home, '.claude', 'settings.json'), '{broken');
    const warnings = chainWarnings(resolveEnvChain(context({ FLOWER_ENV: 'missing.env' })));
    expect(warnings).toHaveLength(4);
    expect(warnings[0]).toBe(`${join(world.cwd, 'missing.env')}: named by $FLOWER_ENV but does not exist`);
    expect(warnings[1]).toMatch(
      new RegExp(`^${join(world.cwd, '.env')}:1: sets a variable literally named "export A"`),
    );
    expect(warnings[2]).toMatch(
      new RegExp(`^${join(world.home, '.claude', 'settings.json')}: not valid JSON, ignored`),
    );
    expect(warnings[3]).toMatch(/^ANTHROPIC_AUTH_TOKEN is empty in/);
  });

  it('optional files that are absent are no warning', () => {
    expect(chainWarnings(resolveEnvChain(context()))).toEqual([]);
  });
});
