/**
 * The session-key rules both backends share (session-key.ts `checkSessionKey`), as a reusable
 * vitest suite: call `describeSessionKeyRules(name, factory)` once per backend
 * (store-conformance.test.ts for SQLite, postgres/conformance.test.ts for PostgreSQL), so the
 * two agree by construction of the test, not by reading the code.
 *
 * Real keys: project keys are the workspace path with every character outside [a-zA-Z0-9]
 * replaced by '-', session ids are uuids, subpaths are `subagents/agent-<hex>` (nested under
 * `subagents/...` for workflows). Anything else is refused with an error that names the key.
 */
import type { SessionKey, SessionStoreEntry } from '@anthropic-ai/claude-agent-sdk';
import { describe, expect, it } from 'vitest';
import { type ConformanceFactory, type ConformanceStore, openedStores } from './session-store-conformance.js';

export interface KeyRulesFactory extends ConformanceFactory {
  /**
   * Writes one entry under `subpath` of proj-a/session-1 behind the store's back, as an older
   * version (or another writer) could have: the rules must not let it out through `listSubkeys`.
   */
  plant: (store: ConformanceStore, subpath: string, entry: SessionStoreEntry) => Promise<void>;
}

/** Both backends count a project's keys for the shared store's reconcile (SQLite synchronously). */
type Counting = {
  entryCounts(
    projectKey: string,
  ): Array<{ sessionId: string; subpath: string }> | Promise<Array<{ sessionId: string; subpath: string }>>;
};

let counter = 0;
const entry = (text: string): SessionStoreEntry => {
  counter += 1;
  return {
    type: 'user',
    uuid: `eeeeeeee-eeee-4eee-8eee-${String(counter).padStart(12, '0')}`,
    message: { role: 'user', content: text },
  };
};

const main: SessionKey = { projectKey: 'proj-a', sessionId: 'session-1' };
const sub: SessionKey = { ...main, subpath: 'subagents/agent-a1b2c3' };

/** Project keys and session ids no real session has. */
const BAD_NAMES = ['', '.', '..', 'a/b', '/', 'a\\b', 'x..y', '../proj-b', 'nul\u0000here'];
/** Subpaths no real key has. */
const BAD_SUBPATHS = [
  '..',
  '../evil',
  'subagents/../../evil',
  '/etc/passwd',
  'subagents/',
  'subagents//agent-1',
  './agent-1',
  'subagents/.',
  'subagents\\agent-1',
  'subagents/agent-\u0000',
];

