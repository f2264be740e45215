import { spawn } from 'node:child_process';
import { once } from 'node:events';
import {
  closeSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { foldSessionSummary, type SessionKey, type SessionStoreEntry } from '@anthropic-ai/claude-agent-sdk';
import Database from 'better-sqlite3';
import { afterAll, afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { projectKeyFor, storeKeyOf } from '../../../src/store/session-key.js';
import {
  SessionStoreError,
  SIDECAR_DELAY_MS,
  SqliteSessionStore,
} from '../../../src/store/sqlite-session-store.js';
import { smallDisk } from '../../support/small-disk.js';
import { TranscriptBuilder } from '../../support/transcript-builder.js';

let directory: string;
let file: string;
const open: Array<{ close(): void }> = [];
const store = (options: ConstructorParameters<typeof SqliteSessionStore>[1] = {}): SqliteSessionStore => {
  const created = new SqliteSessionStore(file, options);
  open.push(created);
  return created;
};
const raw = (): Database.Database => {
  const db = new Database(file);
  open.push(db);
  return db;
};
const key: SessionKey = { projectKey: '-tmp-x-ws', sessionId: 'a1b2' };
/** Rows written behind the store's back, as another writer (an older flower, a crash) leaves them. */
const plant = (rows: Array<[storeKey: string, seq: number, uid: string | null, payload: unknown]>): void => {
  const insert = raw().prepare('INSERT INTO entries VALUES (?, ?, ?, ?)');
  for (const [storeKey, seq, uid, payload] of rows)
    insert.run(storeKey, seq, uid, typeof payload === 'string' ? payload : JSON.stringify(payload));
};
/** A store holding entries a and b of `key`, with b's row (seq 1) made unreadable behind its back. */
async function withUnreadableSecond(): Promise<SqliteSessionStore> {
  const s = store();
  await s.append(key, [
    { type: 'user', uuid: 'a' },
    { type: 'user', uuid: 'b' },
  ]);
  raw().prepare("UPDATE entries SET payload = 'not json' WHERE seq = 1").run();
  return s;
}
/** The statements' shared prototype: spying on it sees every statement the store runs. */
const statementMethods = () =>
  Object.getPrototypeOf(raw().prepare('SELECT 1')) as Record<
    'all' | 'get' | 'run',
    (...args: unknown[]) => unknown
  >;

beforeEach(() => {
  directory = mkdtempSync(path.join(tmpdir(), 'flower-store-'));
  file = path.join(directory, 'runs', 'sessions.db');
});
afterEach(() => {
  for (const handle of open.splice(0)) handle.close();
  rmSync(directory, { recursive: true, force: true });
});

describe('SqliteSessionStore: layout', () => {
  it('creates the parent directory, the reference schema and WAL mode', () => {
    store();
    const db = raw();
    expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
    const schema = db
      .prepare<[], { name: string; sql: string }>(
        'SELECT name, sql FROM sqlite_master WHERE sql IS NOT NULL ORDER BY name',
      )
      .all();
    expect(schema.map((row) => row.name)).toEqual(['entries', 'entries_uid', 'meta', 'summaries']);
    expect(schema.find((row) => row.name === 'entries_uid')?.sql).toMatch(
      /ON entries\(store_key, uid\) WHERE uid IS NOT NULL/,
    );
    const columns = (table: string) =>
      db
        .prepare(`PRAGMA table_info(${table})`)
        .all()
        .map((column) => (column as { name: string }).name);
    expect(columns('entries')).toEqual(['store_key', 'seq', 'uid', 'payload']);
    expect(columns('meta')).toEqual(['store_key', 'mtime', 'next_seq', 'cost_seq', 'indexed_to']);
    expect(columns('summaries')).toEqual(['project_key', 'session_id', 'mtime', 'data']);
  });

  it('keys rows as <project_key>/<session_id>[/<subpath>]', async () => {
    const s = store();
    await s.append(key, [{ type: 'user', uuid: 'u1' }]);
    await s.append({ ...key, subpath: 'subagents/agent-abc' }, [{ type: 'user', uuid: 'u2' }]);
    const keys = raw().prepare('SELECT store_key, next_seq FROM meta ORDER BY store_key').all();
    expect(keys).toEqual([
      { store_key: '-tmp-x-ws/a1b2', next_seq: 1 },
      { store_key: '-tmp-x-ws/a1b2/subagents/agent-abc', next_seq: 1 },
    ]);
    expect(storeKeyOf({ ...key, subpath: 'subagents/agent-abc' })).toBe('-tmp-x-ws/a1b2/subagents/agent-abc');
  });

  it('reads a file an older version wrote: valid keys keep their store_key, the key rules change none', async () => {
    store().close();
    const db = raw();
    const rows = [
      ['-tmp-x-ws/a1b2', 'u1'],
      ['-tmp-x-ws/a1b2/subagents/agent-abc', 'u2'],
    ];
    for (const [storeKey, uid] of rows) {
      db.prepare('INSERT INTO entries (store_key, seq, uid, payload) VALUES (?, 0, ?, ?)').run(
        storeKey,
        uid,
        JSON.stringify({ type: 'user', uuid: uid }),
      );
      db.prepare(
        'INSERT INTO meta (store_key, mtime, next_seq, cost_seq, indexed_to) VALUES (?, 1, 1, NULL, 1)',
      ).run(storeKey);
    }
    const s = store();
    expect(await s.load(key)).toEqual([{ type: 'user', uuid: 'u1' }]);
    expect(await s.listSubkeys(key)).toEqual(['subagents/agent-abc']);
    expect(await s.load({ ...key, subpath: 'subagents/agent-abc' })).toEqual([{ type: 'user', uuid: 'u2' }]);
    await s.append({ ...key, subpath: '' }, [{ type: 'user', uuid: 'u3' }]);
    s.sync();
    expect(db.prepare('SELECT store_key, next_seq FROM meta ORDER BY store_key').all()).toEqual([
      { store_key: '-tmp-x-ws/a1b2', next_seq: 2 },
      { store_key: '-tmp-x-ws/a1b2/subagents/agent-abc', next_seq: 1 },
    ]);
  });

  it('derives the project key as the SDK does', () => {
    expect(projectKeyFor('/tmp/x/ws')).toBe('-tmp-x-ws');
    expect(projectKeyFor('/home/me/my_proj.v2')).toBe('-home-me-my-proj-v2');
    const real = path.join(directory, 'real');
    mkdirSync(real);
    symlinkSync(real, path.join(directory, 'link'));
    expect(projectKeyFor(path.join(directory, 'link'))).toBe(
      realpathSync(real).replace(/[^a-zA-Z0-9]/g, '-'),
    );
    const long = `/${'deep/'.repeat(50)}end`;
    const longKey = projectKeyFor(long);
    expect(longKey).toMatch(/^-deep-deep-.*-[0-9a-z]+$/);
    expect(longKey.length).toBeGreaterThan(200);
    expect(longKey.slice(0, 200)).toBe(long.replace(/[^a-zA-Z0-9]/g, '-').slice(0, 200));
  });
});

describe('SqliteSessionStore: idempotent appends and the clock', () => {
  it('skips stored uuids and in-batch repeats, always appends entries without a uuid', async () => {
    const s = store();
    await s.append(key, [
      { type: 'user', uuid: 'a' },
      { type: 'custom-title', customTitle: 'x' },
    ]);
    await s.append(key, [
      { type: 'user', uuid: 'a' },
      { type: 'user', uuid: 'b' },
      { type: 'user', uuid: 'b' },
      { type: 'custom-title', customTitle: 'x' },
    ]);
    expect(await s.load(key)).toEqual([
      { type: 'user', uuid: 'a' },
      { type: 'custom-title', customTitle: 'x' },
      { type: 'user', uuid: 'b' },
      { type: 'custom-title', customTitle: 'x' },
    ]);
    const seqs = raw().prepare('SELECT seq FROM entries ORDER BY seq').pluck().all();
    expect(seqs).toEqual([0, 1, 2, 3]);
  });

  it('a batch of only known uuids changes nothing: no next_seq, mtime or summary change', async () => {
    const s = store();
    const t = new TranscriptBuilder();
    t.prompt('first');
    t.say('reply');
    await s.append(key, t.entries);
    const db = raw();
    const before = {
      meta: db.prepare('SELECT * FROM meta').all(),
      summaries: db.prepare('SELECT * FROM summaries').all(),
      count: db.prepare('SELECT count(*) FROM entries').pluck().get(),
    };
    await new Promise((resolve) => setTimeout(resolve, 5));
    await s.append(key, t.entries);
    await s.append(key, [t.entries[1] as never]);
    expect({
      meta: db.prepare('SELECT * FROM meta').all(),
      summaries: db.prepare('SELECT * FROM summaries').all(),
      count: db.prepare('SELECT count(*) FROM entries').pluck().get(),
    }).toEqual(before);
  });

  it('a uuid that is not a string is no uuid: such entries are always appended, alone or in a batch', async () => {
    const s = store();
    await s.append(key, [{ type: 'user', uuid: 'a' }]);
    await s.append(key, [{ type: 'user', uuid: 7 } as never]);
    await s.append(key, [{ type: 'user', uuid: 7 } as never]);
    await s.append(key, [{ type: 'user', uuid: 8 } as never, { type: 'user', uuid: 8 } as never]);
    expect((await s.load(key))?.map((entry) => entry.uuid)).toEqual(['a', 7, 7, 8, 8]);
    expect(raw().prepare('SELECT uid FROM entries ORDER BY seq').pluck().all()).toEqual([
      'a',
      null,
      null,
      null,
      null,
    ]);
  });

  it("a batch of only known uuids under rows no meta row covers (another writer's) writes no meta row or summary", async () => {
    const s = store();
    plant([[storeKeyOf(key), 0, 'a', { type: 'user', uuid: 'a' }]]);
    await s.append(key, [{ type: 'user', uuid: 'a' }]);
    expect(raw().prepare('SELECT count(*) FROM meta').pluck().get()).toBe(0);
    expect(raw().prepare('SELECT count(*) FROM summaries').pluck().get()).toBe(0);
    expect(await s.load(key)).toEqual([{ type: 'user', uuid: 'a' }]);
  });

  it('stamps strictly increasing mtimes across the keys of one store while the clock stands still', async () => {
    const now = vi.spyOn(Date, 'now').mockReturnValue(1_800_000_000_000);
    try {
      const s = store();
      const sessions = ['s-1', 's-2', 's-3'];
      for (const sessionId of sessions)
        await s.append({ ...key, sessionId }, [{ type: 'user', uuid: sessionId }]);
      const listed = await s.listSessions(key.projectKey);
      const mtimes = sessions.map((sessionId) => listed.find((row) => row.sessionId === sessionId)?.mtime);
      expect(mtimes).toEqual([1_800_000_000_000, 1_800_000_000_001, 1_800_000_000_002]);
    } finally {
      now.mockRestore();
    }
  });

  it('stamps strictly increasing epoch-ms mtimes per key, even within one millisecond', async () => {
    const s = store();
    const stamps: number[] = [];
    for (let index = 0; index < 50; index += 1) {
      await s.append(key, [{ type: 'user', uuid: `u${index}` }]);
      stamps.push((await s.listSessions(key.projectKey))[0]?.mtime as number);
    }
    for (let index = 1; index < stamps.length; index += 1)
      expect(stamps[index]).toBeGreaterThan(stamps[index - 1] as number);
    expect(stamps[0]).toBeGreaterThan(1e12);
    // A second instance (another process) continues after the stored stamp, never before it.
    const last = stamps[stamps.length - 1] as number;
    raw()
      .prepare('UPDATE meta SET mtime = ?')
      .run(last + 60_000);
    const other = store();
    await other.append(key, [{ type: 'user', uuid: 'later' }]);
    expect((await other.listSessions(key.projectKey))[0]?.mtime).toBe(last + 60_001);
  });

  it('folds summaries only for main transcripts and persists the data verbatim', async () => {
    const s = store();
    const t = new TranscriptBuilder();
    t.prompt('Port the parser');
    await s.append(key, t.entries);
    await s.append({ ...key, subpath: 'subagents/agent-1' }, [{ type: 'user', uuid: 'sub' }]);
    const rows = raw().prepare('SELECT project_key, session_id, data FROM summaries').all() as Array<{
      data: string;
    }>;
    expect(rows).toHaveLength(1);
    expect(JSON.parse(rows[0]?.data as string)).toMatchObject({
      firstPrompt: 'Port the parser',
      cwd: '/work/project',
    });
    expect((await s.listSessionSummaries(key.projectKey))[0]?.data).toEqual(
      JSON.parse(rows[0]?.data as string),
    );
  });
});

describe('SqliteSessionStore: queries flower needs', () => {
  it('hasSession, projects, lastContext', async () => {
    const s = store();
    expect(s.hasSession(key.projectKey, key.sessionId)).toBe(false);
    expect(s.lastContext(key.projectKey, key.sessionId)).toBe(0);
    const t = new TranscriptBuilder();
    t.prompt('go');
    t.say('working'); // usage 100 + 2000 + 50
    t.apiError(); // usage all zero: skipped
    t.marker('last-prompt');
    await s.append(key, t.entries);
    await s.append({ projectKey: '-other', sessionId: 's' }, [{ type: 'user', uuid: 'x' }]);
    await s.append({ projectKey: '-only-sub', sessionId: 's', subpath: 'subagents/agent-1' }, [
      { type: 'user', uuid: 'y' },
    ]);
    expect(s.hasSession(key.projectKey, key.sessionId)).toBe(true);
    expect(s.hasSession(key.projectKey, 'nope')).toBe(false);
    expect(s.lastContext(key.projectKey, key.sessionId)).toBe(2150);
    expect(s.lastContext(key.projectKey, key.sessionId, 2)).toBe(0);
    expect(s.projects()).toEqual(['-only-sub', '-other', '-tmp-x-ws']);
  });

  it('lastContext skips an entry whose usage is null and counts a missing token field as none', async () => {
    const s = store();
    const usage = (value: unknown) => ({ type: 'assistant', message: { role: 'assistant', usage: value } });
    await s.append(key, [
      usage({ input_tokens: 30, cache_read_input_tokens: 5 }) as never,
      usage(null) as never,
    ]);
    expect(s.lastContext(key.projectKey, key.sessionId)).toBe(35);
    await s.append(key, [usage({ input_tokens: 'many', cache_creation_input_tokens: 4 }) as never]);
    expect(s.lastContext(key.projectKey, key.sessionId)).toBe(4);
  });

  it("deleting a subagent's transcript keeps the session, its summary and its other subagents", async () => {
    const s = store();
    const t = new TranscriptBuilder();
    t.prompt('Port the parser');
    await s.append(key, t.entries);
    const gone = { ...key, subpath: 'subagents/agent-1' };
    const kept = { ...key, subpath: 'subagents/agent-2' };
    await s.append(gone, [{ type: 'user', uuid: 'g' }]);
    await s.append(kept, [{ type: 'user', uuid: 'k' }]);
    await s.delete(gone);
    expect(await s.load(gone)).toBeNull();
    expect(await s.load(kept)).toEqual([{ type: 'user', uuid: 'k' }]);
    expect(await s.load(key)).toEqual(t.entries);
    expect((await s.listSessionSummaries(key.projectKey))[0]?.data).toMatchObject({
      firstPrompt: 'Port the parser',
    });
  });

  it('entryCounts leaves out a key an older writer stored with an empty session id', async () => {
    const s = store();
    await s.append(key, [{ type: 'user', uuid: 'a' }]);
    plant([
      [`${key.projectKey}//subagents/agent-1`, 0, null, { type: 'user' }],
      [`${key.projectKey}/`, 0, null, { type: 'user' }],
    ]);
    expect(s.entryCounts(key.projectKey)).toEqual([{ sessionId: key.sessionId, subpath: '', entries: 1 }]);
  });

  it('nextSeqs marks each key one past its last seq, and no main mark where only a subagent wrote', async () => {
    const s = store();
    const sub = { ...key, subpath: 'subagents/agent-1' };
    await s.append(key, [
      { type: 'user', uuid: 'a' },
      { type: 'user', uuid: 'b' },
    ]);
    await s.append(sub, [{ type: 'user', uuid: 'c' }]);
    expect(s.nextSeqs(key.projectKey, key.sessionId)).toEqual(
      new Map([
        ['', 2],
        ['subagents/agent-1', 1],
      ]),
    );
    await s.append({ ...sub, sessionId: 'only-sub' }, [{ type: 'user', uuid: 'd' }]);
    expect(s.nextSeqs(key.projectKey, 'only-sub')).toEqual(new Map([['subagents/agent-1', 1]]));
    expect(s.nextSeqs(key.projectKey, 'none')).toEqual(new Map());
  });

  it('entriesFrom gives the first head entries below from, then all from it; a negative head gives none below', async () => {
    const s = store();
    await s.append(
      key,
      ['a', 'b', 'c', 'd', 'e'].map((uuid) => ({ type: 'user', uuid })),
    );
    const uuids = (from: number, head?: number) => s.entriesFrom(key, from, head)?.map((entry) => entry.uuid);
    expect(uuids(3)).toEqual(['d', 'e']);
    expect(uuids(3, 2)).toEqual(['a', 'b', 'd', 'e']);
    expect(uuids(3, -1)).toEqual(['d', 'e']);
    expect(s.entriesFrom({ ...key, sessionId: 'none' }, 0)).toBeNull();
  });

  it('loadRows gives each entry with its text as stored, and fails on an unreadable row as loadRaw does', async () => {
    const s = await withUnreadableSecond();
    const loadRawError = (() => {
      try {
        s.loadRaw(key);
      } catch (error) {
        return error as Error;
      }
      throw new Error('loadRaw read an unreadable row');
    })();
    await expect(s.loadRows(key)).rejects.toThrow(loadRawError.message);
    const spaced = '{ "type": "user", "uuid": "b" }';
    raw().prepare('UPDATE entries SET payload = ? WHERE seq = 1').run(spaced);
    expect(await s.loadRows(key)).toEqual([
      { entry: { type: 'user', uuid: 'a' }, text: '{"type":"user","uuid":"a"}' },
      { entry: { type: 'user', uuid: 'b' }, text: spaced },
    ]);
    expect(await s.loadRows({ ...key, sessionId: 'never' })).toBeNull();
    await expect(s.loadRows({ projectKey: 'a/b', sessionId: 'x' })).rejects.toThrow(
      /^Refusing to load the session key \{/,
    );
  });

  it("appendRows stores a row's text as given, an entry without one serialised, and refuses a row that is no object", async () => {
    const s = store();
    const spaced = '{ "type": "user", "uuid": "a" }';
    await s.appendRows(key, [
      { entry: { type: 'user', uuid: 'a' }, text: spaced },
      { entry: { type: 'user', uuid: 'b' } },
    ]);
    expect(raw().prepare('SELECT payload FROM entries ORDER BY seq').pluck().all()).toEqual([
      spaced,
      '{"type":"user","uuid":"b"}',
    ]);
    // Idempotent by uuid, as append is; the summary is folded from the entries.
    await s.appendRows(key, [{ entry: { type: 'user', uuid: 'a' }, text: spaced }]);
    expect(s.entryCounts(key.projectKey)).toEqual([{ sessionId: key.sessionId, subpath: '', entries: 2 }]);
    await expect(
      s.appendRows(key, [
        { entry: { type: 'user', uuid: 'c' } },
        { entry: [] as unknown as SessionStoreEntry, text: '[]' },
      ]),
    ).rejects.toThrow(
      /Refusing to store entry 1 of a batch for -tmp-x-ws\/a1b2 .*not a JSON object\. Nothing from this batch was written\./,
    );
    expect(s.entryCounts(key.projectKey)).toEqual([{ sessionId: key.sessionId, subpath: '', entries: 2 }]);
  });

  it('entriesFrom fails on an unreadable row with the message loadRaw gives, naming the key and seq', async () => {
    const s = store();
    await s.append(
      key,
      ['a', 'b', 'c'].map((uuid) => ({ type: 'user', uuid })),
    );
    raw().prepare("UPDATE entries SET payload = '{damaged' WHERE seq = 2").run();
    const error = (() => {
      try {
        s.entriesFrom(key, 1);
      } catch (caught) {
        return caught;
      }
    })();
    expect(error).toBeInstanceOf(SessionStoreError);
    expect((error as Error).message).toBe(
      `The session database ${file} holds an unreadable entry for -tmp-x-ws/a1b2 (seq 2 is not a JSON object), so the transcript was not loaded and nothing half-read is resumed. Inspect it with: sqlite3 ${file} "SELECT payload FROM entries WHERE store_key = '-tmp-x-ws/a1b2' AND seq = 2"`,
    );
    expect(() => s.loadRaw(key)).toThrow((error as Error).message);
  });
});

const cost = (total: number): Record<string, unknown> => ({
  type: 'cost-state',
  sessionId: key.sessionId,
  totalCostUSD: total,
  totalAPIDuration: 10,
});

describe('SqliteSessionStore: the last cost-state, read from the end', () => {
  it('is the newest cost-state of the key; null without one or for an unknown key', async () => {
    const s = store();
    expect(await s.lastCostState(key)).toBeNull();
    await s.append(key, [{ type: 'user', uuid: 'u1' }]);
    expect(await s.lastCostState(key)).toBeNull();
    await s.append(key, [cost(0.5) as never, { type: 'user', uuid: 'u2' }]);
    await s.append(key, [cost(1.25) as never]);
    await s.append(key, [{ type: 'assistant', uuid: 'u3' }, { type: 'last-prompt' }]);
    expect(await s.lastCostState(key)).toEqual(cost(1.25));
    await s.append(key, [cost(2) as never, cost(3) as never]);
    expect((await s.lastCostState(key))?.totalCostUSD).toBe(3);
    expect(await s.lastCostState({ ...key, sessionId: 'other' })).toBeNull();
  });

  it('never reads the transcript: a damaged row before the newest cost-state does not matter', async () => {
    const s = store();
    const t = new TranscriptBuilder();
    for (let index = 0; index < 200; index += 1) t.say(`turn ${index}`);
    await s.append(key, t.entries);
    await s.append(key, [cost(4.5) as never]);
    await s.append(key, [{ type: 'user', uuid: 'after' }]);
    raw().prepare("UPDATE entries SET payload = '{damaged' WHERE seq IN (0, 50, 201)").run();
    await expect(s.load(key)).rejects.toBeInstanceOf(SessionStoreError);
    expect((await s.lastCostState(key))?.totalCostUSD).toBe(4.5);
  });

  /** A database as the reference (or an older flower) leaves it: no cost columns, rows by plain SQL. */
  const olderFile = (rows: unknown[]): void => {
    mkdirSync(path.dirname(file), { recursive: true });
    const old = new Database(file);
    old.exec(`CREATE TABLE entries (store_key TEXT NOT NULL, seq INTEGER NOT NULL, uid TEXT, payload TEXT NOT NULL, PRIMARY KEY (store_key, seq));
      CREATE TABLE meta (store_key TEXT PRIMARY KEY, mtime INTEGER NOT NULL, next_seq INTEGER NOT NULL);
      CREATE TABLE summaries (project_key TEXT NOT NULL, session_id TEXT NOT NULL, mtime INTEGER NOT NULL, data TEXT NOT NULL, PRIMARY KEY (project_key, session_id));`);
    old.close();
    plant(rows.map((row, seq) => [storeKeyOf(key), seq, null, row]));
    const meta = raw();
    meta.prepare('INSERT INTO meta VALUES (?, ?, ?)').run(storeKeyOf(key), Date.now(), rows.length);
    meta.close();
  };

  it("a cost-state that is the first entry of a key is found, in a file of ours or an older writer's", async () => {
    const s = store();
    await s.append(key, [cost(0.5) as never, { type: 'user', uuid: 'u1' }]);
    expect((await s.lastCostState(key))?.totalCostUSD).toBe(0.5);
    s.close();
    rmSync(file);
    olderFile([cost(0.25), { type: 'user', uuid: 'a' }]);
    expect((await store().lastCostState(key))?.totalCostUSD).toBe(0.25);
  });

  it("rows the record covers are not searched again: a row changed below it behind the store's back is not read", async () => {
    const s = store();
    await s.append(key, [cost(1) as never, { type: 'user', uuid: 'u1' }]);
    raw()
      .prepare('UPDATE entries SET payload = ? WHERE seq = 1')
      .run(JSON.stringify(cost(99)));
    expect((await s.lastCostState(key))?.totalCostUSD).toBe(1);
  });

  it('a record pointing at a row that is no cost-state, or at a damaged row, reads as none', async () => {
    const s = store();
    await s.append(key, [{ type: 'user', uuid: 'u0' }, cost(1) as never]);
    // A stale record (another store deleted and rewrote the session under it).
    raw().prepare('UPDATE meta SET cost_seq = 0').run();
    expect(await s.lastCostState(key)).toBeNull();
    raw().prepare('UPDATE meta SET cost_seq = 1').run();
    raw().prepare("UPDATE entries SET payload = '{damaged' WHERE seq = 1").run();
    expect(await s.lastCostState(key)).toBeNull();
  });

  it('finds cost-states in rows another writer added without tracking them, and only searches those', async () => {
    olderFile([{ type: 'user', uuid: 'a' }, cost(0.75), '{not json', { type: 'user', uuid: 'b' }]);
    const storeKey = storeKeyOf(key);
    const s = store();
    expect((await s.lastCostState(key))?.totalCostUSD).toBe(0.75);
    // Appends through this store keep the record; the untracked rows stay searchable.
    await s.append(key, [{ type: 'user', uuid: 'c' }]);
    expect((await s.lastCostState(key))?.totalCostUSD).toBe(0.75);
    await s.append(key, [cost(1.5) as never]);
    expect((await s.lastCostState(key))?.totalCostUSD).toBe(1.5);
    // An older writer appends a newer cost-state without telling `meta`: it is found all the same.
    raw()
      .prepare('INSERT INTO entries VALUES (?, ?, ?, ?)')
      .run(storeKey, 6, null, JSON.stringify(cost(9)));
    raw().prepare('UPDATE meta SET next_seq = 7 WHERE store_key = ?').run(storeKey);
    expect((await s.lastCostState(key))?.totalCostUSD).toBe(9);
  });
});

describe('SqliteSessionStore: appends at one entry per call', () => {
  it('two stores on one file, appending in turn, lose nothing and keep seqs and the summary right', async () => {
    const first = store();
    const second = store();
    const t = new TranscriptBuilder();
    t.prompt('Port the parser');
    for (let index = 0; index < 20; index += 1) t.say(`step ${index}`);
    t.marker('custom-title', { customTitle: 'Parser port' });
    for (const [index, entry] of t.entries.entries())
      await (index % 3 === 0 ? second : first).append(key, [entry]);
    expect(await first.load(key)).toEqual(t.entries);
    const seqs = raw().prepare('SELECT seq FROM entries ORDER BY seq').pluck().all();
    expect(seqs).toEqual(t.entries.map((_, index) => index));
    first.sync(); // each store folds its own appends into the shared index
    const [summary] = await second.listSessionSummaries(key.projectKey);
    expect(summary?.data).toEqual(foldSessionSummary(undefined, key, t.entries).data);
    expect(summary?.mtime).toBe((await first.listSessions(key.projectKey))[0]?.mtime);
  });

  it('writes the summary row only when the fold changed it, while its mtime follows every append', async () => {
    const s = store();
    const t = new TranscriptBuilder();
    t.prompt('Port the parser');
    await s.append(key, t.entries);
    const stored = () =>
      raw().prepare('SELECT mtime, data FROM summaries').get() as { mtime: number; data: string };
    const before = stored();
    await new Promise((resolve) => setTimeout(resolve, 5));
    t.say('working on it');
    await s.append(key, [t.entries[1] as never]);
    s.sync();
    expect(stored()).toEqual(before);
    const listed = (await s.listSessions(key.projectKey))[0]?.mtime as number;
    expect(listed).toBeGreaterThan(before.mtime);
    expect((await s.listSessionSummaries(key.projectKey))[0]?.mtime).toBe(listed);
    await s.append(key, [{ type: 'custom-title', customTitle: 'A title' }]);
    s.sync();
    expect(JSON.parse(stored().data)).toMatchObject({ customTitle: 'A title' });
  });

  it('meta and the summary follow the rows within SIDECAR_DELAY_MS; reads through the store never lag', async () => {
    const s = store();
    const t = new TranscriptBuilder();
    t.prompt('go');
    await s.append(key, t.entries); // a key's first append writes its meta row with the rows
    const db = raw();
    const folded = () => db.prepare('SELECT next_seq FROM meta').pluck().get();
    expect(folded()).toBe(1);
    t.say('one');
    t.say('two');
    for (const entry of t.entries.slice(1)) await s.append(key, [entry]);
    expect(db.prepare('SELECT count(*) FROM entries').pluck().get()).toBe(3); // the rows are committed
    const deadline = Date.now() + 20 * SIDECAR_DELAY_MS;
    while (folded() !== 3 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 5));
    expect(folded()).toBe(3);

    t.say('three');
    await s.append(key, [t.entries[3] as never]);
    const [listed] = await s.listSessions(key.projectKey);
    expect(folded()).toBe(4);
    expect(listed?.mtime).toBe(db.prepare('SELECT mtime FROM meta').pluck().get());
  });

  it('an entry appended alone to a known key is one INSERT statement, with no transaction around it', async () => {
    const s = store();
    await s.append(key, [{ type: 'user', uuid: 'a' }]);
    const methods = statementMethods();
    const spies = (['all', 'get', 'run'] as const).map((method) => vi.spyOn(methods, method));
    try {
      s.appendNow(key, [{ type: 'user', uuid: 'b' }]);
      const ran = spies.flatMap((spy) =>
        spy.mock.contexts.map((statement) => (statement as Database.Statement).source),
      );
      expect(ran).toHaveLength(1);
      expect(ran[0]).toMatch(/^INSERT INTO entries [^;]* RETURNING seq$/);
      // Another store's first append to the key finds its meta row and takes the same path.
      const second = store();
      for (const spy of spies) spy.mockClear();
      second.appendNow(key, [{ type: 'user', uuid: 'c' }]);
      const other = spies.flatMap((spy) =>
        spy.mock.contexts.map((statement) => (statement as Database.Statement).source),
      );
      expect(other.sort()).toEqual([ran[0], 'SELECT 1 FROM meta WHERE store_key = ?']);
    } finally {
      for (const spy of spies) spy.mockRestore();
    }
  });

  it('entries appended one by one within SIDECAR_DELAY_MS are folded together, under one timer', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      const s = store();
      const t = new TranscriptBuilder();
      t.prompt('Port the parser');
      await s.append(key, t.entries);
      await s.append(key, [{ type: 'custom-title', customTitle: 'Parser port' }]);
      for (const uuid of ['b', 'c', 'd']) await s.append(key, [{ type: 'user', uuid }]);
      expect(vi.getTimerCount()).toBe(1);
      vi.advanceTimersByTime(SIDECAR_DELAY_MS);
      expect(vi.getTimerCount()).toBe(0);
      expect(raw().prepare('SELECT next_seq FROM meta').pluck().get()).toBe(5);
      const data = JSON.parse(raw().prepare('SELECT data FROM summaries').pluck().get() as string);
      expect(data).toMatchObject({ firstPrompt: 'Port the parser', customTitle: 'Parser port' });
    } finally {
      vi.useRealTimers();
    }
  });

  it('rows a crash left unfolded are folded when the file is opened next', async () => {
    const s = store();
    const t = new TranscriptBuilder();
    t.prompt('Port the parser');
    await s.append(key, t.entries);
    const before = (await s.listSessions(key.projectKey))[0]?.mtime as number;
    s.close();
    // What a SIGKILL between the inserts and the fold leaves: rows committed, meta and summary behind.
    const db = raw();
    const insert = db.prepare('INSERT INTO entries VALUES (?, ?, ?, ?)');
    t.say('working');
    t.marker('custom-title', { customTitle: 'Parser port' });
    insert.run(storeKeyOf(key), 1, t.entries[1]?.uuid, JSON.stringify(t.entries[1]));
    insert.run(storeKeyOf(key), 2, null, JSON.stringify(t.entries[2]));
    insert.run(storeKeyOf(key), 3, null, JSON.stringify(cost(0.25)));
    db.close();

    const reopened = store();
    const direct = raw();
    expect(direct.prepare('SELECT next_seq FROM meta').pluck().get()).toBe(4);
    expect((await reopened.listSessions(key.projectKey))[0]?.mtime).toBeGreaterThan(before);
    const [summary] = await reopened.listSessionSummaries(key.projectKey);
    expect(summary?.data).toMatchObject({ firstPrompt: 'Port the parser', customTitle: 'Parser port' });
    expect((await reopened.lastCostState(key))?.totalCostUSD).toBe(0.25);
    await reopened.append(key, [{ type: 'user', uuid: 'next' }]);
    expect(direct.prepare('SELECT max(seq) FROM entries').pluck().get()).toBe(4);
  });
});

