/**
 * What `flower status` does (its help lives in `status.ts`): read the books of the task in the
 * workspace and print where it stands. Read-only and lock-free; exit 1 with one line when there is
 * no task here.
 */
import { openRunData } from '../../report/run-data.js';
import { NoTaskError, statusLines, taskStatus } from '../../report/status.js';
import type { GlobalOptions } from '../command-line/global-options.js';

export async function runStatus(global: GlobalOptions): Promise<void> {
  const data = await openRunData({ workspace: global.workspace, runDir: global.runDir });
  try {
    const lines = statusLines(taskStatus(data));
    process.stdout.write(`${lines.join('\n')}\n`);
  } catch (error) {
    if (error instanceof NoTaskError) throw new Error(error.message);
    throw error;
  } finally {
    data.close();
  }
}
