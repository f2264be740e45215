/**
 * A resume through the rewriting layer must leave a stored transcript that is a valid chain on its
 * own: every `parentUuid` of a stored entry names a stored entry (or is null), so a later reader
 * without the layer (the plain backend, a report, another machine) still finds the whole
 * conversation. The binary points its next entry at the newest entry it was fed; when that is a
 * stand-in the layer made up (the result healed onto a tool call a crash cut off), its uuid must
 * be one the store holds. On both backends: SQLite, and PostgreSQL (the server named by
 * FLOWER_TEST_POSTGRES_URL, else PGlite).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { SessionKey, SessionStoreEntry } from '@anthropic-ai/claude-agent-sdk';
import { afterEach, describe, expect, it } from 'vitest';
import type { SessionBackend } from '../../../src/store/backend.js';
import { PostgresSessionStore } from '../../../src/store/postgres/session-store.js';
import { RewritingSessionStore } from '../../../src/store/rewriting-store.js';
import { type TestSchema, usePostgres } from '../../support/postgres.js';
import { sqliteStoresPerTest } from '../../support/sqlite-stores.js';
import { TranscriptBuilder } from '../../support/transcript-builder.js';
import { validateTranscript } from '../../support/transcript-validator.js';

const key: SessionKey = { projectKey: '-tmp-chain-ws', sessionId: '11111111-2222-4333-8444-555555555555' };
const postgres = usePostgres();
const openSqlite = sqliteStoresPerTest('flower-chain-');
const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const workspace = (): string => {
  const directory = mkdtempSync(path.join(tmpdir(), 'flower-chain-ws-'));
  cleanups.push(() => rmSync(directory, { recursive: true, force: true }));
  return directory;
};

const backends: Array<[string, () => Promise<SessionBackend>]> = [
  ['SQLite', async () => openSqlite()],
  [
    `PostgreSQL (${postgres.kind})`,
    async () => {
      const schema: TestSchema = await postgres.freshSchema('chain');
      const store = new PostgresSessionStore(schema.url);
      await store.open();
      cleanups.push(() => schema.drop());
      cleanups.push(() => store.close());
      return store;
    },
  ],
];

/** Parents a stored entry names that the store does not hold (empty: the chain is whole). */
function brokenLinks(entries: readonly SessionStoreEntry[]): string[] {
  const stored = new Set(entries.map((entry) => entry.uuid).filter((uuid) => typeof uuid === 'string'));
  return entries
    .filter((entry) => typeof entry.parentUuid === 'string' && !stored.has(entry.parentUuid))
    .map((entry) => `${String(entry.uuid)} -> ${String(entry.parentUuid)}`);
}

/** The conversation entries on the chain from the newest entry with a uuid back to its root. */
function chainFromLeaf(entries: readonly SessionStoreEntry[]): SessionStoreEntry[] {
  const byUuid = new Map(entries.map((entry) => [entry.uuid, entry]));
  const chain: SessionStoreEntry[] = [];
  let cursor = [...entries].reverse().find((entry) => typeof entry.uuid === 'string');
  while (cursor !== undefined && chain.length <= entries.length) {
    chain.unshift(cursor);
    cursor = typeof cursor.parentUuid === 'string' ? byUuid.get(cursor.parentUuid) : undefined;
  }
  return chain.filter((entry) => entry.type === 'user' || entry.type === 'assistant');
}

/** What the binary appends after a resume: its next entries, linked to the newest one it was fed. */
function continueFrom(
  loaded: readonly SessionStoreEntry[],
  prompt: string,
  reply: string,
): SessionStoreEntry[] {
  const leaf = [...loaded].reverse().find((entry) => typeof entry.uuid === 'string');
  const t = new TranscriptBuilder(`next-${prompt.length}`);
  const user = t.prompt(prompt);
  user.parentUuid = leaf?.uuid ?? null;
  t.say(reply);
  return t.entries;
}

describe.each(backends)('a resume after a crash cut a tool call off (%s)', (_name, open) => {
  it('leaves the stored transcript a whole chain: the plain store still reads the whole conversation', async () => {
    const backend = await open();
    const store = new RewritingSessionStore(backend, { workspace: workspace(), onWarning: () => {} });
    const t = new TranscriptBuilder();
    t.prompt('first prompt');
    t.say('first answer');
    t.prompt('second prompt');
    const cut = t.orphan('npm test'); // the crash: a tool call, no result
    await store.append(key, t.entries);

    const loaded = (await store.load(key)) ?? [];
    expect(store.lastLoadReport(key)).toMatchObject({ orphansHealed: 1 });
    expect(validateTranscript(loaded, { singleChain: true })).toEqual([]);
    await store.append(key, continueFrom(loaded, 'go on', 'going on'));

    // The plain store: every parent it names, it holds; the chain reaches the first prompt.
    const plain = (await backend.load(key)) ?? [];
    expect(brokenLinks(plain)).toEqual([]);
    const chain = chainFromLeaf(plain);
    expect(chain[0]?.message).toMatchObject({ content: 'first prompt' });
    expect(chain.map((entry) => entry.type)).toEqual([
      'user',
      'assistant',
      'user',
      'assistant',
      'user',
      'assistant',
    ]);
    // What the store holds is what was appended: the stand-in result is not among its rows.
    expect(JSON.stringify(plain)).not.toContain('"tool_use_id"');

    // A second resume through the layer: the cut call answered once, the whole history there.
    const again = (await store.load(key)) ?? [];
    expect(validateTranscript(again, { singleChain: true })).toEqual([]);
    const resumed = chainFromLeaf(again);
    expect(resumed[0]?.message).toMatchObject({ content: 'first prompt' });
    expect(JSON.stringify(resumed)).toContain(`"tool_use_id":"${cut}"`);
    await store.append(key, continueFrom(again, 'and on', 'still going'));
    const after = (await backend.load(key)) ?? [];
    expect(brokenLinks(after)).toEqual([]);
    expect(chainFromLeaf(after)).toHaveLength(8);
  });

  it('keeps the chain whole when the cut call was one of several in one message', async () => {
    const backend = await open();
    const store = new RewritingSessionStore(backend, { workspace: workspace(), onWarning: () => {} });
    const t = new TranscriptBuilder();
    t.prompt('go');
    const ids = ['ls', 'pwd', 'date'].map((command) => t.call('Bash', { command }));
    const lastCall = t.entries.at(-1);
    t.result(ids[2] as string, 'today', { extra: { sourceToolAssistantUUID: lastCall?.uuid } }); // `pwd`'s never came
    await store.append(key, t.entries);

    const loaded = (await store.load(key)) ?? [];
    expect(validateTranscript(loaded, { singleChain: true })).toEqual([]);
    // The result still names the assistant entry that made its call (now under a new uuid).
    const renamed = loaded.find(
      (entry) => entry.uuid === loaded.find((e) => e.uuid === lastCall?.uuid)?.parentUuid,
    );
    expect(renamed?.message).toEqual(lastCall?.message);
    expect(loaded.at(-1)?.sourceToolAssistantUUID).toBe(renamed?.uuid);
    await store.append(key, continueFrom(loaded, 'go on', 'going on'));
    const plain = (await backend.load(key)) ?? [];
    expect(brokenLinks(plain)).toEqual([]);
    expect(chainFromLeaf(plain)[0]?.message).toMatchObject({ content: 'go' });
    expect(validateTranscript((await store.load(key)) ?? [], { singleChain: true })).toEqual([]);
  });
});
