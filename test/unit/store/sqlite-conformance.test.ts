import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { SqliteSessionStore } from '../../../src/store/sqlite-session-store.js';
import { type ConformanceStore, describeSessionStoreConformance } from './session-store-conformance.js';

const directories = new Map<ConformanceStore, string>();

const factory = (withLayers: boolean) => ({
  make: () => {
    const directory = mkdtempSync(path.join(tmpdir(), 'flower-conformance-'));
    const store = new SqliteSessionStore(
      path.join(directory, 'sessions.db'),
      withLayers ? { workspace: directory } : {},
    );
    directories.set(store, directory);
    return store;
  },
  dispose: (store: ConformanceStore) => {
    (store as SqliteSessionStore).close();
    rmSync(directories.get(store) as string, { recursive: true, force: true });
  },
});

describeSessionStoreConformance('SqliteSessionStore (plain mirror)', factory(false));
// With the default rewrite layers on, transcripts without tool calls or errors load unchanged.
describeSessionStoreConformance('SqliteSessionStore (default rewrite layers)', factory(true));
