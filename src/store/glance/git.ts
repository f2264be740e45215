/**
 * git as a glance: the subcommands that only read, each with the options known to only read.
 *
 * Invariants:
 * - Global options are limited to `--no-pager`/`-P` and `--no-optional-locks`; `-c`, `-C`,
 *   `--git-dir`, `--exec-path` and the rest are refused (they change what runs).
 * - Every subcommand has an allow list of options. Left out on purpose: `--output` (writes a
 *   file), `--ext-diff`/`--textconv`/`--filters` (run configured programs), `--show-signature` and
 *   `%G` format placeholders (run gpg), `describe --dirty`/`--broken` (refresh the index), and
 *   every option that creates, moves or deletes (`branch -d`, `stash drop`, `config --add`…).
 * - No configuration is printed: `git config` in every form, `git var -l` (which lists it all) and
 *   every `git remote` form but the bare one (names only) are refused. Tokens live in remote URLs
 *   (`git remote -v`, `get-url`, `show -n` print them) and in `http.extraheader`; the files
 *   themselves (`.git/config`, `.gitconfig`) are credential files to `paths.ts`.
 * - Operands are revisions and paths; a path that is read (after `--`, or `REV:path`) must pass the
 *   same credential-file rules as any other file operand (`git show HEAD:prod.env` is `cat prod.env`).
 * - `git diff` operands stay inside the repository: an absolute path or one with a `..` component
 *   is refused, because a path outside the working tree turns `git diff A B` into `--no-index`, a
 *   diff of any two directories (`git diff ~/.config /tmp/empty` printed flower's key). Run outside
 *   any repository, `git diff A B` is such a diff too; the coordinator's workspace is a checkout, and
 *   the read-only sandbox its glances run in hides the credential stores.
 * - The repository's own configuration (hooks, `core.fsmonitor`, diff drivers, a pager) is the
 *   user's, and trusted like their shell: the predicate judges the command, not the repository.
 */
import type { Word } from './command-line.js';
import {
  type ArgumentCheck,
  CONTENT,
  has,
  NAME,
  type OptionTable,
  PATTERN_TEXT,
  parseArguments,
  TEXT,
  type ToolSpec,
  textWhere,
  tool,
  type ValueRule,
} from './options.js';
import { readablePath } from './paths.js';

/** A revision, a path, or `REV:path` — the path part read like any file. */
const REVISION_OR_PATH: ValueRule = {
  accepts: (word) => {
    if (word.globAt.length > 0) return false;
    const colon = word.text.indexOf(':');
    const path = colon < 0 ? word.text : word.text.slice(colon + 1);
    return readablePath({ text: path === '' ? '.' : path, globAt: [], quoted: false });
  },
};

/** A `git diff` operand: as `REVISION_OR_PATH`, and never a path outside the working tree. */
const IN_REPOSITORY: ValueRule = {
  accepts: (word) =>
    REVISION_OR_PATH.accepts(word) && !word.text.startsWith('/') && !word.text.split('/').includes('..'),
};

/** `-L start,end:file` or `-L :funcname:file`: the file after the last colon is read. */
const LINE_RANGE: ValueRule = {
  accepts: (word) =>
    word.globAt.length === 0 &&
    readablePath({ text: word.text.slice(word.text.lastIndexOf(':') + 1) || '.', globAt: [], quoted: false }),
};

/** Pretty formats that do not ask gpg to verify signatures. */
const FORMAT: ValueRule = textWhere((text) => !/%G|signature/.test(text));

const DIFF_LONG = [
  'patch',
  'no-patch',
  'numstat',
  'shortstat',
  'summary',
  'name-only',
  'name-status',
  'raw',
  'patch-with-stat',
  'patch-with-raw',
  'full-index',
  'binary',
  'minimal',
  'patience',
  'histogram',
  'no-color',
  'no-color-moved',
  'ignore-space-change',
  'ignore-all-space',
  'ignore-blank-lines',
  'ignore-space-at-eol',
  'ignore-cr-at-eol',
  'text',
  'no-renames',
  'find-copies-harder',
  'irreversible-delete',
  'check',
  'exit-code',
  'quiet',
  'no-ext-diff',
  'no-textconv',
  'no-relative',
  'compact-summary',
  'function-context',
  'no-prefix',
  'default-prefix',
  'cumulative',
];

