/**
 * The 14 SessionStore contracts on the PostgreSQL backend, bare and under the rewriting layer:
 * against the server named by FLOWER_TEST_POSTGRES_URL (CI), else against PGlite over the wire
 * (test/support/postgres.ts). Each test gets a schema of its own, created by the store on first
 * use and dropped afterwards.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { PostgresSessionStore } from '../../../../src/store/postgres/session-store.js';
import { RewritingSessionStore } from '../../../../src/store/rewriting-store.js';
import { type TestSchema, usePostgres } from '../../../support/postgres.js';
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
