/**
 * Which file operands a glance may name: never a file whose contents are secrets, and a pattern
 * only where its expansion cannot change what the command does.
 *
 * Invariants:
 * - Reading contents is refused for credential files, wherever they sit and however the path is
 *   spelled (`a/../.env`, `.//.env`, `.ENV` for case-insensitive file systems): any `.env` or
 *   `.env.*`; Claude Code's `.credentials.json`, `.claude.json` (and its backups) and everything under
 *   a `.claude` directory (its settings may carry an `env` block); everything under `.config/flower`
 *   (flower's credentials); any `environ` file (a process's environment in `/proc`); and the other
 *   usual stores (`.netrc`, `.git-credentials`, `.pgpass`, `.npmrc`, `.pypirc`, `.ssh/`, `.aws/`,
 *   `.gnupg/`, `.docker/`, `.kube/`, `/etc/shadow`).
 * - Under `/proc` only a few system-wide files may be read, and under `/dev` only `/dev/null` and
 *   `/dev/stdin` (a disk or `/dev/mem` holds every secret on the machine). A path that climbs above
 *   the working directory (`../../proc/1/mem`) is judged as if it were absolute as well.
 * - A pattern (unquoted `*`, `?`, `[`) expands to names that start like the pattern. So it must
 *   start with a literal character other than `-` (no expansion can become an option), and for
 *   contents it must be relative, must not climb, must not start a component with `.` (a pattern
 *   that targets dot files), and must not be able to match a secret name. A tool's own glob
 *   (`rg -g`, where `*` matches a leading dot too) is refused when it matches a credential name in
 *   `SECRET_SAMPLES`: the usual `.env.*` names and Claude Code's files, not every name imaginable
 *   (`*.ts` passes though a file could be called `.env.ts`).
 * - Symbolic links are not followed: the predicate reads the command, not the disk. A link planted
 *   in the workspace that points at a credential file is out of its reach; the read-only roles'
 *   Read and Grep tools are kept from such files by `agents/guards/secret-files.ts`, which does look.
 * - Pattern rules assume bash's defaults (`dotglob` off); Claude Code's shell leaves them so.
 * - Relative paths are judged on the assumption that the working directory (the workspace) is not
 *   `/` itself: `dev/sda` there would be a project file.
 */
import type { Word } from './command-line.js';

/** System-wide `/proc` files that say nothing about any process's secrets. */
const PROC_READABLE = new Set([
  'cpuinfo',
  'meminfo',
  'loadavg',
  'uptime',
  'version',
  'stat',
  'mounts',
  'swaps',
  'filesystems',
  'partitions',
  'diskstats',
  'cgroups',
  'devices',
]);

const DEV_READABLE = new Set(['null', 'stdin']);

/**
 * Names a pattern is tested against (lower case); a pattern matching any of them is refused. A
 * pattern cannot be compared with every possible `.env.<name>`, so these are the names people use
 * (the dotenv conventions of Node frameworks) and Claude Code's own backups: `rg -g '*.staging'`
 * re-includes `.env.staging` as surely as `*.local` re-includes `.env.local`.
 */
const SECRET_SAMPLES = [
  '.env',
  '.env.local',
  '.env.production',
  '.env.development',
  '.env.staging',
  '.env.test',
  '.env.production.local',
  '.env.development.local',
  '.env.test.local',
  '.credentials.json',
  '.claude.json',
  '.claude.json.backup',
  '.claude',
  'environ',
];

/** Names (lower case) of files and directories that hold credentials wherever they are. */
const SECRET_NAMES = new Set([
  '.env',
  '.credentials.json',
  '.claude',
  'environ',
  // Other well-known credential stores: cheap to keep out, and as secret as the ones above.
  '.netrc',
  '.git-credentials',
  '.pgpass',
  '.npmrc',
  '.pypirc',
  '.ssh',
  '.aws',
  '.gnupg',
  '.docker',
  '.kube',
]);

/** True when this (lower-case) component alone marks a credential file or directory. */
function isSecretComponent(component: string, previous: string | undefined): boolean {
  return (
    SECRET_NAMES.has(component) ||
    component.startsWith('.env.') ||
    component.startsWith('.claude.json') ||
    (component === 'flower' && previous === '.config')
  );
}

