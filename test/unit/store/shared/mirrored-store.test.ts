/**
 * The mirrored session backend: the local SQLite store decides (a failed local append sends
 * nothing), every batch it took is sent behind it in order as it was at the append (the SDK may
 * reuse its array), reads come from the local store only, and a delete reaches both.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { SessionStoreEntry } from '@anthropic-ai/claude-agent-sdk';
import { afterEach, describe, expect, it } from 'vitest';
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
});
