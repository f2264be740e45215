import type { SessionKey, SessionStoreEntry } from '@anthropic-ai/claude-agent-sdk';
import { describe, expect, it } from 'vitest';
import {
  type CollectableStore,
  type CollectOptions,
  collectStore,
  type DroppedSession,
  listTaskSessions,
} from '../../../src/runtime/retention/collect.js';
import type { SqliteSessionStore } from '../../../src/store/sqlite-session-store.js';
import { sqliteStoresPerTest } from '../../support/sqlite-stores.js';

const store = sqliteStoresPerTest('flower-collect-');

const projectKey = '-work';
const options = (
  parts: { live?: string[]; retired?: string[]; named?: string[] },
  dryRun = false,
): CollectOptions => ({
  references: {
    live: new Set(parts.live ?? []),
    retired: new Set(parts.retired ?? []),
    asides: new Set(),
    archived: new Set(),
    named: new Set(parts.named ?? []),
  },
  cutoffMs: Date.now() + 60_000,
  dryRun,
});

async function withRetired(sessions: SqliteSessionStore) {
  await sessions.append({ projectKey, sessionId: 's-old' }, [{ type: 'user', uuid: 'a' }]);
  await sessions.append({ projectKey, sessionId: 's-old', subpath: 'subagents/agent-1' }, [
    { type: 'user', uuid: 'b' },
    { type: 'user', uuid: 'c' },
  ]);
  await sessions.append({ projectKey, sessionId: 's-live' }, [{ type: 'user', uuid: 'd' }]);
}

/** The store lists one subagent more than it holds: a transcript gone between the listing and the read. */
function listAVanishedSubagent(store: {
  listSubkeys: (key: { projectKey: string; sessionId: string }) => Promise<string[]>;
}): void {
  const listSubkeys = store.listSubkeys.bind(store);
  store.listSubkeys = async (key) => [...(await listSubkeys(key)), 'subagents/agent-gone'];
}

describe('collectStore', () => {
  it('drops a retired session whole, counting its subagent transcripts, and keeps the live one', async () => {
    const sessions = store();
    await withRetired(sessions);
    const outcome = await collectStore(
      { label: 'runs/sessions.db', store: sessions, projectKeys: [projectKey] },
      options({ live: ['s-live'], retired: ['s-old'] }),
    );
    expect(outcome.freed.retired).toMatchObject({ sessions: ['s-old'], transcripts: 2, entries: 3 });
    expect(outcome.kept.live).toEqual(['s-live']);
    expect(await sessions.load({ projectKey, sessionId: 's-old' })).toBeNull();
    expect(await sessions.load({ projectKey, sessionId: 's-old', subpath: 'subagents/agent-1' })).toBeNull();
    expect(await sessions.load({ projectKey, sessionId: 's-live' })).not.toBeNull();
  });

  it('a dry run gives the same figures and deletes nothing', async () => {
    const sessions = store();
    await withRetired(sessions);
    const outcome = await collectStore(
      { label: 'runs/sessions.db', store: sessions, projectKeys: [projectKey] },
      options({ live: ['s-live'], retired: ['s-old'] }, true),
    );
    expect(outcome.freed.retired).toMatchObject({ sessions: ['s-old'], transcripts: 2, entries: 3 });
    expect(await sessions.load({ projectKey, sessionId: 's-old' })).not.toBeNull();
  });

  it('records the drops of a store before it deletes any of them, and a dry run records nothing', async () => {
    const sessions = store();
    await withRetired(sessions);
    const seen: Array<{ drops: string[]; storedThen: boolean }> = [];
    const record = async (drops: readonly DroppedSession[]) => {
      seen.push({
        drops: drops.map(({ session, kind }) => `${session.projectKey}/${session.sessionId}:${kind}`),
        storedThen: sessions.hasSession(projectKey, 's-old'),
      });
    };
    const target = { label: 'runs/sessions.db', store: sessions, projectKeys: [projectKey] };
    await collectStore(target, { ...options({ live: ['s-live'], retired: ['s-old'] }, true), record });
    expect(seen).toEqual([]);
    await collectStore(target, { ...options({ live: ['s-live'], retired: ['s-old'] }), record });
    expect(seen).toEqual([{ drops: [`${projectKey}/s-old:retired`], storedThen: true }]);
    expect(sessions.hasSession(projectKey, 's-old')).toBe(false);
  });

  it('deletes nothing when the drops cannot be recorded', async () => {
    const sessions = store();
    await withRetired(sessions);
    const record = () => Promise.reject(new Error('disk full'));
    await expect(
      collectStore(
        { label: 'runs/sessions.db', store: sessions, projectKeys: [projectKey] },
        { ...options({ live: ['s-live'], retired: ['s-old'] }), record },
      ),
    ).rejects.toThrow('disk full');
    expect(sessions.hasSession(projectKey, 's-old')).toBe(true);
  });

  it("in the asides' store, drops what the books do not name and keeps what they do", async () => {
    const sessions = store();
    await sessions.append({ projectKey, sessionId: 's-aside' }, [{ type: 'user', uuid: 'a' }]);
    await sessions.append({ projectKey, sessionId: 's-judge' }, [{ type: 'user', uuid: 'b' }]);
    const outcome = await collectStore(
      { label: 'runs/aside/sessions.db', store: sessions, projectKeys: [projectKey], allAsides: true },
      options({ named: ['s-judge'] }),
    );
    expect(outcome.freed.aside.sessions).toEqual(['s-aside']);
    expect(outcome.kept.unclaimed).toEqual(['s-judge']);
  });
});

