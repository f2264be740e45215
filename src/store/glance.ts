/**
 * The glance predicate: is a shell command a quick, read-only look whose result goes stale?
 *
 * One function answers two questions that must always get the same answer:
 * - the coordinator's delegate guard lets the main thread run exactly these commands itself;
 * - the expire layer replaces old results of exactly these commands with a placeholder on resume.
 * If the sets drifted apart, either a stale `git status` would stay in context forever (allowed but
 * never expired) or the coordinator would start a subagent for a single `ls` (expired but never
 * allowed). Adding a verb here says both things at once.
 *
 * Invariants (security first, because the guard trusts this answer):
 * - Unknown means "no". Only commands built entirely from whitelisted verbs pass.
 * - The command is tokenised with shell quoting rules; every segment separated by `&&`, `||`,
 *   `;`, `|` or a newline must be a whitelisted read-only form. Empty segments (`ls;`) fail.
 * - Command or process substitution (`$(`, backticks, `<(`, `>(`) fails anywhere, even inside
 *   quotes: a cheap over-approximation that can only err towards "no".
 * - Redirections fail unless they only discard or duplicate output (`2>&1`, `>/dev/null`,
 *   `2>/dev/null`, `&>/dev/null`). A background `&` fails.
 * - Verbs are matched case-sensitively and without path (`/bin/rm` and `LS` are unknown).
 * - Whitelisted verbs with writing or executing options are rejected: `find -delete/-exec/...`,
 *   `sed -i`/`w`/`e`, `sort -o`, awk `system()`/`print >`/pipes/`ENVIRON`, `git branch -D`,
 *   `--force/--hard/--prune`, and the holes the reference left open (`env <cmd>`,
 *   `git branch <name>`, `git remote add`, `git hash-object -w`) are closed.
 */

/** Decide whether `command` is a read-only glance whose result goes stale (see module header). */
export function isEphemeral(command: string): boolean {
  const trimmed = command.trim();
  if (trimmed === '') return false;
  if (SUBSTITUTION.test(trimmed)) return false;
  const segments = splitSegments(trimmed);
  if (segments === undefined || segments.length === 0) return false;
  return segments.every((words) => words.length > 0 && isReadOnlyInvocation(words));
}

/** `$(`, backtick, `<(` or `>(` anywhere: something else would run. */
const SUBSTITUTION = /\$\(|`|<\(|>\(/;

/**
 * Tokenise with POSIX-shell quoting and split into segments of plain words. Returns undefined when
 * the command uses anything outside the safe subset (unbalanced quotes, unsafe redirections,
 * background jobs, ANSI-C quoting), so the caller answers "no".
 */
function splitSegments(command: string): string[][] | undefined {
  const segments: string[][] = [[]];
  let word = '';
  let inWord = false;
  const current = (): string[] => segments[segments.length - 1] as string[];
  const endWord = (): void => {
    if (inWord) current().push(word);
    word = '';
    inWord = false;
  };
  let index = 0;
  while (index < command.length) {
    const char = command[index] as string;
    const next = command[index + 1];
    if (char === "'") {
      const close = command.indexOf("'", index + 1);
      if (close < 0) return undefined;
      word += command.slice(index + 1, close);
      inWord = true;
      index = close + 1;
      continue;
    }
    if (char === '"') {
      let cursor = index + 1;
      let closed = false;
      while (cursor < command.length) {
        const inner = command[cursor] as string;
        // Inside double quotes a backslash only escapes these; elsewhere it stays literal.
        if (
          inner === '\\' &&
          cursor + 1 < command.length &&
          '$`"\\\n'.includes(command[cursor + 1] as string)
        ) {
          if (command[cursor + 1] !== '\n') word += command[cursor + 1];
          cursor += 2;
          continue;
        }
        if (inner === '$' && EXPANSION_START.test(command[cursor + 1] ?? '')) return undefined;
        if (inner === '"') {
          closed = true;
          break;
        }
        word += inner;
        cursor += 1;
      }
      if (!closed) return undefined;
      inWord = true;
      index = cursor + 1;
      continue;
    }
    if (char === '\\') {
      if (next === undefined) return undefined;
      if (next !== '\n') {
        word += next;
        inWord = true;
      }
      index += 2;
      continue;
    }
    // `$'…'` (ANSI-C quoting) decodes escapes we do not model; refuse rather than guess.
    if (char === '$' && next === "'") return undefined;
    if (char === '$' && EXPANSION_START.test(next ?? '')) return undefined;
    if (char === ' ' || char === '\t') {
      endWord();
      index += 1;
      continue;
    }
    if (char === '>' || char === '<' || (char === '&' && next === '>')) {
      // A redirection; an all-digit word glued to it is its file descriptor (`2>`).
      const descriptorPrefix = inWord && /^\d+$/.test(word) && !/\s/.test(command[index - 1] ?? ' ');
      if (descriptorPrefix) {
        word = '';
        inWord = false;
      } else {
        endWord();
      }
      const operator = /^(?:&>>|&>|>>|>&|>\||>|<<<|<<|<&|<>|<)/.exec(command.slice(index))?.[0] as string;
      index += operator.length;
      while (command[index] === ' ' || command[index] === '\t') index += 1;
      const target = /^[^\s;&|<>'"\\]*/.exec(command.slice(index))?.[0] ?? '';
      index += target.length;
      if (!isHarmlessRedirection(operator, target)) return undefined;
      continue;
    }
    if (char === '&' || char === '|' || char === ';' || char === '\n') {
      endWord();
      if (char === '&' && next === '&') index += 2;
      else if (char === '|' && next === '|') index += 2;
      else if (char === '|' && next === '&')
        return undefined; // `|&` also pipes stderr; rare, refuse
      else if (char === '&')
        return undefined; // a background job
      else if (char === ';' && next === ';')
        return undefined; // `;;` only exists inside `case`
      else index += 1;
      segments.push([]);
      continue;
    }
    word += char;
    inWord = true;
    index += 1;
  }
  endWord();
  return segments;
}

