/**
 * The library's door to a task kept in PostgreSQL: parses the URL and loads the PostgreSQL
 * modules (and pg) only when called, so importing flower loads no database driver.
 */
import { type PostgresTarget, parseStoreTarget } from '../../config/store-url.js';
import type { TaskRef } from '../../store/shared/task-lock-types.js';
import type { SharedTask, SharedTaskOptions } from './shared-task.js';

/**
 * Opens the database, takes `task`'s lock there and pulls its run directory up to date; hand the
 * result to `new Runtime({ …, shared })` and `close()` it when done. Throws one line
 * (`StoreUrlError`, `PostgresStoreError`) or `TaskBusyError`.
 */
export async function openSharedTask(
  url: string | PostgresTarget,
  task: TaskRef,
  options: SharedTaskOptions = {},
): Promise<SharedTask> {
  const target = typeof url === 'string' ? parseStoreTarget(url) : url;
  if (target.kind !== 'postgres')
    throw new Error(`${target.path} is not a PostgreSQL URL: use postgres://user:password@host/database.`);
  const { SharedTask: Shared } = await import('./shared-task.js');
  return Shared.open(target, task, options);
}
