/**
 * The glance allow list: every program or builtin a glance may run, with what it may be given.
 *
 * Invariants:
 * - A tool is named by its bare name only (`/bin/ls`, `LS`, `ll` are unknown), matched exactly.
 * - Each entry is an allow list of options (see `options.ts`); options that write files, run
 *   programs, read credential files or never end (`tail -f`, `free -s`, `docker stats` without
 *   `--no-stream`) are left out; so are endless tools (`watch`, `journalctl -f`). Operands that
 *   are files read go through the credential-file rules; an operand in an output position makes the
 *   command not a glance (`uniq IN OUT`, so `uniq - FILE` too: `-` is an input).
 * - Recursive reads of contents are not glances: `grep -r`, `diff -r` print whatever `.env` lies
 *   in the tree. Listing recursively (`ls -R`, `find`, `tree`) only prints names and stays.
 * - Looks whose purpose is the environment are not in the list: `env`, `printenv`, `set`,
 *   `declare`, `export`, `awk` with `ENVIRON`, jq's `env`, ps's `e` (see the other modules).
 * - Left out on purpose from the reference's list: `env`/`printenv` (the environment), `ll` (an
 *   alias: its meaning is the user's shell's), `htop` (interactive; writes its config on exit),
 *   `top` (creates `~/.config/procps` even in batch mode, seen under strace), `jobs` (`jobs -x`
 *   runs a command).
 */
import { findReadsOnly } from './find.js';
import { gitReadsOnly } from './git.js';
import {
  type ArgumentCheck,
  CONTENT,
  has,
  NAME,
  type OptionTable,
  oneOf,
  operandsFit,
  PATTERN_TEXT,
  parseArguments,
  TEXT,
  textWhere,
  tool,
} from './options.js';
import { globMayMatchSecret } from './paths.js';
import {
  dockerReports,
  kubectlReports,
  lsofReports,
  netstatReports,
  pgrepReports,
  psReports,
  ssReports,
  systemctlReports,
} from './processes.js';
import { awkReadsOnly, jqReadsOnly, sedReadsOnly } from './programs.js';

const READS_FILES = { rest: CONTENT } as const;
const NAMES_FILES = { rest: NAME } as const;

/** A program or command name asked about (`which`, `type`, `command -v`): a plain word. */
const COMMAND_NAME = textWhere((text) => /^[\w.+-]+$/.test(text));

const ls = tool({
  flags: 'aAbBcCdDfFgGhHiklLmnNopqQrRsStuUvxXZ1',
  values: { I: PATTERN_TEXT, T: TEXT, w: TEXT },
  long: [
    'all',
    'almost-all',
    'author',
    'escape',
    'ignore-backups',
    'directory',
    'dired',
    'file-type',
    'full-time',
    'group-directories-first',
    'no-group',
    'human-readable',
    'si',
    'dereference-command-line',
    'dereference-command-line-symlink-to-dir',
    'inode',
    'kibibytes',
    'dereference',
    'numeric-uid-gid',
    'literal',
    'hide-control-chars',
    'show-control-chars',
    'quote-name',
    'reverse',
    'recursive',
    'size',
    'context',
    'zero',
  ],
  longValues: {
    'block-size': TEXT,
    format: TEXT,
    hide: PATTERN_TEXT,
    ignore: PATTERN_TEXT,
    'indicator-style': TEXT,
    'quoting-style': TEXT,
    sort: TEXT,
    time: TEXT,
    'time-style': TEXT,
    tabsize: TEXT,
    width: TEXT,
  },
  longOptional: { color: TEXT, classify: TEXT, hyperlink: TEXT },
  operands: NAMES_FILES,
});

/**
 * grep and rg: the first operand is the pattern unless `-e`/`-f` (or their long forms) supplied
 * one; every other operand is a file read.
 */
function patternThenFiles(table: OptionTable): ArgumentCheck {
  return (args) => {
    const parsed = parseArguments(args, table);
    if (!parsed) return false;
    const given = has(parsed, '-e', '-f', '--regexp', '--file');
    const [pattern, ...rest] = parsed.operands;
    if (!given && (pattern === undefined || pattern.globAt.length > 0)) return false;
    return operandsFit(given ? parsed.operands : rest, READS_FILES);
  };
}

