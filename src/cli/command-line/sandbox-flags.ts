/**
 * The sandbox flags of the commands that run agents (`go`, `run`, `once`, and `--no-sandbox` on
 * `demo`): `--no-sandbox` and `--network POLICY`, with `FLOWER_NETWORK` as the setting's variable.
 *
 * Invariants:
 * - The flag wins over the variable; neither given means the default (the package registries).
 * - A bad `--network` is refused by commander's parser (exit 2) and a bad `FLOWER_NETWORK` by a
 *   UsageError (exit 2), both naming the accepted forms: a typo never falls back to a default that
 *   reaches more, or less, than was asked for.
 * - `--no-sandbox` is the only way to `enabled: false`; the variable cannot turn the sandbox off,
 *   so a stray line in a `.env` cannot quietly open the walls.
 * - Resolution is pure: the caller loads the `.env` chain first and passes the environment.
 */
import { InvalidArgumentError } from 'commander';
import type { EnvMap } from '../../config/paths.js';
import {
  defaultSandboxPolicy,
  NETWORK_FORMS,
  NETWORK_VARIABLE,
  type NetworkReach,
  parseNetworkReach,
  type SandboxPolicy,
} from '../../runtime/sandbox/policy.js';
import { UsageError } from './exit-errors.js';

/** What commander hands the action for these flags. */
export interface SandboxFlags {
  /** False when `--no-sandbox` was typed (commander's `--no-` convention). */
  sandbox?: boolean;
  /** `--network`, already parsed. */
  network?: NetworkReach;
}

export const NETWORK_HELP =
  `where the workers' commands and the checks may connect: ${NETWORK_FORMS}; ` +
  `default registries (the package registries only); overrides ${NETWORK_VARIABLE}`;

export const NO_SANDBOX_HELP =
  "run the agents' commands and the checks without the sandbox: they can then read every file you " +
  'can (your keys included) and reach any host';

/** `--network`'s parser: the reach, or commander's usage error naming the accepted forms. */
export function parseNetworkFlag(value: string): NetworkReach {
  const reach = parseNetworkReach(value);
  if ('error' in reach) throw new InvalidArgumentError(`${reach.error}.`);
  return reach;
}

/** The policy the flags and the environment ask for. */
export function resolveSandboxPolicy(flags: SandboxFlags, env: EnvMap): SandboxPolicy {
  const enabled = flags.sandbox !== false;
  if (flags.network !== undefined) return { enabled, workerNetwork: flags.network };
  const value = env[NETWORK_VARIABLE];
  if (value === undefined || value.trim() === '') return { ...defaultSandboxPolicy, enabled };
  const reach = parseNetworkReach(value);
  if ('error' in reach) throw new UsageError(`${NETWORK_VARIABLE}=${value}: ${reach.error}.`);
  return { enabled, workerNetwork: reach };
}
