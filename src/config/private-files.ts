/**
 * Files only their owner may read: the run directory (`runs/`) holds every transcript, and with it
 * every file a tool read and every value an agent printed, so it is created 0700 and its files 0600.
 * The agent binary keeps its own transcripts at 0600 for the same reason.
 *
 * Invariants:
 * - Modes are set explicitly after creation (`open` and `mkdir` apply the umask, which may be looser
 *   or stricter than wanted), so the result does not depend on the caller's umask.
 * - Tightening an existing path never fails the caller: a file someone else owns, or a file system
 *   without modes, keeps what it has. Privacy is a default, not a precondition for working.
 */
import { chmodSync, closeSync, mkdirSync, openSync, statSync } from 'node:fs';

/** Owner only: read, write, enter. */
export const PRIVATE_DIRECTORY_MODE = 0o700;
/** Owner only: read and write. */
export const PRIVATE_FILE_MODE = 0o600;

/** Sets `mode` when the path exists with a different one; quiet when it cannot (not ours, gone). */
function tighten(path: string, mode: number): void {
  try {
    if ((statSync(path).mode & 0o777) !== mode) chmodSync(path, mode);
  } catch {
    // Missing, or not ours to change: leave it.
  }
}

/** Creates `directory` (and missing parents) owner-only, and tightens it if it already existed. */
export function ensurePrivateDirectory(directory: string): void {
  mkdirSync(directory, { recursive: true, mode: PRIVATE_DIRECTORY_MODE });
  tighten(directory, PRIVATE_DIRECTORY_MODE);
}

/** Makes an existing file owner-only (files written by older versions were 0644). */
export function restrictFile(path: string): void {
  tighten(path, PRIVATE_FILE_MODE);
}

/**
 * Creates `path` empty and owner-only unless it exists, then makes sure it is owner-only. For files
 * another library creates with its own default mode (SQLite copies the database's mode to its
 * `-wal` and `-shm` files, so a private database gives private companions).
 */
export function ensurePrivateFile(path: string): void {
  try {
    closeSync(openSync(path, 'a', PRIVATE_FILE_MODE));
  } catch {
    // The caller opens it next and reports the real problem (a directory, no permission).
    return;
  }
  restrictFile(path);
}
