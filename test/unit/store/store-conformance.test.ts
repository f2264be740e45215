/**
 * The SessionStore conformance suite against every store flower hands the SDK: the SQLite backend
 * bare, the rewriting layer over it (with trim on, as `go` runs it), and the rewriting layer over
 * the SDK's own InMemorySessionStore — the layer works over any backend. And the session-key
 * rules the SQLite backend shares with PostgreSQL's (session-key-rules.ts).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { InMemorySessionStore } from '@anthropic-ai/claude-agent-sdk';
import Database from 'better-sqlite3';
import { RewritingSessionStore } from '../../../src/store/rewriting-store.js';
import { SqliteSessionStore } from '../../../src/store/sqlite-session-store.js';
import { describeSessionKeyRules } from './session-key-rules.js';
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

describeSessionKeyRules('SqliteSessionStore', {
  ...factory(sqlite),
  // A row under `proj-a/session-1/<subpath>`, written as a version without the key rules stored it.
  plant: async (store, subpath, entry) => {
    const db = new Database((store as SqliteSessionStore).path);
    try {
      const storeKey = `proj-a/session-1/${subpath}`;
      db.prepare('INSERT INTO entries (store_key, seq, uid, payload) VALUES (?, 0, ?, ?)').run(
        storeKey,
        entry.uuid ?? null,
        JSON.stringify(entry),
      );
      db.prepare(
        'INSERT INTO meta (store_key, mtime, next_seq, cost_seq, indexed_to) VALUES (?, ?, 1, NULL, 1)',
      ).run(storeKey, Date.now());
    } finally {
      db.close();
    }
  },
});
