/**
 * What `flower status` does (its help lives in `status.ts`): read the books of the task in the
 * workspace (with a store URL, from PostgreSQL too: task-view.ts) and print where it stands.
 * Read-only and lock-free; exit 1 with one line when there is no task here.
 */
import { writeOut } from '../../output/sink.js';
import { collectStatus, NoTaskError, statusLines } from '../../report/status.js';
import type { GlobalOptions } from '../command-line/global-options.js';
import { terminalWidth, wrap } from '../terminal/terminal-text.js';
import { openTaskView } from './task-view.js';

const STATUS_WIDTH = { min: 40, max: 100, fallback: 100 };

export async function runStatus(global: GlobalOptions): Promise<void> {
  const view = await openTaskView(global);
  try {
    // At most 100 columns, the terminal's width when narrower; 100 when piped.
    const width = terminalWidth(process.stdout.isTTY ? process.stdout.columns : undefined, STATUS_WIDTH);
    const lines = statusLines(await collectStatus(view.data), Date.now() / 1000, { width, wrap });
    writeOut(`${lines.join('\n')}\n`);
  } catch (error) {
    if (error instanceof NoTaskError) throw new Error(error.message);
    throw error;
  } finally {
    await view.close();
  }
}
