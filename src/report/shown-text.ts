/**
 * The one gate every string taken from a run (transcripts, manifest rows, notes) passes before
 * `flower status`, `report` or `log` prints it, in any format.
 *
 * Invariants:
 * - Model and tool output never drives the terminal: escape sequences and control characters are
 *   removed (`sanitize`), so a transcript that printed colours or cleared the screen is inert here.
 * - One place to mask credentials: the masking of secret values plugs in here (`maskSecrets`), so
 *   no view can forget it.
 */
import { sanitize } from '../cli/terminal/terminal-text.js';

/**
 * Credential values replaced by a mask. Identity until the masking function lands (the lead wires
 * it here); kept as a seam so every view already goes through it.
 */
export function maskSecrets(text: string): string {
  return text;
}

/** `text` as it may be shown: credentials masked, control sequences removed. */
export function shown(text: string): string {
  return maskSecrets(sanitize(text));
}
