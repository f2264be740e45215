/**
 * The places a sandbox is drawn around for one session or check: what it may reach, what it may
 * write besides, what it must not see, and which variables it must not inherit.
 *
 * Invariants:
 * - `hidden` is the one credential list (config/credential-stores.ts), never a copy.
 * - Secret variables: the credential keys and every `ANTHROPIC_*` and `FLOWER_*` variable (the
 *   endpoint, the store URL with its password), and any name that says it holds a secret (KEY,
 *   TOKEN, SECRET, PASSWORD, CREDENTIAL). A command that needs one gets it from the user's own
 *   configuration of the tool, not from flower's environment.
 */
import { join } from 'node:path';
import { type CredentialContext, credentialStores } from '../../config/credential-stores.js';
import { CREDENTIAL_KEYS } from '../../config/credentials.js';
import { homeDirectory } from '../../config/paths.js';

export interface SandboxPlaces {
  /** The working directory and every extra directory the session may reach. */
  readonly reachable: readonly string[];
  /** Package caches a worker may write (npm, pip, cargo, go and the XDG cache). */
  readonly caches: readonly string[];
  /** Credential stores: unreadable. */
  readonly hidden: readonly string[];
}

/** The cache directories under the home directory a build writes. */
export const CACHE_DIRECTORIES: readonly string[] = [
  '.cache',
  '.npm',
  '.yarn',
  '.cargo/registry',
  'go/pkg/mod',
];

export function sandboxPlaces(context: CredentialContext & { extraDirs?: readonly string[] }): SandboxPlaces {
  const home = homeDirectory(context.env);
  return {
    reachable: [context.workspace, ...(context.extraDirs ?? [])],
    caches: CACHE_DIRECTORIES.map((relative) => join(home, relative)),
    hidden: credentialStores(context),
  };
}

const SECRET_NAME = /KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL/;

/** Whether a variable must not reach a sandboxed command. */
export function isSecretVariable(name: string): boolean {
  const upper = name.toUpperCase();
  if ((CREDENTIAL_KEYS as readonly string[]).includes(upper)) return true;
  if (upper.startsWith('ANTHROPIC_') || upper.startsWith('FLOWER_')) return true;
  return SECRET_NAME.test(upper);
}
