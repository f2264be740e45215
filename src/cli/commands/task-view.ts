/**
 * The run data `flower status`, `report` and `log` read: the run directory alone, or with a store
 * URL (`--store`, else FLOWER_STORE_URL from the environment or the `.env` chain) the task's shared
 * record in PostgreSQL merged with it (report/shared-run-data.ts).
 *
 * Invariants:
 * - Read-only: no lock, no pull, nothing written anywhere (these commands work while a flower runs,
 *   and from a machine that only reports).
 * - A store URL that cannot be used ends the command with one line naming what to fix and pointing
 *   at `flower doctor`; it never falls back to a stale run directory without saying so.
 * - pg is loaded only when a PostgreSQL URL is given.
 */
import { loadEnvironment } from '../../config/env-chain.js';
import { openRunData, type RunData } from '../../report/run-data.js';
import type { GlobalOptions } from '../command-line/global-options.js';
import { storeTargetOf } from '../interaction/task-store.js';

const DOCTOR = 'flower doctor checks the connection';

export interface TaskView {
  data: RunData;
  /** Where the task's state was read from, for messages: the run directory, or it and the database. */
  where: string;
  close(): Promise<void>;
}

const oneLine = (error: Error) => new Error(`${error.message.replace(/\.$/, '')}; ${DOCTOR}.`);

export async function openTaskView(global: GlobalOptions): Promise<TaskView> {
  loadEnvironment();
  const location = { workspace: global.workspace, runDir: global.runDir };
  const target = storeTargetOf(global);
  if (target?.kind !== 'postgres') {
    const data = await openRunData(location);
    return { data, where: global.runDir, close: async () => data.close() };
  }
  const [{ openSharedStore }, { openSharedRunData }, { PostgresStoreError }] = await Promise.all([
    import('../../store/shared/shared-store.js'),
    import('../../report/shared-run-data.js'),
    import('../../store/postgres/errors.js'),
  ]);
  const postgres = target;
  const fail = (error: unknown) => (error instanceof PostgresStoreError ? oneLine(error) : error);
  const shared = await openSharedStore(postgres).catch((error) => {
    throw fail(error);
  });
  try {
    const data = await openSharedRunData(location, shared);
    return {
      data,
      where: `${global.runDir} and ${shared.display}`,
      close: async () => {
        data.close();
        await shared.close();
      },
    };
  } catch (error) {
    await shared.close();
    throw fail(error);
  }
}