describe('SqliteSessionStore: opening a file', () => {
  it('closing again after a close whose fold SQLite failed does nothing', async () => {
    const s = store();
    await s.append(key, [{ type: 'user', uuid: 'a' }]);
    await s.append(key, [{ type: 'user', uuid: 'b' }]); // deferred
    const run = vi.spyOn(statementMethods(), 'run').mockImplementation(() => {
      throw new Database.SqliteError('disk I/O error', 'SQLITE_IOERR');
    });
    expect(() => s.close()).toThrow(/could not update the session index/);
    run.mockRestore();
    expect(() => s.close()).not.toThrow();
    expect(await store().load(key)).toHaveLength(2);
  });

  it('with nothing left unfolded it takes no write lock: it opens at once while another process writes', async () => {
    const s = store();
    await s.append(key, [{ type: 'user', uuid: 'a' }]);
    s.close();
    const other = raw();
    other.prepare('BEGIN IMMEDIATE').run();
    // An open that asked for the write lock would wait for the writer (its failure is swallowed:
    // the fold is best effort), so what it must not do is begin a transaction at all.
    const run = vi.spyOn(statementMethods(), 'run');
    let opened: SqliteSessionStore;
    try {
      opened = store({ busyTimeoutMs: 0 });
      const begun = run.mock.contexts.map((statement) => (statement as Database.Statement).source);
      expect(begun.filter((source) => source.startsWith('BEGIN'))).toEqual([]);
    } finally {
      run.mockRestore();
    }
    expect(await opened.load(key)).toEqual([{ type: 'user', uuid: 'a' }]);
    other.prepare('ROLLBACK').run();
  });

  it('rows a crash left unfolded are folded around an unreadable one among them', async () => {
    const s = store();
    const t = new TranscriptBuilder();
    t.prompt('Port the parser');
    await s.append(key, t.entries);
    s.close();
    plant([
      [storeKeyOf(key), 1, null, '{damaged'],
      [storeKeyOf(key), 2, null, { type: 'custom-title', customTitle: 'Parser port' }],
    ]);
    store();
    expect(raw().prepare('SELECT next_seq FROM meta').pluck().get()).toBe(3);
    const data = JSON.parse(raw().prepare('SELECT data FROM summaries').pluck().get() as string);
    expect(data).toMatchObject({ firstPrompt: 'Port the parser', customTitle: 'Parser port' });
  });

  it("rows left unfolded under a key with no session part (an older writer's) join no real session's summary", () => {
    store().close();
    plant([['-old', 0, null, { type: 'custom-title', customTitle: 'stray' }]]);
    raw().prepare('INSERT INTO meta (store_key, mtime, next_seq) VALUES (?, 1, 0)').run('-old');
    store();
    expect(raw().prepare('SELECT next_seq FROM meta').pluck().get()).toBe(1);
    expect(raw().prepare('SELECT project_key, session_id FROM summaries').all()).toEqual([
      { project_key: '-old', session_id: '' },
    ]);
  });
});

