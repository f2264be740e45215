import { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { UsageError } from '../../../../src/cli/command-line/exit-errors.js';
import {
  NETWORK_HELP,
  NO_SANDBOX_HELP,
  parseNetworkFlag,
  resolveSandboxPolicy,
} from '../../../../src/cli/command-line/sandbox-flags.js';
import { REGISTRY_DOMAINS } from '../../../../src/runtime/sandbox/policy.js';

/** The flags as a command registers them, parsed the way commander hands them to an action. */
function parsed(argv: string[]): { sandbox?: boolean; network?: ReturnType<typeof parseNetworkFlag> } {
  const command = new Command('go')
    .exitOverride()
    .configureOutput({ writeErr: () => undefined })
    .option('--network <policy>', NETWORK_HELP, parseNetworkFlag)
    .option('--no-sandbox', NO_SANDBOX_HELP);
  command.parse(argv, { from: 'user' });
  return command.opts();
}

describe('resolveSandboxPolicy', () => {
  it('defaults to sandboxed, the workers reaching the package registries', () => {
    const policy = resolveSandboxPolicy(parsed([]), {});
    expect(policy.enabled).toBe(true);
    expect(policy.workerNetwork).toEqual({ kind: 'domains', domains: REGISTRY_DOMAINS });
  });

  it('honours FLOWER_NETWORK when --network is not given', () => {
    expect(resolveSandboxPolicy(parsed([]), { FLOWER_NETWORK: 'none' }).workerNetwork).toEqual({
      kind: 'none',
    });
    expect(
      resolveSandboxPolicy(parsed([]), { FLOWER_NETWORK: 'registries,github.com' }).workerNetwork,
    ).toEqual({ kind: 'domains', domains: [...REGISTRY_DOMAINS, 'github.com'] });
  });

  it('lets --network win over FLOWER_NETWORK, even a broken one', () => {
    const policy = resolveSandboxPolicy(parsed(['--network', 'any']), { FLOWER_NETWORK: 'bad!' });
    expect(policy.workerNetwork).toEqual({ kind: 'any' });
  });

  it('treats an empty FLOWER_NETWORK as not set', () => {
    expect(resolveSandboxPolicy(parsed([]), { FLOWER_NETWORK: '  ' }).workerNetwork.kind).toBe('domains');
  });

  it('refuses a bad FLOWER_NETWORK as a usage error naming the variable and the accepted forms', () => {
    const resolve = () => resolveSandboxPolicy(parsed([]), { FLOWER_NETWORK: 'bogus!' });
    expect(resolve).toThrow(UsageError);
    expect(resolve).toThrow(/FLOWER_NETWORK=bogus!.*`none`, `any`, `registries`/);
  });

  it('turns the sandbox off only for --no-sandbox, keeping the network setting', () => {
    const off = resolveSandboxPolicy(parsed(['--no-sandbox', '--network', 'none']), {});
    expect(off).toEqual({ enabled: false, workerNetwork: { kind: 'none' } });
    expect(resolveSandboxPolicy(parsed([]), { FLOWER_NETWORK: 'any' }).enabled).toBe(true);
  });
});

describe('--network', () => {
  it('refuses a bad value on the command line with the accepted forms', () => {
    expect(() => parsed(['--network', 'bogus!'])).toThrow(/argument 'bogus!' is invalid.*`registries`/);
    expect(() => parsed(['--network', 'none,any'])).toThrow(/cannot be combined/);
  });

  it('takes domains and wildcards', () => {
    expect(parsed(['--network', '*.example.com']).network).toEqual({
      kind: 'domains',
      domains: ['*.example.com'],
    });
  });
});
