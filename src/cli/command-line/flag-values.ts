/**
 * Parsers for flag values, shared by every command: each one either returns the value or throws
 * commander's InvalidArgumentError with a reason that says what to type instead, which commander
 * turns into `option '--rounds <n>' argument '0' is invalid. …` and `main` into exit 2.
 *
 * Invariants:
 * - A value that is out of range is refused on the command line, before anything is loaded or
 *   paid for; nothing downstream re-interprets it (`--rounds 0` used to mean one round).
 * - A value that looks like an option (`-w --new`) is never taken as a directory: the person left
 *   the value out, and the next flag would otherwise become a directory named `--new`.
 */
import { InvalidArgumentError } from 'commander';

/** A whole number, negative ones included. */
export function parseInteger(value: string): number {
  if (!/^-?\d+$/.test(value.trim())) throw new InvalidArgumentError('expected a whole number.');
  return Number(value);
}

/**
 * The longest wait a timer can hold: Node's setTimeout fires at once (after a warning) for anything
 * above 2^31-1 ms, so a longer `--timeout` would quietly mean "never wait".
 */
export const MAX_WAIT_SECONDS = Math.floor((2 ** 31 - 1) / 1000);

/**
 * `--timeout`: seconds from 0 (never wait) to MAX_WAIT_SECONDS. A negative number is refused, not
 * read as 0: `--timeout -5` looks like a typo for 5, and waiting nothing instead of five seconds is
 * a different run.
 */
export function parseWaitSeconds(value: string): number {
  const seconds = Number(value);
  if (value.trim() === '' || !Number.isFinite(seconds) || seconds < 0 || seconds > MAX_WAIT_SECONDS)
    throw new InvalidArgumentError(
      `give the seconds a question waits for an answer, from 0 (never wait) to ${MAX_WAIT_SECONDS} ` +
        '(about 24 days), e.g. --timeout 600.',
    );
  return seconds;
}

/**
 * A parser for a whole number of at least `min`; `example` is a correct use of the flag, shown
 * with the refusal (e.g. `--rounds 3`).
 */
export function wholeNumberAtLeast(min: number, example: string): (value: string) => number {
  return (value) => {
    const number = parseInteger(value);
    if (number < min) throw new InvalidArgumentError(`it must be at least ${min}, e.g. ${example}.`);
    return number;
  };
}

/** A directory argument (`-w`, `-r`): anything but an option the person typed where it should be. */
export function parseDirectory(value: string): string {
  if (value.trim() === '') throw new InvalidArgumentError('give a directory, e.g. -w ./proj.');
  if (value.startsWith('-')) {
    throw new InvalidArgumentError(
      'that is an option, not a directory: the directory is missing. Put it right after the flag, ' +
        'e.g. -w ./proj (a directory whose name starts with "-" is written ./-name).',
    );
  }
  return value;
}
