/**
 * Replace a file so that readers see either the old or the new content, never a torn one.
 *
 * The new text goes to a temporary sibling (same directory, so the rename stays on one file system),
 * is flushed to disk, gets its final mode, and then replaces the target with one rename. The file is
 * created with the final mode from the start, so a secret is never readable by others, even briefly.
 */

import { randomBytes } from 'node:crypto';
import {
  closeSync,
  fchmodSync,
  fsyncSync,
  mkdirSync,
  openSync,
  renameSync,
  rmSync,
  writeSync,
} from 'node:fs';
import { basename, dirname, join } from 'node:path';

export interface AtomicWriteOptions {
  /** File mode of the result; 0o600 for anything holding a credential. */
  mode?: number;
  /** Mode for parent directories that have to be created. */
  directoryMode?: number;
}

export function writeFileAtomic(path: string, text: string, options: AtomicWriteOptions = {}): void {
  const mode = options.mode ?? 0o644;
  const directory = dirname(path);
  mkdirSync(directory, { recursive: true, mode: options.directoryMode ?? 0o755 });
  const temporary = join(
    directory,
    `.${basename(path)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`,
  );
  try {
    const descriptor = openSync(temporary, 'wx', mode);
    try {
      // `open` applies the umask; set the mode explicitly so the result is exactly what was asked.
      fchmodSync(descriptor, mode);
      writeSync(descriptor, text);
      fsyncSync(descriptor);
    } finally {
      closeSync(descriptor);
    }
    renameSync(temporary, path);
  } catch (error) {
    rmSync(temporary, { force: true });
    throw error;
  }
}
