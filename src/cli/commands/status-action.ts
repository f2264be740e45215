/**
 * What `flower status` does (its help lives in `status.ts`): read the books of the task in the
 * workspace (with a store URL, from PostgreSQL too: task-view.ts) and print where it stands.
 * Read-only and lock-free; exit 1 with one line when there is no task here.
 */
import { writeOut } from '../../output/sink.js';
import { NoTaskError, statusLines, taskStatus } from '../../report/status.js';
import type { GlobalOptions } from '../command-line/global-options.js';
import { openTaskView } from './task-view.js';

export async function runStatus(global: GlobalOptions): Promise<void> {
  const view = await openTaskView(global);
  try {
    const lines = statusLines(taskStatus(view.data));
    writeOut(`${lines.join('\n')}\n`);
  } catch (error) {
    if (error instanceof NoTaskError) throw new Error(error.message);
    throw error;
  } finally {
    await view.close();
  }
}
