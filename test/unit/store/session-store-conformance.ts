/**
 * The SDK's 14 SessionStore contracts (peers-and-sdk.md §1.3), as a reusable vitest suite: call
 * `describeSessionStoreConformance(name, makeStore)` with a factory that returns a fresh, empty
 * store per test. Every backend runs it bare and under the rewriting layer (store-conformance.test.ts).
 *
 * Entries get uuids that *decrease* with insertion order, so a store that orders by uuid instead
 * of by append order fails the ordering contracts.
 */
import {
  foldSessionSummary,
  type SessionKey,
  type SessionStore,
  type SessionStoreEntry,
} from '@anthropic-ai/claude-agent-sdk';
import { afterEach, describe, expect, it } from 'vitest';

export type ConformanceStore = Required<SessionStore>;

export interface ConformanceFactory {
  make: () => Promise<ConformanceStore> | ConformanceStore;
  dispose?: (store: ConformanceStore) => Promise<void> | void;
}

let counter = 0;
const entry = (text: string, extra: Partial<SessionStoreEntry> = {}): SessionStoreEntry => {
  counter += 1;
  return {
    type: 'user',
    uuid: `ffffffff-ffff-4fff-8fff-${String(999_999_999_999 - counter).padStart(12, '0')}`,
    timestamp: new Date(Date.UTC(2026, 0, 1, 0, 0, counter % 60)).toISOString(),
    message: { role: 'user', content: text },
    cwd: '/work/project',
    ...extra,
  };
};

/** Inside a describe: `make()` opens a store of `factory`, disposed after the test that opened it. */
export function openedStores(factory: ConformanceFactory): () => Promise<ConformanceStore> {
  const open: ConformanceStore[] = [];
  afterEach(async () => {
    for (const store of open.splice(0)) await factory.dispose?.(store);
  });
  return async () => {
    const store = await factory.make();
    open.push(store);
    return store;
  };
}