describe('SqliteSessionStore: bad input', () => {
  it('a file that is not a database is kept aside with one warning, and a fresh store opens (issue 10)', () => {
    mkdirSync(path.dirname(file), { recursive: true });
    const text = 'this is not a database, just text that happens to be here'.repeat(100);
    writeFileSync(file, text);
    const warnings: string[] = [];
    const opened = store({ onWarning: (line) => warnings.push(line) });
    expect(opened.hasSession(key.projectKey, key.sessionId)).toBe(false);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain(file);
    const kept = /It was kept as (\S+) /.exec(warnings[0] ?? '')?.[1] ?? '';
    expect(readFileSync(kept, 'utf8')).toBe(text);
  });

  it('a database locked by another writer fails the append whole, naming the file', async () => {
    const s = store({ busyTimeoutMs: 50 });
    await s.append(key, [{ type: 'user', uuid: 'kept' }]);
    const other = raw();
    other.prepare('BEGIN IMMEDIATE').run();
    await expect(s.append(key, [{ type: 'user', uuid: 'blocked' }])).rejects.toThrow(
      new RegExp(`${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}.*locked`),
    );
    other.prepare('ROLLBACK').run();
    expect(await s.load(key)).toEqual([{ type: 'user', uuid: 'kept' }]);
    await s.append(key, [{ type: 'user', uuid: 'blocked' }]);
    expect(await s.load(key)).toHaveLength(2);
  });

  it("waits out another process's short write instead of failing the append", async () => {
    const s = store();
    await s.append(key, [{ type: 'user', uuid: 'first' }]);
    // Another process holds the write lock for 300 ms (better-sqlite3 blocks this thread meanwhile).
    const holder = spawn(
      process.execPath,
      [
        '-e',
        `const db = new (require('better-sqlite3'))(${JSON.stringify(file)});
db.prepare('BEGIN IMMEDIATE').run();
process.stdout.write('held\\n');
Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 300);
db.prepare('COMMIT').run();`,
      ],
      { cwd: process.cwd(), stdio: ['ignore', 'pipe', 'inherit'] },
    );
    await once(holder.stdout, 'data');
    await s.append(key, [{ type: 'user', uuid: 'after' }]);
    await once(holder, 'exit');
    expect((await s.load(key))?.map((entry) => entry.uuid)).toEqual(['first', 'after']);
  });

  it('a batch with an entry that is not a JSON object writes nothing', async () => {
    const s = store();
    await expect(s.append(key, [{ type: 'user', uuid: 'a' }, 'oops' as never])).rejects.toThrow(
      /entry 1 .* not a JSON object/,
    );
    await expect(s.append(key, [{ type: 'user', uuid: 'a', big: 10n } as never])).rejects.toThrow();
    expect(await s.load(key)).toBeNull();
    expect(s.hasSession(key.projectKey, key.sessionId)).toBe(false);
  });

  it('a row that is not a JSON object fails the load in one line naming the file, key and seq', async () => {
    const s = store();
    await s.append(key, [
      { type: 'user', uuid: 'a' },
      { type: 'user', uuid: 'b' },
      { type: 'user', uuid: 'c' },
    ]);
    raw().prepare("UPDATE entries SET payload = '{truncated' WHERE uid = 'b'").run();
    const error = await s.load(key).then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(SessionStoreError);
    const message = (error as Error).message;
    expect(message).not.toContain('\n');
    expect(message).toContain(file);
    expect(message).toContain('-tmp-x-ws/a1b2 (seq 1 is not a JSON object)');
    expect(message).toContain('AND seq = 1');
    raw().prepare("UPDATE entries SET payload = '[1,2]' WHERE uid = 'b'").run();
    await expect(s.load(key)).rejects.toBeInstanceOf(SessionStoreError);
  });

  it('readTranscript reports each unreadable row by seq, uuid and position and returns the rest', async () => {
    const s = store();
    await s.append(key, [
      { type: 'user', uuid: 'a' },
      { type: 'marker' },
      { type: 'user', uuid: 'c' },
      { type: 'user', uuid: 'd' },
    ]);
    raw().prepare("UPDATE entries SET payload = 'not json' WHERE seq = 1").run();
    raw().prepare("UPDATE entries SET payload = 'null' WHERE uid = 'c'").run();
    expect(await s.readTranscript(key)).toEqual({
      entries: [
        { type: 'user', uuid: 'a' },
        { type: 'user', uuid: 'd' },
      ],
      unreadable: [
        { seq: 1, uuid: null, position: 1 },
        { seq: 2, uuid: 'c', position: 1 },
      ],
      owned: true,
    });
    expect(await s.readTranscript({ ...key, sessionId: 'none' })).toBeNull();
  });

  it('readTranscript names an unreadable row by its stored seq and uuid where seqs have gaps', async () => {
    const s = store();
    await s.append(key, [{ type: 'user', uuid: 'a' }]);
    plant([
      [storeKeyOf(key), 5, 'x', 'not json'],
      [storeKeyOf(key), 9, null, '"a JSON string"'],
    ]);
    expect((await s.readTranscript(key))?.unreadable).toEqual([
      { seq: 5, uuid: 'x', position: 1 },
      { seq: 9, uuid: null, position: 1 },
    ]);
  });

  it('readTranscript reports an unreadable row that another process deleted meanwhile at its position', async () => {
    const s = await withUnreadableSecond();
    // The row is gone by the time its seq is looked up.
    const gone = vi.spyOn(statementMethods(), 'get').mockReturnValueOnce(undefined);
    const read = s.readTranscriptNow(key);
    gone.mockRestore();
    expect(read?.unreadable).toEqual([{ seq: 1, uuid: null, position: 1 }]);
  });
});

