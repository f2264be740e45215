/**
 * The one gate every string taken from a run (transcripts, manifest rows, notes) passes before
 * `flower status`, `report` or `log` prints it, in any format.
 *
 * Invariants:
 * - Model and tool output never drives the terminal: escape sequences and control characters are
 *   removed (`sanitize`), so a transcript that printed colours or cleared the screen is inert here.
 * - One place to mask credentials (`maskSecrets`): every view goes through it, so none can forget;
 *   the values come from the environment and the `.env` lookup chain.
 */

import { processChainContext, resolveEnvChain } from '../config/env-chain.js';
import { sanitize } from '../config/safe-text.js';
import { type SecretMask, secretMask } from '../config/secret-mask.js';

let mask: SecretMask | undefined;

/**
 * The credential mask for this process: the secrets of the environment and of every `.env` file
 * of the lookup chain (a key saved by `flower setup` is not in the shell's environment, and it is
 * the one a worker printed). Resolved once; the chain is read, never applied.
 */
function credentialMask(): SecretMask {
  if (mask === undefined) {
    let env: Record<string, string | undefined> = process.env;
    try {
      env = { ...resolveEnvChain(processChainContext()).additions, ...process.env };
    } catch {
      // An unreadable chain still leaves the environment's own secrets masked.
    }
    mask = secretMask(env);
  }
  return mask;
}

/** Credential values replaced by their masked form (`config/secret-mask.ts`). */
export function maskSecrets(text: string): string {
  return credentialMask()(text);
}

/** `text` as it may be shown: credentials masked, control sequences removed. */
export function shown(text: string): string {
  return maskSecrets(sanitize(text));
}
