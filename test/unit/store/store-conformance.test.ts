/**
 * The SessionStore conformance suite against every store flower hands the SDK: the SQLite backend
 * bare, the rewriting layer over it (with trim on, as `go` runs it), and the rewriting layer over
 * the SDK's own InMemorySessionStore — the layer works over any backend.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { InMemorySessionStore } from '@anthropic-ai/claude-agent-sdk';
import { RewritingSessionStore } from '../../../src/store/rewriting-store.js';
import { SqliteSessionStore } from '../../../src/store/sqlite-session-store.js';
import { type ConformanceStore, describeSessionStoreConformance } from './session-store-conformance.js';

const directories = new Map<ConformanceStore, string>();

const factory = (make: (directory: string) => ConformanceStore & { close(): unknown }) => ({
  make: () => {
    const directory = mkdtempSync(path.join(tmpdir(), 'flower-conformance-'));
    const store = make(directory);
    directories.set(store, directory);
    return store;
  },
  dispose: async (store: ConformanceStore) => {
    await (store as ConformanceStore & { close(): unknown }).close();
    rmSync(directories.get(store) as string, { recursive: true, force: true });
  },
});

const sqlite = (directory: string) => new SqliteSessionStore(path.join(directory, 'sessions.db'));
const layered = (backend: ConstructorParameters<typeof RewritingSessionStore>[0], directory: string) =>
  new RewritingSessionStore(backend, { workspace: directory, trim: { enabled: true } });

describeSessionStoreConformance('SqliteSessionStore (bare backend)', factory(sqlite));
// With the default layers, transcripts without tool calls or errors load unchanged.
describeSessionStoreConformance(
  'RewritingSessionStore over SqliteSessionStore',
  factory((directory) => layered(sqlite(directory), directory)),
);
describeSessionStoreConformance(
  'RewritingSessionStore over the SDK InMemorySessionStore',
  factory((directory) => layered(new InMemorySessionStore(), directory)),
);