describe('SqliteSessionStore: the derived index between reads', () => {
  const metaRow = () =>
    raw().prepare('SELECT mtime, next_seq FROM meta').get() as { mtime: number; next_seq: number };
  const until = async (done: () => boolean) => {
    const deadline = Date.now() + 40 * SIDECAR_DELAY_MS;
    while (!done() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 5));
  };

  it('a batch of only known uuids changes nothing, even once the index has caught up', async () => {
    const s = store();
    await s.append(key, [{ type: 'user', uuid: 'a' }]);
    await s.append(key, [{ type: 'user', uuid: 'b' }]);
    s.sync();
    const before = { meta: metaRow(), summaries: raw().prepare('SELECT * FROM summaries').all() };
    await new Promise((resolve) => setTimeout(resolve, 5));
    await s.append(key, [{ type: 'user', uuid: 'b' }]);
    await s.append(key, [
      { type: 'user', uuid: 'a' },
      { type: 'user', uuid: 'b' },
    ]);
    s.sync();
    await new Promise((resolve) => setTimeout(resolve, 2 * SIDECAR_DELAY_MS));
    expect({ meta: metaRow(), summaries: raw().prepare('SELECT * FROM summaries').all() }).toEqual(before);
  });

  it('reads change nothing: two listings without an append between them give the same mtime', async () => {
    const s = store();
    await s.append(key, [{ type: 'user', uuid: 'a' }]);
    await s.append(key, [{ type: 'user', uuid: 'b' }]);
    const first = await s.listSessions(key.projectKey);
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect(await s.listSessions(key.projectKey)).toEqual(first);
    expect((await s.listSessionSummaries(key.projectKey))[0]?.mtime).toBe(first[0]?.mtime);
  });

  it('keeps catching up within SIDECAR_DELAY_MS after a read brought it up to date, round after round', async () => {
    const s = store();
    await s.append(key, [{ type: 'user', uuid: 'a' }]);
    for (const [round, uuid] of ['b', 'c', 'd'].entries()) {
      await s.append(key, [{ type: 'user', uuid }]);
      if (round === 0)
        await s.listSessions(key.projectKey); // a read folds at once
      else await until(() => metaRow().next_seq === round + 2);
      expect(metaRow().next_seq).toBe(round + 2);
    }
  });

  it('reads work while another process holds the write lock (nothing to fold, so nothing written)', async () => {
    const s = store({ busyTimeoutMs: 50 });
    await s.append(key, [{ type: 'user', uuid: 'a' }]);
    await s.listSessions(key.projectKey);
    const other = raw();
    other.prepare('BEGIN IMMEDIATE').run();
    expect((await s.listSessions(key.projectKey)).map((row) => row.sessionId)).toEqual([key.sessionId]);
    expect(await s.listSessionSummaries(key.projectKey)).toHaveLength(1);
    expect(await s.listSubkeys(key)).toEqual([]);
    expect(s.projects()).toEqual([key.projectKey]);
    expect(await s.lastCostState(key)).toBeNull();
    other.prepare('ROLLBACK').run();
  });

  it('a key deleted and written again has its meta row at once, as any first append does', async () => {
    const s = store();
    await s.append(key, [{ type: 'user', uuid: 'a' }]);
    await s.append(key, [{ type: 'user', uuid: 'b' }]);
    await s.delete(key);
    expect(s.hasSession(key.projectKey, key.sessionId)).toBe(false);
    await s.append(key, [{ type: 'user', uuid: 'c' }]);
    expect(s.hasSession(key.projectKey, key.sessionId)).toBe(true);
    expect(metaRow().next_seq).toBe(1);
  });

  it('a pending fold does not keep the process alive, and close folds it', async () => {
    const timers = () => process.getActiveResourcesInfo().filter((kind) => kind === 'Timeout').length;
    const s = store();
    await s.append(key, [{ type: 'user', uuid: 'a' }]);
    const before = timers();
    await s.append(key, [{ type: 'user', uuid: 'b' }]);
    expect(timers()).toBe(before);
    s.close();
    s.close(); // a second close is nothing
    expect(metaRow().next_seq).toBe(2);
  });

  it('an empty batch first changes nothing: the first real append still writes its meta row at once', async () => {
    const s = store();
    await s.append(key, []);
    await s.append(key, [{ type: 'user', uuid: 'a' }]);
    expect(s.hasSession(key.projectKey, key.sessionId)).toBe(true);
    expect(metaRow().next_seq).toBe(1);
  });

  it('null and arrays are no entries: the batch is refused whole, naming the entry', async () => {
    const s = store();
    for (const bad of [null, ['a'], 7]) {
      await expect(s.append(key, [{ type: 'user', uuid: 'a' }, bad as never])).rejects.toThrow(
        /entry 1 .* not a JSON object\. Nothing from this batch was written\./,
      );
      await expect(s.append(key, [bad as never])).rejects.toThrow(/entry 0 .* not a JSON object/);
    }
    expect(await s.load(key)).toBeNull();
  });

  it('errors say what they are', async () => {
    const s = store();
    const error = await s.append(key, ['x' as never]).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(SessionStoreError);
    expect((error as SessionStoreError).name).toBe('SessionStoreError');
    expect((error as SessionStoreError).file).toBe(file);
  });
});

