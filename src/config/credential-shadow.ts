/**
 * A credential that silently wins over the one `flower setup` saved: the classic "I ran setup and it
 * still uses the old key" — an `ANTHROPIC_API_KEY` exported in the shell (or set in `$FLOWER_ENV`
 * or the project's `.env`) comes earlier in the lookup chain than the user file, so the saved one is
 * never used. Pure: the caller reads the saved file and passes its values.
 */
import { activeCredentialKey, CREDENTIAL_KEYS, maskSecret } from './credentials.js';
import { type EnvChainReport, type EnvSourceKind, settingLocation, sourceOf } from './env-chain.js';
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
