/**
 * Where a setting came from, in words an error message can use: "ANTHROPIC_MODEL, set in
 * /home/me/proj/.env:3". A refused model or key is fixed where it was set, so a stop names the place.
 *
 * Invariants:
 * - Never loads or changes the environment: it reads the report `loadEnvironment` kept, if any.
 * - The chain's report describes `process.env` only; for any other map (a library caller's own
 *   environment) the place is "the environment flower was given", never a file it did not read.
 * - A setting a command-line flag put into `process.env` (`--model`) is named by its flag: the
 *   chain would otherwise call it "set in the shell", the one place it was not (observed).
 */
import { activeCredentialKey } from './credentials.js';
import { loadedEnvironment, settingLocation, sourceOf } from './env-chain.js';
import type { EnvMap } from './paths.js';

/** The keys that can name a model, in the order the main thread consults them. */
export const MODEL_KEYS = [
  'ANTHROPIC_MODEL',
  'ANTHROPIC_DEFAULT_OPUS_MODEL',
  'ANTHROPIC_DEFAULT_SONNET_MODEL',
  'ANTHROPIC_DEFAULT_HAIKU_MODEL',
  'CLAUDE_CODE_SUBAGENT_MODEL',
] as const;

/**
 * The name the API sees for a configured model: Claude Code reads a trailing `[1m]` (or any
 * bracketed suffix) as a client-side switch and strips it before the request.
 */
export function apiModelName(name: string): string {
  return name.trim().replace(/\[[^\]]*\]$/, '');
}

/** Keys a command-line flag set in `process.env`, and the flag's name. */
const flagSettings = new Map<string, string>();

/** Records that `flag` set `key` in `process.env`, so a stop about it names the flag. */
export function noteFlagSetting(key: string, flag: string): void {
  flagSettings.set(key, flag);
}

/** `KEY, set in <file:line>` / `KEY, set in the shell environment` / `KEY, set in the environment flower was given`. */
export function settingOrigin(key: string, env: EnvMap): string {
  const flag = env === process.env ? flagSettings.get(key) : undefined;
  if (flag !== undefined) return `${key}, set by ${flag} on the command line`;
  const report = loadedEnvironment();
  if (report !== undefined && env === process.env) {
    const setting = sourceOf(report, key, env);
    if (setting !== undefined) {
      const where = setting.source.kind === 'process' ? 'the shell environment' : settingLocation(setting);
      return `${key}, set in ${where}`;
    }
  }
  return `${key}, set in the environment flower was given`;
}

/** Which configured key names `model`, and where it was set; undefined when no key does. */
export function modelOrigin(model: string, env: EnvMap): string | undefined {
  const wanted = apiModelName(model);
  const key = MODEL_KEYS.find((name) => {
    const value = env[name];
    return value !== undefined && value !== '' && apiModelName(value) === wanted;
  });
  return key === undefined ? undefined : settingOrigin(key, env);
}

/** The credential in use and where it was set; undefined when there is none. */
export function credentialOrigin(env: EnvMap): string | undefined {
  const key = activeCredentialKey(env);
  return key === undefined ? undefined : settingOrigin(key, env);
}