const DIFF_LONG_VALUES: Record<string, ValueRule> = {
  unified: TEXT,
  'inter-hunk-context': TEXT,
  'diff-filter': TEXT,
  'diff-algorithm': TEXT,
  'src-prefix': TEXT,
  'dst-prefix': TEXT,
  'line-prefix': TEXT,
  'stat-width': TEXT,
  'stat-name-width': TEXT,
  'stat-count': TEXT,
  'word-diff-regex': TEXT,
};

const DIFF_LONG_OPTIONAL: Record<string, ValueRule> = {
  stat: TEXT,
  dirstat: TEXT,
  color: TEXT,
  'color-words': TEXT,
  'color-moved': TEXT,
  'word-diff': TEXT,
  'find-renames': TEXT,
  'find-copies': TEXT,
  relative: TEXT,
  abbrev: TEXT,
  'ignore-submodules': TEXT,
  submodule: TEXT,
};

const DIFF_TABLE: OptionTable = {
  flags: 'puszRabwWD',
  values: { U: TEXT, S: TEXT, G: TEXT, l: TEXT },
  optional: { M: TEXT, C: TEXT, B: TEXT },
  long: DIFF_LONG,
  longValues: DIFF_LONG_VALUES,
  longOptional: DIFF_LONG_OPTIONAL,
};

/** Revision walking and commit formatting (log, show, whatchanged, reflog, stash list). */
const LOG_TABLE: OptionTable = {
  flags: `${DIFF_TABLE.flags}iEFPmcgt`,
  values: { ...DIFF_TABLE.values, n: TEXT, L: LINE_RANGE },
  optional: DIFF_TABLE.optional,
  numeric: true,
  long: [
    ...DIFF_LONG,
    'oneline',
    'graph',
    'no-decorate',
    'all',
    'reverse',
    'first-parent',
    'merges',
    'no-merges',
    'follow',
    'abbrev-commit',
    'no-abbrev-commit',
    'all-match',
    'invert-grep',
    'regexp-ignore-case',
    'basic-regexp',
    'extended-regexp',
    'fixed-strings',
    'perl-regexp',
    'topo-order',
    'date-order',
    'author-date-order',
    'left-right',
    'cherry-pick',
    'cherry-mark',
    'cherry',
    'boundary',
    'simplify-by-decoration',
    'full-history',
    'dense',
    'sparse',
    'do-walk',
    'relative-date',
    'parents',
    'children',
    'no-notes',
    'use-mailmap',
    'mailmap',
    'no-mailmap',
    'log-size',
    'source',
    'full-diff',
    'walk-reflogs',
    'cc',
    'combined-all-paths',
    'ignore-missing',
    'stdin',
    'count',
  ],
  longValues: {
    ...DIFF_LONG_VALUES,
    'max-count': TEXT,
    skip: TEXT,
    since: TEXT,
    until: TEXT,
    after: TEXT,
    before: TEXT,
    author: TEXT,
    committer: TEXT,
    grep: TEXT,
    date: TEXT,
    format: FORMAT,
    'max-parents': TEXT,
    'min-parents': TEXT,
    encoding: TEXT,
    'diff-merges': TEXT,
    exclude: TEXT,
    glob: PATTERN_TEXT,
    'grep-reflog': TEXT,
  },
  longOptional: {
    ...DIFF_LONG_OPTIONAL,
    decorate: TEXT,
    pretty: FORMAT,
    branches: PATTERN_TEXT,
    tags: PATTERN_TEXT,
    remotes: PATTERN_TEXT,
    'no-walk': TEXT,
    'ancestry-path': TEXT,
    notes: TEXT,
  },
};

const REVISIONS_AND_PATHS = { rest: REVISION_OR_PATH };

function sub(spec: ToolSpec): ArgumentCheck {
  return tool(spec);
}

/** `git branch` when it lists: names are patterns only with `--list`/`-l`. */
const branchLists: ArgumentCheck = (args) => {
  const parsed = parseArguments(args, {
    flags: 'arvli',
    long: ['all', 'remotes', 'verbose', 'list', 'show-current', 'ignore-case', 'omit-empty', 'no-column'],
    longValues: { sort: TEXT, format: FORMAT, 'points-at': TEXT },
    longOptional: {
      color: TEXT,
      column: TEXT,
      merged: TEXT,
      'no-merged': TEXT,
      contains: TEXT,
      'no-contains': TEXT,
      abbrev: TEXT,
    },
  });
  if (!parsed) return false;
  const listing = has(parsed, '-l', '--list');
  return (
    parsed.operands.length === 0 || (listing && parsed.operands.every((word) => word.globAt.length === 0))
  );
};