describe('SqliteSessionStore: two writers and a crash, for the derived index', () => {
  it("a store folding late keeps the other store's newer cost-state as the newest", async () => {
    const late = store();
    const early = store();
    await late.append(key, [{ type: 'user', uuid: 'first' }]);
    await late.append(key, [cost(1) as never]); // deferred: not folded yet
    await early.append(key, [cost(2) as never]);
    early.sync();
    late.sync();
    expect((await late.lastCostState(key))?.totalCostUSD).toBe(2);
    expect((await early.lastCostState(key))?.totalCostUSD).toBe(2);
  });

  it('a store folding late, after a third one folded its rows at open, keeps the newer cost-state', async () => {
    const late = store();
    const early = store();
    await late.append(key, [{ type: 'user', uuid: 'first' }]);
    await late.append(key, [cost(1) as never]); // seq 1, deferred
    await early.append(key, [cost(2) as never]); // seq 2, deferred
    store(); // opening folds both as rows left behind, and records every row as looked at
    late.sync();
    expect((await late.lastCostState(key))?.totalCostUSD).toBe(2);
    early.sync();
    expect((await late.lastCostState(key))?.totalCostUSD).toBe(2);
  });

  it("a cost-state in a row an untracked writer added between this store's appends stays found", async () => {
    const s = store();
    await s.append(key, [{ type: 'user', uuid: 'a' }]);
    plant([[storeKeyOf(key), 1, null, cost(7)]]);
    await s.append(key, [{ type: 'user', uuid: 'b' }]);
    s.sync(); // folds seq 2 only: seq 1 was never looked at
    expect((await s.lastCostState(key))?.totalCostUSD).toBe(7);
  });

  it('records how far every row was looked at while one store writes alone', async () => {
    const s = store();
    const indexed = () => raw().prepare('SELECT next_seq, indexed_to FROM meta').get();
    await s.append(key, [{ type: 'user', uuid: 'a' }, cost(1) as never]);
    expect(indexed()).toEqual({ next_seq: 2, indexed_to: 2 });
    await s.append(key, [{ type: 'user', uuid: 'b' }]);
    await s.append(key, [
      { type: 'user', uuid: 'c' },
      { type: 'user', uuid: 'd' },
    ]);
    s.sync();
    expect(indexed()).toEqual({ next_seq: 5, indexed_to: 5 });
    // A fold without a cost-state keeps the record of the earlier one.
    expect((await s.lastCostState(key))?.totalCostUSD).toBe(1);
  });

  it('rows another store deleted before this one folded them bring back no session', async () => {
    const writer = store();
    const remover = store();
    await writer.append(key, [{ type: 'user', uuid: 'a' }]);
    await writer.append(key, [{ type: 'custom-title', customTitle: 'gone', uuid: 'b' }]); // deferred
    await remover.delete(key);
    writer.sync();
    expect(remover.hasSession(key.projectKey, key.sessionId)).toBe(false);
    expect(await remover.listSessions(key.projectKey)).toEqual([]);
    expect(await remover.listSessionSummaries(key.projectKey)).toEqual([]);
    await writer.append(key, [{ type: 'user', uuid: 'c' }]);
    writer.sync();
    expect(raw().prepare('SELECT next_seq FROM meta').pluck().all()).toEqual([1]);
  });

  it("rows a crash left under a subagent's key are folded as that key's, never into the session's summary", async () => {
    const s = store();
    const t = new TranscriptBuilder();
    t.prompt('Port the parser');
    await s.append(key, t.entries);
    const sub = { ...key, subpath: 'subagents/agent-abc' };
    await s.append(sub, [{ type: 'user', uuid: 's0' }]);
    s.close();
    const summaryBefore = raw().prepare('SELECT data FROM summaries').pluck().get();
    const db = raw();
    db.prepare('INSERT INTO entries VALUES (?, ?, ?, ?)').run(
      storeKeyOf(sub),
      1,
      's1',
      JSON.stringify({ type: 'custom-title', customTitle: 'from the subagent' }),
    );
    const reopened = store();
    expect(raw().prepare('SELECT next_seq FROM meta WHERE store_key = ?').pluck().get(storeKeyOf(sub))).toBe(
      2,
    );
    expect(raw().prepare('SELECT data FROM summaries').pluck().all()).toEqual([summaryBefore]);
    expect((await reopened.listSessionSummaries(key.projectKey))[0]?.data).not.toHaveProperty('customTitle');
  });
});