/** A store in memory: sessions by `projectKey/sessionId`, transcripts by subpath ('' for the main one). */
function memoryStore(
  sessions: Record<
    string,
    { mtime: number; transcripts: Record<string, SessionStoreEntry[]>; unreadable?: number }
  >,
  withReadTranscript: boolean,
) {
  const deleted: SessionKey[] = [];
  const store: CollectableStore = {
    listSessions: async (key) =>
      Object.entries(sessions)
        .filter(([id]) => id.startsWith(`${key}/`))
        .map(([id, session]) => ({ sessionId: id.slice(key.length + 1), mtime: session.mtime })),
    listSubkeys: async (key) =>
      Object.keys(sessions[`${key.projectKey}/${key.sessionId}`]?.transcripts ?? {}).filter(
        (sub) => sub !== '',
      ),
    load: async (key) =>
      sessions[`${key.projectKey}/${key.sessionId}`]?.transcripts[key.subpath ?? ''] ?? null,
    delete: async (key) => {
      if (key.sessionId === 's-stuck') throw new Error('database is locked');
      deleted.push(key);
      delete sessions[`${key.projectKey}/${key.sessionId}`];
    },
  };
  if (withReadTranscript)
    store.readTranscript = async (key) => {
      const session = sessions[`${key.projectKey}/${key.sessionId}`];
      const entries = session?.transcripts[key.subpath ?? ''];
      if (entries === undefined) return null;
      const unreadable = key.subpath === undefined ? (session?.unreadable ?? 0) : 0;
      return {
        entries,
        unreadable: Array.from({ length: unreadable }, (_, index) => ({ seq: index, raw: '{' })),
      } as never;
    };
  return { store, deleted };
}

const entry = (text: string): SessionStoreEntry => ({ type: 'user', uuid: text });
const bytesOf = (...entries: SessionStoreEntry[]) =>
  entries.reduce((sum, one) => sum + Buffer.byteLength(JSON.stringify(one)), 0);

