/** sqlite-database.ts's counting without a store: what the pull reads at a level start. */
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { countEntries } from '../../../src/store/sqlite-database.js';
import { SqliteSessionStore } from '../../../src/store/sqlite-session-store.js';

let dir: string | undefined;
afterEach(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

describe('countEntries', () => {
  it('counts as the store does, keys outside the rules and other projects left out', () => {
    dir = mkdtempSync(join(tmpdir(), 'flower-count-'));
    const file = join(dir, 'sessions.db');
    const store = new SqliteSessionStore(file);
    const key = { projectKey: '-ws', sessionId: 's1' };
    store.appendNow(key, [
      { type: 'user', uuid: 'a' },
      { type: 'user', uuid: 'b' },
    ]);
    store.appendNow({ ...key, subpath: 'subagents/agent-a1' }, [{ type: 'user', uuid: 'c' }]);
    store.appendNow({ projectKey: '-ws-other', sessionId: 's2' }, [{ type: 'user', uuid: 'd' }]);
    store.close();
    // Rows an older writer left under keys no real session has.
    const db = new Database(file);
    for (const storeKey of ['-ws/s1/../evil', '-ws//x'])
      db.prepare("INSERT INTO entries (store_key, seq, uid, payload) VALUES (?, 0, NULL, '{}')").run(
        storeKey,
      );
    db.close();
    const expected = [
      { sessionId: 's1', subpath: '', entries: 2 },
      { sessionId: 's1', subpath: 'subagents/agent-a1', entries: 1 },
    ];
    expect(countEntries(file, '-ws')).toEqual(expected);
    const again = new SqliteSessionStore(file);
    expect(again.entryCounts('-ws')).toEqual(expected);
    again.close();
  });

  it('leaves no WAL beside the file (its next open stays the cheap one), and no file where there was none', () => {
    dir = mkdtempSync(join(tmpdir(), 'flower-count-'));
    const file = join(dir, 'sessions.db');
    expect(countEntries(file, '-ws')).toEqual([]);
    expect(existsSync(file)).toBe(false);
    const store = new SqliteSessionStore(file);
    store.appendNow({ projectKey: '-ws', sessionId: 's1' }, [{ type: 'user', uuid: 'a' }]);
    store.close();
    const files = readdirSync(dir).sort();
    expect(countEntries(file, '-ws')).toEqual([{ sessionId: 's1', subpath: '', entries: 1 }]);
    expect(readdirSync(dir).sort()).toEqual(files);
    expect(files).not.toContain('sessions.db-wal');
  });

  it('throws when the file is not a database, for the caller to open the store that says so', () => {
    dir = mkdtempSync(join(tmpdir(), 'flower-count-'));
    const file = join(dir, 'sessions.db');
    const db = new Database(file);
    db.exec('CREATE TABLE other (x)');
    db.close();
    expect(() => countEntries(file, '-ws')).toThrow(/no such table: entries/);
  });
});
