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

  it("reports the backend's own words: the cause when it is an error, else the error itself", async () => {
    const failures: string[] = [];
    const thrown: unknown[] = [
      new Error('plain refusal'),
      new Error('outer words', { cause: 'not an error' }),
      'a bare string',
    ];
    let next = 0;
    const refusing: SessionStore = {
      append: async () => {
        throw thrown[next++];
      },
      load: async () => null,
    };
    const guard = new MirrorGuard(refusing, { onFailure: (failure) => failures.push(failure.error) });
    for (const sessionId of ['a', 'b', 'c']) await guard.append({ projectKey: '-p', sessionId }, [entry(1)]);
    expect(failures).toEqual(['plain refusal', 'outer words', 'a bare string']);
    expect(guard.pending().map((held) => held.error)).toEqual([
      'plain refusal',
      'outer words',
      'a bare string',
    ]);
  });

  it('a retry that is refused again is reported with the latest error and everything held', async () => {
    const { store } = backend();
    const failures: MirrorFailure[] = [];
    const guard = new MirrorGuard(store, { onFailure: (failure) => failures.push(failure) });
    store.refusing = true;
    await guard.append(main, [entry(1)]);
    await guard.append(main, [entry(2), entry(3)]);
    expect(guard.holding).toBe(true);
    expect(failures).toEqual([
      { key: main, error: 'database or disk is full', held: 1 },
      { key: main, error: 'database or disk is full', held: 3 },
    ]);
    expect(await guard.flush()).toEqual([
      { key: main, entries: [entry(1), entry(2), entry(3)], error: 'database or disk is full' },
    ]);
    expect(failures).toHaveLength(3);
  });

  it('the latest refusal replaces the error a held key reports', async () => {
    const errors = ['first cause', 'second cause'];
    let calls = 0;
    const refusing: SessionStore = {
      append: async () => {
        throw new Error(errors[Math.min(calls++, 1)]);
      },
      load: async () => null,
    };
    const guard = new MirrorGuard(refusing);
    await guard.append(main, [entry(1)]);
    expect(guard.pending()[0]?.error).toBe('first cause');
    await guard.flush();
    expect(guard.pending()[0]?.error).toBe('second cause');
  });

  it('an empty append is nothing: the backend is not called and nothing is held', async () => {
    const { store } = backend();
    const failures: MirrorFailure[] = [];
    const guard = new MirrorGuard(store, { onFailure: (failure) => failures.push(failure) });
    store.refusing = true;
    await guard.append(main, []);
    expect(store.calls).toBe(0);
    expect(failures).toEqual([]);
    expect(guard.holding).toBe(false);
  });

  it('reads and the optional methods go straight to the backend', async () => {
    const stored = [entry(7)];
    const calls: string[] = [];
    const full: SessionStore = {
      append: async () => {},
      load: async (key) => (key.sessionId === 's1' ? stored : null),
      listSessions: async (projectKey) => {
        calls.push(`listSessions ${projectKey}`);
        return [{ sessionId: 's1', mtime: 1 }];
      },
      listSessionSummaries: async (projectKey) => {
        calls.push(`listSessionSummaries ${projectKey}`);
        return [];
      },
      delete: async (key) => {
        calls.push(`delete ${key.sessionId}`);
      },
      listSubkeys: async (key) => {
        calls.push(`listSubkeys ${key.sessionId}`);
        return ['subagents/agent-a'];
      },
    };
    const guard = new MirrorGuard(full);
    expect(await guard.load(main)).toBe(stored);
    expect(await guard.load({ ...main, sessionId: 'none' })).toBeNull();
    expect(await guard.listSessions?.('-p')).toEqual([{ sessionId: 's1', mtime: 1 }]);
    expect(await guard.listSessionSummaries?.('-p')).toEqual([]);
    await guard.delete?.(main);
    expect(await guard.listSubkeys?.(main)).toEqual(['subagents/agent-a']);
    expect(calls).toEqual(['listSessions -p', 'listSessionSummaries -p', 'delete s1', 'listSubkeys s1']);
  });

  it('an append made while an earlier one of its key is still being written waits for it, whatever settled before', async () => {
    const { store, uuids } = backend();
    // The write of u3 hangs until the test refuses it.
    let refuseThird: () => void = () => {};
    let thirdTried = false;
    const gated: SessionStore = {
      append: async (key, entries) => {
        if (!thirdTried && entries.some((each) => each.uuid === 'u3')) {
          thirdTried = true;
          await new Promise<void>((_, reject) => {
            refuseThird = () => reject(new Error('refused'));
          });
        }
        await store.append(key, entries);
      },
      load: store.load,
    };
    const guard = new MirrorGuard(gated);
    store.refusing = true;
    await guard.append(main, [entry(1)]);
    store.refusing = false;
    const second = guard.append(main, [entry(2)]);
    const third = guard.append(main, [entry(3)]);
    await second;
    await new Promise((resolve) => setTimeout(resolve, 5)); // the second append's turn is over
    expect(thirdTried).toBe(true);
    const fourth = guard.append(main, [entry(4)]);
    await new Promise((resolve) => setTimeout(resolve, 5));
    refuseThird();
    await Promise.all([third, fourth]);
    expect(await guard.flush()).toEqual([]);
    expect(uuids(main)).toEqual(['u1', 'u2', 'u3', 'u4']);
  });
});
