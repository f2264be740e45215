import { describe, expect, it } from 'vitest';
import {
  type CollectOptions,
  collectStore,
  type DroppedSession,
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
