/**
 * The mirrored session backend: the local SQLite store decides (a failed local append sends
 * nothing), every batch it took is sent behind it in order as it was at the append (the SDK may
 * reuse its array), reads come from the local store only, and a delete reaches both.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { SessionKey, SessionStoreEntry } from '@anthropic-ai/claude-agent-sdk';
import { afterEach, describe, expect, it } from 'vitest';
import type { SessionBackend } from '../../../../src/store/backend.js';
import { MirroredSessionStore } from '../../../../src/store/shared/mirrored-store.js';
import { outageNotice, WriteBehindQueue } from '../../../../src/store/shared/write-behind.js';
import { SqliteSessionStore } from '../../../../src/store/sqlite-session-store.js';
import { sharedStoresPerTest, usePostgres } from '../../../support/postgres.js';

const postgres = usePostgres();
const { open } = sharedStoresPerTest(postgres, 'mirror');
const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const key = { projectKey: 'p', sessionId: 's' };
const user = (uuid: string): SessionStoreEntry => ({ type: 'user', uuid, message: { content: uuid } });

async function mirrored() {
  const dir = mkdtempSync(join(tmpdir(), 'flower-mirror-'));
  dirs.push(dir);
  const local = new SqliteSessionStore(join(dir, 'sessions.db'));
  const shared = await open();
  const queue = new WriteBehindQueue({ notice: outageNotice('db', {}), retryDelayMs: 5 });
  return { local, shared, queue, store: new MirroredSessionStore(local, shared.sessions, queue) };
}

/** A local store that holds nothing and has none of the optional fast paths. */
const emptyLocal = (): SessionBackend => ({
  append: async () => {},
  delete: async () => {},
  load: async () => null,
  listSessions: async () => [],
  listSessionSummaries: async () => [],
  listSubkeys: async () => [],
});

describe('MirroredSessionStore', () => {
  it('sends each batch behind the local store, as it was when appended', async () => {
    const { local, shared, queue, store } = await mirrored();
    // A job ahead of the batches, so they wait in the queue while the SDK reuses its array.
    let release: () => void = () => {};
    queue.push('ahead', () => new Promise<void>((resolve) => (release = resolve)));
    const batch = [user('a'), user('b')];
    await store.append(key, batch);
    batch.length = 0; // the SDK reuses its array
    batch.push(user('c'));
    await store.append(key, batch);
    release();
    expect(await queue.flush(5000)).toBe(true);
    expect((await shared.sessions.load(key))?.map((entry) => entry.uuid)).toEqual(['a', 'b', 'c']);
    expect((await local.load(key))?.map((entry) => entry.uuid)).toEqual(['a', 'b', 'c']);
    local.close();
  });

  it('a failed local append fails and sends nothing', async () => {
    const { local, shared, queue, store } = await mirrored();
    local.close();
    await expect(store.append(key, [user('a')])).rejects.toThrow();
    expect(queue.pending).toBe(0);
    expect(await shared.sessions.load(key)).toBeNull();
  });

  it('reads only the local store, and deletes on both', async () => {
    const { local, shared, queue, store } = await mirrored();
    await shared.sessions.append(key, [user('only-shared')]);
    expect(await store.load(key)).toBeNull();
    await store.append(key, [user('a')]);
    expect(await queue.flush(5000)).toBe(true);
    await store.delete(key);
    expect(await queue.flush(5000)).toBe(true);
    expect(await local.load(key)).toBeNull();
    expect(await shared.sessions.load(key)).toBeNull();
    local.close();
  });

  it('reads every listing from the local store, and its fast paths when it has them', async () => {
    const calls: string[] = [];
    const transcript = { entries: [user('t')], unreadable: [], owned: true };
    const local = {
      location: '/runs/sessions.db',
      append: async () => {},
      delete: async () => {},
      load: async () => [user('l')],
      listSessions: async (projectKey: string) => {
        calls.push(`listSessions ${projectKey}`);
        return [{ sessionId: 's', mtime: 7 }];
      },
      listSessionSummaries: async (projectKey: string) => {
        calls.push(`listSessionSummaries ${projectKey}`);
        return [{ sessionId: 's', mtime: 7, data: {} }];
      },
      listSubkeys: async (key: { sessionId: string }) => {
        calls.push(`listSubkeys ${key.sessionId}`);
        return ['subagents/agent-a'];
      },
      readTranscript: async (read: SessionKey) => (read.sessionId === 's' ? transcript : null),
      lastCostState: async (read: SessionKey) => (read.sessionId === 's' ? user('cost') : null),
      close: () => {
        calls.push('close');
      },
    } satisfies SessionBackend;
    const shared = {
      append: async () => void calls.push('shared append'),
      delete: async () => void calls.push('shared delete'),
    };
    const queue = new WriteBehindQueue({ notice: outageNotice('db', {}), retryDelayMs: 5 });
    const store = new MirroredSessionStore(local, shared, queue);
    expect(store.location).toBe('/runs/sessions.db');
    expect(await store.load(key)).toEqual([user('l')]);
    expect(await store.listSessions('p')).toEqual([{ sessionId: 's', mtime: 7 }]);
    expect(await store.listSessionSummaries('p')).toEqual([{ sessionId: 's', mtime: 7, data: {} }]);
    expect(await store.listSubkeys(key)).toEqual(['subagents/agent-a']);
    expect(await store.readTranscript?.(key)).toBe(transcript);
    expect(await store.readTranscript?.({ ...key, sessionId: 'x' })).toBeNull();
    expect(await store.lastCostState?.(key)).toEqual(user('cost'));
    expect(await store.lastCostState?.({ ...key, sessionId: 'x' })).toBeNull();
    await store.close();
    expect(calls).toEqual(['listSessions p', 'listSessionSummaries p', 'listSubkeys s', 'close']);
  });

  it('a local store without the fast paths or close gives none (the rewriting layer falls back)', async () => {
    const local = emptyLocal();
    const shared = { append: async () => {}, delete: async () => {} };
    const queue = new WriteBehindQueue({ notice: outageNotice('db', {}), retryDelayMs: 5 });
    const store = new MirroredSessionStore(local, shared, queue);
    expect(store.readTranscript).toBeUndefined();
    expect(store.lastCostState).toBeUndefined();
    expect(store.location).toBeUndefined();
    expect(await store.close()).toBeUndefined();
  });

  it('an empty batch sends nothing; a refused change is said by what it was and for which key', async () => {
    const refused: string[] = [];
    const sent: Array<{ key: SessionKey; entries?: SessionStoreEntry[] }> = [];
    const local = emptyLocal();
    const refusal = () => Object.assign(new Error('value too long'), { code: '22001' });
    const shared = {
      append: async (appended: SessionKey, entries: SessionStoreEntry[]) => {
        sent.push({ key: appended, entries });
        throw refusal();
      },
      delete: async (deleted: SessionKey) => {
        sent.push({ key: deleted });
        throw refusal();
      },
    };
    const queue = new WriteBehindQueue({
      notice: outageNotice('db', {}),
      retryDelayMs: 5,
      onRefused: (label) => refused.push(label),
    });
    const store = new MirroredSessionStore(local, shared, queue);
    await store.append(key, []);
    expect(queue.pending).toBe(0);
    await store.append({ ...key, subpath: 'subagents/agent-a' }, [user('a')]);
    await store.delete(key);
    expect(await queue.flush(2000)).toBe(true);
    expect(sent).toEqual([{ key: { ...key, subpath: 'subagents/agent-a' }, entries: [user('a')] }, { key }]);
    expect(refused).toEqual(['append to p/s/subagents/agent-a', 'delete p/s']);
  });
});
