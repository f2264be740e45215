/**
 * The task-records table family: everything of a task that is not a transcript — manifest rows,
 * lineage steps and the wake counter, in-flight markers, endpoint history, spill files — kept in
 * PostgreSQL so that every machine working on the task shares one record of it, and the holder
 * of each task's lease (task-lease.ts in this room), with what fenced-out owners sent.
 *
 * A task is a workspace (absolute path) and its run directory (relative to the workspace when it
 * lies inside it, so `/work` + `runs` names the same task on every machine and container that
 * mounts the workspace at `/work`). Records are `(kind, key) → JSON value`; what a kind means is
 * the runtime's business (runtime/shared/), this module only keeps the merge rules:
 *
 * - `put`: last writer wins per (kind, key), judged by the writer's `at` (epoch ms): a change that
 *   arrives late (a retried push, the replay of a previous process's outbox) never overwrites a
 *   newer value another machine wrote meanwhile. Equal `at` is applied (a replay is idempotent).
 * - `put-once`: inserted when absent, else nothing (content-addressed or write-once records:
 *   spill files, booked rows, an endpoint's first answer).
 * - `delete`: removes the record unless it was written after the delete's `at`; `delete-kind`
 *   does so for every record of a kind (a start-over archives the lineage and its wakes).
 * - `wake`: the wake counter is a merged counter, not a max: every process that wakes the task
 *   adds one, exactly once per run id (the `wake` record of that run is inserted in the same
 *   transaction), and never ends below the count a writer saw (`atLeast`: a run directory that
 *   counted wakes before it had a database). A max would lose one of two wakes on two machines that
 *   both read 5 and wrote 6; a plain increment would count a replayed wake twice.
 *
 * Invariants:
 * - `write` applies a whole list of changes in one transaction (the task row is created on first
 *   write); concurrent writers of one task serialise on the task row, so no change of one is lost
 *   by another's. Nothing here deletes a record another process wrote, except by an explicit
 *   `delete` of that key or `deleteRecords`.
 * - Every record keeps the order it was first written in (`seq`), so a manifest rebuilt from the
 *   records lists its rows in the order they were first saved.
 * - Values are JSON text (not jsonb: jsonb rejects `\u0000`, which tool output can hold).
 * - Failures are one line naming the server (password masked) and what to do (`storeFailure`).
 */

import { isAbsolute, relative, resolve } from 'node:path';
import type pg from 'pg';
import type { PostgresTarget } from '../../config/store-url.js';
import { storeFailure } from './errors.js';
import { fenceFunctionSql, leaseTablesSql } from './lease-tables.js';
import type { TableFamily } from './schema.js';
import type { Fence } from './task-lease.js';

/**
 * Task records, version 1.
 * - `tasks`: one row per (workspace, run_dir); `updated_at` moves with every write, for `list`.
 * - `task_records`: the records; primary key (task_id, kind, key), `seq` for first-write order.
 * - `task_holders`: who holds each task's advisory lock (keyed by the lock's key), written by the
 *   holder right after it took the lock, so a refused process can name it.
 */
const taskRecordsV1 = (s: string): string => `
CREATE TABLE ${s}.tasks (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    workspace  text COLLATE "C" NOT NULL,
    run_dir    text COLLATE "C" NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT tasks_key UNIQUE (workspace, run_dir)
);
CREATE TABLE ${s}.task_records (
    task_id bigint NOT NULL REFERENCES ${s}.tasks (id) ON DELETE CASCADE,
    kind    text COLLATE "C" NOT NULL,
    key     text COLLATE "C" NOT NULL,
    seq     bigint GENERATED ALWAYS AS IDENTITY,
    at      bigint NOT NULL,
    value   text NOT NULL,
    PRIMARY KEY (task_id, kind, key)
);
CREATE TABLE ${s}.task_holders (
    lock_key    bigint PRIMARY KEY,
    workspace   text NOT NULL,
    run_dir     text NOT NULL,
    pid         integer NOT NULL,
    host        text NOT NULL,
    started_at  timestamptz NOT NULL,
    backend_pid integer NOT NULL
);
`;

/**
 * Task records, version 2: ownership is a fenced lease (task-lease.ts), not an advisory lock, so
 * `task_holders` goes and the lease tables come. What a fenced-out owner still sent is kept, never
 * merged: `fenced_writes` (record changes, as sent) and `fenced_entries` (transcript entries),
 * each with the epoch it was made under, for the report to show that work and its spend.
 * `session_append_fenced` is the session store's append behind the fence, in one statement.
 */