const grep = patternThenFiles({
  flags: 'EFGPiywxzsvVbnHhoqaILlcTZU',
  values: {
    e: TEXT,
    f: CONTENT,
    m: TEXT,
    A: TEXT,
    B: TEXT,
    C: TEXT,
    d: oneOf('read', 'skip'),
    D: oneOf('read', 'skip'),
  },
  numeric: true,
  long: [
    'extended-regexp',
    'fixed-strings',
    'basic-regexp',
    'perl-regexp',
    'ignore-case',
    'no-ignore-case',
    'word-regexp',
    'line-regexp',
    'null-data',
    'no-messages',
    'invert-match',
    'byte-offset',
    'line-number',
    'line-buffered',
    'with-filename',
    'no-filename',
    'only-matching',
    'quiet',
    'silent',
    'text',
    'files-without-match',
    'files-with-matches',
    'count',
    'initial-tab',
    'null',
    'no-group-separator',
    'binary',
  ],
  longValues: {
    regexp: TEXT,
    file: CONTENT,
    'max-count': TEXT,
    label: TEXT,
    'binary-files': TEXT,
    directories: oneOf('read', 'skip'),
    devices: oneOf('read', 'skip'),
    include: PATTERN_TEXT,
    exclude: PATTERN_TEXT,
    'exclude-from': CONTENT,
    'exclude-dir': PATTERN_TEXT,
    'before-context': TEXT,
    'after-context': TEXT,
    context: TEXT,
    'group-separator': TEXT,
  },
  longOptional: { color: TEXT, colour: TEXT },
});

/**
 * ripgrep skips hidden files (every `.env`, `.claude/`, `.config/`) and what `.gitignore` ignores
 * (the run directory ignores itself) unless told otherwise, and the options that would tell it
 * (`--hidden`, `-u`, `--no-ignore*`, `-L`) are not listed; nor are `--pre` and `-z` (run programs
 * on each file), nor `-a`/`--text`: without it rg stops reading a file at its first NUL byte, so
 * a SQLite store (`runs/sessions.db`) found by a recursive search prints nothing. Its `-g` globs
 * can re-include files, so a glob that could match a credential file's name is refused (`!`
 * exclusions always pass). What a recursive search still reaches: credential files that are
 * neither hidden nor ignored (`prod.env`, `server.key` committed or lying in the tree), which
 * `rg KEY` prints like any file; naming one (`rg KEY prod.env`) is refused.
 */
const RG_GLOB = textWhere((glob) => glob.startsWith('!') || !globMayMatchSecret(glob));

const rg = patternThenFiles({
  flags: 'iSsvwxcFPUlnNHoqM0jp',
  values: {
    e: TEXT,
    f: CONTENT,
    A: TEXT,
    B: TEXT,
    C: TEXT,
    g: RG_GLOB,
    t: TEXT,
    T: TEXT,
    m: TEXT,
    d: TEXT,
    r: TEXT,
    E: TEXT,
  },
  long: [
    'ignore-case',
    'smart-case',
    'case-sensitive',
    'invert-match',
    'word-regexp',
    'line-regexp',
    'count',
    'count-matches',
    'fixed-strings',
    'pcre2',
    'multiline',
    'files-with-matches',
    'files-without-match',
    'files',
    'line-number',
    'no-line-number',
    'with-filename',
    'no-filename',
    'heading',
    'no-heading',
    'only-matching',
    'quiet',
    'no-messages',
    'null',
    'json',
    'vimgrep',
    'column',
    'stats',
    'trim',
    'pretty',
    'crlf',
    'passthru',
    'type-list',
    'no-config',
  ],
  longValues: {
    regexp: TEXT,
    file: CONTENT,
    'after-context': TEXT,
    'before-context': TEXT,
    context: TEXT,
    type: TEXT,
    'type-not': TEXT,
    glob: RG_GLOB,
    iglob: RG_GLOB,
    'max-count': TEXT,
    'max-depth': TEXT,
    'max-columns': TEXT,
    replace: TEXT,
    sort: TEXT,
    sortr: TEXT,
    color: TEXT,
    encoding: TEXT,
  },
});

const head = tool({
  flags: 'qvz',
  values: { n: TEXT, c: TEXT },
  numeric: true,
  long: ['quiet', 'silent', 'verbose', 'zero-terminated'],
  longValues: { lines: TEXT, bytes: TEXT },
  operands: READS_FILES,
});

