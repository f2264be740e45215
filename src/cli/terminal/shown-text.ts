/**
 * Configuration values and flower's own messages on their way to the terminal: masked, sanitised
 * and kept to a readable length.
 *
 * `.env` contents reached the terminal raw in `doctor` and `-v` (observed: 3 KB of random bytes,
 * and a model name carrying OSC/CSI sequences that set the window title, cleared the screen and
 * planted a hidden link). A file is as untrusted as model text, so it gets the same `neutralise`.
 * Messages (warnings, `-v` notes, the final error line) can quote such values and file names too.
 */
import { displayValue } from '../../config/credentials.js';
import { shown } from '../../output/sink.js';
import { oneLine } from './terminal-text.js';

/** Values longer than this are cut for display (the full value is in the file). */
export const SHOWN_VALUE_CHARS = 120;

/** A setting's value as `doctor` and `-v` show it: masked if secret, one clean line, not too long. */
export function shownSetting(key: string, value: string): string {
  const clean = oneLine(displayValue(key, value));
  if (clean.length <= SHOWN_VALUE_CHARS) return clean;
  return `${clean.slice(0, SHOWN_VALUE_CHARS)}... (${value.length} characters in all)`;
}

/** A message of flower's own for the terminal, through the output sink (it may quote anything). */
export function shownMessage(text: string): string {
  return shown(text);
}

/** The one line a failed command ends with: `flower: <message>`, secrets masked, sanitised. */
export function errorLine(error: unknown): string {
  return `flower: ${shownMessage(error instanceof Error ? error.message : String(error))}`;
}
