import type { SessionStoreEntry } from '@anthropic-ai/claude-agent-sdk';
import { describe, expect, it } from 'vitest';
import { missingEntries, syncSessions } from '../../../../src/store/shared/session-sync.js';
import type { SqliteSessionStore } from '../../../../src/store/sqlite-session-store.js';
import { sqliteStoresPerTest } from '../../../support/sqlite-stores.js';

const store = sqliteStoresPerTest('flower-sync-');

const counted = (backend: SqliteSessionStore) => ({
  entryCounts: (projectKey: string) => backend.entryCounts(projectKey),
  load: backend.load.bind(backend),
  append: backend.append.bind(backend),
});

const user = (uuid: string): SessionStoreEntry => ({ type: 'user', uuid, message: { content: uuid } });
const cost = (total: number): SessionStoreEntry => ({ type: 'cost-state', total }) as SessionStoreEntry;

describe('session sync', () => {
  it('finds what is missing by uuid, and copies of uuid-less entries by count', () => {
    const from = [user('a'), cost(1), user('b'), cost(1), cost(2)];
    expect(missingEntries(from, [user('a'), cost(1)])).toEqual([user('b'), cost(1), cost(2)]);
    expect(missingEntries(from, from)).toEqual([]);
    // A uuid the source holds twice is sent once.
    expect(missingEntries([user('a'), user('a')], [])).toEqual([user('a')]);
  });

  it('brings both sides level, subagents included, and a second run changes nothing', async () => {
    const local = store();
    const shared = store();
    const main = { projectKey: 'p', sessionId: 's1' };
    const sub = { ...main, subpath: 'subagents/agent-1' };
    await local.append(main, [user('a'), user('b'), cost(1)]);
    await local.append(sub, [user('w1')]);
    await shared.append(main, [user('a')]);
    await shared.append({ projectKey: 'p', sessionId: 's2' }, [user('x'), cost(3)]);
    await shared.append({ projectKey: 'other', sessionId: 's3' }, [user('y')]);

    const first = await syncSessions(counted(local), counted(shared), 'p');
    expect(first).toMatchObject({ keys: 3, differing: 3, pulled: 2, pushed: 3 });
    expect(await shared.load(main)).toEqual([user('a'), user('b'), cost(1)]);
    expect(await shared.load(sub)).toEqual([user('w1')]);
    expect(await local.load({ projectKey: 'p', sessionId: 's2' })).toEqual([user('x'), cost(3)]);
    // Another project is not this task's business.
    expect(local.hasSession('other', 's3')).toBe(false);

    const second = await syncSessions(counted(local), counted(shared), 'p');
    expect(second).toMatchObject({ keys: 3, differing: 0, pulled: 0, pushed: 0 });
  });
  it('leaves a session `only` rules out alone on both sides, subagents included (what gc dropped)', async () => {
    const local = store();
    const shared = store();
    const dropped = { projectKey: 'p', sessionId: 'dropped' };
    const gone = { projectKey: 'p', sessionId: 'gone-there' };
    await local.append(dropped, [user('a')]);
    await local.append({ ...dropped, subpath: 'subagents/agent-1' }, [user('w')]);
    await shared.append(gone, [user('b')]);
    await shared.append({ projectKey: 'p', sessionId: 'kept' }, [user('c')]);
    const outside = new Set(['dropped', 'gone-there']);
    const report = await syncSessions(counted(local), counted(shared), 'p', (id) => !outside.has(id));
    expect(report).toMatchObject({ keys: 1, pulled: 1, pushed: 0 });
    expect(shared.hasSession('p', 'dropped')).toBe(false);
    expect(await shared.load({ ...dropped, subpath: 'subagents/agent-1' })).toBeNull();
    expect(local.hasSession('p', 'gone-there')).toBe(false);
    expect(local.hasSession('p', 'kept')).toBe(true);
  });

  it('copies a main transcript before its subagents, whichever side lacks which', async () => {
    const local = store();
    const shared = store();
    const main = { projectKey: 'p', sessionId: 's1' };
    const sub = { ...main, subpath: 'subagents/agent-1' };
    await local.append(sub, [user('w1')]); // the local side has only the subagent
    await shared.append(main, [user('a')]); // the shared side only the main transcript
    const appended: string[] = [];
    const recording = (backend: SqliteSessionStore, side: string) => ({
      ...counted(backend),
      append: async (key: { subpath?: string }, entries: SessionStoreEntry[]) => {
        appended.push(`${side} ${key.subpath ?? 'main'}`);
        await backend.append(key as typeof main, entries);
      },
    });
    await syncSessions(recording(local, 'local'), recording(shared, 'shared'), 'p');
    expect(appended).toEqual(['local main', 'shared subagents/agent-1']);
  });
});
