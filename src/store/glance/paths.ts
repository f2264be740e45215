/**
 * Which file operands a glance may name: never a file whose contents are secrets, and a pattern
 * only where its expansion cannot change what the command does.
 *
 * Invariants:
 * - Reading contents is refused for credential files, wherever they sit and however the path is
 *   spelled (`a/../.env`, `.//.env`, `.ENV` for case-insensitive file systems):
 *   - dotenv files: every name starting with `.env` (`.env`, `.env.local`, `.envrc`, `.env~`,
 *     `.env-production`) or ending in `.env` (`prod.env`), and wrangler's `.dev.vars`;
 *   - private keys: `*.key`, `*.pem`, `*.p12`, `*.pfx`, `*.ppk`, `*.jks`, `*.keystore`, and the SSH
 *     key names `id_rsa*`, `id_dsa*`, `id_ecdsa*`, `id_ed25519*`;
 *   - copies of any of these (`prod.env~`, `server.key.bak`, `.netrc.orig`, vim's `.prod.env.swp`);
 *   - Claude Code's `.credentials.json`, `.claude.json` (and its backups) and everything under a
 *     `.claude` directory (its settings may carry an `env` block); everything under `.config/flower`
 *     (flower's credentials); any `environ` file (a process's environment in `/proc`);
 *   - the user-level stores of the one credential list (`config/credential-stores.ts`:
 *     `HOME_CREDENTIAL_STORES`, matched wherever the sequence of names appears, so
 *     `/root/.config/gh/hosts.yml` and `x/.bash_history` alike), the other usual ones (`.netrc`,
 *     `.git-credentials`, `.pgpass`, `.npmrc`, `.pypirc`, `.ssh/`, `.aws/`, `.gnupg/`, `.docker/`,
 *     `.kube/`), and git's configuration files (`.git/config` and every `config*` under a `.git`
 *     directory, `.gitconfig`, `.config/git/`), where remote URLs and `http.extraheader` carry
 *     tokens;
 *   - the secrets mounts (`SYSTEM_CREDENTIAL_STORES`: `/run/secrets`, `/var/run/secrets`) and
 *     `/etc/shadow`;
 *   - flower's run directory: a relative path whose first component is `runs` (the default run
 *     directory of the workspace: every transcript and the store), and `runs/sessions.db*`
 *     anywhere. Names under `runs/` may still be listed (`ls runs`); a run directory elsewhere
 *     (`-r DIR`) is left to the operating system's sandbox.
 * - Under `/proc` only a few system-wide files may be read, and under `/dev` only `/dev/null` and
 *   `/dev/stdin` (a disk or `/dev/mem` holds every secret on the machine). gawk's network files
 *   (`/inet/…`, `/inet4/…`, `/inet6/…`: opening one makes a TCP or UDP connection) are refused as
 *   operands of every tool. A path that climbs above the working directory (`../../proc/1/mem`) is
 *   judged as if it were absolute as well.
 * - A pattern (unquoted `*`, `?`, `[`) expands to names that start like the pattern. So it must
 *   start with a literal character other than `-` (no expansion can become an option), and for
 *   contents it must be relative, must not climb, must not start a component with `.` (a pattern
 *   that targets dot files), and must not be able to match a secret name. A tool's own glob
 *   (`rg -g`, where `*` matches a leading dot too) is refused when it matches a credential name in
 *   `PATTERN_NAMES`: the usual dotenv names, key file names, the stores' file and directory names
 *   (`.config`, `gh`, `.bash_history`…), the run directory and its database, a `.git`'s `config`,
 *   and Claude Code's files — not every name imaginable (`*.ts` passes though a file could be
 *   called `.env.ts`).
 * - Symbolic links are not followed: the predicate reads the command, not the disk. A link planted
 *   in the workspace that points at a credential file is out of its reach; the read-only roles'
 *   Read and Grep tools are kept from such files by `agents/guards/secret-files.ts`, which does look,
 *   and the coordinator's glances run in flower's read-only bubblewrap with the stores hidden.
 * - Pattern rules assume bash's defaults (`dotglob` off); Claude Code's shell leaves them so.
 * - Relative paths are judged on the assumption that the working directory (the workspace) is not
 *   `/` itself: `dev/sda` there would be a project file.
 */