/** `git remote` alone lists the remotes' names; every other form prints URLs (tokens) or acts. */
const remoteReads: ArgumentCheck = (args) => args.length === 0;

const GIT_VARS = new Set([
  'GIT_AUTHOR_IDENT',
  'GIT_COMMITTER_IDENT',
  'GIT_EDITOR',
  'GIT_SEQUENCE_EDITOR',
  'GIT_PAGER',
  'GIT_DEFAULT_BRANCH',
  'GIT_SHELL_PATH',
  'GIT_ATTR_SYSTEM',
  'GIT_ATTR_GLOBAL',
  'GIT_CONFIG_SYSTEM',
  'GIT_CONFIG_GLOBAL',
]);

/** `SUB` followed by a nested check on the remaining words (`stash list`, `worktree list`). */
function nested(name: string, check: ArgumentCheck): ArgumentCheck {
  return (args) => args[0]?.text === name && args[0].globAt.length === 0 && check(args.slice(1));
}

const logReads = sub({ ...LOG_TABLE, operands: REVISIONS_AND_PATHS });

/**
 * `git reflog [show] [options] [ref]` or `git reflog exists REF`. A first word that could be a
 * subcommand (`expire`, `delete`, `drop`, and any future one) is refused rather than read as a ref.
 */
const reflogReads: ArgumentCheck = (args) => {
  const first = args[0]?.text;
  if (first === 'exists') return args.length === 2 && args[1]?.globAt.length === 0;
  if (first === 'show') return logReads(args.slice(1));
  if (first !== undefined && /^[a-z-]+$/.test(first) && !first.startsWith('-')) return false;
  return logReads(args);
};

