/**
 * The tombstones family on PostgreSQL: created with the schema, rows keyed by workspace and
 * session, an add that is idempotent and keeps the earliest drop, a list of one workspace's.
 */
import { describe, expect, it } from 'vitest';
import type { Tombstone } from '../../../../src/store/retention/tombstones.js';
import { sharedStoresPerTest, usePostgres } from '../../../support/postgres.js';

const postgres = usePostgres();
const { open, schemaName } = sharedStoresPerTest(postgres, 'stones');

const stone = (sessionId: string, droppedAt: number, projectKey = '-work', host = 'h1'): Tombstone => ({
  projectKey,
  sessionId,
  droppedAt,
  kind: 'archived',
  lastWrite: droppedAt - 86_400_000,
  host,
});

describe('PostgreSQL tombstones', () => {
  it("keep one row per session, the earliest drop, and list one workspace's in drop order", async () => {
    const store = await open();
    await store.tombstones.add([stone('b', 2_000), stone('a', 3_000), stone('a', 1, '-other')]);
    await store.tombstones.add([stone('a', 3_000)]);
    await store.tombstones.add([stone('b', 5_000, '-work', 'later'), stone('a', 1_500, '-work', 'earlier')]);
    expect(await store.tombstones.list('-work')).toEqual([
      stone('a', 1_500, '-work', 'earlier'),
      stone('b', 2_000),
    ]);
    expect(await store.tombstones.list('-other')).toEqual([stone('a', 1, '-other')]);
    expect(await store.tombstones.list('-none')).toEqual([]);
    await store.tombstones.add([]);
    const versions = await postgres.admin(
      `SELECT version FROM "${schemaName()}".schema_versions WHERE family = 'tombstones'`,
    );
    expect(versions.rows).toEqual([{ version: 1 }]);
  });

  it('fail with one line naming the store and what was being done', async () => {
    const store = await open();
    await postgres.admin(`DROP TABLE "${schemaName()}".session_tombstones`);
    await expect(store.tombstones.list('-work')).rejects.toThrow(
      /^PostgreSQL store .+: could not read the dropped sessions: .*session_tombstones.* does not exist/,
    );
    await expect(store.tombstones.add([stone('a', 1)])).rejects.toThrow(
      /could not record the dropped sessions/,
    );
  });
});
