/**
 * Masking credential values in anything flower prints or writes for people to read: the terminal
 * renderer, `doctor`, `-v`, warnings, manifest text, and `flower report` / `flower log`.
 *
 * A worker that ran `printenv ANTHROPIC_API_KEY` put the key in clear on the screen under `-v` and
 * into the manifest's step text (observed). `secretMask(env)` returns one function that replaces
 * every occurrence of a known secret's value with its masked form (`maskSecret`: the first
 * characters and the length, so two keys can still be told apart).
 *
 * Invariants:
 * - Secrets are the values of the credential keys (`CREDENTIAL_KEYS`) and of every variable whose
 *   name says it holds one (`isSecretKey`: KEY or TOKEN), when long enough to be a secret at all:
 *   masking a 3-character value would garble ordinary text and protect nothing.
 * - Longer values are replaced first, so a secret that contains another is masked whole.
 * - Pure: the same environment and text always give the same result; the environment is read
 *   when the mask is made.
 *
 * Not masked, on purpose: the session store's transcripts. They are what a resumed session is
 * rebuilt from, so they must hold what the model actually saw; a masked key there would make the
 * resumed agent use `sk-a***(108 chars)` as if it were the key. The agent's own copy of the same
 * transcript (in its config directory) is unmasked anyway. They are protected by being private
 * (`runs/` is 0700, its files 0600), and every reader that shows them to a person masks.
 */
import { CREDENTIAL_KEYS, isSecretKey, maskSecret } from './credentials.js';
import type { EnvMap } from './paths.js';

/** Values shorter than this are never treated as secrets (flags, small numbers, short words). */
export const MIN_SECRET_LENGTH = 8;

export type SecretMask = (text: string) => string;

/** The secret values of `env`, longest first. */
export function secretValues(env: EnvMap): string[] {
  const values = new Set<string>();
  for (const [key, value] of Object.entries(env)) {
    if (value === undefined || value.trim().length < MIN_SECRET_LENGTH) continue;
    if ((CREDENTIAL_KEYS as readonly string[]).includes(key) || isSecretKey(key)) values.add(value.trim());
  }
  return [...values].sort((a, b) => b.length - a.length);
}

/** A function that masks the secrets of `env` in any text (see the module comment). */
export function secretMask(env: EnvMap = process.env): SecretMask {
  const replacements = secretValues(env).map((value) => [value, maskSecret(value)] as const);
  if (replacements.length === 0) return (text) => text;
  return (text) => {
    let masked = text;
    for (const [value, shown] of replacements)
      if (masked.includes(value)) masked = masked.split(value).join(shown);
    return masked;
  };
}

/** One-off form of `secretMask(env)(text)`. */
export function maskSecrets(text: string, env: EnvMap = process.env): string {
  return secretMask(env)(text);
}
