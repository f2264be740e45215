/**
 * What each role's commands may touch, as a typed policy: the one place the walls are decided.
 * The SDK's sandbox (sdk-settings.ts) and flower's own bubblewrap (bubblewrap.ts) both read it.
 *
 * Two kinds of role:
 * - `read-only` (coordinator, judge, clarifier, set-goal, asides, bequest): no writes anywhere
 *   (the sandbox's own scratch directory aside), no network, credential stores unreadable;
 * - `worker` (the hands-on subagents, and the checks flower runs): writes only in the workspace
 *   (a worktree lies inside it), the temporary directory and the package caches; network as
 *   `workerNetwork` says; credential stores unreadable; flower's secret variables unset.
 *
 * Invariants:
 * - The default reaches the package registries and nothing else (`registries`): a worker that runs
 *   `npm install` or `pip install` works unattended, and a command cannot send the workspace to an
 *   arbitrary host. `none` and `any` are the deliberate other ends; domains may be added.
 * - `enabled: false` is only ever the user's explicit `--no-sandbox`; nothing turns it off quietly.
 * - Parsing is pure and total: a bad value is an error naming the accepted forms, never a default.
 */

/** Where a command may open network connections. */
export type NetworkReach =
  | { readonly kind: 'none' }
  | { readonly kind: 'any' }
  | { readonly kind: 'domains'; readonly domains: readonly string[] };

export type SandboxRole = 'read-only' | 'worker';

export interface SandboxPolicy {
  /** False only when the user said `--no-sandbox`. */
  readonly enabled: boolean;
  /** What a worker's commands (and the checks) may reach. */
  readonly workerNetwork: NetworkReach;
}

/**
 * The package registries `registries` stands for: npm and yarn, PyPI, crates.io, the Go module
 * proxy, RubyGems, Maven Central. Not code hosts (github.com): a push or a gist is a way out for
 * the workspace; add one with `--network registries,github.com` when a build needs it.
 */
export const REGISTRY_DOMAINS: readonly string[] = [
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
];

export const defaultSandboxPolicy: SandboxPolicy = {
  enabled: true,
  workerNetwork: { kind: 'domains', domains: REGISTRY_DOMAINS },
};

/** The variable and flag that set `workerNetwork`. */
export const NETWORK_VARIABLE = 'FLOWER_NETWORK';
export const NETWORK_FORMS =
  '`none`, `any`, `registries`, or domains (`registries,github.com`, `*.example.com`)';

/** A domain as the sandbox's allow list takes it: a host name, optionally `*.` in front. */
const DOMAIN = /^(\*\.)?([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

/** `none`, `any`, or a comma list of `registries` and domains. */
export function parseNetworkReach(text: string): NetworkReach | { error: string } {
  const words = text
    .split(',')
    .map((word) => word.trim().toLowerCase())
    .filter((word) => word !== '');
  if (words.length === 0) return { error: `an empty network setting; use ${NETWORK_FORMS}` };
  if (words.length === 1 && words[0] === 'none') return { kind: 'none' };
  if (words.length === 1 && words[0] === 'any') return { kind: 'any' };
  const domains: string[] = [];
  for (const word of words) {
    if (word === 'registries') domains.push(...REGISTRY_DOMAINS);
    else if (word === 'none' || word === 'any')
      return { error: `"${word}" cannot be combined with other values; use ${NETWORK_FORMS}` };
    else if (DOMAIN.test(word)) domains.push(word);
    else return { error: `"${word}" is not a domain; use ${NETWORK_FORMS}` };
  }
  return { kind: 'domains', domains: [...new Set(domains)] };
}

/** The reach in words, for `doctor` and the start line. */
export function describeReach(reach: NetworkReach): string {
  if (reach.kind === 'none') return 'no network';
  if (reach.kind === 'any') return 'any host';
  const registries = REGISTRY_DOMAINS.every((domain) => reach.domains.includes(domain));
  const others = reach.domains.filter((domain) => !registries || !REGISTRY_DOMAINS.includes(domain));
  return [registries ? 'the package registries' : '', ...others].filter(Boolean).join(', ');
}

/** What a role's commands may reach under `policy`. Read-only roles reach nothing. */
export function reachOf(role: SandboxRole, policy: SandboxPolicy): NetworkReach {
  return role === 'read-only' ? { kind: 'none' } : policy.workerNetwork;
}
