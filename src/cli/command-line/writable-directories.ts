/**
 * The directories a writing command (`go`, `run`, `once`, `gc`, `demo`) needs, checked before
 * anything else happens: the run directory must be writable, and so must the workspace when flower
 * keeps files there. Without this check an unwritable workspace surfaced as a raw
 * `EACCES: permission denied, mkdir '…/runs'`, and `-w /proc/nonexist` hung for ever: Node's
 * recursive mkdir retries without end when a directory that exists answers ENOENT (/proc does).
 *
 * Invariants:
 * - The check creates nothing that stays: it makes one directory (the first missing one, or a probe
 *   inside an existing one) and removes it at once. Asking the kernel is the only honest test: root
 *   passes every permission check yet not a read-only mount, an immutable directory or /proc.
 * - Nothing here creates a directory recursively, so nothing here can hang.
 * - A refusal is one line naming the directory, why (in words, not an errno) and which flag to use
 *   instead; it is a usage error (exit 2), like a -w naming a file.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, rmdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { UsageError } from './exit-errors.js';

/** Why a directory cannot be written, found by trying. */
export interface WriteProblem {
  /** The directory that refused: the path itself, or the nearest existing one above it. */
  readonly refusedIn: string;
  /** Whether the path exists already (writing in it failed) or must be created (creating it failed). */
  readonly exists: boolean;
  /** The error code the kernel gave (EACCES, EROFS, EPERM, ENOENT…). */
  readonly code: string;
}

/** The error codes people meet here, in words. */
const REASONS: Readonly<Record<string, string>> = {
  EACCES: 'permission denied',
  EPERM: 'operation not permitted (an immutable or protected directory)',
  EROFS: 'a read-only file system',
  ENOSPC: 'no space left on the device',
  EDQUOT: 'the disk quota is used up',
};

/** A kernel error code in words; ENOENT on a directory that exists means it takes no new entries. */
export function reasonOf(code: string, refusedIn: string): string {
  if (code === 'ENOENT' || code === 'ENOTSUP' || code === 'EOPNOTSUPP')
    return `${refusedIn} takes no new directories`;
  return REASONS[code] ?? `the system refused it (${code})`;
}

function isDirectory(path: string): boolean | undefined {
  try {
    return statSync(path).isDirectory();
  } catch {
    return undefined;
  }
}

/**
 * Whether flower can create files in `path` (creating it first if it is missing), found by making
 * one directory and removing it; undefined when it can. A file in the way is global-options.ts's
 * to report, before this is asked.
 */
export function writeProblem(path: string): WriteProblem | undefined {
  let existing = path;
  let firstMissing: string | undefined;
  while (isDirectory(existing) === undefined && dirname(existing) !== existing) {
    firstMissing = existing;
    existing = dirname(existing);
  }
  const exists = firstMissing === undefined;
  const probe =
    firstMissing ?? join(path, `.flower-write-check-${process.pid}-${randomBytes(4).toString('hex')}`);
  try {
    mkdirSync(probe);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'unknown';
    // Created meanwhile (another flower starting on the same task): writable, and not ours to remove.
    if (code === 'EEXIST') return undefined;
    return { refusedIn: existing, exists, code };
  }
  try {
    rmdirSync(probe);
  } catch {
    // Another flower on the same task wrote into it meanwhile: it is theirs now.
  }
  return undefined;
}

/** Which directories a command writes: the run directory always, the workspace unless it only reads there. */
export interface WrittenDirectories {
  readonly workspace: string;
  readonly runDir: string;
  /** False for a command that only reads the workspace (`once` with read-only tools, `gc`). */
  readonly writesWorkspace: boolean;
}

/** What to do instead, for each directory a person named (or left to its default). */
export const WRITABLE_ADVICE = {
  workspace: 'Run flower in a directory you can write, or give one with -w DIR (it is created if missing).',
  'run directory': 'Give one you can write with -r DIR, or run flower in a directory you can write.',
} as const;

/** The one-line refusal for `problem` with `path` (the workspace or the run directory). */
export function unwritableMessage(
  what: 'workspace' | 'run directory',
  path: string,
  problem: WriteProblem,
  advice: string = WRITABLE_ADVICE[what],
): string {
  const reason = reasonOf(problem.code, problem.refusedIn);
  const failure = problem.exists
    ? `cannot write in the ${what} ${path}: ${reason}`
    : `cannot create the ${what} ${path}: ${reason}${reason.startsWith(problem.refusedIn) ? '' : ` in ${problem.refusedIn}`}`;
  return `${failure}. ${advice}`;
}

/**
 * Throws a UsageError naming the first directory the command cannot write: the workspace (when it
 * must be created, or is written), then the run directory.
 */
export function requireWritable(dirs: WrittenDirectories): void {
  const workspaceExists = isDirectory(dirs.workspace) === true;
  if (dirs.writesWorkspace || !workspaceExists) {
    const problem = writeProblem(dirs.workspace);
    if (problem !== undefined) throw new UsageError(unwritableMessage('workspace', dirs.workspace, problem));
  }
  const problem = writeProblem(dirs.runDir);
  if (problem !== undefined) throw new UsageError(unwritableMessage('run directory', dirs.runDir, problem));
}
