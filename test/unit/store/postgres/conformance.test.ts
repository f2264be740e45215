/**
 * The 14 SessionStore contracts on the PostgreSQL backend: against the server named by
 * FLOWER_TEST_POSTGRES_URL (CI), else against PGlite over the wire (test/support/postgres.ts).
 * Each test gets a schema of its own, created by the store on first use and dropped afterwards.
 */
import { PostgresSessionStore } from '../../../../src/store/postgres/session-store.js';
import { type TestSchema, usePostgres } from '../../../support/postgres.js';
import { type ConformanceStore, describeSessionStoreConformance } from '../session-store-conformance.js';

const postgres = usePostgres();
const schemas = new Map<ConformanceStore, TestSchema>();

describeSessionStoreConformance(`PostgresSessionStore (${postgres.kind})`, {
  make: async () => {
    const schema = await postgres.freshSchema('conformance');
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
});
