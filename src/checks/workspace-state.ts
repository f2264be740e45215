/**
 * One hash for "what the workspace holds now", so the no-progress brake can tell whether a round of
 * work changed anything at all.
 *
 * Invariants:
 * - flower's own directories (the run directory and the workbench, passed as `exclude`) and `.git`
 *   never count: a round that only wrote transcripts, check outputs or notes changed nothing.
 * - In a git repository it is git's own tree hash of the working directory (tracked and untracked
 *   files, ignored ones left out as git leaves them out), computed in a temporary index seeded from
 *   a copy of the user's, writing its objects into a temporary object directory that borrows the
 *   repository's as an alternate: the user's index, staging, objects and history are never touched.
 * - Elsewhere (or when git is missing or fails) it is a content hash over every file's relative
 *   path and bytes, in a fixed order; symbolic links count by their target, not followed.
 * - It never throws: an unreadable file counts as its path plus "unreadable".
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  copyFileSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { isAbsolute, join, relative, resolve, sep } from 'node:path';

export interface WorkspaceState {
  /** `git` when it is git's tree hash, `content` for the walk. */
  readonly method: 'git' | 'content';
  readonly hash: string;
}

/** git's commands must not hang a round: a working tree this big is not hashed in a minute anyway. */
const GIT_TIMEOUT_MS = 60_000;

function git(cwd: string, args: string[], env: NodeJS.ProcessEnv = process.env): string {
  return execFileSync('git', args, {
    cwd,
    env,
    encoding: 'utf8',
    timeout: GIT_TIMEOUT_MS,
    stdio: ['ignore', 'pipe', 'ignore'],
  }).trim();
}

/** `exclude` entries inside `workspace`, relative to it (entries outside it cannot matter). */
function insideRelative(workspace: string, exclude: readonly string[]): string[] {
  return exclude
    .map((path) => relative(workspace, resolve(workspace, path)))
    .filter((path) => path !== '' && !path.startsWith('..') && !isAbsolute(path));
}

function gitTreeHash(workspace: string, exclude: readonly string[]): string | undefined {
  let scratch: string | undefined;
  try {
    if (git(workspace, ['rev-parse', '--is-inside-work-tree']) !== 'true') return undefined;
    scratch = mkdtempSync(join(tmpdir(), 'flower-tree-'));
    const index = join(scratch, 'index');
    // A copy of the user's index lets git reuse its stat cache; the user's file itself is only read.
    const userIndex = resolve(workspace, git(workspace, ['rev-parse', '--git-path', 'index']));
    if (existsSync(userIndex)) copyFileSync(userIndex, index);
    const objects = resolve(workspace, git(workspace, ['rev-parse', '--git-path', 'objects']));
    // git refuses an object directory that does not exist yet.
    mkdirSync(join(scratch, 'objects'));
    const env = {
      ...process.env,
      GIT_INDEX_FILE: index,
      GIT_OBJECT_DIRECTORY: join(scratch, 'objects'),
      GIT_ALTERNATE_OBJECT_DIRECTORIES: objects,
    };
    const pathspec = ['.', ...insideRelative(workspace, exclude).map((path) => `:(exclude)${path}`)];
    git(workspace, ['add', '--all', '--ignore-errors', '--', ...pathspec], env);
    return git(workspace, ['write-tree'], env);
  } catch {
    return undefined;
  } finally {
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  }
}

function contentHash(workspace: string, exclude: readonly string[]): string {
  const skipped = new Set([...insideRelative(workspace, exclude), '.git']);
  const hash = createHash('sha256');
  const walk = (dir: string) => {
    let names: string[];
    try {
      names = readdirSync(join(workspace, dir)).sort();
    } catch {
      hash.update(`${dir}\0unreadable\0`);
      return;
    }
    for (const name of names) {
      const path = dir === '' ? name : `${dir}${sep}${name}`;
      if (skipped.has(path)) continue;
      const absolute = join(workspace, path);
      try {
        const stat = lstatSync(absolute);
        if (stat.isDirectory()) walk(path);
        else if (stat.isSymbolicLink()) hash.update(`${path}\0link\0${readlinkSync(absolute)}\0`);
        else if (stat.isFile()) hash.update(`${path}\0file\0`).update(readFileSync(absolute)).update('\0');
      } catch {
        hash.update(`${path}\0unreadable\0`);
      }
    }
  };
  walk('');
  return hash.digest('hex');
}

/** The state of `workspace`, leaving out `exclude` (absolute, or relative to the workspace). */
export function workspaceState(workspace: string, exclude: readonly string[] = []): WorkspaceState {
  const tree = gitTreeHash(workspace, exclude);
  if (tree !== undefined) return { method: 'git', hash: tree };
  return { method: 'content', hash: contentHash(workspace, exclude) };
}