describe('collectStore: what it measures and drops', () => {
  for (const withReadTranscript of [true, false])
    it(`adds up every dropped session of a kind, in bytes of their JSON text (${withReadTranscript ? 'readTranscript' : 'load'})`, async () => {
      const { store, deleted } = memoryStore(
        {
          '-work/s-1': {
            mtime: 1,
            transcripts: { '': [entry('a'), entry('bé')], 'subagents/agent-1': [entry('c')] },
          },
          '-work/s-2': { mtime: 1, transcripts: { '': [entry('d')] } },
          '-work/s-3': { mtime: 1, transcripts: { '': [entry('e')], 'subagents/agent-9': [] } },
        },
        withReadTranscript,
      );
      const outcome = await collectStore(
        { label: 'memory', store, projectKeys: [projectKey] },
        {
          ...options({ retired: ['s-1', 's-2'] }),
          references: {
            ...options({}).references,
            retired: new Set(['s-1', 's-2']),
            archived: new Set(['s-3']),
          },
        },
      );
      expect(outcome.label).toBe('memory');
      expect(outcome.freed.retired).toEqual({
        sessions: ['s-1', 's-2'],
        transcripts: 3,
        entries: 4,
        bytes: bytesOf(entry('a'), entry('bé'), entry('c'), entry('d')),
      });
      expect(outcome.freed.archived).toEqual({
        sessions: ['s-3'],
        transcripts: 2,
        entries: 1,
        bytes: bytesOf(entry('e')),
      });
      expect(outcome.freed.aside).toEqual({ sessions: [], transcripts: 0, entries: 0, bytes: 0 });
      expect(outcome.kept).toEqual({ live: [], recent: [], unclaimed: [] });
      expect(deleted).toEqual([
        { projectKey, sessionId: 's-1' },
        { projectKey, sessionId: 's-2' },
        { projectKey, sessionId: 's-3' },
      ]);
    });

  it('counts the rows the backend could not read as entries, and a transcript gone meanwhile as empty', async () => {
    const { store } = memoryStore(
      {
        '-work/s-1': {
          mtime: 1,
          transcripts: { '': [entry('a')], 'subagents/agent-1': [entry('b')] },
          unreadable: 2,
        },
      },
      true,
    );
    listAVanishedSubagent(store);
    const outcome = await collectStore(
      { label: 'm', store, projectKeys: [projectKey] },
      options({ retired: ['s-1'] }),
    );
    expect(outcome.freed.retired).toEqual({
      sessions: ['s-1'],
      transcripts: 3,
      entries: 4,
      bytes: bytesOf(entry('a'), entry('b')),
    });
  });

  it('reads a transcript gone meanwhile as empty through load too', async () => {
    const { store } = memoryStore({ '-work/s-1': { mtime: 1, transcripts: { '': [entry('a')] } } }, false);
    listAVanishedSubagent(store);
    const outcome = await collectStore(
      { label: 'm', store, projectKeys: [projectKey] },
      options({ retired: ['s-1'] }),
    );
    expect(outcome.freed.retired).toEqual({
      sessions: ['s-1'],
      transcripts: 2,
      entries: 1,
      bytes: bytesOf(entry('a')),
    });
  });

  it('keeps what is live, what was written after the cutoff and what the books do not claim, saying why', async () => {
    const now = Date.now();
    const { store, deleted } = memoryStore(
      {
        '-work/s-live': { mtime: 1, transcripts: { '': [entry('a')] } },
        '-work/s-new': { mtime: now, transcripts: { '': [entry('b')] } },
        '-work/s-who': { mtime: 1, transcripts: { '': [entry('c')] } },
      },
      true,
    );
    const recorded: DroppedSession[][] = [];
    const outcome = await collectStore(
      { label: 'm', store, projectKeys: [projectKey] },
      {
        ...options({ live: ['s-live'], retired: ['s-live', 's-new'] }),
        cutoffMs: now,
        record: (drops) => {
          recorded.push([...drops]);
        },
      },
    );
    expect(outcome.kept).toEqual({ live: ['s-live'], recent: ['s-new'], unclaimed: ['s-who'] });
    expect(deleted).toEqual([]);
    // Nothing to drop, nothing to record.
    expect(recorded).toEqual([]);
  });

  it('stops at a drop that fails, with the backend’s error; what was dropped before stays dropped', async () => {
    const { store, deleted } = memoryStore(
      {
        '-work/s-1': { mtime: 1, transcripts: { '': [entry('a')] } },
        '-work/s-stuck': { mtime: 1, transcripts: { '': [entry('b')] } },
        '-work/s-3': { mtime: 1, transcripts: { '': [entry('c')] } },
      },
      true,
    );
    await expect(
      collectStore(
        { label: 'm', store, projectKeys: [projectKey] },
        options({ retired: ['s-1', 's-stuck', 's-3'] }),
      ),
    ).rejects.toThrow('database is locked');
    expect(deleted).toEqual([{ projectKey, sessionId: 's-1' }]);
  });

  it("in the asides' store with no named sessions, every session is an aside", async () => {
    const { store } = memoryStore({ '-work/s-a': { mtime: 1, transcripts: { '': [entry('a')] } } }, true);
    const references = {
      ...options({}).references,
      named: undefined,
    } as unknown as CollectOptions['references'];
    const outcome = await collectStore(
      { label: 'm', store, projectKeys: [projectKey], allAsides: true },
      { ...options({}), references },
    );
    expect(outcome.freed.aside.sessions).toEqual(['s-a']);
  });

  it("keeps the asides the books already name as asides, in the asides' store or any other", async () => {
    const { store } = memoryStore(
      {
        '-work/s-a': { mtime: 1, transcripts: { '': [entry('a')] } },
        '-work/s-b': { mtime: 1, transcripts: { '': [] } },
      },
      true,
    );
    const references = { ...options({ named: ['s-a'] }).references, asides: new Set(['s-a']) };
    const aside = await collectStore(
      { label: 'm', store, projectKeys: [projectKey], allAsides: true },
      { ...options({}), references },
    );
    expect(aside.freed.aside.sessions).toEqual(['s-a', 's-b']);
  });
});

describe('listTaskSessions', () => {
  it('lists the main sessions under each of the task’s project keys once', async () => {
    const { store } = memoryStore(
      {
        '-a/s-1': { mtime: 5, transcripts: { '': [] } },
        '-b/s-2': { mtime: 6, transcripts: { '': [] } },
        '-c/s-3': { mtime: 7, transcripts: { '': [] } },
      },
      false,
    );
    expect(await listTaskSessions({ label: 'm', store, projectKeys: ['-a', '-b', '-a'] })).toEqual([
      { projectKey: '-a', sessionId: 's-1', mtime: 5 },
      { projectKey: '-b', sessionId: 's-2', mtime: 6 },
    ]);
  });
});