export function describeSessionKeyRules(name: string, factory: KeyRulesFactory): void {
  describe(`session keys: ${name}`, () => {
    const make = openedStores(factory);

    it('refuses a project key or session id holding "/", "\\", "..", a NUL, or nothing, naming it; nothing is written', async () => {
      const store = await make();
      await store.append(main, [entry('kept')]);
      for (const bad of BAD_NAMES) {
        for (const key of [
          { projectKey: bad, sessionId: 'session-1' },
          { projectKey: 'proj-a', sessionId: bad },
          { projectKey: 'proj-a', sessionId: bad, subpath: 'subagents/agent-1' },
        ]) {
          const label = JSON.stringify(key);
          const named = bad === '' ? /empty or missing/ : JSON.stringify(bad).slice(1, -1);
          await expect(store.append(key, [entry('refused')]), label).rejects.toThrow(named);
          await expect(store.load(key), label).rejects.toThrow(named);
          await expect(store.delete(key), label).rejects.toThrow(named);
          await expect(store.listSubkeys(key), label).rejects.toThrow(named);
        }
        await expect(store.listSessions(bad), bad).rejects.toThrow(/project key/);
        await expect(store.listSessionSummaries(bad), bad).rejects.toThrow(/project key/);
      }
      expect((await store.load(main))?.length).toBe(1);
      expect((await store.listSessions('proj-a')).map((session) => session.sessionId)).toEqual(['session-1']);
      expect(await store.listSubkeys(main)).toEqual([]);
    });

    it('keeps keys that would join to the same text apart: a "/" in a project key or session id never reaches a subagent', async () => {
      const store = await make();
      await store.append(sub, [entry('the subagent')]);
      // On a store that joins the parts with '/', both of these would read or write `sub`.
      const lookalikes: SessionKey[] = [
        { projectKey: 'proj-a', sessionId: 'session-1/subagents/agent-a1b2c3' },
        { projectKey: 'proj-a/session-1', sessionId: 'subagents', subpath: 'agent-a1b2c3' },
      ];
      for (const key of lookalikes) {
        await expect(store.append(key, [entry('intruder')])).rejects.toThrow(/never holds "\/"/);
        await expect(store.load(key)).rejects.toThrow(/never holds "\/"/);
        await expect(store.delete(key)).rejects.toThrow(/never holds "\/"/);
      }
      expect(((await store.load(sub)) ?? []).map((each) => each.message)).toEqual([
        { role: 'user', content: 'the subagent' },
      ]);
      expect(await store.listSessions('proj-a')).toEqual([]);
    });

    it('refuses a subpath with an empty, "." or ".." segment (leading or trailing "/"), a "\\" or a NUL', async () => {
      const store = await make();
      await store.append(main, [entry('main')]);
      for (const subpath of BAD_SUBPATHS) {
        const key = { ...main, subpath };
        await expect(store.append(key, [entry('refused')]), subpath).rejects.toThrow(/subpath/);
        await expect(store.load(key), subpath).rejects.toThrow(/subpath/);
        await expect(store.delete(key), subpath).rejects.toThrow(/subpath/);
      }
      expect(await store.listSubkeys(main)).toEqual([]);
      expect((await store.load(main))?.length).toBe(1);
    });

    it('takes every subpath shape a real session has', async () => {
      const store = await make();
      const real = [
        'subagents/agent-a1b2c3d4e5f6',
        'subagents/journal',
        'subagents/workflows/run-7/agent-0f9e',
        'subagents/agent-side.v2',
      ];
      for (const subpath of real) await store.append({ ...main, subpath }, [entry(subpath)]);
      expect((await store.listSubkeys(main)).sort()).toEqual([...real].sort());
      for (const subpath of real) expect(await store.load({ ...main, subpath })).toHaveLength(1);
    });

    it("reads subpath '' as the main transcript: listed as a session, folded into its summary, never a subkey", async () => {
      const store = await make();
      const empty = { ...main, subpath: '' };
      await store.append(empty, [entry('written with subpath ""')]);
      await store.append(main, [entry('written without')]);
      const both = await store.load(main);
      expect(both?.map((each) => (each.message as { content: string }).content)).toEqual([
        'written with subpath ""',
        'written without',
      ]);
      expect(await store.load(empty)).toEqual(both);
      expect(await store.listSubkeys(main)).toEqual([]);
      expect((await store.listSessions('proj-a')).map((session) => session.sessionId)).toEqual(['session-1']);
      const [summary] = await store.listSessionSummaries('proj-a');
      expect(summary?.sessionId).toBe('session-1');
      expect(summary?.data).toMatchObject({ firstPrompt: 'written with subpath ""' });
      await store.append(sub, [entry('subagent')]);
      await store.delete(empty);
      expect(await store.load(main)).toBeNull();
      expect(await store.listSessions('proj-a')).toEqual([]);
    });

    it('never lists a subpath an older version stored outside the rules (such as ../evil)', async () => {
      const store = await make();
      await store.append(main, [entry('main')]);
      await store.append(sub, [entry('real subagent')]);
      for (const subpath of ['../evil', '/etc/passwd', 'subagents/../../evil', 'subagents//x'])
        await factory.plant(store, subpath, entry(`planted ${subpath}`));
      expect(await store.listSubkeys(main)).toEqual([sub.subpath]);
      expect((await store.listSessions('proj-a')).map((session) => session.sessionId)).toEqual(['session-1']);
      // Nor counts it for the shared store's reconcile, which would copy it under that key.
      const counts = await (store as unknown as Counting).entryCounts('proj-a');
      expect(counts.map((count) => `${count.sessionId}:${count.subpath}`).sort()).toEqual([
        'session-1:',
        `session-1:${sub.subpath}`,
      ]);
      // Deleting the session still removes them with it.
      await store.delete(main);
      expect(await store.listSubkeys(main)).toEqual([]);
      expect(await store.load(sub)).toBeNull();
    });
  });
}