const sort = tool({
  flags: 'bdfgiMhnRrVcCmsuz',
  values: { k: TEXT, t: TEXT, S: TEXT },
  long: [
    'ignore-leading-blanks',
    'dictionary-order',
    'ignore-case',
    'general-numeric-sort',
    'ignore-nonprinting',
    'month-sort',
    'human-numeric-sort',
    'numeric-sort',
    'random-sort',
    'reverse',
    'version-sort',
    'merge',
    'stable',
    'unique',
    'zero-terminated',
    'debug',
  ],
  longValues: {
    key: TEXT,
    'field-separator': TEXT,
    'buffer-size': TEXT,
    parallel: TEXT,
    sort: TEXT,
    'random-source': CONTENT,
    'files0-from': CONTENT,
  },
  longOptional: { check: TEXT },
  operands: READS_FILES,
});

/**
 * diff given two directories compares every file the two have in common — `diff src .` printed
 * both `.env` files (found by the property test). With one file, the other side is only
 * `DIR/<that file's name>`, which the credential rules have already judged. So one operand must be
 * standard input or look like a file (a name with an extension); a directory named like a file
 * (`conf.d`) is the residue this cannot see.
 */
const LOOKS_LIKE_A_FILE = /^-$|(?:^|\/)[^/.][^/]*\.[A-Za-z0-9]+$/;

const diff = tool({
  flags: 'qscuenytTpiEZbwBad',
  values: { C: TEXT, U: TEXT, W: TEXT, F: TEXT, I: TEXT, D: TEXT },
  long: [
    'normal',
    'brief',
    'report-identical-files',
    'ed',
    'rcs',
    'side-by-side',
    'left-column',
    'suppress-common-lines',
    'show-c-function',
    'expand-tabs',
    'initial-tab',
    'suppress-blank-empty',
    'ignore-case',
    'ignore-tab-expansion',
    'ignore-trailing-space',
    'ignore-space-change',
    'ignore-all-space',
    'ignore-blank-lines',
    'text',
    'strip-trailing-cr',
    'minimal',
    'speed-large-files',
  ],
  longValues: {
    width: TEXT,
    'show-function-line': TEXT,
    label: TEXT,
    tabsize: TEXT,
    'ignore-matching-lines': TEXT,
    ifdef: TEXT,
    'line-format': TEXT,
    'horizon-lines': TEXT,
    palette: TEXT,
  },
  longOptional: { context: TEXT, unified: TEXT, color: TEXT },
  operands: { fixed: [CONTENT, CONTENT], min: 2, max: 2 },
  also: (parsed) => parsed.operands.some((operand) => LOOKS_LIKE_A_FILE.test(operand.text)),
});

/** `date`: a `+FORMAT` operand only; `-s`/`--set` and a bare `MMDDhhmm` would set the clock. */
const date = tool({
  flags: 'uR',
  values: { d: TEXT, r: NAME, f: CONTENT },
  optional: { I: TEXT },
  long: ['utc', 'universal', 'rfc-email', 'debug'],
  longValues: { date: TEXT, reference: NAME, file: CONTENT, 'rfc-3339': TEXT },
  longOptional: { 'iso-8601': TEXT },
  operands: { fixed: [textWhere((text) => text.startsWith('+'))], max: 1 },
});

/**
 * `type [-a|-p|-t|-P] NAME`: exactly one plain name, as the reference allowed. Builtins stop
 * reading options at the first operand (no permutation).
 */
const type = tool({ flags: 'aptPf', permute: false, operands: { fixed: [COMMAND_NAME], min: 1, max: 1 } });

/**
 * `command -v|-V NAME…`: without -v or -V, `command X` runs X — and since the builtin stops
 * reading options at the first operand, `command touch -v x` runs touch (found by the property test).
 */
const command = tool({
  flags: 'vVp',
  permute: false,
  operands: { rest: COMMAND_NAME, min: 1 },
  also: (parsed) => parsed.options.some((option) => option.name === '-v' || option.name === '-V'),
});

const stat = tool({
  flags: 'Lft',
  values: { c: TEXT },
  long: ['dereference', 'file-system', 'terse'],
  longValues: { format: TEXT, printf: TEXT, cached: TEXT },
  operands: { rest: NAME, min: 1 },
});

/** `file`: no -C (writes), -m (a magic file can print contents), -z/-Z (run decompressors), -p, -s. */
const file = tool({
  flags: 'bcEhiklLNnr0d',
  values: { e: TEXT, F: TEXT, P: TEXT, f: CONTENT },
  long: [
    'brief',
    'checking-printout',
    'mime',
    'mime-type',
    'mime-encoding',
    'apple',
    'extension',
    'keep-going',
    'list',
    'dereference',
    'no-dereference',
    'no-buffer',
    'no-pad',
    'print0',
    'raw',
    'debug',
  ],
  longValues: {
    exclude: TEXT,
    'exclude-quiet': TEXT,
    separator: TEXT,
    parameter: TEXT,
    'files-from': CONTENT,
  },
  operands: NAMES_FILES,
});

