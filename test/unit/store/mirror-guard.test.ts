import type { SessionKey, SessionStore, SessionStoreEntry } from '@anthropic-ai/claude-agent-sdk';
import { describe, expect, it } from 'vitest';
import { type MirrorFailure, MirrorGuard } from '../../../src/store/mirror-guard.js';

const main: SessionKey = { projectKey: '-p', sessionId: 's1' };
const sub: SessionKey = { ...main, subpath: 'subagents/agent-a' };
const entry = (n: number): SessionStoreEntry => ({ type: 'user', uuid: `u${n}` });

/** A backend that records what it accepted and refuses while `refusing` is set. */
function backend() {
  const accepted = new Map<string, SessionStoreEntry[]>();
  const state = { refusing: false, calls: 0 };
  const store: SessionStore & typeof state = Object.assign(state, {
    async append(key: SessionKey, entries: SessionStoreEntry[]) {
      state.calls += 1;
      if (state.refusing) throw new Error('wrapper', { cause: new Error('database or disk is full') });
      const id = [key.sessionId, key.subpath].join('|');
      accepted.set(id, [...(accepted.get(id) ?? []), ...entries]);
    },
    async load() {
      return null;
    },
  });
  return {
    store,
    accepted,
    uuids: (key: SessionKey) =>
      (accepted.get([key.sessionId, key.subpath].join('|')) ?? []).map((e) => e.uuid),
  };
}

describe('MirrorGuard', () => {
  it('passes appends through while the backend accepts them', async () => {
    const { store, uuids } = backend();
    const guard = new MirrorGuard(store);
    await guard.append(main, [entry(1), entry(2)]);
    expect(uuids(main)).toEqual(['u1', 'u2']);
    expect(guard.holding).toBe(false);
  });

  it('holds a refused batch, resolves, and reports the backend cause once per refusal', async () => {
    const { store, uuids } = backend();
    const failures: MirrorFailure[] = [];
    const guard = new MirrorGuard(store, { onFailure: (failure) => failures.push(failure) });
    store.refusing = true;
    await expect(guard.append(main, [entry(1)])).resolves.toBeUndefined();
    expect(failures).toEqual([{ key: main, error: 'database or disk is full', held: 1 }]);
    expect(uuids(main)).toEqual([]);
    expect(guard.pending()).toMatchObject([{ key: main, entries: [entry(1)] }]);
  });

  it('writes held entries first, in their order, as soon as the backend accepts writes again', async () => {
    const { store, uuids } = backend();
    const caughtUp: number[] = [];
    const guard = new MirrorGuard(store, { onCaughtUp: (_key, count) => caughtUp.push(count) });
    await guard.append(main, [entry(1)]);
    store.refusing = true;
    await guard.append(main, [entry(2)]);
    await guard.append(main, [entry(3)]);
    store.refusing = false;
    await guard.append(main, [entry(4)]);
    expect(uuids(main)).toEqual(['u1', 'u2', 'u3', 'u4']);
    expect(caughtUp).toEqual([3]);
    expect(guard.holding).toBe(false);
  });

  it('keeps each key to itself: a refused subagent key does not hold up the main one', async () => {
    const { store, uuids } = backend();
    const guard = new MirrorGuard(store);
    store.refusing = true;
    await guard.append(sub, [entry(1)]);
    store.refusing = false;
    await guard.append(main, [entry(2)]);
    expect(uuids(main)).toEqual(['u2']);
    expect(uuids(sub)).toEqual([]);
    expect(await guard.flush()).toEqual([]);
    expect(uuids(sub)).toEqual(['u1']);
  });

  it('flush drains every held key, not just the first', async () => {
    const { store, uuids } = backend();
    const other: SessionKey = { projectKey: '-p', sessionId: 's2' };
    const guard = new MirrorGuard(store);
    store.refusing = true;
    await guard.append(main, [entry(1)]);
    await guard.append(sub, [entry(2)]);
    await guard.append(other, [entry(3)]);
    expect(guard.pending().map((held) => held.key)).toEqual([main, sub, other]);
    store.refusing = false;
    expect(await guard.flush()).toEqual([]);
    expect([uuids(main), uuids(sub), uuids(other)]).toEqual([['u1'], ['u2'], ['u3']]);
    expect(guard.holding).toBe(false);
  });

  it('flush returns what is still refused, and writes in chunks no larger than batchSize', async () => {
    const { store, accepted } = backend();
    const sizes: number[] = [];
    const counting: SessionStore = {
      append: async (key, entries) => {
        sizes.push(entries.length);
        await store.append(key, entries);
      },
      load: store.load,
    };
    const guard = new MirrorGuard(counting, { batchSize: 2 });
    store.refusing = true;
    await guard.append(main, [entry(1), entry(2), entry(3)]);
    expect((await guard.flush()).map((held) => held.entries.length)).toEqual([3]);
    store.refusing = false;
    sizes.length = 0;
    expect(await guard.flush()).toEqual([]);
    expect(sizes).toEqual([2, 1]);
    expect(accepted.get('s1|')?.length).toBe(3);
  });

  it('a batch size below one still drains the held entries, one at a time', async () => {
    const { store, uuids } = backend();
    const sizes: number[] = [];
    const counting: SessionStore = {
      append: async (key, entries) => {
        sizes.push(entries.length);
        // An empty chunk would never shorten the queue: refuse it rather than loop forever.
        if (entries.length === 0) throw new Error('empty append');
        await store.append(key, entries);
      },
      load: store.load,
    };
    const guard = new MirrorGuard(counting, { batchSize: 0 });
    store.refusing = true;
    await guard.append(main, [entry(1), entry(2)]);
    store.refusing = false;
    sizes.length = 0;
    expect(await guard.flush()).toEqual([]);
    expect(uuids(main)).toEqual(['u1', 'u2']);
    expect(sizes).toEqual([1, 1]);
  });

  it('never writes one held chunk twice when appends arrive before the previous one settled', async () => {
    const { store, uuids } = backend();
    const guard = new MirrorGuard(store);
    store.refusing = true;
    await guard.append(main, [entry(1)]);
    store.refusing = false;
    await Promise.all([guard.append(main, [entry(2)]), guard.append(main, [entry(3)]), guard.flush()]);
    expect(uuids(main)).toEqual(['u1', 'u2', 'u3']);
  });

  it('release forgets a key (it was saved elsewhere); optional backend methods stay optional', async () => {
    const { store } = backend();
    const guard = new MirrorGuard(store);
    store.refusing = true;
    await guard.append(main, [entry(1)]);
    guard.release(main);
    expect(guard.holding).toBe(false);
    expect(guard.listSessions).toBeUndefined();
    expect(guard.listSubkeys).toBeUndefined();
  });
});
