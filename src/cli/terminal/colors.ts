/**
 * Whether flower's output gets colour, decided once, the same way for every command, by the
 * conventions people set in their shells:
 *
 * 1. `FORCE_COLOR` set (and not `0`/`false`): colour on, even into a pipe; `FORCE_COLOR=0` off.
 *    It comes first, as in Node's own `tty` module, because it is the more deliberate setting:
 *    someone forcing colour for one command overrides a `NO_COLOR` kept in their profile.
 * 2. `NO_COLOR` set to anything but the empty string (no-color.org): colour off.
 * 3. `TERM=dumb`: off. Such a terminal (Emacs' shell, some CI logs) shows escapes as garbage; the
 *    terminal layer also stops moving the cursor there (`cursorControlAllowed`).
 * 4. Otherwise: on exactly when the stream is a terminal. (`CI` alone does not turn colour on, as it
 *    does in picocolors' own guess: a CI log is a file.)
 */
import { createColors } from 'picocolors';
import type { EnvMap } from '../../config/paths.js';

export type Colors = ReturnType<typeof createColors>;

export function colorEnabled(env: EnvMap, isTTY: boolean): boolean {
  const force = env.FORCE_COLOR;
  if (force !== undefined) return force !== '0' && force.toLowerCase() !== 'false';
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== '') return false;
  if (env.TERM === 'dumb') return false;
  return isTTY;
}

/** Whether the terminal may be sent cursor movements and line erasing (not on `TERM=dumb`). */
export function cursorControlAllowed(env: EnvMap): boolean {
  return env.TERM !== 'dumb';
}

/** Colours for what is written to `stream`, decided by `colorEnabled`. */
export function colorsFor(
  stream: { readonly isTTY?: boolean } = process.stdout,
  env: EnvMap = process.env,
): Colors {
  return createColors(colorEnabled(env, Boolean(stream.isTTY)));
}

/** Whether standard output gets colour. */
export function stdoutColor(): boolean {
  return colorEnabled(process.env, Boolean(process.stdout.isTTY));
}

/** Colours for standard output: the default painter of every command. */
export const pc: Colors = colorsFor();
