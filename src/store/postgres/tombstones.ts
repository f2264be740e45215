/**
 * The tombstones table family: the sessions `flower gc` dropped from the database, kept there so
 * that no machine sends them back (store/retention/tombstones.ts says what one is and why).
 *
 * Keyed like the sessions themselves, by project key and session id, not by task: every run
 * directory of a workspace (the task's, its asides') syncs all of the workspace's sessions, so a
 * drop concerns them all. The pull (runtime/shared/pull.ts) reads a workspace's tombstones,
 * leaves those sessions out of the sync, and writes them into the run directory's own file.
 *
 * Invariants:
 * - Rows only accumulate; `add` is idempotent, and of two tombstones for one session the earlier
 *   drop stays (the same rule as `mergeTombstones`).
 * - Failures are one line naming the server (password masked) and what to do (`storeFailure`).
 */
import type pg from 'pg';
import type { PostgresTarget } from '../../config/store-url.js';
import type { CollectableKind } from '../retention/reachability.js';
import type { Tombstone } from '../retention/tombstones.js';
import { storeFailure } from './errors.js';
import type { TableFamily } from './schema.js';

/**
 * Tombstones, version 1: one row per dropped main session. `dropped_at` and `last_write` are epoch
 * ms of the dropping machine's clock (for people reading them; no rule compares them across
 * machines). The primary key serves the one read, a workspace's tombstones.
 */
const tombstonesV1 = (s: string): string => `
CREATE TABLE ${s}.session_tombstones (
    project_key text COLLATE "C" NOT NULL,
    session_id  text COLLATE "C" NOT NULL,
    dropped_at  bigint NOT NULL,
    kind        text NOT NULL,
    last_write  bigint NOT NULL,
    host        text NOT NULL,
    PRIMARY KEY (project_key, session_id)
);
`;

export const TOMBSTONES: TableFamily = { name: 'tombstones', migrations: [tombstonesV1] };

interface TombstoneRow {
  project_key: string;
  session_id: string;
  dropped_at: string;
  kind: string;
  last_write: string;
  host: string;
}

export class PostgresTombstones {
  private readonly table: string;

  /** @internal Takes pg's pool: not in the published .d.ts (connection.ts says why). */
  constructor(
    private readonly pool: pg.Pool,
    private readonly target: PostgresTarget,
    private readonly ready: () => Promise<void>,
  ) {
    this.table = `"${target.schema}".session_tombstones`;
  }

  /** Records `tombstones` (one statement; what is there already stays, unless this drop is earlier). */
  async add(tombstones: readonly Tombstone[]): Promise<void> {
    if (tombstones.length === 0) return;
    const column = <K extends keyof Tombstone>(name: K) => tombstones.map((tombstone) => tombstone[name]);
    await this.run('record the dropped sessions', (db) =>
      db.query(
        `INSERT INTO ${this.table} AS t (project_key, session_id, dropped_at, kind, last_write, host)
         SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::text[], $5::bigint[], $6::text[])
         ON CONFLICT (project_key, session_id) DO UPDATE
            SET dropped_at = excluded.dropped_at, kind = excluded.kind,
                last_write = excluded.last_write, host = excluded.host
          WHERE excluded.dropped_at < t.dropped_at`,
        [
          column('projectKey'),
          column('sessionId'),
          column('droppedAt'),
          column('kind'),
          column('lastWrite'),
          column('host'),
        ],
      ),
    );
  }

  /** The tombstones of one workspace (its project key), oldest drop first. */
  async list(projectKey: string): Promise<Tombstone[]> {
    const { rows } = await this.run('read the dropped sessions', (db) =>
      db.query<TombstoneRow>(
        `SELECT project_key, session_id, dropped_at, kind, last_write, host FROM ${this.table}
          WHERE project_key = $1 ORDER BY dropped_at, session_id`,
        [projectKey],
      ),
    );
    return rows.map((row) => ({
      projectKey: row.project_key,
      sessionId: row.session_id,
      droppedAt: Number(row.dropped_at),
      kind: row.kind as CollectableKind,
      lastWrite: Number(row.last_write),
      host: row.host,
    }));
  }

  private async run<T>(action: string, body: (db: pg.Pool) => Promise<T>): Promise<T> {
    try {
      await this.ready();
      return await body(this.pool);
    } catch (error) {
      throw storeFailure(action, error, this.target);
    }
  }
}