const taskRecordsV2 = (s: string): string => `
DROP TABLE ${s}.task_holders;
${leaseTablesSql(s)}
CREATE TABLE ${s}.fenced_writes (
    id        bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    workspace text COLLATE "C" NOT NULL,
    run_dir   text COLLATE "C" NOT NULL,
    epoch     bigint NOT NULL,
    origin    bigint,
    kept_at   timestamptz NOT NULL DEFAULT now(),
    change    text NOT NULL
);
CREATE INDEX fenced_writes_task ON ${s}.fenced_writes (workspace, run_dir);
CREATE TABLE ${s}.fenced_entries (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    workspace   text COLLATE "C" NOT NULL,
    run_dir     text COLLATE "C" NOT NULL,
    epoch       bigint NOT NULL,
    project_key text COLLATE "C" NOT NULL,
    session_id  text COLLATE "C" NOT NULL,
    subpath     text COLLATE "C" NOT NULL,
    uuid        text COLLATE "C",
    entry       text NOT NULL,
    kept_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX fenced_entries_task ON ${s}.fenced_entries (workspace, run_dir);
CREATE UNIQUE INDEX fenced_entries_uuid ON ${s}.fenced_entries (workspace, run_dir, project_key, session_id, subpath, uuid)
    WHERE uuid IS NOT NULL;

-- session_append behind the fence: the batch goes to the transcript while p_epoch owns the task;
-- else its entries that the transcript does not hold already go to fenced_entries, and the
-- result is {NULL, how many were kept}. One statement, so the check and the write share a
-- transaction and the lease row's share lock.
CREATE FUNCTION ${s}.session_append_fenced(
    p_workspace text, p_run_dir text, p_epoch bigint, p_instance text,
    p_project text, p_session text, p_subpath text, p_uuids text[], p_entries text, p_mtime bigint
) RETURNS bigint[] LANGUAGE plpgsql AS $fenced$
DECLARE
    v_kept bigint;
BEGIN
    IF ${s}.task_fence_ok(p_workspace, p_run_dir, p_epoch, NULL, p_instance) THEN
        RETURN ${s}.session_append(p_project, p_session, p_subpath, p_uuids, p_entries, p_mtime);
    END IF;
    WITH kept AS (
        INSERT INTO ${s}.fenced_entries (workspace, run_dir, epoch, project_key, session_id, subpath, uuid, entry)
        SELECT p_workspace, p_run_dir, p_epoch, p_project, p_session, p_subpath, batch.uuid, batch.entry
          FROM unnest(p_uuids, string_to_array(p_entries, E'\\n')) AS batch(uuid, entry)
         WHERE batch.uuid IS NULL OR NOT EXISTS (
               SELECT 1 FROM ${s}.session_entries e
                 JOIN ${s}.session_transcripts t ON t.id = e.transcript_id
                WHERE t.project_key = p_project AND t.session_id = p_session AND t.subpath = p_subpath
                  AND e.uuid = batch.uuid)
        ON CONFLICT (workspace, run_dir, project_key, session_id, subpath, uuid) WHERE uuid IS NOT NULL DO NOTHING
        RETURNING 1
    )
    SELECT count(*) INTO v_kept FROM kept;
    RETURN ARRAY[NULL, v_kept];
END
$fenced$;
`;

/**
 * Task records, version 3: the fence's lease lock is keyed by the schema too (lease-tables.ts),
 * so two stores in one database no longer queue each other's grants and writes.
 */
const taskRecordsV3 = (s: string): string => fenceFunctionSql(s, 'CREATE OR REPLACE');

export const TASK_RECORDS: TableFamily = {
  name: 'task_records',
  migrations: [taskRecordsV1, taskRecordsV2, taskRecordsV3],
};

/** Which task: the workspace's absolute path and its run directory. */
export interface TaskIdentity {
  readonly workspace: string;
  readonly runDir: string;
}

/** A task as the table names it: run_dir relative to the workspace when inside it. */
export interface TaskName {
  readonly workspace: string;
  readonly runDir: string;
}

/** The stable name of a task, the same on every machine that mounts the workspace at one path. */
export function taskNameOf(task: TaskIdentity): TaskName {
  const workspace = resolve(task.workspace);
  const runDir = resolve(workspace, task.runDir);
  const inside = relative(workspace, runDir);
  return {
    workspace,
    runDir: inside !== '' && !inside.startsWith('..') && !isAbsolute(inside) ? inside : runDir,
  };
}

