/**
 * One door to a session store for the CLI, library users and the rewriting layer: a `postgres://`
 * (or `postgresql://`) URL opens the PostgreSQL backend, anything else a SQLite file.
 *
 * Invariants:
 * - The store is ready when the promise resolves: connected, its schema created or migrated. A
 *   malformed URL, a rejected password, a missing database or a server that is down rejects here
 *   with one line naming what to fix (password masked), instead of surfacing inside the SDK's first
 *   mirror batch, where it would become a `mirror_error` while the run went on unrecorded.
 * - A store that fails to open leaves no pool behind.
 * - Each backend's module (and its driver: better-sqlite3's native binding, pg) is loaded only
 *   when that backend is asked for.
 */
import { parseStoreTarget } from '../config/store-url.js';
import type { PostgresSessionStore, PostgresSessionStoreOptions } from './postgres/session-store.js';
import type { SqliteSessionStore, SqliteSessionStoreOptions } from './sqlite-session-store.js';

export type OpenedSessionStore = SqliteSessionStore | PostgresSessionStore;

export interface OpenSessionStoreOptions {
  sqlite?: SqliteSessionStoreOptions;
  postgres?: PostgresSessionStoreOptions;
}

export async function openSessionStore(
  urlOrPath: string,
  options: OpenSessionStoreOptions = {},
): Promise<OpenedSessionStore> {
  const target = parseStoreTarget(urlOrPath);
  if (target.kind === 'sqlite') {
    const { SqliteSessionStore } = await import('./sqlite-session-store.js');
    return new SqliteSessionStore(target.path, options.sqlite);
  }
  const { PostgresSessionStore } = await import('./postgres/session-store.js');
  const store = new PostgresSessionStore(target, options.postgres);
  try {
    await store.open();
  } catch (error) {
    await store.close();
    throw error;
  }
  return store;
}
