import { delimiter, isAbsolute, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  credentialStores,
  extraStores,
  HOME_CREDENTIAL_STORES,
  SYSTEM_CREDENTIAL_STORES,
} from '../../../src/config/credential-stores.js';

const home = '/home/ada';
const base = { HOME: home };

describe('the credential stores', () => {
  it("hold flower's whole .env chain, Claude Code's settings and transcripts, and the run directory", () => {
    const stores = credentialStores({
      env: { ...base, FLOWER_ENV: 'team.env', CLAUDE_CONFIG_DIR: '/cfg' },
      workspace: '/ws',
      cwd: '/started-here',
      runDir: '/ws/runs',
      sourceCheckout: '/src/flower',
    });
    for (const path of [
      '/started-here/team.env',
      '/started-here/.env',
      '/ws/.env',
      join(home, '.config/flower/.env'),
      join(home, '.config/flower'),
      '/src/flower/.env',
      '/cfg/projects',
      '/cfg/settings.json',
      '/cfg/settings.local.json',
      '/cfg/.credentials.json',
      join(home, '.claude.json'),
      '/ws/runs',
    ])
      expect(stores, path).toContain(path);
  });

  it('hold the usual user-level stores and the secrets mounts', () => {
    const stores = credentialStores({ env: base, workspace: '/ws' });
    for (const relative of [
      '.ssh',
      '.aws',
      '.config/gcloud',
      '.kube',
      '.git-credentials',
      '.netrc',
      '.npmrc',
    ])
      expect(stores).toContain(join(home, relative));
    for (const relative of ['.config/gh', '.vault-token', '.bash_history', '.cargo/credentials.toml'])
      expect(stores).toContain(join(home, relative));
    expect(stores).toContain('/run/secrets');
    expect(stores).toContain('/var/run/secrets');
    expect(stores).toContain(join(home, '.claude/projects'));
    expect(HOME_CREDENTIAL_STORES.length).toBeGreaterThan(20);
  });

  it('FLOWER_SANDBOX_HIDE adds paths: ~/ from home, relative from the workspace, absolute as they are', () => {
    const stores = credentialStores({
      env: {
        ...base,
        FLOWER_SANDBOX_HIDE: ['~/.secrets', 'deploy/keys', '/etc/prod.pem', ' '].join(delimiter),
      },
      workspace: '/ws',
    });
    expect(stores).toContain(join(home, '.secrets'));
    expect(stores).toContain('/ws/deploy/keys');
    expect(stores).toContain('/etc/prod.pem');
  });

  it('hide nothing the context does not name: no run directory, no extra path, no file for an unset $FLOWER_ENV', () => {
    const stores = credentialStores({ env: base, workspace: '/ws' });
    expect([...stores].sort()).toEqual(
      [
        '/ws/.env',
        join(home, '.config/flower/.env'),
        join(home, '.config/flower'),
        join(home, '.claude/projects'),
        join(home, '.claude/settings.json'),
        join(home, '.claude/settings.local.json'),
        join(home, '.claude/.credentials.json'),
        join(home, '.claude.json'),
        ...HOME_CREDENTIAL_STORES.map((relative) => join(home, relative)),
        ...SYSTEM_CREDENTIAL_STORES,
      ].sort(),
    );
  });

  it('FLOWER_SANDBOX_HIDE: spaces around a path are not part of it, ~ is home, an empty entry hides nothing', () => {
    const value = [' ~/.secrets ', '', ' ', '~', 'deploy/keys'].join(delimiter);
    expect(extraStores({ FLOWER_SANDBOX_HIDE: value }, home, '/ws')).toEqual([
      join(home, '.secrets'),
      home,
      '/ws/deploy/keys',
    ]);
    expect(extraStores({}, home, '/ws')).toEqual([]);
    expect(extraStores({ FLOWER_SANDBOX_HIDE: '' }, home, '/ws')).toEqual([]);
  });

  it('are absolute, each once', () => {
    const stores = credentialStores({
      env: { ...base, FLOWER_SANDBOX_HIDE: '~/.ssh' },
      workspace: '/ws',
      runDir: '/ws/runs',
    });
    expect(stores.every((path) => isAbsolute(path))).toBe(true);
    expect(new Set(stores).size).toBe(stores.length);
  });
});
