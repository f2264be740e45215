/** The read-only view of sessions.db that status, report and log use. */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SessionReadError, SqliteSessionReader } from '../../../src/store/sqlite-reader.js';
import { SqliteSessionStore } from '../../../src/store/sqlite-session-store.js';
import { TranscriptBuilder } from '../../support/transcript-builder.js';

let dir: string | undefined;
afterEach(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

describe('SqliteSessionReader', () => {
  it('reads back what the store wrote: projects, sessions, subkeys and entries as stored', () => {
    dir = mkdtempSync(join(tmpdir(), 'flower-reader-'));
    const file = join(dir, 'sessions.db');
    const store = new SqliteSessionStore(file);
    const main = new TranscriptBuilder('m');
    main.prompt('hi');
    main.say('hello');
    const key = { projectKey: '-ws', sessionId: 's1' };
    store.appendNow(key, main.entries);
    store.appendNow({ ...key, subpath: 'subagents/agent-a1' }, main.entries.slice(0, 1));
    const reader = new SqliteSessionReader(file);
    try {
      expect(reader.projects()).toEqual(['-ws']);
      expect(reader.listSessions('-ws').map((session) => session.sessionId)).toEqual(['s1']);
      expect(reader.listSubkeys(key)).toEqual(['subagents/agent-a1']);
      expect(reader.load(key)).toEqual(main.entries);
      expect(reader.load({ ...key, sessionId: 'nope' })).toBeNull();
      // A writer keeps working beside it.
      store.appendNow(key, [{ type: 'marker', uuid: 'late' }]);
      expect(reader.load(key)).toHaveLength(main.entries.length + 1);
    } finally {
      reader.close();
      store.close();
    }
  });

  it('never creates a database, and says in one line when a file is not one', () => {
    const here = mkdtempSync(join(tmpdir(), 'flower-reader-'));
    dir = here;
    expect(() => new SqliteSessionReader(join(here, 'missing.db'))).toThrow(SessionReadError);
    expect(existsSync(join(here, 'missing.db'))).toBe(false);
    const junk = join(here, 'junk.db');
    writeFileSync(junk, 'this is not sqlite at all, just text that is long enough to be read as a header');
    expect(() => new SqliteSessionReader(junk)).toThrow(
      /junk\.db: could not read .*not a readable SQLite database/,
    );
    expect(readFileSync(junk, 'utf8')).toContain('this is not sqlite');
  });
});
