/**
 * The SQL of the lease tables and of the fence (task-lease.ts explains them); run by the
 * task-records family's version 2 (task-records.ts). A module of its own so that the two can
 * share it without importing each other.
 */

/**
 * The lease tables and the fence, as SQL (task-records.ts, version 2, runs it).
 * - `task_leases`: one row per task key (see the module header). `epoch` 0 is "never held".
 * - `task_lease_epochs`: every grant, with the run directory instance that took it.
 * - `task_fence_ok(workspace, run_dir, epoch, origin, instance)`: true when `epoch` is the current
 *   one and, for a change made under an older `origin` (an outbox replay), every epoch between
 *   the two was taken by the same run directory instance (no other copy of the task worked in
 *   between). Takes the task's lease lock, shared, until the caller's transaction ends.
 */
/** The first key of the two-key advisory lock that orders a task's writes against its grants. */
export const LEASE_LOCK_CLASS = 0x666c6c73; // 'flls'

/**
 * The task's lease lock as SQL: shared by writers of one epoch, exclusive for a grant. Advisory
 * locks belong to the whole database, so the key names the schema (`schema` is its quoted name,
 * validated by store-url.ts): two stores in one database holding a task of the same path must
 * not wait on each other (they did, until a lock timeout, before task records version 3).
 */
export const leaseLock = (schema: string, workspace: string, runDir: string, shared: boolean): string =>
  `pg_advisory_xact_lock${shared ? '_shared' : ''}(${LEASE_LOCK_CLASS}, hashtext('${schema}' || E'\\n' || ${workspace} || E'\\n' || ${runDir}))`;

export const leaseTablesSql = (s: string): string => `
CREATE TABLE ${s}.task_leases (
    workspace  text COLLATE "C" NOT NULL,
    run_dir    text COLLATE "C" NOT NULL,
    epoch      bigint NOT NULL,
    token      text NOT NULL,
    pid        integer NOT NULL,
    host       text NOT NULL,
    boot_id    text,
    proc_start text,
    started_at timestamptz NOT NULL,
    expires_at timestamptz NOT NULL,
    released   boolean NOT NULL,
    PRIMARY KEY (workspace, run_dir)
);
CREATE TABLE ${s}.task_lease_epochs (
    workspace text COLLATE "C" NOT NULL,
    run_dir   text COLLATE "C" NOT NULL,
    epoch     bigint NOT NULL,
    instance  text NOT NULL,
    host      text NOT NULL,
    pid       integer NOT NULL,
    taken_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (workspace, run_dir, epoch)
);
${fenceFunctionSql(s, 'CREATE')}`;

/**
 * `task_fence_ok` (see `leaseTablesSql`); `CREATE OR REPLACE` in task records version 3, which
 * gave its lock the schema-scoped key.
 */
export const fenceFunctionSql = (s: string, verb: 'CREATE' | 'CREATE OR REPLACE'): string => `
${verb} FUNCTION ${s}.task_fence_ok(
    p_workspace text, p_run_dir text, p_epoch bigint, p_origin bigint, p_instance text
) RETURNS boolean LANGUAGE plpgsql AS $fence$
DECLARE
    v_epoch bigint;
BEGIN
    -- Shared with every other writer of the task, exclusive with a grant (task-lease.ts), in
    -- memory only: a row lock here would write the lease row's tuple on every append.
    IF ${leaseLock(s, 'p_workspace', 'p_run_dir', true)} IS NULL THEN
        RETURN false;  -- never: the lock returns void, which is not NULL
    END IF;
    -- Its own statement, so its snapshot is taken after the lock: a grant that committed first is seen.
    SELECT epoch INTO v_epoch FROM ${s}.task_leases
     WHERE workspace = p_workspace AND run_dir = p_run_dir;
    IF v_epoch IS NULL OR v_epoch <> p_epoch THEN
        RETURN false;
    END IF;
    IF p_origin IS NULL OR p_origin >= p_epoch THEN
        RETURN true;
    END IF;
    RETURN NOT EXISTS (
        SELECT 1 FROM ${s}.task_lease_epochs
         WHERE workspace = p_workspace AND run_dir = p_run_dir
           AND epoch > p_origin AND epoch < p_epoch AND instance <> p_instance);
END
$fence$;
`;
