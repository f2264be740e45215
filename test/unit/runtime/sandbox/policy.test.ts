import { describe, expect, it } from 'vitest';
import { resolveSandboxPolicy } from '../../../../src/cli/command-line/sandbox-flags.js';
import { isSecretVariable } from '../../../../src/runtime/sandbox/places.js';
import {
  defaultSandboxPolicy,
  describeReach,
  parseNetworkReach,
  REGISTRY_DOMAINS,
  reachOf,
} from '../../../../src/runtime/sandbox/policy.js';
import { sdkSandbox } from '../../../../src/runtime/sandbox/sdk-settings.js';

describe('the network policy', () => {
  it('reads none, any, registries and domains, case and spaces aside', () => {
    expect(parseNetworkReach('none')).toEqual({ kind: 'none' });
    expect(parseNetworkReach(' ANY ')).toEqual({ kind: 'any' });
    expect(parseNetworkReach('registries')).toEqual({ kind: 'domains', domains: [...REGISTRY_DOMAINS] });
    expect(parseNetworkReach('registries, github.com,*.example.com')).toEqual({
      kind: 'domains',
      domains: [...REGISTRY_DOMAINS, 'github.com', '*.example.com'],
    });
    expect(parseNetworkReach('github.com,github.com')).toEqual({ kind: 'domains', domains: ['github.com'] });
  });

  it('forgives a stray comma: an empty item between or after the others is no item', () => {
    expect(parseNetworkReach('registries,')).toEqual({ kind: 'domains', domains: [...REGISTRY_DOMAINS] });
    expect(parseNetworkReach('github.com,, pypi.org')).toEqual({
      kind: 'domains',
      domains: ['github.com', 'pypi.org'],
    });
    expect(parseNetworkReach(' , ')).toEqual({ error: expect.stringContaining('an empty network setting') });
  });

  it('takes any host name DNS allows: one-letter and 63-letter labels, two-letter ends, many levels', () => {
    const label63 = 'a'.repeat(63);
    for (const domain of [
      'x.com',
      'github.io',
      'npm.pkg.github.com',
      '*.s3.eu-west-1.amazonaws.com',
      'intranet',
      'h',
      `${label63}.com`,
      `pkg.${label63}`,
    ])
      expect(parseNetworkReach(domain), domain).toEqual({ kind: 'domains', domains: [domain] });
    for (const bad of [`${'a'.repeat(64)}.com`, `pkg.${'a'.repeat(64)}`, '-x.com', 'x-.com', 'x..com'])
      expect(parseNetworkReach(bad), bad).toHaveProperty('error');
  });

  it('FLOWER_NETWORK sets what the workers reach', () => {
    expect(resolveSandboxPolicy({}, { FLOWER_NETWORK: 'none' }).workerNetwork).toEqual({ kind: 'none' });
  });

  it('refuses what is not a policy, naming the accepted forms', () => {
    for (const bad of [
      '',
      ' , ',
      'none,github.com',
      'any,registries',
      'http://x.com',
      'a b',
      'bogus!',
      '*',
    ]) {
      const parsed = parseNetworkReach(bad);
      expect(parsed, bad).toHaveProperty('error');
      expect((parsed as { error: string }).error, bad).toContain('`none`, `any`, `registries`');
    }
  });

  it('defaults to the package registries for workers and nothing for read-only roles', () => {
    expect(defaultSandboxPolicy.enabled).toBe(true);
    expect(reachOf('worker', defaultSandboxPolicy)).toEqual({ kind: 'domains', domains: REGISTRY_DOMAINS });
    expect(reachOf('read-only', { enabled: true, workerNetwork: { kind: 'any' } })).toEqual({ kind: 'none' });
    expect(REGISTRY_DOMAINS).toContain('registry.npmjs.org');
    expect(REGISTRY_DOMAINS).toContain('pypi.org');
    expect(REGISTRY_DOMAINS).not.toContain('github.com');
  });

  it('the registries are the hosts npm, yarn, pip, cargo, go, gem and maven download from, and no other', () => {
    expect([...REGISTRY_DOMAINS].sort()).toEqual(
      [
        'registry.npmjs.org',
        'registry.yarnpkg.com',
        'pypi.org',
        'files.pythonhosted.org',
        'crates.io',
        'index.crates.io',
        'static.crates.io',
        'proxy.golang.org',
        'sum.golang.org',
        'rubygems.org',
        'repo.maven.apache.org',
        'repo1.maven.org',
      ].sort(),
    );
  });

  it('says the reach in words', () => {
    expect(describeReach({ kind: 'none' })).toBe('no network');
    expect(describeReach({ kind: 'any' })).toBe('any host');
    expect(describeReach(defaultSandboxPolicy.workerNetwork)).toBe('the package registries');
    expect(describeReach({ kind: 'domains', domains: [...REGISTRY_DOMAINS, 'github.com'] })).toBe(
      'the package registries, github.com',
    );
    expect(describeReach({ kind: 'domains', domains: ['pypi.org', 'github.com'] })).toBe(
      'pypi.org, github.com',
    );
  });
});