export type TaskRecordKind =
  /** key: run id; value: that run's manifest rows (the process replaces them whole on each save). */
  | 'manifest-run'
  /** key: `<run>/<session>/<started_at>`; value: one row booked for a killed process. */
  | 'manifest-added'
  /** key: step name; value: `{ sessionId }`. */
  | 'lineage-step'
  /** key: ''; value: the wake count (see `wake` changes). */
  | 'woke'
  /** key: run id; value: `{ woke }`, the count that run's wake produced. */
  | 'wake'
  /** key: session id; value: the marker as written in runs/in-flight/. */
  | 'in-flight'
  /** key: `host:port`; value: `{ firstAnswer }`. */
  | 'endpoint'
  /** key: spill file name; value: the file's text. */
  | 'spill';

export interface TaskRecord {
  kind: TaskRecordKind;
  key: string;
  /** The parsed JSON value; undefined when read with `keysOnly`. */
  value: unknown;
  /** The writer's clock when it was last written (epoch ms). */
  at: number;
  /** Order of first write. */
  seq: number;
}

export type TaskRecordChange =
  | { op: 'put'; kind: TaskRecordKind; key: string; value: unknown; at: number }
  | { op: 'put-once'; kind: TaskRecordKind; key: string; value: unknown; at: number }
  | { op: 'delete'; kind: TaskRecordKind; key: string; at: number }
  /** Every record of a kind written at or before `at` (a start-over archives the lineage). */
  | { op: 'delete-kind'; kind: TaskRecordKind; at: number }
  | { op: 'wake'; run: string; atLeast: number; at: number };

/** `write`'s outcome: applied, or refused by the fence and kept aside. */
export type WriteOutcome = 'applied' | 'fenced';

/** Work a fenced-out owner sent after it lost the task (kept, never merged). */
export interface FencedWork {
  changes: Array<{ epoch: number; keptAt: Date; change: TaskRecordChange }>;
  entries: Array<{
    epoch: number;
    sessionId: string;
    subpath: string;
    uuid: string | null;
    entry: Record<string, unknown>;
  }>;
}

export interface StoredTask {
  id: number;
  workspace: string;
  runDir: string;
  createdAt: Date;
  updatedAt: Date;
}

export interface ReadOptions {
  /** Only these kinds (default: all). */
  kinds?: readonly TaskRecordKind[];
  /** Leave values out (for spill files: which exist, not their text). */
  keysOnly?: boolean;
}

/** What a task's records say, and whether the task is known at all. */
export interface TaskRecords {
  task: StoredTask | undefined;
  records: TaskRecord[];
}

type Queryable = Pick<pg.Pool, 'query'> | Pick<pg.PoolClient, 'query'>;

interface TaskRow {
  id: string;
  workspace: string;
  run_dir: string;
  created_at: Date;
  updated_at: Date;
}

const taskOf = (row: TaskRow): StoredTask => ({
  id: Number(row.id),
  workspace: row.workspace,
  runDir: row.run_dir,
  createdAt: row.created_at,
  updatedAt: row.updated_at,
});

/**
 * The typed door to the family. It shares a pool with the session store (`PostgresSessionStore.pool`
 * or its own); `ready` must resolve (schema created) before the first call.
 */
export class PostgresTaskRecords {
  private readonly tables: {
    tasks: string;
    records: string;
    fenced: string;
    fencedEntries: string;
    fenceOk: string;
  };

  /** @internal Takes pg's pool: not in the published .d.ts (connection.ts says why). */
  constructor(
    private readonly pool: pg.Pool,
    private readonly target: PostgresTarget,
    private readonly ready: () => Promise<void>,
  ) {
    const schema = `"${target.schema}"`;
    this.tables = {
      tasks: `${schema}.tasks`,
      records: `${schema}.task_records`,
      fenced: `${schema}.fenced_writes`,
      fencedEntries: `${schema}.fenced_entries`,
      fenceOk: `${schema}.task_fence_ok`,
    };
  }

  /** Every task the database knows, newest write first. */
  async listTasks(): Promise<StoredTask[]> {
    return this.run('list tasks', async (db) => {
      const { rows } = await db.query<TaskRow>(
        `SELECT id, workspace, run_dir, created_at, updated_at FROM ${this.tables.tasks} ORDER BY updated_at DESC`,
      );
      return rows.map(taskOf);
    });
  }

  /** The task row, or undefined when nothing was ever written for it. */
  async findTask(task: TaskIdentity): Promise<StoredTask | undefined> {
    const name = taskNameOf(task);
    return this.run('look up a task', async (db) => {
      const { rows } = await db.query<TaskRow>(
        `SELECT id, workspace, run_dir, created_at, updated_at FROM ${this.tables.tasks}
          WHERE workspace = $1 AND run_dir = $2`,
        [name.workspace, name.runDir],
      );
      return rows[0] === undefined ? undefined : taskOf(rows[0]);
    });
  }