/** `tree` without -o/-R (write files) or --fromfile (prints a file as if it were a listing). */
const tree = tool({
  flags: 'adlfxsughDFqNQvtcUrnCASJXip',
  values: { L: TEXT, P: PATTERN_TEXT, I: PATTERN_TEXT },
  long: [
    'noreport',
    'dirsfirst',
    'du',
    'si',
    'prune',
    'matchdirs',
    'ignore-case',
    'gitignore',
    'inodes',
    'device',
  ],
  longValues: { charset: TEXT, filelimit: TEXT, timefmt: TEXT, sort: TEXT },
  operands: NAMES_FILES,
});

const du = tool({
  flags: '0abcDdHhLlmPSsxk',
  values: { B: TEXT, d: TEXT, t: TEXT, X: CONTENT },
  long: [
    'null',
    'all',
    'apparent-size',
    'bytes',
    'total',
    'dereference-args',
    'count-links',
    'dereference',
    'no-dereference',
    'separate-dirs',
    'summarize',
    'one-file-system',
    'si',
    'inodes',
    'human-readable',
  ],
  longValues: {
    'block-size': TEXT,
    'max-depth': TEXT,
    threshold: TEXT,
    exclude: PATTERN_TEXT,
    'exclude-from': CONTENT,
    'files0-from': CONTENT,
    'time-style': TEXT,
  },
  longOptional: { time: TEXT },
  operands: NAMES_FILES,
});

/** `free` in its one-shot form (no `-s`/`-c`: repeat until killed). */
const free = tool({
  flags: 'bkmghltvw',
  long: [
    'bytes',
    'kibi',
    'mebi',
    'gibi',
    'tebi',
    'pebi',
    'kilo',
    'mega',
    'giga',
    'tera',
    'peta',
    'human',
    'lohi',
    'total',
    'committed',
    'wide',
    'si',
  ],
});

const df = tool({
  flags: 'ahHiklPTv',
  values: { B: TEXT, t: TEXT, x: TEXT },
  long: [
    'all',
    'human-readable',
    'si',
    'inodes',
    'local',
    'no-sync',
    'sync',
    'portability',
    'print-type',
    'total',
  ],
  longValues: { 'block-size': TEXT, type: TEXT, 'exclude-type': TEXT },
  longOptional: { output: TEXT },
  operands: { rest: NAME },
});

