/**
 * The one secret mask of a process: the values of its credential variables (from the environment
 * and every `.env` file of the lookup chain: a key saved by `flower setup` is in no shell) and every
 * token of a known shape (token-shapes.ts).
 *
 * Invariants:
 * - Values first, then shapes: a known value is masked whole even when a shape would match a part.
 * - Resolved once per process from the environment and the chain (which is read, never applied);
 *   an unreadable chain still leaves the environment's values and every shape masked.
 * - `rememberSecrets(env)` adds the values of an environment the process built later (the run's
 *   own, with a `FLOWER_ENV` file), so whatever shows that run's output masks them too.
 */

import { maskSecret } from '../config/credentials.js';
import { processChainContext, resolveEnvChain } from '../config/env-chain.js';
import type { EnvMap } from '../config/paths.js';
import { secretValues } from '../config/secret-mask.js';
import { maskTokenShapes } from './token-shapes.js';

let known: string[] | undefined;

function knownValues(): string[] {
  if (known === undefined) {
    let env: EnvMap = process.env;
    try {
      env = { ...resolveEnvChain(processChainContext()).additions, ...process.env };
    } catch {
      // An unreadable chain: the environment's own values and the shapes still apply.
    }
    known = secretValues(env);
  }
  return known;
}

/** Add the secret values of `env` to this process's mask. */
export function rememberSecrets(env: EnvMap): void {
  const values = new Set([...knownValues(), ...secretValues(env)]);
  known = [...values].sort((a, b) => b.length - a.length);
}

/** `text` with every known secret value and every token of a known shape masked. */
export function maskSecrets(text: string): string {
  let masked = text;
  for (const value of knownValues()) masked = masked.split(value).join(maskSecret(value));
  return maskTokenShapes(masked);
}

/** For tests: forget what was resolved, so the next mask reads the environment again. */
export function forgetSecrets(): void {
  known = undefined;
}