  /** All records of a task (in first-write order), or of some kinds. */
  async read(task: TaskIdentity, options: ReadOptions = {}): Promise<TaskRecords> {
    const found = await this.findTask(task);
    if (found === undefined) return { task: undefined, records: [] };
    return this.run('read task records', async (db) => {
      const { rows } = await db.query<{
        kind: TaskRecordKind;
        key: string;
        at: string;
        seq: string;
        value?: string;
      }>(
        `SELECT kind, key, at, seq${options.keysOnly ? '' : ', value'} FROM ${this.tables.records}
          WHERE task_id = $1 AND ($2::text[] IS NULL OR kind = ANY($2::text[])) ORDER BY seq`,
        [found.id, options.kinds ?? null],
      );
      return {
        task: found,
        records: rows.map((row) => ({
          kind: row.kind,
          key: row.key,
          at: Number(row.at),
          seq: Number(row.seq),
          value: row.value === undefined ? undefined : JSON.parse(row.value),
        })),
      };
    });
  }

  /** The values of some keys of one kind (spill files' text, say). */
  async readValues(
    task: TaskIdentity,
    kind: TaskRecordKind,
    keys: readonly string[],
  ): Promise<Map<string, unknown>> {
    const found = keys.length === 0 ? undefined : await this.findTask(task);
    if (found === undefined) return new Map();
    return this.run('read task records', async (db) => {
      const { rows } = await db.query<{ key: string; value: string }>(
        `SELECT key, value FROM ${this.tables.records} WHERE task_id = $1 AND kind = $2 AND key = ANY($3::text[])`,
        [found.id, kind, keys],
      );
      return new Map(rows.map((row) => [row.key, JSON.parse(row.value)]));
    });
  }

  /**
   * Applies `changes` in order, in one transaction (see the merge rules above). With a `fence`,
   * only while its epoch owns the task (task-lease.ts): otherwise nothing is applied, the changes
   * are kept in `fenced_writes`, and the result says `fenced`.
   */
  async write(
    task: TaskIdentity,
    changes: readonly TaskRecordChange[],
    fence?: Fence,
  ): Promise<WriteOutcome> {
    if (changes.length === 0) return 'applied';
    const name = taskNameOf(task);
    return this.transaction('write task records', async (db) => {
      if (fence !== undefined) {
        const { rows } = await db.query<{ ok: boolean }>(
          `SELECT ${this.tables.fenceOk}($1, $2, $3, $4, $5) AS ok`,
          [name.workspace, name.runDir, fence.epoch, fence.origin ?? null, fence.instance],
        );
        if (rows[0]?.ok !== true) {
          await db.query(
            `INSERT INTO ${this.tables.fenced} (workspace, run_dir, epoch, origin, change)
             SELECT $1, $2, $3, $4, change FROM unnest($5::text[]) AS change`,
            [
              name.workspace,
              name.runDir,
              fence.epoch,
              fence.origin ?? null,
              changes.map((change) => JSON.stringify(change)),
            ],
          );
          return 'fenced';
        }
      }
      // Creating-or-touching the task row also serialises writers of this task.
      const { rows } = await db.query<{ id: string }>(
        `INSERT INTO ${this.tables.tasks} AS t (workspace, run_dir) VALUES ($1, $2)
         ON CONFLICT ON CONSTRAINT tasks_key DO UPDATE SET updated_at = now()
         RETURNING id`,
        [name.workspace, name.runDir],
      );
      const id = rows[0]?.id;
      for (const change of changes) await this.apply(db, id as string, change);
      return 'applied' as const;
    });
  }

  /**
   * What fenced-out owners of a task sent and had kept aside: record changes and transcript
   * entries, oldest first (the report shows them, with their spend).
   */
  async readFenced(task: TaskIdentity): Promise<FencedWork> {
    const name = taskNameOf(task);
    return this.run('read fenced-out work', async (db) => {
      const writes = await db.query<{ epoch: string; kept_at: Date; change: string }>(
        `SELECT epoch::text, kept_at, change FROM ${this.tables.fenced}
          WHERE workspace = $1 AND run_dir = $2 ORDER BY id`,
        [name.workspace, name.runDir],
      );
      const entries = await db.query<{
        epoch: string;
        session_id: string;
        subpath: string;
        uuid: string | null;
        entry: string;
      }>(
        `SELECT epoch::text, session_id, subpath, uuid, entry FROM ${this.tables.fencedEntries}
          WHERE workspace = $1 AND run_dir = $2 ORDER BY id`,
        [name.workspace, name.runDir],
      );
      return {
        changes: writes.rows.map((row) => ({
          epoch: Number(row.epoch),
          keptAt: row.kept_at,
          change: JSON.parse(row.change) as TaskRecordChange,
        })),
        entries: entries.rows.map((row) => ({
          epoch: Number(row.epoch),
          sessionId: row.session_id,
          subpath: row.subpath,
          uuid: row.uuid,
          entry: JSON.parse(row.entry) as Record<string, unknown>,
        })),
      };
    });
  }