const SUBCOMMANDS: Record<string, ArgumentCheck> = {
  status: sub({
    flags: 'sbvz',
    optional: { u: TEXT },
    long: [
      'short',
      'branch',
      'long',
      'verbose',
      'show-stash',
      'ahead-behind',
      'no-ahead-behind',
      'renames',
      'no-renames',
      'no-column',
      'null',
    ],
    longOptional: {
      porcelain: TEXT,
      column: TEXT,
      ignored: TEXT,
      'untracked-files': TEXT,
      'ignore-submodules': TEXT,
      'find-renames': TEXT,
    },
    operands: { rest: NAME },
  }),
  diff: sub({
    ...DIFF_TABLE,
    // Not `--no-index`: given two directories it compares every file in them, `.env` files included.
    long: [...DIFF_LONG, 'cached', 'staged', 'merge-base', 'ita-invisible-in-index'],
    operands: { rest: IN_REPOSITORY },
  }),
  log: logReads,
  show: sub({ ...LOG_TABLE, operands: REVISIONS_AND_PATHS }),
  whatchanged: sub({ ...LOG_TABLE, operands: REVISIONS_AND_PATHS }),
  reflog: reflogReads,
  stash: nested('list', sub({ ...LOG_TABLE, operands: { max: 0 } })),
  worktree: nested('list', sub({ flags: 'vz', long: ['porcelain', 'verbose'] })),
  blame: sub({
    flags: 'bltfnsepwc',
    optional: { M: TEXT, C: TEXT },
    values: { L: TEXT, S: CONTENT },
    long: [
      'root',
      'show-stats',
      'show-name',
      'show-number',
      'porcelain',
      'line-porcelain',
      'incremental',
      'show-email',
      'first-parent',
      'minimal',
      'color-lines',
      'color-by-age',
      'progress',
      'no-progress',
    ],
    longValues: {
      date: TEXT,
      since: TEXT,
      contents: CONTENT,
      'ignore-rev': TEXT,
      'ignore-revs-file': CONTENT,
      encoding: TEXT,
    },
    longOptional: { abbrev: TEXT },
    operands: REVISIONS_AND_PATHS,
  }),
  shortlog: sub({
    flags: 'snec',
    long: ['summary', 'numbered', 'email', 'committer', 'all'],
    longValues: { format: FORMAT, group: TEXT, since: TEXT, until: TEXT },
    operands: { rest: TEXT },
  }),
  describe: sub({
    long: ['tags', 'all', 'always', 'long', 'contains', 'first-parent', 'exact-match', 'debug'],
    longValues: { candidates: TEXT, match: TEXT, exclude: TEXT },
    longOptional: { abbrev: TEXT },
    operands: { rest: TEXT },
  }),
  'rev-parse': sub({
    flags: 'q',
    long: [
      'show-toplevel',
      'verify',
      'quiet',
      'git-dir',
      'git-common-dir',
      'absolute-git-dir',
      'is-inside-work-tree',
      'is-inside-git-dir',
      'is-bare-repository',
      'is-shallow-repository',
      'show-cdup',
      'show-prefix',
      'show-superproject-working-tree',
      'symbolic',
      'symbolic-full-name',
      'all',
      'revs-only',
      'no-revs',
      'flags',
      'no-flags',
      'show-ref-format',
    ],
    longValues: { 'git-path': TEXT, default: TEXT, since: TEXT, until: TEXT, 'path-format': TEXT },
    longOptional: {
      'abbrev-ref': TEXT,
      short: TEXT,
      branches: PATTERN_TEXT,
      tags: PATTERN_TEXT,
      remotes: PATTERN_TEXT,
      'show-object-format': TEXT,
    },
    operands: { rest: TEXT },
  }),
  'ls-files': sub({
    flags: 'cdmoisuktvfz',
    values: { x: TEXT, X: CONTENT },
    long: [
      'cached',
      'deleted',
      'modified',
      'others',
      'ignored',
      'stage',
      'unmerged',
      'killed',
      'directory',
      'no-empty-directory',
      'eol',
      'deduplicate',
      'exclude-standard',
      'error-unmatch',
      'full-name',
      'recurse-submodules',
      'debug',
      'sparse',
      'resolve-undo',
    ],
    longValues: {
      exclude: PATTERN_TEXT,
      'exclude-from': CONTENT,
      'exclude-per-directory': TEXT,
      format: TEXT,
    },
    longOptional: { abbrev: TEXT },
    operands: { rest: NAME },
  }),
  cherry: sub({ flags: 'v', longOptional: { abbrev: TEXT }, operands: { rest: TEXT, max: 3 } }),
  'for-each-ref': sub({
    long: ['shell', 'perl', 'python', 'tcl', 'ignore-case', 'omit-empty', 'include-root-refs'],
    longValues: { format: FORMAT, sort: TEXT, count: TEXT, 'points-at': TEXT, exclude: TEXT },
    longOptional: {
      merged: TEXT,
      'no-merged': TEXT,
      contains: TEXT,
      'no-contains': TEXT,
      color: TEXT,
    },
    operands: { rest: TEXT },
  }),
  'cat-file': sub({
    flags: 'ptse',
    operands: { fixed: [REVISION_OR_PATH], min: 1, max: 1 },
    also: (parsed) => parsed.options.length === 1,
  }),
  'count-objects': sub({ flags: 'vH', long: ['verbose', 'human-readable'] }),
  'check-ignore': sub({
    flags: 'qvnz',
    long: ['quiet', 'verbose', 'non-matching', 'no-index', 'stdin'],
    operands: { rest: NAME },
  }),
  var: sub({
    operands: { fixed: [textWhere((text) => GIT_VARS.has(text))], max: 1 },
  }),
  branch: branchLists,
  remote: remoteReads,
  'symbolic-ref': sub({
    flags: 'q',
    long: ['quiet', 'short', 'no-recurse'],
    operands: { fixed: [TEXT], min: 1, max: 1 },
  }),
  'hash-object': sub({
    values: { t: TEXT },
    long: ['stdin', 'no-filters', 'literally'],
    longValues: { path: TEXT },
    operands: { rest: NAME },
  }),
};

/** Global options before the subcommand. */
const GLOBAL_OPTIONS = new Set(['--no-pager', '-P', '--no-optional-locks']);

export const gitReadsOnly: ArgumentCheck = (args: readonly Word[]) => {
  let index = 0;
  while (index < args.length && GLOBAL_OPTIONS.has((args[index] as Word).text)) index += 1;
  const subcommand = args[index];
  if (!subcommand || subcommand.globAt.length > 0 || !Object.hasOwn(SUBCOMMANDS, subcommand.text))
    return false;
  return (SUBCOMMANDS[subcommand.text] as ArgumentCheck)(args.slice(index + 1));
};
