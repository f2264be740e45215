/**
 * Can the sandbox run here? Asked before a task starts (so `go` refuses instead of finding out in
 * the middle of a step) and by `flower doctor` (so the user learns the fix before they need it).
 *
 * Invariants:
 * - Linux needs `bwrap` (bubblewrap) and `socat` on PATH (the binary's sandbox uses both; flower's
 *   own wall uses bwrap) and user namespaces that bubblewrap can create: a container without them
 *   fails the trial run, and says so. macOS has Seatbelt built in and needs nothing.
 * - Every other platform is unsupported, said as such.
 * - An unavailable sandbox is an answer with what is missing and the command that fixes it, never an
 *   exception; the caller decides (refuse, or `--no-sandbox`).
 */
import { spawnSync } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';
import type { EnvMap } from '../../config/paths.js';

export type SandboxAvailability =
  | { readonly available: true; readonly engine: 'bubblewrap' | 'seatbelt' }
  | {
      readonly available: false;
      /** What is missing or broken, in a few words. */
      readonly problem: string;
      /** The command (or step) that fixes it, when there is one. */
      readonly fix?: string;
    };

/** The first executable called `name` on PATH, or undefined. */
export function onPath(name: string, env: EnvMap): string | undefined {
  // Stryker disable next-line StringLiteral: with PATH unset the mutant searches one relative directory, 'Stryker was here!', that does not exist
  for (const directory of (env.PATH ?? '').split(delimiter)) {
    if (directory === '') continue;
    const candidate = join(directory, name);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // Not here.
    }
  }
  return undefined;
}

const INSTALL = 'sudo apt-get install -y bubblewrap socat   (Fedora: sudo dnf install bubblewrap socat)';

export function sandboxAvailability(
  env: EnvMap = process.env,
  platform: NodeJS.Platform = process.platform,
): SandboxAvailability {
  if (platform === 'darwin') return { available: true, engine: 'seatbelt' };
  if (platform !== 'linux')
    return {
      available: false,
      problem: `the sandbox does not run on ${platform} (Linux and macOS only)`,
      fix: 'run flower on Linux, macOS or WSL 2',
    };
  const missing = ['bwrap', 'socat'].filter((name) => onPath(name, env) === undefined);
  if (missing.length > 0) {
    const names = missing.map((name) => (name === 'bwrap' ? 'bubblewrap (bwrap)' : name));
    return { available: false, problem: `${names.join(' and ')} not found on PATH`, fix: INSTALL };
  }
  const trial = spawnSync(
    onPath('bwrap', env) as string,
    ['--unshare-user', '--unshare-net', '--ro-bind', '/', '/', '--', 'true'],
    {
      // Stryker disable next-line StringLiteral: PATH is set here (bwrap was just found on it), so the fallback never applies
      env: { PATH: env.PATH ?? '' },
      encoding: 'utf8',
      timeout: 10_000,
    },
  );
  if (trial.status !== 0) {
    const said = (trial.stderr || trial.error?.message || `exit ${trial.status}`).trim().split('\n')[0];
    return {
      available: false,
      problem: `bubblewrap cannot create its namespaces here (${said})`,
      fix: 'allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1), or run the container with --privileged or a seccomp profile that permits them',
    };
  }
  return { available: true, engine: 'bubblewrap' };
}
