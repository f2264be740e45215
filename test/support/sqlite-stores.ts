/**
 * Throwaway SQLite session stores for unit tests: each in a directory of its own, closed and
 * removed after every test. Call `sqliteStoresPerTest` once at a file's top level.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach } from 'vitest';
import { SqliteSessionStore } from '../../src/store/sqlite-session-store.js';

/** Returns a function that opens a fresh store (`<temp dir>/sessions.db`) for the running test. */
export function sqliteStoresPerTest(prefix: string): () => SqliteSessionStore {
  const dirs: string[] = [];
  const stores: SqliteSessionStore[] = [];
  afterEach(() => {
    for (const store of stores.splice(0)) store.close();
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });
  return () => {
    const dir = mkdtempSync(join(tmpdir(), prefix));
    dirs.push(dir);
    const opened = new SqliteSessionStore(join(dir, 'sessions.db'));
    stores.push(opened);
    return opened;
  };
}