describe('secret variables', () => {
  it('are the credentials, every ANTHROPIC_ and FLOWER_ variable, and names that say they hold a secret', () => {
    for (const name of [
      'ANTHROPIC_API_KEY',
      'ANTHROPIC_AUTH_TOKEN',
      'ANTHROPIC_BASE_URL',
      'FLOWER_STORE_URL',
      'GITHUB_TOKEN',
      'npm_token',
      'AWS_SECRET_ACCESS_KEY',
      'DB_PASSWORD',
      'PGPASSWD',
      'GOOGLE_APPLICATION_CREDENTIALS',
    ])
      expect(isSecretVariable(name), name).toBe(true);
    for (const name of ['PATH', 'HOME', 'LANG', 'TERM', 'CLAUDE_CONFIG_DIR', 'NODE_ENV', 'SSH_TTY'])
      expect(isSecretVariable(name), name).toBe(false);
  });
});

describe("the SDK's sandbox for a session", () => {
  const places = {
    reachable: ['/ws', '/extra'],
    caches: ['/home/u/.npm'],
    hidden: ['/home/u/.ssh', '/ws/runs'],
  };
  const env = { PATH: '/bin', ANTHROPIC_API_KEY: 'sk-x', GITHUB_TOKEN: 't', HOME: '/home/u' };

  it('never degrades and never asks: fail if unavailable, no way out, commands run without a prompt', () => {
    for (const role of ['read-only', 'worker'] as const) {
      const settings = sdkSandbox(role, defaultSandboxPolicy, places, env);
      expect(settings).toMatchObject({
        enabled: true,
        failIfUnavailable: true,
        allowUnsandboxedCommands: false,
        autoAllowBashIfSandboxed: true,
      });
      expect(settings.network?.strictAllowlist).toBe(true);
      expect(settings.filesystem?.denyRead).toEqual(places.hidden);
      expect(settings.credentials?.envVars).toEqual([
        { name: 'ANTHROPIC_API_KEY', mode: 'deny' },
        { name: 'GITHUB_TOKEN', mode: 'deny' },
      ]);
    }
  });

  it('a read-only role writes nowhere it can reach and reaches no host', () => {
    const settings = sdkSandbox('read-only', { enabled: true, workerNetwork: { kind: 'any' } }, places, env);
    expect(settings.filesystem?.denyWrite).toEqual(['/ws', '/extra']);
    expect(settings.filesystem?.allowWrite).toBeUndefined();
    expect(settings.network?.allowedDomains).toEqual([]);
  });

  it('a worker also writes the caches, and reaches what its policy allows', () => {
    const worker = sdkSandbox('worker', defaultSandboxPolicy, places, env);
    expect(worker.filesystem?.allowWrite).toEqual(['/ws', '/extra', '/home/u/.npm']);
    expect(worker.filesystem?.denyWrite).toBeUndefined();
    expect(worker.network?.allowedDomains).toEqual([...REGISTRY_DOMAINS]);
    const anyHost = sdkSandbox('worker', { enabled: true, workerNetwork: { kind: 'any' } }, places, env);
    expect(anyHost.network?.allowedDomains).toEqual(['*']);
    const none = sdkSandbox('worker', { enabled: true, workerNetwork: { kind: 'none' } }, places, env);
    expect(none.network?.allowedDomains).toEqual([]);
  });
});