describe("SqliteSessionStore: SQLite's failures, said with what to do", () => {
  /** Makes the next statement `iterate` (every load runs one) fail as SQLite would with `failure`. */
  const failNextRead = (failure: unknown) => {
    const statement = Object.getPrototypeOf(raw().prepare('SELECT 1')) as {
      iterate: (...args: unknown[]) => unknown;
    };
    const iterate = statement.iterate;
    const spy = vi.spyOn(statement, 'iterate').mockImplementationOnce(() => {
      throw failure;
    });
    return () => {
      spy.mockRestore();
      statement.iterate = iterate;
    };
  };
  const sqliteError = (code: string) => new Database.SqliteError(`${code} happened`, code);

  it.each([
    ['SQLITE_BUSY', 'Another process is holding it locked'],
    ['SQLITE_BUSY_SNAPSHOT', 'Another process is holding it locked'],
    ['SQLITE_LOCKED', 'Another process is holding it locked'],
    ['SQLITE_LOCKED_SHAREDCACHE', 'Another process is holding it locked'],
    ['SQLITE_NOTADB', 'It is not a readable SQLite database. Move it aside'],
    ['SQLITE_CORRUPT', 'It is not a readable SQLite database. Move it aside'],
    ['SQLITE_CORRUPT_INDEX', 'It is not a readable SQLite database. Move it aside'],
    ['SQLITE_READONLY', 'It cannot be opened for writing; check that the directory exists'],
    ['SQLITE_READONLY_DBMOVED', 'It cannot be opened for writing; check that the directory exists'],
    ['SQLITE_CANTOPEN', 'It cannot be opened for writing; check that the directory exists'],
    ['SQLITE_CANTOPEN_ISDIR', 'It cannot be opened for writing; check that the directory exists'],
    ['SQLITE_PERM', 'It cannot be opened for writing; check that the directory exists'],
    ['SQLITE_IOERR_WRITE', 'Nothing was changed by this operation.'],
  ])('%s: the message names the file, the operation, the cause and what to do', async (code, advice) => {
    const s = store();
    await s.append(key, [{ type: 'user', uuid: 'a' }]);
    const restore = failNextRead(sqliteError(code));
    const error = await s.load(key).catch((caught: unknown) => caught);
    restore();
    expect(error).toBeInstanceOf(SessionStoreError);
    expect((error as Error).message).toContain(
      `Session database ${file}: could not load -tmp-x-ws/a1b2 (${code} happened). ${advice}`,
    );
    expect((error as Error & { cause: unknown }).cause).toBeInstanceOf(Database.SqliteError);
  });

  it('a failure that is no error at all, or has no code, is still said in one line with the file', async () => {
    const s = store();
    await s.append(key, [{ type: 'user', uuid: 'a' }]);
    for (const [failure, words] of [
      ['a bare string', 'a bare string'],
      [new Error('no code here'), 'no code here'],
    ] as const) {
      const restore = failNextRead(failure);
      const error = await s.load(key).catch((caught: unknown) => caught);
      restore();
      expect((error as Error).message).toBe(
        `Session database ${file}: could not load -tmp-x-ws/a1b2 (${words}). Nothing was changed by this operation.`,
      );
    }
  });

  it('every operation names itself when SQLite fails it, and when it refuses a key', async () => {
    const s = store();
    await s.append(key, [{ type: 'user', uuid: 'a' }]);
    s.sync();
    // Each operation, with the words it refuses a bad key with, run on `bad` (its project key 'a/b').
    const bad = { projectKey: 'a/b', sessionId: 'x' };
    const operations: Array<[string, string, (on: SessionKey) => unknown]> = [
      [
        'append to -tmp-x-ws/a1b2',
        'store entries under',
        (on) => s.appendNow(on, [{ type: 'user', uuid: 'b' }]),
      ],
      ['load -tmp-x-ws/a1b2', 'load', (on) => s.loadRaw(on)],
      ['load -tmp-x-ws/a1b2', 'load', (on) => s.readTranscriptNow(on)],
      ['load -tmp-x-ws/a1b2', 'load', (on) => s.entriesFrom(on, 0)],
      ['read the cost of -tmp-x-ws/a1b2', 'read the cost of', (on) => s.lastCostStateNow(on)],
      ['list sessions', 'list the sessions of', (on) => s.listSessions(on.projectKey)],
      ['list summaries', 'list the summaries of', (on) => s.listSessionSummaries(on.projectKey)],
      ['delete -tmp-x-ws/a1b2', 'delete', (on) => s.delete(on)],
      ['list subkeys', 'list the subkeys of', (on) => s.listSubkeys(on)],
      ['count entries', 'count the entries of', (on) => s.entryCounts(on.projectKey)],
      ['look up a session', 'look up', (on) => s.hasSession(on.projectKey, on.sessionId)],
      ['read -tmp-x-ws/a1b2', 'read the context of', (on) => s.lastContext(on.projectKey, on.sessionId)],
      ['mark -tmp-x-ws/a1b2', 'mark the transcripts of', (on) => s.nextSeqs(on.projectKey, on.sessionId)],
      ['list projects', '', () => s.projects()],
    ];
    const statement = Object.getPrototypeOf(raw().prepare('SELECT 1')) as Record<
      'all' | 'get' | 'iterate' | 'run',
      () => unknown
    >;
    for (const [action, refusal, operation] of operations) {
      const spies = (['all', 'get', 'iterate', 'run'] as const).map((method) =>
        vi.spyOn(statement, method).mockImplementation(() => {
          throw new Database.SqliteError('disk I/O error', 'SQLITE_IOERR');
        }),
      );
      const error = await Promise.resolve()
        .then(() => operation(key))
        .catch((caught: unknown) => caught);
      for (const spy of spies) spy.mockRestore();
      expect([action, (error as Error).message]).toEqual([
        action,
        `Session database ${file}: could not ${action} (disk I/O error). Nothing was changed by this operation.`,
      ]);
      expect((error as Error & { cause?: unknown }).cause).toBeInstanceOf(Database.SqliteError);
      if (refusal === '') continue;
      const refused = await Promise.resolve()
        .then(() => operation(bad))
        .catch((caught: unknown) => caught);
      expect([action, (refused as Error).message]).toEqual([
        action,
        expect.stringMatching(new RegExp(`^Refusing to ${refusal} the session key \\{`)),
      ]);
    }
  });

  it('a lookup SQLite fails while naming an unreadable row says it was loading the key', async () => {
    const s = await withUnreadableSecond();
    const get = vi.spyOn(statementMethods(), 'get').mockImplementationOnce(() => {
      throw new Database.SqliteError('disk I/O error', 'SQLITE_IOERR');
    });
    const error = (() => {
      try {
        s.readTranscriptNow(key);
      } catch (caught) {
        return caught;
      }
    })();
    get.mockRestore();
    expect((error as Error).message).toBe(
      `Session database ${file}: could not load -tmp-x-ws/a1b2 (disk I/O error). Nothing was changed by this operation.`,
    );
  });

  it('a fold that SQLite fails says so, and the rows wait for the next read', async () => {
    const s = store();
    await s.append(key, [{ type: 'user', uuid: 'a' }]);
    await s.append(key, [{ type: 'user', uuid: 'b' }]);
    const statement = Object.getPrototypeOf(raw().prepare('SELECT 1')) as Record<'run', () => unknown>;
    const spy = vi.spyOn(statement, 'run').mockImplementation(() => {
      throw new Database.SqliteError('disk I/O error', 'SQLITE_IOERR');
    });
    const error = await s.listSessions(key.projectKey).catch((caught: unknown) => caught);
    spy.mockRestore();
    expect((error as Error).message).toBe(
      `Session database ${file}: could not update the session index (disk I/O error). Nothing was changed by this operation.`,
    );
    expect((await s.listSessions(key.projectKey)).map((row) => row.sessionId)).toEqual([key.sessionId]);
    expect(raw().prepare('SELECT next_seq FROM meta').pluck().get()).toBe(2);
  });

  it('a directory where the file should be, and a damaged page, say what to do', async () => {
    mkdirSync(file, { recursive: true });
    expect(() => new SqliteSessionStore(file)).toThrow(
      `Session database ${file}: could not open (unable to open database file). It cannot be opened for writing; check that the directory exists and that you may write to it.`,
    );
    rmSync(file, { recursive: true });
    const s = store();
    for (let index = 0; index < 300; index += 1)
      await s.append(key, [{ type: 'user', uuid: `u${index}`, text: 'x'.repeat(500) } as never]);
    s.sync();
    raw().pragma('wal_checkpoint(TRUNCATE)');
    const size = statSync(file).size;
    const handle = openSync(file, 'r+');
    writeSync(handle, Buffer.alloc(size - 8192, 0x41), 0, size - 8192, 4096);
    closeSync(handle);
    await expect(s.load(key)).rejects.toThrow(
      /could not load -tmp-x-ws\/a1b2 \(database disk image is malformed\)\. It is not a readable SQLite database\. Move it aside/,
    );
  });
});

