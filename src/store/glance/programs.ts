/**
 * Tools that take a program of their own — sed, awk, jq — and when that program only reads.
 *
 * Invariants:
 * - The program is found the way the tool finds it (sed: `-e` values or the first operand; awk and
 *   jq: the first operand), and program files (`-f`) are refused: that code is unseen.
 * - sed: the script is walked command by command (addresses, `!`, the command and its argument)
 *   and may use only commands that print or edit the stream: `w`/`W` and the `w` flag write files,
 *   `e` and the `e` flag run programs, `r`/`R` read other files into the output; all are refused,
 *   and so is anything the walker does not understand.
 * - awk: refused when the program mentions `system`, `getline`, `ENVIRON`, `ARGV`/`ARGC` (which
 *   choose the files read), `SYMTAB`/`FUNCTAB` (gawk's indirect access to both), `extension`,
 *   gawk's `@` directives and indirect calls, a `|` that is not `||` (pipes to and from commands),
 *   or any `>` after a `print`/`printf` (output redirection; a comparison before the first print
 *   is fine). Strings are not exempt: `print ">"` is refused too, which only errs towards "no".
 *   A string naming one of gawk's network files (`"/inet/tcp/0/HOST/PORT"`, `/inet4/`, `/inet6/`) is
 *   refused as well, though only a redirection or `getline` (both refused) could open it; as a file
 *   operand such a path is refused by `paths.ts`. A regex such as `/inet/` (`ip addr | awk '/inet/'`)
 *   stays.
 * - jq: refused when the filter names `env`/`$ENV` (the environment) or loads modules
 *   (`import`, `include`, `modulemeta`); `--rawfile`/`--slurpfile` files are read like operands.
 */
import type { Word } from './command-line.js';
import {
  type ArgumentCheck,
  CONTENT,
  operandsFit,
  parseArguments,
  TEXT,
  textWhere,
  type ValueRule,
} from './options.js';

/**
 * True when a GNU sed script neither writes, runs nor reads other files (see module header).
 * Anything the walker does not understand counts as unsafe.
 */
export function sedScriptIsReadOnly(script: string): boolean {
  let at = 0;
  const skip = (pattern: RegExp): void => {
    while (at < script.length && pattern.test(script[at] as string)) at += 1;
  };
  /** Moves past a delimited regex or replacement; false when it is not terminated on its line. */
  const delimited = (delimiter: string): boolean => {
    while (at < script.length) {
      const char = script[at] as string;
      if (char === '\\') at += 2;
      else if (char === delimiter) {
        at += 1;
        return true;
      } else if (char === '\n') return false;
      else at += 1;
    }
    return false;
  };
  const address = (): boolean => {
    const char = script[at];
    if (char === '/' || char === '\\') {
      const delimiter = char === '/' ? '/' : script[at + 1];
      at += char === '/' ? 1 : 2;
      if (!delimiter || delimiter === '\n' || !delimited(delimiter)) return false;
      skip(/[IM]/);
    } else if (char === '$') at += 1;
    else skip(/[0-9~]/);
    return true;
  };
  while (true) {
    skip(/[\s;]/);
    if (at >= script.length) return true;
    if (!address()) return false;
    skip(/[ \t]/);
    if (script[at] === ',') {
      at += 1;
      skip(/[ \t]/);
      if (script[at] === '+' || script[at] === '~') at += 1;
      if (!address()) return false;
    }
    skip(/[ \t!]/);
    const command = script[at++];
    if (command === undefined) return true;
    if ('{}=dDgGhHnNpPxzFqQlL'.includes(command)) skip(/[0-9]/);
    else if ('#aic'.includes(command))
      skip(/[^\n]/); // comment or text, to the end of the line
    else if (':btT'.includes(command)) skip(/[^\n;]/);
    else if (command === 's' || command === 'y') {
      const delimiter = script[at++];
      if (!delimiter || delimiter === '\n' || delimiter === '\\') return false;
      if (!delimited(delimiter) || !delimited(delimiter)) return false;
      const flagsStart = at;
      skip(/[^\n;}]/);
      if (command === 's' && /[we]/.test(script.slice(flagsStart, at))) return false;
    } else return false; // w, W, e, r, R, v, or something unknown
  }
}

