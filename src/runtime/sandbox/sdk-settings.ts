/**
 * A role's sandbox policy as the SDK's `sandbox` option: Claude Code then runs every Bash command
 * of the session inside its operating-system sandbox (bubblewrap and socat on Linux, Seatbelt on
 * macOS), whatever the command's text says.
 *
 * Invariants:
 * - Never degrades: `failIfUnavailable` is set, so a session whose sandbox cannot start ends with an
 *   error instead of running its commands unsandboxed; and `allowUnsandboxedCommands: false`, so the
 *   model's `dangerouslyDisableSandbox` is ignored.
 * - Commands inside it run without an approval prompt (`autoAllowBashIfSandboxed`): the wall is the
 *   sandbox, and an unattended step has no one to approve.
 * - Read-only roles: every directory the session may reach (its working directory and the extra
 *   ones) is denied for writing; the binary's own scratch directory stays writable, because Claude
 *   Code writes its working-directory tracking file there after each command (denying it made every
 *   command end "exit 1", measured). Workers: every directory the session may reach (an outside
 *   workbench among them) and the caches are writable, nothing else.
 * - Credential stores are denied for reading, and every secret variable of the session's
 *   environment is unset for its commands (`credentials.envVars` deny).
 * - The network is `strictAllowlist`: a host not on the list is refused at once, never prompted.
 * - The sandbox covers Bash only; the file tools (Read, Grep, Glob, Edit, Write) are kept out of
 *   the credential stores by permission deny rules of the same list (`fileToolDenials`), which the
 *   binary applies to every thread of the session, the workers' included.
 */
import type { SandboxSettings } from '@anthropic-ai/claude-agent-sdk';
import type { EnvMap } from '../../config/paths.js';
import { isSecretVariable, type SandboxPlaces } from './places.js';
import { type NetworkReach, reachOf, type SandboxPolicy, type SandboxRole } from './policy.js';

/** The SDK's sandbox settings for a session of `role`. */
export function sdkSandbox(
  role: SandboxRole,
  policy: SandboxPolicy,
  places: SandboxPlaces,
  env: EnvMap,
): SandboxSettings {
  const filesystem =
    role === 'read-only'
      ? { denyRead: [...places.hidden], denyWrite: [...places.reachable] }
      : { denyRead: [...places.hidden], allowWrite: [...places.reachable, ...places.caches] };
  const secretNames = Object.keys(env).filter(isSecretVariable);
  // Stryker disable next-line MethodExpression: the deny entries are a set; sorted only to read the same whatever the environment's order
  secretNames.sort();
  return {
    enabled: true,
    failIfUnavailable: true,
    autoAllowBashIfSandboxed: true,
    allowUnsandboxedCommands: false,
    filesystem,
    network: networkSettings(reachOf(role, policy)),
    credentials: {
      envVars: secretNames.map((name) => ({ name, mode: 'deny' as const })),
    },
  };
}

function networkSettings(reach: NetworkReach): NonNullable<SandboxSettings['network']> {
  if (reach.kind === 'none') return { allowedDomains: [], strictAllowlist: true };
  if (reach.kind === 'any') return { allowedDomains: ['*'], strictAllowlist: true };
  return { allowedDomains: [...reach.domains], strictAllowlist: true };
}

/**
 * Permission rules that keep every file tool out of the credential stores. Claude Code reads an
 * absolute path in a rule as `//path`; a rule names a directory's contents with `/**`.
 */
export function fileToolDenials(places: SandboxPlaces): string[] {
  return places.hidden.flatMap((path) =>
    ['Read', 'Edit'].flatMap((tool) => [`${tool}(/${path})`, `${tool}(/${path}/**)`]),
  );
}