import { HOME_CREDENTIAL_STORES, SYSTEM_CREDENTIAL_STORES } from '../../config/credential-stores.js';
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
 * (the dotenv conventions of Node frameworks), the usual key file names, the single-file stores of
 * the credential list, the run directory and its database, and Claude Code's own backups:
 * `rg -g '*.staging'` re-includes `.env.staging` as surely as `*.local` re-includes `.env.local`.
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
  '.envrc',
  '.env~',
  '.env-production',
  'prod.env',
  '.dev.vars',
  'server.key',
  'private.pem',
  'cert.p12',
  'cert.pfx',
  'id_rsa',
  'id_ecdsa',
  'id_ed25519',
  'runs',
  'sessions.db',
  '.credentials.json',
  '.claude.json',
  '.claude.json.backup',
  '.claude',
  'environ',
  ...HOME_CREDENTIAL_STORES.filter((store) => !store.includes('/')).map((store) => store.toLowerCase()),
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
  '.gitconfig',
]);

/** Endings (lower case) of private key and keystore files. */
const SECRET_EXTENSIONS = ['.key', '.pem', '.p12', '.pfx', '.ppk', '.jks', '.keystore'];

/** Beginnings (lower case) of SSH private key names (`id_rsa`, `id_ed25519_work`, …). */
const SECRET_PREFIXES = ['.env', '.dev.vars', '.claude.json', 'id_rsa', 'id_dsa', 'id_ecdsa', 'id_ed25519'];

/**
 * Sequences of names (lower case) that mark a store wherever they appear in a path: the user-level
 * stores of the credential list, flower's own directory, and git's configuration files.
 */
const SECRET_SEQUENCES: readonly (readonly string[])[] = [
  ...HOME_CREDENTIAL_STORES.map((store) => store.toLowerCase().split('/')),
  ['.config', 'flower'],
  ['.config', 'git'],
];

/**
 * Every name a pattern (bash's or a tool's glob) must not be able to match: the samples, each
 * directory or file name of the stores' sequences (`.config` re-included by `rg -g .config` would
 * let `-g hosts.yml` reach `.config/gh/hosts.yml`; `home/.config/g*` expands to it), and the
 * `config` of a `.git` directory.
 */
const PATTERN_NAMES: readonly string[] = [
  ...new Set([...SECRET_SAMPLES, ...SECRET_SEQUENCES.flat(), 'config']),
];

/** Absolute directories (lower case components) whose contents are secret: the secrets mounts. */
const SECRET_ROOTS: readonly (readonly string[])[] = SYSTEM_CREDENTIAL_STORES.map((root) =>
  root
    .toLowerCase()
    .split('/')
    .filter((part) => part !== ''),
);

/** gawk's special network files: `/inet/tcp/0/HOST/PORT` opens a connection. */
const NETWORK_ROOTS = new Set(['inet', 'inet4', 'inet6']);

/** An editor's or a person's copy of a file: `prod.env~`, `server.key.bak`, `.prod.env.swp`. */
const COPY_SUFFIX = /(?:~|\.(?:bak|old|orig|backup|save|swp|swo|tmp))+$/;

/** True when this (lower-case) component alone marks a credential file or directory. */
function isSecretComponent(component: string): boolean {
  const original = component.replace(COPY_SUFFIX, '');
  return (
    SECRET_NAMES.has(component) ||
    SECRET_NAMES.has(original) ||
    original.endsWith('.env') ||
    SECRET_PREFIXES.some((prefix) => component.startsWith(prefix)) ||
    SECRET_EXTENSIONS.some((extension) => original.endsWith(extension))
  );
}

/** True when the (lower-case) components name a credential store anywhere along the path. */
function hasSecretPart(parts: readonly string[]): boolean {
  return parts.some(
    (part, index) =>
      isSecretComponent(part) ||
      // A store under any run directory named `runs` (its asides' `runs/aside/sessions.db` too).
      (part.startsWith('sessions.db') && parts.slice(0, index).includes('runs')) ||
      // A repository's, a submodule's or a worktree's configuration (`.git/modules/x/config`).
      (part.startsWith('config') && parts.slice(0, index).includes('.git')) ||
      SECRET_SEQUENCES.some((sequence) => sequence.every((name, offset) => parts[index + offset] === name)),
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

/** The rules for an absolute path's `/proc`, `/dev`, `/etc/shadow`, secrets mounts and `/inet`. */
function absoluteIsReadable(parts: readonly string[]): boolean {
  const [top, second, third] = parts;
  if (top === 'etc' && third === undefined && (second === 'shadow' || second === 'gshadow')) return false;
  if (top !== undefined && NETWORK_ROOTS.has(top)) return false;
  if (SECRET_ROOTS.some((root) => root.every((name, index) => parts[index] === name))) return false;
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
  if (hasSecretPart(lower)) return false;
  if (absolute) return absoluteIsReadable(lower);
  if (lower[0] === 'runs') return false; // the workspace's run directory: transcripts and the store
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
    if (PATTERN_NAMES.some((name) => pattern.test(name))) return true;
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
      if (PATTERN_NAMES.some((name) => pattern.test(name))) return false;
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