/** Lexical normalisation: no empty or `.` components, `a/..` folded; leading `..` kept. */
function components(path: string): { absolute: boolean; parts: string[] } {
  const absolute = path.startsWith('/');
  const parts: string[] = [];
  for (const part of path.split('/')) {
    if (part === '' || part === '.') continue;
    if (part === '..' && parts.length > 0 && parts[parts.length - 1] !== '..') parts.pop();
    else parts.push(part);
  }
  return { absolute, parts };
}

/** The rules for an absolute path's `/proc`, `/dev` and `/etc/shadow` parts. */
function absoluteIsReadable(parts: readonly string[]): boolean {
  const [top, second, third] = parts;
  if (top === 'etc' && third === undefined && (second === 'shadow' || second === 'gshadow')) return false;
  if (top === 'proc') return second !== undefined && third === undefined && PROC_READABLE.has(second);
  if (top === 'dev') return second !== undefined && third === undefined && DEV_READABLE.has(second);
  return true;
}

/** True when reading this literal path's contents cannot print a credential. */
function literalIsReadable(path: string): boolean {
  if (path === '-') return true; // standard input
  if (path === '') return false;
  const { absolute, parts } = components(path);
  const lower = parts.map((part) => part.toLowerCase());
  if (lower.some((part, index) => isSecretComponent(part, lower[index - 1]))) return false;
  if (absolute) return absoluteIsReadable(lower);
  const climbed = lower.findIndex((part) => part !== '..');
  // `../../proc/1/mem`: the depth of the working directory is unknown, so judge the rest as absolute.
  return climbed <= 0 || absoluteIsReadable(lower.slice(climbed));
}

/** A component with pattern characters as a regular expression (bracket expressions: any one char). */
function componentPattern(component: string, globAt: ReadonlySet<number>, offset: number): RegExp {
  let source = '';
  for (let index = 0; index < component.length; index += 1) {
    const char = component[index] as string;
    if (!globAt.has(offset + index)) source += char.replace(/[\\^$.*+?()[\]{}|/]/g, '\\$&');
    else if (char === '*') source += '.*';
    else if (char === '?') source += '.';
    else {
      const close = component.indexOf(']', index + 2);
      source += '.';
      if (close > 0) index = close;
    }
  }
  return new RegExp(`^${source}$`, 'i');
}

/**
 * True when a tool's own glob (`rg -g`, gitignore style, where `*` also matches a leading dot) could
 * match a credential file's name in any of its components.
 */
export function globMayMatchSecret(glob: string): boolean {
  let offset = 0;
  const everyChar = new Set<number>();
  for (let index = 0; index < glob.length; index += 1)
    if ('*?['.includes(glob[index] as string)) everyChar.add(index);
  for (const part of glob.split('/')) {
    const pattern = componentPattern(part, everyChar, offset);
    if (SECRET_SAMPLES.some((sample) => pattern.test(sample))) return true;
    offset += part.length + 1;
  }
  return false;
}

/** The rules every pattern operand meets: its expansions cannot become options. */
function patternStartsLiterally(word: Word): boolean {
  return !word.globAt.includes(0) && !word.text.startsWith('-');
}

/**
 * True when a pattern's expansions are all readable: relative, not climbing, no component that
 * starts with `.` or could match a secret name.
 */
function patternIsReadable(word: Word): boolean {
  if (!patternStartsLiterally(word) || word.text.startsWith('/')) return false;
  const globAt = new Set(word.globAt);
  let offset = 0;
  for (const part of word.text.split('/')) {
    const hasPattern = word.globAt.some((at) => at >= offset && at < offset + part.length);
    if (part === '..') return false;
    if (hasPattern) {
      if (part.startsWith('.')) return false;
      const pattern = componentPattern(part, globAt, offset);
      if (SECRET_SAMPLES.some((sample) => pattern.test(sample))) return false;
    }
    offset += part.length + 1;
  }
  return literalIsReadable(word.text.replace(/[*?[\]]/g, 'x'));
}

/**
 * True when `path` (as a tool would open it, no pattern) names a credential file or a secret
 * system file: for the read-only roles' Read and Grep tools, which the command-line rules above do
 * not see.
 */
export function isSecretPath(path: string): boolean {
  return !literalIsReadable(path);
}

/** A file whose contents the command prints (or could transform and print). */
export function readablePath(word: Word): boolean {
  return word.globAt.length > 0 ? patternIsReadable(word) : literalIsReadable(word.text);
}

/** A file or directory the command only names, lists or measures (ls, stat, du, find's roots). */
export function namedPath(word: Word): boolean {
  return word.globAt.length === 0 || patternStartsLiterally(word);
}
