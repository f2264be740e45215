/**
 * The 14 SessionStore contracts on the PostgreSQL backend, bare and under the rewriting layer:
 * against the server named by FLOWER_TEST_POSTGRES_URL (CI), else against PGlite over the wire
 * (test/support/postgres.ts). Each test gets a schema of its own, created by the store on first
 * use and dropped afterwards. Then the session-key rules it shares with the SQLite backend
 * (session-key-rules.ts).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { PostgresSessionStore } from '../../../../src/store/postgres/session-store.js';
import { RewritingSessionStore } from '../../../../src/store/rewriting-store.js';
import { type TestSchema, usePostgres } from '../../../support/postgres.js';
import { describeSessionKeyRules } from '../session-key-rules.js';
import { type ConformanceStore, describeSessionStoreConformance } from '../session-store-conformance.js';

const postgres = usePostgres();
const schemas = new Map<ConformanceStore, TestSchema>();

const workspaces = new Map<ConformanceStore, string>();

for (const layered of [false, true]) {
  describeSessionStoreConformance(
    layered
      ? `RewritingSessionStore over PostgresSessionStore (${postgres.kind})`
      : `PostgresSessionStore (${postgres.kind})`,
    {
      make: async () => {
        const schema = await postgres.freshSchema('conformance');
        const backend = new PostgresSessionStore(schema.url);
        await backend.open();
        let store: ConformanceStore = backend;
        if (layered) {
          const workspace = mkdtempSync(path.join(tmpdir(), 'flower-pg-layer-'));
          store = new RewritingSessionStore(backend, { workspace, trim: { enabled: true } });
          workspaces.set(store, workspace);
        }
        schemas.set(store, schema);
        return store;
      },
      dispose: async (store) => {
        await (store as PostgresSessionStore | RewritingSessionStore).close();
        await schemas.get(store)?.drop();
        schemas.delete(store);
        const workspace = workspaces.get(store);
        if (workspace !== undefined) rmSync(workspace, { recursive: true, force: true });
        workspaces.delete(store);
      },
    },
  );
}

describeSessionKeyRules(`PostgresSessionStore (${postgres.kind})`, {
  make: async () => {
    const schema = await postgres.freshSchema('keys');
    const store = new PostgresSessionStore(schema.url);
    await store.open();
    schemas.set(store, schema);
    return store;
  },
  dispose: async (store) => {
    await (store as PostgresSessionStore).close();
    await schemas.get(store)?.drop();
    schemas.delete(store);
  },
  // A transcript under `subpath`, written by the schema's own append as a version without the key rules did.
  plant: async (store, subpath, entry) => {
    const schema = schemas.get(store)?.schema as string;
    await postgres.admin(`SELECT "${schema}".session_append($1, $2, $3, $4::text[], $5, $6)`, [
      'proj-a',
      'session-1',
      subpath,
      [entry.uuid ?? null],
      JSON.stringify(entry),
      Date.now(),
    ]);
  },
});
