/**
 * Default-command insertion: `flower "do X"` means `flower go "do X"`.
 *
 * Invariants:
 * - What counts as a global flag, and whether it takes a value, is read from the program itself,
 *   never from a hard-coded list, so adding a global flag cannot silently break the rewrite.
 * - Global flags may come before the request (`flower -w /proj "do X"`, `--workspace=/proj`); the
 *   first token that is not a global flag decides: a subcommand name leaves argv alone, anything
 *   else (a request, or a `go` flag such as `--timeout 0`) gets `go` inserted before it.
 * - With no such token, `--help`/`--version` are left for the program to answer; otherwise `go` is
 *   appended (the interactive request prompt).
 * - Subcommand names are never requests: `flower run` is `run` missing its target (a usage error),
 *   and `flower go run` is the way to ask for the word "run".
 * - A global value flag with nothing after it, or with another flag after it (`flower -w`,
 *   `flower -w --new`), leaves argv alone so that commander reports the missing value (exit 2);
 *   appending `go` would have made `go` the directory and printed the help with exit 0.
 */
import type { Command, Option } from 'commander';

/** What the rewrite needs to know about the program: its global flags and its subcommand names. */
export interface CommandLineShape {
  /** Global flags that take a value, every spelling (`-w`, `--workspace`). */
  readonly valueFlags: ReadonlySet<string>;
  /** Global flags without a value. */
  readonly switchFlags: ReadonlySet<string>;
  /** Subcommand names and aliases. */
  readonly commands: ReadonlySet<string>;
}

const HELP_AND_VERSION = new Set(['-h', '--help', '-V', '--version']);

/** Whether the flag at `index` is followed by something that can be its value (not another flag). */
function hasValueAfter(argv: readonly string[], index: number): boolean {
  const next = argv[index + 1];
  return next !== undefined && !(next.startsWith('-') && next.length > 1 && !/^-\d/.test(next));
}

/** The global flags and subcommands of a commander program. */
export function shapeOf(program: Command): CommandLineShape {
  const valueFlags = new Set<string>();
  const switchFlags = new Set<string>();
  const spellings = (option: Option) =>
    [option.short, option.long].filter((flag): flag is string => Boolean(flag));
  for (const option of program.options) {
    const target = option.required || option.optional ? valueFlags : switchFlags;
    for (const flag of spellings(option)) target.add(flag);
  }
  const commands = new Set<string>();
  for (const command of program.commands) {
    commands.add(command.name());
    for (const alias of command.aliases()) commands.add(alias);
  }
  // commander answers `flower help [command]` itself whenever the program has subcommands.
  if (program.commands.length > 0) commands.add('help');
  return { valueFlags, switchFlags, commands };
}

/** argv with `defaultCommand` inserted where the user left it out. */
export function withDefaultCommand(
  argv: readonly string[],
  shape: CommandLineShape,
  defaultCommand = 'go',
): string[] {
  let index = 0;
  while (index < argv.length) {
    const token = argv[index]!;
    const isFlag = token.startsWith('-') && token.length > 1 && token !== '--';
    if (!isFlag) {
      if (shape.commands.has(token)) return [...argv];
      return [...argv.slice(0, index), defaultCommand, ...argv.slice(index)];
    }
    const [head] = token.split('=', 1) as [string];
    if (shape.valueFlags.has(head)) {
      // A value flag with its value left out: commander reports it ("argument missing", or the
      // flag's parser refusing an option-looking value). Inserting `go` would hand it a value.
      if (!token.includes('=') && !hasValueAfter(argv, index)) return [...argv];
      index += token.includes('=') ? 1 : 2;
    } else if (shape.switchFlags.has(token)) {
      index += 1;
    } else if (HELP_AND_VERSION.has(token)) {
      index += 1;
    } else {
      // A flag the program does not know globally: it belongs to `go` (or is a usage error there).
      return [...argv.slice(0, index), defaultCommand, ...argv.slice(index)];
    }
  }
  if (argv.some((token) => HELP_AND_VERSION.has(token))) return [...argv];
  return [...argv, defaultCommand];
}