/**
 * A parameter expansion (`$X`, `${X}`, `$1`, `$@`…) outside single quotes is a value we cannot see:
 * it may split into extra words such as `-delete` or `-i`, so a glance never contains one.
 */
const EXPANSION_START = /[A-Za-z_{0-9@*#?!$-]/;

/** Output that is thrown away or merged into another stream never lands in a file. */
function isHarmlessRedirection(operator: string, target: string): boolean {
  if (operator === '>&') return /^\d$/.test(target);
  if (operator === '>' || operator === '>>' || operator === '&>' || operator === '&>>')
    return target === '/dev/null';
  return false;
}

type VerbCheck = (args: readonly string[]) => boolean;

const anything: VerbCheck = () => true;

/** Short options may be clustered (`-ni`); true when any cluster or long option names a banned one. */
function hasOption(
  args: readonly string[],
  shortLetters: string,
  longNames: readonly string[] = [],
): boolean {
  return args.some((arg) => {
    if (arg === '--') return false;
    if (arg.startsWith('--')) return longNames.some((name) => abbreviates(arg, name));
    if (arg.startsWith('-') && arg.length > 1)
      return [...arg.slice(1)].some((letter) => shortLetters.includes(letter));
    return false;
  });
}

/**
 * True when the long option `arg` (maybe `--name=value`) names `name`. GNU getopt_long accepts any
 * unambiguous prefix (`sed --in-pl` is `--in-place`, `date --se` is `--set`), so a prefix counts.
 */
function abbreviates(arg: string, name: string): boolean {
  const [given = ''] = arg.split('=', 1);
  return given.length > 2 && name.startsWith(given);
}

const positionals = (args: readonly string[]): string[] => args.filter((arg) => !arg.startsWith('-'));

const noPositionals: VerbCheck = (args) => positionals(args).length === 0;

/** find actions that delete, write files or run programs. */
const FIND_ACTIONS = new Set([
  '-delete',
  '-exec',
  '-execdir',
  '-ok',
  '-okdir',
  '-fprint',
  '-fprint0',
  '-fprintf',
  '-fls',
]);

/**
 * A GNU sed script only reads when none of its commands writes (`w`, `W`, the `w` flag of `s`) or
 * runs a program (`e`, the `e` flag of `s`). The script is walked command by command — addresses,
 * `!`, the command letter and its argument, the way sed parses it — so a command after an unusual
 * address (`\%re%w f`, `/re/Iw f`, `1w/tmp/f`) is found and a `w` inside a regex is not mistaken
 * for one. Anything the walker does not understand counts as writing.
 */
function sedScriptIsReadOnly(script: string): boolean {
  let at = 0;
  const skip = (pattern: RegExp): void => {
    while (at < script.length && pattern.test(script[at] as string)) at += 1;
  };
  /** Moves past a delimited regex or replacement; false when it is not terminated on its line. */
  const delimited = (delimiter: string): boolean => {
    while (at < script.length) {
      const char = script[at] as string;
      if (char === '\\') at += 2;
      else if (char === delimiter) return ++at > 0;
      else if (char === '\n') return false;
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
    else if ('#aicrR'.includes(command))
      skip(/[^\n]/); // text or file name runs to the end of the line
    else if (':btTv'.includes(command)) skip(/[^\n;]/);
    else if (command === 's' || command === 'y') {
      const delimiter = script[at++];
      if (!delimiter || delimiter === '\n' || delimiter === '\\') return false;
      if (!delimited(delimiter) || !delimited(delimiter)) return false;
      const flagsStart = at;
      skip(/[^\n;}]/);
      if (command === 's' && /[we]/.test(script.slice(flagsStart, at))) return false;
    } else return false; // w, W, e, or something unknown
  }
}

/** GNU sed's options parsed the way getopt does: the scripts come from -e (or the first operand). */
const sedIsReadOnly: VerbCheck = (args) => {
  const scripts: string[] = [];
  const operands: string[] = [];
  for (let index = 0; index < args.length; index += 1) {
    const arg = args[index] as string;
    if (arg === '--') {
      operands.push(...args.slice(index + 1));
      break;
    }
    if (arg.startsWith('--')) {
      if (abbreviates(arg, '--in-place') || abbreviates(arg, '--file')) return false;
      const takesValue = abbreviates(arg, '--expression') || abbreviates(arg, '--line-length');
      const value = arg.includes('=')
        ? arg.slice(arg.indexOf('=') + 1)
        : takesValue
          ? args[++index]
          : undefined;
      if (abbreviates(arg, '--expression')) scripts.push(value ?? '');
      continue;
    }
    if (arg.startsWith('-') && arg.length > 1) {
      // A short cluster: `-ne'w f'` is -n plus -e with the script `w f` glued on.
      for (let letter = 1; letter < arg.length; letter += 1) {
        const option = arg[letter] as string;
        if (option === 'i' || option === 'f') return false;
        if (option === 'e' || option === 'l') {
          const value = arg.slice(letter + 1) || args[++index] || '';
          if (option === 'e') scripts.push(value);
          break;
        }
      }
      continue;
    }
    operands.push(arg);
  }
  if (scripts.length === 0) scripts.push(operands[0] ?? '');
  return scripts.every(sedScriptIsReadOnly);
};

/**
 * awk programs can run commands (`system()`, `print | "sh"`, `"cmd" | getline`), write files
 * (`print > f`, `printf ... >> f`) and read the environment (`ENVIRON`, listed by the reference).
 * Program files (`-f`) and extensions (`-i inplace`, `-l`) are unseen code.
 */
const awkIsReadOnly: VerbCheck = (args) => {
  // -e/--source (gawk) and -W (mawk's -W exec, gawk's -W source=) carry unseen program text.
  if (hasOption(args, 'fiIlEeW', ['--file', '--include', '--load', '--exec', '--source'])) return false;
  // The program is one of the operands; which one depends on option values, so check them all
  // (file names and `var=value` assignments never contain these forms in practice).
  return awkOperands(args).every(
    (operand) =>
      !/\bsystem\s*\(/.test(operand) &&
      !/\bENVIRON\b/.test(operand) &&
      !operand.includes('@') && // gawk's @include "inplace", @load, and indirect calls like @f()
      !/\bprintf?\b[^;{}]*>/.test(operand) &&
      !operand.replace(/\|\|/g, '').includes('|'),
  );
};

/** awk's operands: everything that is neither an option nor the value of `-F`/`-v`. */
function awkOperands(args: readonly string[]): string[] {
  const operands: string[] = [];
  for (let index = 0; index < args.length; index += 1) {
    const arg = args[index] as string;
    if (arg === '--') {
      operands.push(...args.slice(index + 1));
      break;
    }
    if (arg === '-F' || arg === '-v' || arg === '--field-separator' || arg === '--assign') index += 1;
    else if (!arg.startsWith('-')) operands.push(arg);
  }
  return operands;
}

/**
 * `date` sets the clock with `-s`/`--set` or a bare `MMDDhhmm…` operand; a `+FORMAT` operand and
 * the values of `-d`/`-r`/`-f` (a date, a file to take the time of, a file of dates) only read.
 */
const dateOnlyReads: VerbCheck = (args) => {
  if (hasOption(args, 's', ['--set'])) return false;
  for (let index = 0; index < args.length; index += 1) {
    const arg = args[index] as string;
    if (arg === '-d' || arg === '-r' || arg === '-f') index += 1;
    else if (!arg.startsWith('-') && !arg.startsWith('+')) return false;
  }
  return true;
};

/** `git <subcommand>` forms that only read. Anything else, including `git -c …`, is unknown. */
const GIT_BRANCH_LISTING =
  /^(?:-a|--all|-r|--remotes|-v|-vv|--verbose|-l|--list|--show-current|--merged|--no-merged|--color|--no-color|--column|--no-column|-i|--ignore-case|--omit-empty|(?:--sort|--format|--color|--column|--abbrev)=.*)$/;

const GIT_SUBCOMMANDS: Record<string, VerbCheck> = {
  status: anything,
  diff: anything,
  log: anything,
  show: anything,
  whatchanged: anything,
  blame: anything,
  shortlog: anything,
  describe: anything,
  'rev-parse': anything,
  'ls-files': anything,
  cherry: anything,
  'for-each-ref': anything,
  'cat-file': anything,
  'count-objects': anything,
  'check-ignore': anything,
  var: anything,
  branch: (args) => {
    const listing = args.some((arg) => arg === '-l' || arg === '--list');
    // Without --list a name creates a branch; with it, names are patterns to match.
    return args.every((arg) => GIT_BRANCH_LISTING.test(arg) || (listing && !arg.startsWith('-')));
  },
  stash: (args) => args[0] === 'list',
  worktree: (args) => args[0] === 'list',
  remote: (args) => {
    const [first] = positionals(args);
    return first === undefined || first === 'show' || first === 'get-url';
  },
  reflog: (args) => {
    const [first] = positionals(args);
    return first !== 'expire' && first !== 'delete';
  },
  'symbolic-ref': (args) => !hasOption(args, 'd', ['--delete']) && positionals(args).length <= 1,
  'hash-object': (args) => !hasOption(args, 'w'),
  config: (args) => ['--get', '--get-all', '--get-regexp', '--list', '-l'].includes(args[0] ?? ''),
};

const gitIsReadOnly: VerbCheck = (args) => {
  const [subcommand, ...rest] = args[0] === '--no-pager' ? args.slice(1) : args;
  const check = subcommand === undefined ? undefined : GIT_SUBCOMMANDS[subcommand];
  if (check === undefined) return false;
  // `--output` makes diff-family commands write a file; the rest are the reference's blanket bans.
  if (hasOption(rest, '', ['--force', '--hard', '--prune', '--output'])) return false;
  return check(rest);
};

/** `type` answers "what is this name" for exactly one plain name (optionally with -a/-p/-t/-P). */
const typeIsQuery: VerbCheck = (args) => {
  const rest = args.length === 2 && /^-[aptP]$/.test(args[0] ?? '') ? args.slice(1) : args;
  return rest.length === 1 && /^[\w./-]+$/.test(rest[0] ?? '');
};

/**
 * Whitelisted verbs and, where the verb has writing or executing options, the check its arguments
 * must pass. Groups follow the reference: git, state, processes and services, viewing,
 * environment probing, filters.
 */
const VERBS: Record<string, VerbCheck> = {
  git: gitIsReadOnly,
  // state
  ls: anything,
  ll: anything,
  dir: anything,
  pwd: anything,
  df: anything,
  du: anything,
  free: anything,
  uptime: anything,
  date: dateOnlyReads,
  whoami: anything,
  hostname: (args) => noPositionals(args) && !hasOption(args, 'bF', ['--boot', '--file']),
  id: anything,
  env: (args) => args.every((arg) => arg === '-0' || arg === '--null'), // `env X cmd` runs cmd
  printenv: anything,
  // processes and services
  ps: anything,
  top: anything,
  htop: anything,
  jobs: anything,
  lsof: anything,
  netstat: anything,
  ss: (args) => !hasOption(args, 'K', ['--kill']),
  pgrep: anything,
  systemctl: (args) => args[0] === 'status',
  docker: (args) => ['ps', 'images', 'stats'].includes(args[0] ?? ''),
  kubectl: (args) => args[0] === 'get',
  // viewing
  cat: anything,
  head: anything,
  tail: anything,
  wc: anything,
  stat: anything,
  file: (args) => !hasOption(args, 'C', ['--compile']),
  find: (args) => !args.some((arg) => FIND_ACTIONS.has(arg)),
  tree: (args) => !hasOption(args, 'oR', ['--output']),
  echo: anything,
  // environment probing
  command: (args) => args.length >= 2 && (args[0] === '-v' || args[0] === '-V'), // bare `command X` runs X
  type: typeIsQuery,
  which: anything,
  whereis: anything,
  uname: anything,
  arch: anything,
  locale: anything,
  nproc: anything,
  getconf: anything,
  sw_vers: anything,
  // filters
  grep: anything,
  egrep: anything,
  fgrep: anything,
  rg: (args) => !hasOption(args, '', ['--pre']),
  sort: (args) => !hasOption(args, 'o', ['--output', '--compress-program']),
  uniq: (args) => positionals(args).length <= 1, // a second name is an output file
  cut: anything,
  tr: anything,
  awk: awkIsReadOnly,
  sed: sedIsReadOnly,
  column: anything,
  jq: anything,
  nl: anything,
  rev: anything,
  comm: anything,
  diff: anything,
};

function isReadOnlyInvocation(words: readonly string[]): boolean {
  const [verb, ...args] = words;
  if (verb === undefined || !Object.hasOwn(VERBS, verb)) return false;
  // Words that are programs in their own right never belong in a glance, whatever the verb.
  if (args.some((arg) => arg === 'xargs' || arg === 'eval' || arg === 'exec' || arg === 'source'))
    return false;
  return (VERBS[verb] as VerbCheck)(args);
}
