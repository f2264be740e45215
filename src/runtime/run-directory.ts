/**
 * The run directory (`runs/`): sessions.db, manifest.json, lineage.json, their locks, and `aside/`.
 *
 * Invariants:
 * - Private: the directory is 0700 and flower's files in it 0600 (see `config/private-files.ts`);
 *   files left 0644 by older versions are tightened when a runtime opens the directory.
 * - Never committed by accident: a `.gitignore` that ignores everything (itself included) is put
 *   in the directory when it is missing. The run directory usually sits inside the project's git
 *   checkout, and `git add .` would otherwise publish every transcript, including every file a
 *   tool read. An existing `.gitignore` is left as the user wrote it.
 * - The workbench (`.flower/`) is not touched here: it holds what the user wants to see and share
 *   (notes, scripts, artifacts) and keeps the user's umask.
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { ensurePrivateDirectory, PRIVATE_FILE_MODE, restrictFile } from '../config/private-files.js';

export const RUN_DIRECTORY_GITIGNORE = '.gitignore';

const GITIGNORE_TEXT =
  '# Written by flower: this directory holds full agent transcripts (every file a tool read),\n' +
  '# cost records and locks. Keep it out of version control.\n' +
  '*\n';

/** Files of earlier versions that may still be world-readable. */
const KNOWN_FILES = [
  'manifest.json',
  'lineage.json',
  'sessions.db',
  'sessions.db-wal',
  'sessions.db-shm',
  'sessions.db.verified',
  'endpoints.json',
  'task.lock',
];

/**
 * Creates or tightens `runDir` as described above. Never throws for the `.gitignore` or the modes.
 * A run directory that is the workspace itself, or holds it (`-r .`), is only created: making the
 * project private and ignoring all of it in git is not flower's call.
 */
export function prepareRunDirectory(runDir: string, workspace?: string): void {
  const own = workspace === undefined || !isWithin(resolve(workspace), resolve(runDir));
  if (!own) {
    mkdirSync(runDir, { recursive: true });
    return;
  }
  ensurePrivateDirectory(runDir);
  const gitignore = join(runDir, RUN_DIRECTORY_GITIGNORE);
  if (!existsSync(gitignore)) {
    try {
      writeFileSync(gitignore, GITIGNORE_TEXT, { mode: PRIVATE_FILE_MODE, flag: 'wx' });
    } catch {
      // Written by a parallel process meanwhile, or a read-only directory: nothing to protect here.
    }
  }
  for (const name of KNOWN_FILES) restrictFile(join(runDir, name));
}

/** Whether `path` is `directory` or inside it. */
function isWithin(path: string, directory: string): boolean {
  const rest = relative(directory, path);
  return rest === '' || (!rest.startsWith('..') && !rest.startsWith('/'));
}
