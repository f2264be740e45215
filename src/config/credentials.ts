/**
 * Are credentials present, and how to show the effective configuration without leaking secrets.
 *
 * Invariants:
 * - Usable means `ANTHROPIC_API_KEY` or `ANTHROPIC_AUTH_TOKEN` is a non-empty string; an empty value
 *   counts as missing even though it claims the key in the lookup chain.
 * - The missing-credentials text lists every place the chain actually looks, in order, including
 *   the Claude Code settings fallback (the reference's text claimed it never read those files).
 * - Any key whose name contains KEY or TOKEN is masked wherever it is displayed, and so is the
 *   password of any URL in any value (`FLOWER_STORE_URL=postgres://user:secret@…`).
 */
import {
  type EnvChainContext,
  type EnvChainReport,
  KNOWN_KEYS,
  lookupSources,
  processChainContext,
  settingLocation,
} from './env-chain.js';
import { type EnvMap, userEnvPath } from './paths.js';
import { maskStoreUrl } from './store-url.js';

export const CREDENTIAL_KEYS = ['ANTHROPIC_API_KEY', 'ANTHROPIC_AUTH_TOKEN'] as const;

/** Where requests go when `ANTHROPIC_BASE_URL` is unset. */
export const DEFAULT_BASE_URL = 'https://api.anthropic.com';

/** The credential flower will use, or undefined. The API key wins, as it does for the probe and the SDK. */
export function activeCredentialKey(env: EnvMap): (typeof CREDENTIAL_KEYS)[number] | undefined {
  return CREDENTIAL_KEYS.find((key) => Boolean(env[key]));
}

/**
 * `undefined` when credentials are present; otherwise a message saying what is missing, where flower
 * looked (in order) and how to fix it. Pass the chain report to also name a credential line whose
 * empty value hides a later source.
 */
export function checkCredentials(
  env: EnvMap = process.env,
  context: EnvChainContext = processChainContext(),
  report?: EnvChainReport,
): string | undefined {
  if (activeCredentialKey(env) !== undefined) return undefined;
  const places = lookupSources(context).map((source, index) => {
    const where =
      source.kind === 'process'
        ? 'the process environment (exported variables)'
        : source.kind === 'flower-env'
          ? source.path
            ? `$FLOWER_ENV: ${source.path}`
            : '$FLOWER_ENV (not set)'
          : source.kind === 'checkout'
            ? `${source.path} (the source checkout flower runs from)`
            : source.kind === 'claude-settings' || source.kind === 'claude-settings-local'
              ? `the "env" block of ${source.path} (Claude Code's own token)`
              : source.path;
    return `  ${index + 1}. ${where}`;
  });
  const lines = [
    'Missing credentials: flower needs ANTHROPIC_API_KEY or ANTHROPIC_AUTH_TOKEN (a non-empty value).',
    `Easiest: run \`flower setup\` once; it saves the token to ${userEnvPath(context.env, context.home)}, which every project uses.`,
    'Or: put the variable in a .env file in this directory, or export it in your shell.',
    'flower looked in these places, in this order, and found no usable value:',
    ...places,
  ];
  for (const warning of report?.shadowWarnings ?? []) {
    if ((CREDENTIAL_KEYS as readonly string[]).includes(warning.key)) lines.push(`Note: ${warning.message}.`);
  }
  for (const key of CREDENTIAL_KEYS) {
    const winner = report?.winners.get(key);
    if (winner && winner.value === '' && !report?.shadowWarnings.some((warning) => warning.key === key)) {
      lines.push(
        `Note: ${key} is set but empty (${settingLocation(winner)}); an empty line counts as missing. Delete it or fill it in.`,
      );
    }
  }
  return lines.join('\n');
}

/**
 * `$MY_TOKEN` or `${MY_TOKEN}` as the whole value: `.env` files do not expand variables, so this is
 * sent as the key itself and refused. Present, but not usable.
 */
export function isUnexpandedReference(value: string): boolean {
  return /^\$(\{[A-Za-z_][A-Za-z0-9_]*\}|[A-Za-z_][A-Za-z0-9_]*)$/.test(value.trim());
}

/** Why the credential in use cannot work although it is present, or undefined. */
export function unusableCredential(env: EnvMap): string | undefined {
  const key = activeCredentialKey(env);
  if (key === undefined || !isUnexpandedReference(env[key]!)) return undefined;
  return `${key} is a variable reference, not a key: .env files do not expand variables, so it would be sent as written; put the key itself there`;
}

/** Names that hold secrets: anything with KEY or TOKEN in it. */
export function isSecretKey(name: string): boolean {
  return /KEY|TOKEN/.test(name.toUpperCase());
}

/**
 * Shows the first 4 characters and the length, enough to tell two keys apart. Values of 8 characters
 * or fewer show only their first half, so a short secret is never shown whole.
 */
export function maskSecret(value: string): string {
  const shown = value.length > 8 ? 4 : Math.floor(value.length / 2);
  return `${value.slice(0, shown)}***(${value.length} chars)`;
}

/** The value as it may be displayed: masked for secrets, a URL without its password, else verbatim. */
export function displayValue(key: string, value: string): string {
  return isSecretKey(key) ? maskSecret(value) : maskStoreUrl(value);
}

export interface DescribedSetting {
  key: string;
  display: string;
}

/**
 * The effective configuration for `-v`: every known key with a value, masked where secret, and
 * always a line for `ANTHROPIC_BASE_URL` (marked "(default)" when unset).
 */
export function describe(env: EnvMap = process.env): DescribedSetting[] {
  const described: DescribedSetting[] = [];
  for (const key of KNOWN_KEYS) {
    const value = env[key];
    if (value) described.push({ key, display: displayValue(key, value) });
    else if (key === 'ANTHROPIC_BASE_URL') described.push({ key, display: `${DEFAULT_BASE_URL} (default)` });
  }
  return described;
}