  private async apply(db: Queryable, id: string, change: TaskRecordChange): Promise<void> {
    const records = this.tables.records;
    switch (change.op) {
      case 'put':
        await db.query(
          `INSERT INTO ${records} AS r (task_id, kind, key, at, value) VALUES ($1, $2, $3, $4, $5)
           ON CONFLICT (task_id, kind, key) DO UPDATE SET at = excluded.at, value = excluded.value
           WHERE r.at <= excluded.at`,
          [id, change.kind, change.key, change.at, JSON.stringify(change.value)],
        );
        return;
      case 'put-once':
        await db.query(
          `INSERT INTO ${records} (task_id, kind, key, at, value) VALUES ($1, $2, $3, $4, $5)
           ON CONFLICT (task_id, kind, key) DO NOTHING`,
          [id, change.kind, change.key, change.at, JSON.stringify(change.value)],
        );
        return;
      case 'delete':
        await db.query(`DELETE FROM ${records} WHERE task_id = $1 AND kind = $2 AND key = $3 AND at <= $4`, [
          id,
          change.kind,
          change.key,
          change.at,
        ]);
        return;
      case 'delete-kind':
        await db.query(`DELETE FROM ${records} WHERE task_id = $1 AND kind = $2 AND at <= $3`, [
          id,
          change.kind,
          change.at,
        ]);
        return;
      case 'wake': {
        const woke = await db.query<{ value: string }>(
          `SELECT value FROM ${records} WHERE task_id = $1 AND kind = 'woke' AND key = '' FOR UPDATE`,
          [id],
        );
        const stored = woke.rows[0] === undefined ? 0 : Number(JSON.parse(woke.rows[0].value)) || 0;
        const claimed =
          change.run === ''
            ? { rowCount: 0 }
            : await db.query(
                `INSERT INTO ${records} (task_id, kind, key, at, value) VALUES ($1, 'wake', $2, $3, $4)
                 ON CONFLICT (task_id, kind, key) DO NOTHING`,
                [id, change.run, change.at, JSON.stringify({ woke: change.atLeast })],
              );
        const next = Math.max(stored + (claimed.rowCount === 1 ? 1 : 0), change.atLeast);
        if (next === stored && woke.rows[0] !== undefined) return;
        await db.query(
          `INSERT INTO ${records} AS r (task_id, kind, key, at, value) VALUES ($1, 'woke', '', $2, $3)
           ON CONFLICT (task_id, kind, key) DO UPDATE SET at = GREATEST(r.at, excluded.at), value = excluded.value`,
          [id, change.at, JSON.stringify(next)],
        );
        return;
      }
    }
  }

  /** Removes a task's records of `kinds` (all kinds: the task row too). Returns how many records went. */
  async deleteRecords(task: TaskIdentity, kinds?: readonly TaskRecordKind[]): Promise<number> {
    const found = await this.findTask(task);
    if (found === undefined) return 0;
    return this.transaction('delete task records', async (db) => {
      const { rowCount } = await db.query(
        `DELETE FROM ${this.tables.records} WHERE task_id = $1 AND ($2::text[] IS NULL OR kind = ANY($2::text[]))`,
        [found.id, kinds ?? null],
      );
      if (kinds === undefined) await db.query(`DELETE FROM ${this.tables.tasks} WHERE id = $1`, [found.id]);
      return rowCount ?? 0;
    });
  }

  private async run<T>(action: string, body: (db: Queryable) => Promise<T>): Promise<T> {
    try {
      await this.ready();
      return await body(this.pool);
    } catch (error) {
      throw storeFailure(action, error, this.target);
    }
  }

  private async transaction<T>(action: string, body: (db: Queryable) => Promise<T>): Promise<T> {
    let client: pg.PoolClient;
    try {
      await this.ready();
      client = await this.pool.connect();
    } catch (error) {
      throw storeFailure(action, error, this.target);
    }
    let broken = false;
    try {
      await client.query('BEGIN');
      const value = await body(client);
      await client.query('COMMIT');
      return value;
    } catch (error) {
      await client.query('ROLLBACK').catch(() => {
        broken = true;
      });
      throw storeFailure(action, error, this.target);
    } finally {
      client.release(broken);
    }
  }
}
