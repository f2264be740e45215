/**
 * A credential that silently wins over the one `flower setup` saved: the classic "I ran setup and it
 * still uses the old key" — an `ANTHROPIC_API_KEY` exported in the shell (or set in `$FLOWER_ENV`
 * or the project's `.env`) comes earlier in the lookup chain than the user file, so the saved one is
 * never used. Pure: the caller reads the saved file and passes its values.
 */
import { activeCredentialKey, CREDENTIAL_KEYS, maskSecret } from './credentials.js';
import {
  type EnvChainReport,
  type EnvSetting,
  type EnvSourceKind,
  settingLocation,
  sourceOf,
} from './env-chain.js';
import type { EnvMap } from './paths.js';

/** Sources that come before the user file in the chain: a value there beats what setup writes. */
export const BEFORE_USER_FILE: ReadonlySet<EnvSourceKind> = new Set(['process', 'flower-env', 'project']);

/**
 * One line saying which credential hides the saved one and how to undo that, or undefined when the
 * credential in use is the saved one (or nothing was saved).
 */
export function hiddenSavedCredential(
  report: EnvChainReport,
  env: EnvMap,
  saved: Readonly<Record<string, string>>,
  savedPath: string,
): string | undefined {
  const active = activeCredentialKey(env);
  const savedKey = CREDENTIAL_KEYS.find((key) => Boolean(saved[key]));
  if (active === undefined || savedKey === undefined) return undefined;
  const winner = sourceOf(report, active, env);
  if (winner === undefined || !BEFORE_USER_FILE.has(winner.source.kind)) return undefined;
  if (active === savedKey && winner.value === saved[savedKey]) return undefined;
  const where =
    winner.source.kind === 'process' ? 'exported in your shell' : `set in ${settingLocation(winner)}`;
  const undo = winner.source.kind === 'process' ? `run \`unset ${active}\`` : `remove it from there`;
  return (
    `${active} ${where} (${maskSecret(winner.value)}) is used instead of the ${savedKey} that flower setup ` +
    `saved in ${savedPath} (${maskSecret(saved[savedKey]!)}); ${undo} to use the saved one`
  );
}

/**
 * The credential a source before the user file supplies, in the order flower uses them (the API key
 * first): whatever `flower setup` saves, this one is read first at every start. Undefined when the
 * credential comes from the user file or later, or there is none. Reads the chain as loaded, so a
 * key the setup dialog applied to this process since does not hide what the shell still exports.
 */
export function credentialBeforeUserFile(report: EnvChainReport): EnvSetting | undefined {
  for (const key of CREDENTIAL_KEYS) {
    const winner = report.winners.get(key);
    if (winner && winner.value !== '' && BEFORE_USER_FILE.has(winner.source.kind)) return winner;
  }
  return undefined;
}

/**
 * The earlier credential the next start uses instead of `saved` (what the user file holds), or
 * undefined when the saved one is used. The API key is preferred over a token, so an earlier API
 * key hides either kind; an earlier token hides only a saved token.
 */
export function credentialHiding(
  report: EnvChainReport,
  saved: { key: string; value: string } | undefined,
): EnvSetting | undefined {
  const before = credentialBeforeUserFile(report);
  if (before === undefined || saved === undefined) return undefined;
  if (before.key !== 'ANTHROPIC_API_KEY' && before.key !== saved.key) return undefined;
  return before.value === saved.value ? undefined : before;
}

/** Where such a credential lives and how to take it out of the way, in the user's words. */
export function overrideWords(setting: EnvSetting): { where: string; undo: string } {
  return setting.source.kind === 'process'
    ? {
        where: `${setting.key} is exported in your shell (${maskSecret(setting.value)})`,
        undo: `run \`unset ${setting.key}\` and remove the export from your shell profile`,
      }
    : {
        where: `${setting.key} is set in ${settingLocation(setting)} (${maskSecret(setting.value)})`,
        undo: 'delete that line',
      };
}

/**
 * Makes `key = value` the credential in `target` and removes the other kind: flower (and the
 * binary) prefer the API key, so a leftover of it would be sent instead of a new token.
 */
export function useCredential(
  target: Record<string, string | undefined>,
  key: (typeof CREDENTIAL_KEYS)[number],
  value: string,
): void {
  for (const other of CREDENTIAL_KEYS) if (other !== key) delete target[other];
  target[key] = value;
}

/** The credential a `.env` file's values hold (the API key first), or undefined. */
export function fileCredential(
  values: Readonly<Record<string, string>>,
): { key: (typeof CREDENTIAL_KEYS)[number]; value: string } | undefined {
  const key = CREDENTIAL_KEYS.find((name) => Boolean(values[name]));
  return key === undefined ? undefined : { key, value: values[key]! };
}