/** GNU sed's options: scripts from `-e`/`--expression` or else the first operand; no `-i`, no `-f`. */
export const sedReadsOnly: ArgumentCheck = (args) => {
  const parsed = parseArguments(args, {
    flags: 'nsuzEr',
    values: { e: TEXT, l: TEXT },
    long: [
      'quiet',
      'silent',
      'debug',
      'posix',
      'regexp-extended',
      'separate',
      'sandbox',
      'unbuffered',
      'null-data',
      'zero-terminated',
    ],
    longValues: { expression: TEXT, 'line-length': TEXT },
  });
  if (!parsed) return false;
  const scripts = parsed.options
    .filter((option) => option.name === '-e' || option.name === '--expression')
    .map((option) => option.value?.text ?? '');
  const operands = [...parsed.operands];
  if (scripts.length === 0) {
    const script = operands.shift();
    if (!script || script.globAt.length > 0) return false;
    scripts.push(script.text);
  }
  return scripts.every(sedScriptIsReadOnly) && operandsFit(operands, { rest: CONTENT });
};

/** Words in an awk program that run commands, read other files or the environment (see header). */
const AWK_FORBIDDEN = /\b(?:system|getline|ENVIRON|ARGV|ARGC|SYMTAB|FUNCTAB|PROCINFO|extension)\b|@/;

/** A string that starts with one of gawk's special network file names. */
const AWK_NETWORK_FILE = /"\/inet[46]?\//;

/** True when an awk program only reads its input and prints to standard output. */
export function awkProgramIsReadOnly(program: string): boolean {
  if (AWK_FORBIDDEN.test(program) || AWK_NETWORK_FILE.test(program)) return false;
  if (program.replace(/\|\|/g, '').includes('|')) return false;
  const firstPrint = program.search(/\bprintf?\b/);
  return firstPrint < 0 || !program.slice(firstPrint).includes('>');
}

/** `var=value` operands are assignments, not files, when `var` is a valid awk name. */
const AWK_ASSIGNMENT = /^[A-Za-z_][A-Za-z0-9_]*=/;

/** awk with `-F` and `-v` only; the program is the first operand, files the rest. */
export const awkReadsOnly: ArgumentCheck = (args) => {
  const parsed = parseArguments(args, { values: { F: TEXT, v: TEXT } });
  if (!parsed) return false;
  const [program, ...inputs] = parsed.operands;
  if (!program || program.globAt.length > 0 || !awkProgramIsReadOnly(program.text)) return false;
  const files = inputs.filter((input) => input.globAt.length > 0 || !AWK_ASSIGNMENT.test(input.text));
  return operandsFit(files, { rest: CONTENT });
};

/** jq filter words that read the environment or load code from elsewhere. */
const JQ_FORBIDDEN = /\b(?:env|ENV|import|include|modulemeta)\b/;

const JQ_FILTER: ValueRule = textWhere((text) => !JQ_FORBIDDEN.test(text));

/** jq: the filter is the first operand; files follow unless `--args`/`--jsonargs` make them text. */
export const jqReadsOnly: ArgumentCheck = (args: readonly Word[]) => {
  const parsed = parseArguments(args, {
    flags: 'rjcnseaSCMR',
    long: [
      'raw-output',
      'join-output',
      'compact-output',
      'null-input',
      'slurp',
      'exit-status',
      'ascii-output',
      'sort-keys',
      'color-output',
      'monochrome-output',
      'raw-input',
      'tab',
      'seq',
      'stream',
      'unbuffered',
      'args',
      'jsonargs',
    ],
    longValues: { indent: TEXT },
    longPairs: {
      arg: [TEXT, TEXT],
      argjson: [TEXT, TEXT],
      rawfile: [TEXT, CONTENT],
      slurpfile: [TEXT, CONTENT],
    },
  });
  if (!parsed) return false;
  const [filter, ...inputs] = parsed.operands;
  if (!filter || filter.globAt.length > 0 || !JQ_FILTER.accepts(filter)) return false;
  const asText = parsed.options.some((option) => option.name === '--args' || option.name === '--jsonargs');
  return operandsFit(inputs, { rest: asText ? TEXT : CONTENT });
};
