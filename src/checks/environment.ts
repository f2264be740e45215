/**
 * The environment a host check runs in: this process's environment without anything that lets a
 * program talk to the model or read flower's own settings.
 *
 * A check is the user's own command (`npm test`, a build, a curl), and it runs after a round of work
 * an agent shaped: a test the agent wrote could print or send the key. So the key never reaches it.
 *
 * Invariants:
 * - Every `ANTHROPIC_*`, `CLAUDE_*` and `FLOWER_*` variable is dropped (credentials, the endpoint,
 *   flower's env file and store URL), and so is every key in `CREDENTIAL_KEYS` under any spelling
 *   of its case.
 * - Nothing is added: a check sees the machine as the user's shell would, minus those.
 */
import { CREDENTIAL_KEYS } from '../config/credentials.js';
import type { EnvMap } from '../config/paths.js';

const DROPPED_PREFIXES = ['ANTHROPIC_', 'CLAUDE_', 'FLOWER_'] as const;

/** Whether a variable must not reach a check. */
export function isWithheldFromChecks(name: string): boolean {
  const upper = name.toUpperCase();
  if ((CREDENTIAL_KEYS as readonly string[]).includes(upper)) return true;
  return DROPPED_PREFIXES.some((prefix) => upper.startsWith(prefix));
}

/** `base` without the variables a check must not see. */
export function checkEnvironment(base: EnvMap = process.env): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(base)) {
    if (value === undefined || isWithheldFromChecks(name)) continue;
    env[name] = value;
  }
  return env;
}