export function describeSessionStoreConformance(name: string, factory: ConformanceFactory): void {
  describe(`SessionStore conformance: ${name}`, () => {
    const make = openedStores(factory);
    const main: SessionKey = { projectKey: 'proj-a', sessionId: 'session-1' };
    const sub: SessionKey = { ...main, subpath: 'subagents/agent-1' };

    it('1: load returns the appended entries, deep-equal and in order', async () => {
      const store = await make();
      const entries = [
        entry('a'),
        entry('b', { nested: { list: [1, 'two', null], flag: true } }),
        entry('c'),
      ];
      await store.append(main, entries);
      expect(await store.load(main)).toEqual(entries);
    });

    it('2: load of an unknown key (or an unknown subpath of a known session) is null', async () => {
      const store = await make();
      expect(await store.load(main)).toBeNull();
      await store.append(main, [entry('a')]);
      expect(await store.load({ ...main, subpath: 'subagents/agent-none' })).toBeNull();
      expect(await store.load({ ...main, sessionId: 'other' })).toBeNull();
    });

    it('3: several appends keep call order', async () => {
      const store = await make();
      const first = [entry('1'), entry('2')];
      const second = [entry('3')];
      const third = [entry('4'), entry('5')];
      for (const batch of [first, second, third]) await store.append(main, batch);
      expect(await store.load(main)).toEqual([...first, ...second, ...third]);
    });

    it('4: append([]) is a no-op', async () => {
      const store = await make();
      await store.append(main, []);
      expect(await store.load(main)).toBeNull();
      expect(await store.listSessions(main.projectKey)).toEqual([]);
      await store.append(main, [entry('a')]);
      const before = await store.listSessions(main.projectKey);
      await store.append(main, []);
      expect(await store.listSessions(main.projectKey)).toEqual(before);
    });

    it('5: subpath keys are stored apart from the main transcript', async () => {
      const store = await make();
      const mainEntries = [entry('main')];
      const subEntries = [entry('sub')];
      await store.append(main, mainEntries);
      await store.append(sub, subEntries);
      expect(await store.load(main)).toEqual(mainEntries);
      expect(await store.load(sub)).toEqual(subEntries);
    });

    it('6: project keys isolate the same session id', async () => {
      const store = await make();
      const other: SessionKey = { projectKey: 'proj-b', sessionId: main.sessionId };
      const a = [entry('in a')];
      const b = [entry('in b')];
      await store.append(main, a);
      await store.append(other, b);
      expect(await store.load(main)).toEqual(a);
      expect(await store.load(other)).toEqual(b);
      expect(await store.listSessions('proj-a')).toHaveLength(1);
      expect(await store.listSessions('proj-b')).toHaveLength(1);
    });

    it("7: listSessions returns the project's ids with epoch-ms mtimes; unknown project is []", async () => {
      const store = await make();
      await store.append(main, [entry('a')]);
      await store.append({ ...main, sessionId: 'session-2' }, [entry('b')]);
      await store.append({ projectKey: 'proj-b', sessionId: 'session-3' }, [entry('c')]);
      const sessions = await store.listSessions('proj-a');
      expect(sessions.map((session) => session.sessionId).sort()).toEqual(['session-1', 'session-2']);
      for (const session of sessions) {
        expect(Number.isInteger(session.mtime)).toBe(true);
        expect(session.mtime).toBeGreaterThan(1e12);
      }
      expect(await store.listSessions('proj-none')).toEqual([]);
    });

    it('8: listSessions excludes subagent transcripts', async () => {
      const store = await make();
      await store.append(sub, [entry('only a subagent so far')]);
      expect(await store.listSessions(main.projectKey)).toEqual([]);
      await store.append(main, [entry('main')]);
      expect((await store.listSessions(main.projectKey)).map((session) => session.sessionId)).toEqual([
        'session-1',
      ]);
    });

    it('9: delete of a main key makes load null; deleting a never-written key is allowed', async () => {
      const store = await make();
      await store.append(main, [entry('a')]);
      await store.delete(main);
      expect(await store.load(main)).toBeNull();
      await expect(store.delete({ projectKey: 'nobody', sessionId: 'never' })).resolves.toBeUndefined();
    });

    it('10: delete of a main key cascades to its subkeys only', async () => {
      const store = await make();
      const otherSession: SessionKey = { ...main, sessionId: 'session-2' };
      const otherSub: SessionKey = { ...otherSession, subpath: 'subagents/agent-9' };
      const otherProject: SessionKey = { projectKey: 'proj-b', sessionId: main.sessionId };
      const otherProjectSub: SessionKey = { ...otherProject, subpath: 'subagents/agent-1' };
      for (const key of [
        main,
        sub,
        { ...main, subpath: 'subagents/agent-2' },
        otherSession,
        otherSub,
        otherProject,
        otherProjectSub,
      ]) {
        await store.append(key, [entry(JSON.stringify(key))]);
      }
      await store.delete(main);
      expect(await store.load(main)).toBeNull();
      expect(await store.load(sub)).toBeNull();
      expect(await store.load({ ...main, subpath: 'subagents/agent-2' })).toBeNull();
      expect(await store.listSubkeys(main)).toEqual([]);
      for (const key of [otherSession, otherSub, otherProject, otherProjectSub])
        expect(await store.load(key)).not.toBeNull();
    });

    it('10b: deleting session s-1 leaves session s-10 (and its subkeys) alone', async () => {
      const store = await make();
      const one: SessionKey = { projectKey: 'proj-a', sessionId: 's-1' };
      const ten: SessionKey = { projectKey: 'proj-a', sessionId: 's-10' };
      const oneSub: SessionKey = { ...one, subpath: 'subagents/agent-1' };
      const tenSub: SessionKey = { ...ten, subpath: 'subagents/agent-1' };
      for (const key of [one, oneSub, ten, tenSub]) await store.append(key, [entry(JSON.stringify(key))]);
      expect(await store.listSubkeys(one)).toEqual(['subagents/agent-1']);
      await store.delete(one);
      expect(await store.load(one)).toBeNull();
      expect(await store.load(oneSub)).toBeNull();
      expect(await store.load(ten)).not.toBeNull();
      expect(await store.load(tenSub)).not.toBeNull();
      expect((await store.listSessions('proj-a')).map((session) => session.sessionId)).toEqual(['s-10']);
      expect(await store.listSubkeys(ten)).toEqual(['subagents/agent-1']);
    });

    it('11: delete with a subpath removes only that subkey', async () => {
      const store = await make();
      const sibling: SessionKey = { ...main, subpath: 'subagents/agent-2' };
      await store.append(main, [entry('main')]);
      await store.append(sub, [entry('sub')]);
      await store.append(sibling, [entry('sibling')]);
      await store.delete(sub);
      expect(await store.load(sub)).toBeNull();
      expect(await store.load(main)).not.toBeNull();
      expect(await store.load(sibling)).not.toBeNull();
      expect(await store.listSubkeys(main)).toEqual(['subagents/agent-2']);
    });

    it("12: listSubkeys returns that session's subpaths only", async () => {
      const store = await make();
      await store.append(main, [entry('main')]);
      await store.append(sub, [entry('sub 1')]);
      await store.append({ ...main, subpath: 'subagents/agent-2' }, [entry('sub 2')]);
      await store.append({ ...main, sessionId: 'session-2', subpath: 'subagents/agent-3' }, [
        entry('elsewhere'),
      ]);
      await store.append({ projectKey: 'proj-b', sessionId: main.sessionId, subpath: 'subagents/agent-4' }, [
        entry('x'),
      ]);
      expect((await store.listSubkeys(main)).sort()).toEqual(['subagents/agent-1', 'subagents/agent-2']);
    });

    it('13: listSubkeys excludes the main transcript; an unknown session gives []', async () => {
      const store = await make();
      await store.append(main, [entry('main')]);
      expect(await store.listSubkeys(main)).toEqual([]);
      expect(await store.listSubkeys({ projectKey: 'proj-a', sessionId: 'unknown' })).toEqual([]);
    });

    it('14: listSessionSummaries returns persisted fold output, per project, monotonic, emptied by delete', async () => {
      const store = await make();
      const firstBatch = [entry('first prompt'), entry('second', { gitBranch: 'main' })];
      const secondBatch = [entry('later', { customTitle: 'A title', type: 'custom-title' })];
      await store.append(main, firstBatch);
      const [afterFirst] = await store.listSessionSummaries(main.projectKey);
      expect(afterFirst?.sessionId).toBe(main.sessionId);
      await store.append(main, secondBatch);
      await store.append(sub, [entry('subagent entries never fold into the main summary')]);
      await store.append({ projectKey: 'proj-b', sessionId: 'session-9' }, [entry('other project')]);
      const summaries = await store.listSessionSummaries(main.projectKey);
      expect(summaries).toHaveLength(1);
      const [summary] = summaries;
      if (summary === undefined || afterFirst === undefined) throw new Error('summary missing');
      expect(summary.mtime).toBeGreaterThan(1e12);
      expect(summary.mtime).toBeGreaterThanOrEqual(afterFirst.mtime);
      // The persisted data is exactly what folding the same batches produces.
      const expected = foldSessionSummary(foldSessionSummary(undefined, main, firstBatch), main, secondBatch);
      expect(summary.data).toEqual(expected.data);
      // …and it refolds: feeding it back as `prev` works like any fold output.
      const refolded = foldSessionSummary(summary, main, [entry('one more')], { mtime: summary.mtime + 1 });
      expect(refolded.sessionId).toBe(main.sessionId);
      const listed = await store.listSessions(main.projectKey);
      expect(listed.find((session) => session.sessionId === main.sessionId)?.mtime).toBe(summary.mtime);
      expect(await store.listSessionSummaries('proj-none')).toEqual([]);
      await store.delete(main);
      expect(await store.listSessionSummaries(main.projectKey)).toEqual([]);
    });
  });
}