const TOOLS: Record<string, ArgumentCheck> = {
  git: gitReadsOnly,
  // state
  ls,
  dir: ls,
  pwd: tool({ flags: 'LP' }),
  df,
  du,
  free,
  uptime: tool({ flags: 'ps', long: ['pretty', 'since'] }),
  date,
  whoami: tool({}),
  hostname: tool({
    flags: 'aAdfiIsy',
    long: [
      'alias',
      'all-fqdns',
      'domain',
      'fqdn',
      'long',
      'ip-address',
      'all-ip-addresses',
      'short',
      'yp',
      'nis',
    ],
  }),
  id: tool({
    flags: 'agGnruzZ',
    long: ['context', 'group', 'groups', 'name', 'real', 'user', 'zero'],
    operands: { rest: TEXT },
  }),
  // processes and services
  ps: psReports,
  lsof: lsofReports,
  netstat: netstatReports,
  ss: ssReports,
  pgrep: pgrepReports,
  systemctl: systemctlReports,
  docker: dockerReports,
  kubectl: kubectlReports,
  // viewing
  cat: tool({
    flags: 'AbeEnstTuv',
    long: [
      'show-all',
      'number-nonblank',
      'show-ends',
      'number',
      'squeeze-blank',
      'show-tabs',
      'show-nonprinting',
    ],
    operands: READS_FILES,
  }),
  head,
  tail: head, // the same options minus -f/-F/--follow/--pid/-s, which head lacks anyway
  wc: tool({
    flags: 'clmwL',
    long: ['bytes', 'chars', 'lines', 'words', 'max-line-length'],
    longValues: { 'files0-from': CONTENT, total: TEXT },
    operands: NAMES_FILES,
  }),
  stat,
  file,
  find: findReadsOnly,
  tree,
  echo: (args) => args.every((word) => word.globAt.length === 0), // a builtin: prints its words
  // environment probing
  command,
  type,
  which: tool({ flags: 'as', operands: { rest: COMMAND_NAME, min: 1 } }),
  whereis: tool({ flags: 'bmsul', operands: { rest: COMMAND_NAME, min: 1 } }),
  uname: tool({
    flags: 'asnrvmpio',
    long: [
      'all',
      'kernel-name',
      'nodename',
      'kernel-release',
      'kernel-version',
      'machine',
      'processor',
      'hardware-platform',
      'operating-system',
    ],
  }),
  arch: tool({}),
  locale: tool({ flags: 'amckv', operands: { rest: TEXT } }),
  nproc: tool({ long: ['all'], longValues: { ignore: TEXT } }),
  getconf: tool({ flags: 'a', values: { v: TEXT }, operands: { rest: TEXT, max: 2 } }),
  sw_vers: tool({ operands: { fixed: [oneOf('-productName', '-productVersion', '-buildVersion')], max: 1 } }),
  // filters
  grep,
  egrep: grep,
  fgrep: grep,
  rg,
  sort,
  uniq: tool({
    flags: 'cdDiuz',
    values: { f: TEXT, s: TEXT, w: TEXT },
    long: ['count', 'repeated', 'unique', 'ignore-case', 'zero-terminated'],
    longValues: { 'skip-fields': TEXT, 'skip-chars': TEXT, 'check-chars': TEXT },
    longOptional: { 'all-repeated': TEXT, group: TEXT },
    operands: { fixed: [CONTENT], max: 1 }, // a second operand is the output file
  }),
  cut: tool({
    flags: 'snz',
    values: { b: TEXT, c: TEXT, d: TEXT, f: TEXT },
    long: ['complement', 'only-delimited', 'zero-terminated'],
    longValues: { bytes: TEXT, characters: TEXT, delimiter: TEXT, fields: TEXT, 'output-delimiter': TEXT },
    operands: READS_FILES,
  }),
  tr: tool({
    flags: 'cCdst',
    long: ['complement', 'delete', 'squeeze-repeats', 'truncate-set1'],
    operands: { rest: TEXT, min: 1, max: 2 },
  }),
  awk: awkReadsOnly,
  sed: sedReadsOnly,
  column: tool({
    flags: 'tdeLJx',
    values: {
      n: TEXT,
      O: TEXT,
      N: TEXT,
      l: TEXT,
      E: TEXT,
      H: TEXT,
      R: TEXT,
      T: TEXT,
      W: TEXT,
      r: TEXT,
      i: TEXT,
      p: TEXT,
      c: TEXT,
      o: TEXT,
      s: TEXT,
    },
    long: ['table', 'table-noheadings', 'table-header-repeat', 'keep-empty-lines', 'json', 'fillrows'],
    longValues: {
      'table-name': TEXT,
      'table-order': TEXT,
      'table-columns': TEXT,
      'table-columns-limit': TEXT,
      'table-noextreme': TEXT,
      'table-hide': TEXT,
      'table-right': TEXT,
      'table-truncate': TEXT,
      'table-wrap': TEXT,
      tree: TEXT,
      'tree-id': TEXT,
      'tree-parent': TEXT,
      'output-width': TEXT,
      'output-separator': TEXT,
      separator: TEXT,
    },
    operands: READS_FILES,
  }),
  jq: jqReadsOnly,
  nl: tool({
    flags: 'p',
    values: { b: TEXT, d: TEXT, f: TEXT, h: TEXT, i: TEXT, l: TEXT, n: TEXT, s: TEXT, v: TEXT, w: TEXT },
    long: ['no-renumber'],
    longValues: {
      'body-numbering': TEXT,
      'section-delimiter': TEXT,
      'footer-numbering': TEXT,
      'header-numbering': TEXT,
      'line-increment': TEXT,
      'join-blank-lines': TEXT,
      'number-format': TEXT,
      'number-separator': TEXT,
      'starting-line-number': TEXT,
      'number-width': TEXT,
    },
    operands: READS_FILES,
  }),
  rev: tool({ flags: '0', long: ['zero'], operands: READS_FILES }),
  comm: tool({
    flags: '123iz',
    long: ['check-order', 'nocheck-order', 'total', 'zero-terminated'],
    longValues: { 'output-delimiter': TEXT },
    operands: { fixed: [CONTENT, CONTENT], min: 2, max: 2 },
  }),
  diff,
};

/** The argument check for `name`, or `undefined` when it is not a glance tool. */
export function glanceTool(name: string): ArgumentCheck | undefined {
  return Object.hasOwn(TOOLS, name) ? TOOLS[name] : undefined;
}

/** Every tool name in the allow list (for tests and the property test's grammar). */
export const GLANCE_TOOLS: readonly string[] = Object.keys(TOOLS);
