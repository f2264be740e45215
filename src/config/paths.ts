/**
 * Where flower's per-user files live, decided in one place.
 *
 * Everything sits in `${XDG_CONFIG_HOME:-~/.config}/flower/`: the credentials file `flower setup`
 * writes (`.env`), the window calibration (`.windows`) and the update-check state (`.update`).
 * An empty `XDG_CONFIG_HOME` counts as unset, as the XDG spec asks.
 */
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';

/** A read-only view of an environment (process.env or a test's own object). */
export type EnvMap = Readonly<Record<string, string | undefined>>;

/** The home directory: `$HOME` first (so tests and sandboxes can move it), then the OS's idea. */
export function homeDirectory(env: EnvMap): string {
  return env.HOME || homedir();
}

/** `${XDG_CONFIG_HOME:-~/.config}/flower` */
export function userConfigDir(env: EnvMap, home: string = homeDirectory(env)): string {
  return join(env.XDG_CONFIG_HOME || join(home, '.config'), 'flower');
}

/** The per-user credentials file: written by `flower setup`, read by every project. */
export function userEnvPath(env: EnvMap, home?: string): string {
  return join(userConfigDir(env, home), '.env');
}

/**
 * True when flower runs from a git working copy rather than an installed package. Only then is the
 * checkout's own `.env` part of the lookup chain, and only then is the update notice silent (a
 * developer updates with git, not npm).
 */
export function isSourceCheckout(packageRoot: string): boolean {
  // `.git` is a directory in a clone and a file in a linked worktree; both count.
  return existsSync(join(packageRoot, '.git'));
}
