/**
 * Where a command that writes a task keeps it, and its lock: with a store URL (`--store`, else
 * `FLOWER_STORE_URL` from the environment or the `.env` chain) the task state is also kept in
 * PostgreSQL and the lock is taken there (runtime/shared/shared-task.ts); without one, the run
 * directory alone, under the file lock, exactly as before.
 *
 * Invariants:
 * - Checked before anything is written: a malformed URL, a rejected password, a missing database
 *   or a server that is down ends the command with one line naming what to fix and pointing at
 *   `flower doctor`; no run directory is created and nothing falls back to SQLite.
 * - A SQLite path as the store keeps today's behaviour (a library caller's choice; the CLI's
 *   SQLite store is always the run directory's own).
 * - pg is loaded only when a PostgreSQL URL is given.
 */

import pc from 'picocolors';
import { leaseSettingsFrom } from '../../config/lease-settings.js';
import { parseStoreTarget, type StoreTarget, StoreUrlError } from '../../config/store-url.js';
import { writeErr } from '../../output/sink.js';
import type { SharedTask } from '../../runtime/shared/shared-task.js';
import { lockTask } from '../../runtime/task-lock.js';
import type { GlobalOptions } from '../command-line/global-options.js';

const DOCTOR = 'flower doctor checks the connection';

/** The store URL in effect: the flag, else the environment (after the `.env` chain). */
export function storeUrlOf(global: Pick<GlobalOptions, 'store'>, env = process.env): string | undefined {
  const value = global.store ?? env.FLOWER_STORE_URL;
  return value === undefined || value.trim() === '' ? undefined : value;
}

/**
 * The store in effect, read (not opened): undefined without a store URL. A value that cannot be
 * used (malformed, a mistyped URL) throws one line naming it and what to fix, before anything is
 * written, so no command falls back to SQLite over a typo.
 */
export function storeTargetOf(
  global: Pick<GlobalOptions, 'store'>,
  env = process.env,
): StoreTarget | undefined {
  const url = storeUrlOf(global, env);
  if (url === undefined) return undefined;
  try {
    return parseStoreTarget(url);
  } catch (error) {
    if (error instanceof StoreUrlError) throw new Error(`${error.message.replace(/\.$/, '')}; ${DOCTOR}.`);
    throw error;
  }
}

/**
 * Takes the task's lock (PostgreSQL's with a store URL, else the file lock) and, with a store URL,
 * pulls the run directory up to date. The returned task is closed by the caller when done.
 */
export async function holdTask(global: GlobalOptions): Promise<SharedTask | undefined> {
  const target = storeTargetOf(global);
  if (target === undefined || target.kind === 'sqlite') {
    await lockTask(global);
    return undefined;
  }
  const [{ SharedTask }, { PostgresStoreError }] = await Promise.all([
    import('../../runtime/shared/shared-task.js'),
    import('../../store/postgres/errors.js'),
  ]);
  try {
    return await SharedTask.open(
      target,
      { workspace: global.workspace, runDir: global.runDir },
      {
        lease: leaseSettingsFrom(process.env),
        onWarning: (line) => writeErr(`${pc.yellow(`! ${line}`)}\n`),
        ...(global.verbose ? { onVerbose: (line: string) => writeErr(`${pc.dim(line)}\n`) } : {}),
      },
    );
  } catch (error) {
    if (error instanceof PostgresStoreError)
      throw new Error(`${error.message.replace(/\.$/, '')}; ${DOCTOR}.`);
    throw error;
  }
}