describe('SqliteSessionStore: a full disk', () => {
  // Needs root to mount a size-limited tmpfs (CI runs as root); elsewhere the test says it skipped.
  const disk = smallDisk(2 * 1024 * 1024);
  afterEach(() => disk?.free());
  afterAll(() => disk?.release());

  it.runIf(disk !== undefined)(
    'an append resolves only for entries that are in the file: one entry per call on a full disk is refused, not acknowledged and lost',
    async () => {
      // Observed in the disk-full e2e: a subagent's last entry acknowledged while the disk filled,
      // then missing from sessions.db while the run said every entry was written.
      const full = disk as NonNullable<typeof disk>;
      const onDisk = path.join(full.path, 'sessions.db');
      const s = new SqliteSessionStore(onDisk);
      const t = new TranscriptBuilder();
      t.prompt('Fill the disk');
      await s.append(key, t.entries); // the key's first append, with its meta row
      full.fill();
      let acknowledged = 0;
      for (let index = 0; index < 20; index += 1) {
        t.say(`entry ${index} ${'x'.repeat(3000)}`);
        try {
          await s.append(key, [t.entries.at(-1) as never]);
          acknowledged += 1;
        } catch (error) {
          expect((error as Error).message).toMatch(/full/);
        }
      }
      full.free();
      s.close();
      const reopened = new SqliteSessionStore(onDisk);
      open.push(reopened);
      expect(((await reopened.load(key)) ?? []).length).toBe(1 + acknowledged);
      expect(acknowledged).toBeLessThan(20);
    },
  );
});
