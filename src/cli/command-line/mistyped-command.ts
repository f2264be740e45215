/**
 * A request that is really a mistyped command: `flower stauts`, `flower doctr`, `flower version`.
 * Without this guard each of them becomes `flower go <word>`, a paid task on a one-word request.
 *
 * Invariants:
 * - Only a request that is one single word is ever refused; anything with a space in it is a request.
 *   `flower go <word>` is never checked: spelling out `go` is how to ask for any word.
 * - The names come from the program itself (its subcommands, their aliases, commander's `help`, and
 *   the informational flags `--version`/`--help` under their bare names), never from a list kept here,
 *   so a command added later (`status`, `report`, `log`) is protected the day it is registered.
 * - "Close" is an edit distance with transpositions counted as one edit (`stauts` is one slip from
 *   `status`), bounded by the name's length so that short names only catch one slip.
 */
import type { Command } from 'commander';
import damerauLevenshtein from 'damerau-levenshtein';

/** A word a person may mean, and what they should type for it. */
export interface KnownName {
  readonly word: string;
  /** What to suggest: the command itself, or the flag (`--version`) for a bare `version`. */
  readonly suggestion: string;
}

export interface GuessPolicy {
  /** The most edits a word may be away from a name of this length and still count as a slip. */
  readonly maxEdits: (nameLength: number) => number;
}

/**
 * One slip for names of up to four letters (`go`, `run`, `log`, `help`: two edits from those reach
 * ordinary words, such as "hello" from "help"), two for longer ones (`stauts`, `doctr`, `reprot`).
 */
export const defaultGuessPolicy: GuessPolicy = { maxEdits: (length) => (length <= 4 ? 1 : 2) };

/** Flags a person sometimes types without their dashes. */
const INFORMATIONAL_FLAGS = ['--version', '--help'];

/** The names a single-word request must not be mistaken for, read from the program. */
export function knownNames(program: Command): KnownName[] {
  const names: KnownName[] = [];
  for (const command of program.commands) {
    for (const word of [command.name(), ...command.aliases()]) names.push({ word, suggestion: word });
  }
  // commander answers `flower help [command]` itself whenever the program has subcommands.
  if (program.commands.length > 0) names.push({ word: 'help', suggestion: 'help' });
  for (const option of program.options) {
    if (option.long && INFORMATIONAL_FLAGS.includes(option.long))
      names.push({ word: option.long.slice(2), suggestion: option.long });
  }
  return names;
}

const SINGLE_WORD = /^[\p{L}\p{N}_-]+$/u;

/**
 * The name `word` is, or is one slip away from (letter case aside); undefined for anything else. An
 * exact match wins; otherwise the nearest name, the first registered on a tie.
 */
export function closestName(
  word: string,
  names: readonly KnownName[],
  policy: GuessPolicy = defaultGuessPolicy,
): KnownName | undefined {
  const typed = word.trim().toLowerCase();
  if (!SINGLE_WORD.test(typed)) return undefined;
  let best: { name: KnownName; edits: number } | undefined;
  for (const name of names) {
    const known = name.word.toLowerCase();
    const edits = typed === known ? 0 : damerauLevenshtein(typed, known).steps;
    if (edits > policy.maxEdits(name.word.length)) continue;
    if (best === undefined || edits < best.edits) best = { name, edits };
  }
  return best?.name;
}

/** The one-line refusal for a request that is (nearly) a command name, or undefined when it is not. */
export function mistypedCommandMessage(
  words: readonly string[],
  names: readonly KnownName[],
): string | undefined {
  const request = words.join(' ').trim();
  const name = closestName(request, names);
  if (name === undefined) return undefined;
  return (
    `unknown command "${request}" — did you mean "${name.suggestion}"? ` +
    `To send "${request}" to the agent as the request, type: flower go ${request}`
  );
}
