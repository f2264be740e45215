/**
 * PostgresSessionStore beyond the 14 contracts: the promises of its module header, several writers
 * at once (separate pools, as separate processes have), and what happens to bad rows.
 */
import { randomUUID } from 'node:crypto';
import { foldSessionSummary, type SessionKey, type SessionStoreEntry } from '@anthropic-ai/claude-agent-sdk';
import pg from 'pg';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { PostgresStoreError } from '../../../../src/store/postgres/errors.js';
import { FOLD_DELAY_MS, PostgresSessionStore } from '../../../../src/store/postgres/session-store.js';
import { closedPort } from '../../../support/closed-port.js';
import { type TestSchema, usePostgres } from '../../../support/postgres.js';

const postgres = usePostgres();
const opened: PostgresSessionStore[] = [];
let schema: TestSchema | undefined;

afterEach(async () => {
  vi.restoreAllMocks();
  for (const store of opened.splice(0)) await store.close();
  await schema?.drop();
  schema = undefined;
});

/** A store on this test's schema; several calls give several writers (each with its own pool). */
async function store(): Promise<PostgresSessionStore> {
  schema ??= await postgres.freshSchema('store');
  const created = new PostgresSessionStore(schema.url);
  opened.push(created);
  await created.open();
  return created;
}

const entry = (text: string, extra: Partial<SessionStoreEntry> = {}): SessionStoreEntry => ({
  type: 'user',
  uuid: randomUUID(),
  timestamp: '2026-01-01T00:00:00.000Z',
  message: { role: 'user', content: text },
  ...extra,
});
const main: SessionKey = { projectKey: '-work-project', sessionId: 's-1' };
const sub: SessionKey = { ...main, subpath: 'subagents/agent-a' };
const mtimeOf = async (db: PostgresSessionStore, key = main) =>
  (await db.listSessions(key.projectKey)).find((session) => session.sessionId === key.sessionId)?.mtime;
const table = (name: string) => `"${schema?.schema}".${name}`;

describe('idempotent appends', () => {
  it('a replayed batch changes nothing: entries, mtime and summary stay as they were', async () => {
    const db = await store();
    const batch = [entry('first'), entry('second', { gitBranch: 'main' })];
    await db.append(main, batch);
    const mtime = await mtimeOf(db);
    const summaries = await db.listSessionSummaries(main.projectKey);
    await db.append(main, batch);
    await db.append(main, [batch[1] as SessionStoreEntry]);
    expect(await db.load(main)).toEqual(batch);
    expect(await mtimeOf(db)).toBe(mtime);
    expect(await db.listSessionSummaries(main.projectKey)).toEqual(summaries);
  });

  it('a batch mixing stored and new entries adds only the new ones, in order, and folds only them', async () => {
    const db = await store();
    const first = [entry('a'), entry('b')];
    await db.append(main, first);
    const later = entry('c', { gitBranch: 'feature' });
    // Replaying `b` after `c` must not make `b` the newest in the summary (last-wins fields).
    const replayed = { ...(first[1] as SessionStoreEntry), gitBranch: 'stale' };
    await db.append(main, [first[0] as SessionStoreEntry, later, replayed]);
    expect(await db.load(main)).toEqual([...first, later]);
    const [summary] = await db.listSessionSummaries(main.projectKey);
    expect(summary?.data).toEqual(foldSessionSummary(undefined, main, [...first, later]).data);
  });

  it('a uuid repeated within one batch is stored once; entries without a uuid are always stored', async () => {
    const db = await store();
    const twice = entry('twice');
    const title = { type: 'custom-title', customTitle: 'A' };
    for (const key of [main, sub]) {
      await db.append(key, [twice, title, { ...twice }, title]);
      await db.append(key, [title]);
      expect(await db.load(key)).toEqual([twice, title, title, title]);
    }
    const [summary] = await db.listSessionSummaries(main.projectKey);
    expect(summary?.data).toEqual(foldSessionSummary(undefined, main, [twice, title, title, title]).data);
  });

  it('two writers replaying the same batch at once store it once', async () => {
    const [a, b] = [await store(), await store()];
    const batch = Array.from({ length: 50 }, (_, index) => entry(`e${index}`));
    await Promise.all([
      a.append(main, batch),
      b.append(main, batch),
      a.append(sub, batch),
      b.append(sub, batch),
    ]);
    expect(await a.load(main)).toEqual(batch);
    expect(await b.load(sub)).toEqual(batch);
  });
});

describe('mtime', () => {
  it('grows with every append that stores something, per key, in epoch milliseconds', async () => {
    const db = await store();
    const seen: number[] = [];
    for (let round = 0; round < 5; round += 1) {
      await db.append(main, [entry(`r${round}`)]);
      seen.push((await mtimeOf(db)) as number);
    }
    for (let index = 1; index < seen.length; index += 1)
      expect(seen[index]).toBeGreaterThan(seen[index - 1] as number);
    expect(seen[0]).toBeGreaterThan(1e12);
  });

  it("keeps growing when another writer's clock is behind (the server keeps it above the stored value)", async () => {
    const ahead = await store();
    const behind = await store();
    await ahead.append(main, [entry('from the machine whose clock is right')]);
    const before = (await mtimeOf(ahead)) as number;
    vi.spyOn(Date, 'now').mockReturnValue(before - 3_600_000);
    await behind.append(main, [entry('from a machine an hour behind')]);
    await behind.append(sub, [entry('its subagent')]);
    const after = (await mtimeOf(behind)) as number;
    expect(after).toBeGreaterThan(before);
    const [summary] = await behind.listSessionSummaries(main.projectKey);
    expect(summary?.mtime).toBe(after);
  });
});

describe('several writers at once', () => {
  it('lose nothing, duplicate nothing, and keep the summary equal to a fold of what is stored', async () => {
    const writers = [await store(), await store(), await store(), await store()];
    const written = new Map<string, SessionStoreEntry[]>();
    const keys: SessionKey[] = [main, sub, { ...main, subpath: 'subagents/agent-b' }];
    await Promise.all(
      writers.map(async (writer, index) => {
        for (let round = 0; round < 8; round += 1) {
          for (const key of keys) {
            const batch = [
              entry(`w${index} r${round}`, { gitBranch: `w${index}-${round}` }),
              entry(`w${index} r${round} b`),
            ];
            // A title only one writer sets: any other writer folding onto a stale summary loses it.
            if (index === 1 && round === 2)
              batch.push(entry(`w${index} title`, { customTitle: 'only from w1' }));
            const storeKey = `${key.subpath}`;
            written.set(storeKey, [...(written.get(storeKey) ?? []), ...batch]);
            await writer.append(key, batch);
          }
        }
      }),
    );
    for (const key of keys) {
      const loaded = (await writers[0]?.load(key)) ?? [];
      const expected = written.get(`${key.subpath}`) ?? [];
      expect(loaded).toHaveLength(expected.length);
      expect(new Set(loaded.map((stored) => stored.uuid))).toEqual(
        new Set(expected.map((sent) => sent.uuid)),
      );
      // Each writer's batches keep their own order.
      for (let index = 0; index < writers.length; index += 1) {
        const mine = (list: SessionStoreEntry[]) =>
          list.filter((item) =>
            String((item.message as { content: string }).content).startsWith(`w${index} `),
          );
        expect(mine(loaded)).toEqual(mine(expected));
      }
    }
    const stored = (await writers[1]?.load(main)) ?? [];
    const [summary] = (await writers[2]?.listSessionSummaries(main.projectKey)) ?? [];
    expect(summary?.data).toEqual(foldSessionSummary(undefined, main, stored).data);
    expect(summary?.data).toMatchObject({ customTitle: 'only from w1' });
    expect(summary?.mtime).toBe(await mtimeOf(writers[3] as PostgresSessionStore));
  });

  it('a second process continuing a session folds onto the summary the first one left', async () => {
    const first = await store();
    const opening = [
      entry('the first prompt'),
      entry('x', { customTitle: 'Kept title', type: 'custom-title' }),
    ];
    await first.append(main, opening);
    const second = await store();
    const more = [entry('continued elsewhere', { gitBranch: 'main' })];
    await second.append(main, more);
    await first.append(main, [entry('and back again')]);
    const [summary] = await second.listSessionSummaries(main.projectKey);
    expect(summary?.data).toEqual(foldSessionSummary(undefined, main, (await first.load(main)) ?? []).data);
    expect(summary?.data).toMatchObject({ firstPrompt: 'the first prompt', customTitle: 'Kept title' });
  });
});

describe('delete', () => {
  it('of s-1 leaves s-10 (and its subagents) alone', async () => {
    const db = await store();
    const ten: SessionKey = { ...main, sessionId: 's-10' };
    const tenSub: SessionKey = { ...ten, subpath: 'subagents/agent-a' };
    for (const key of [main, sub, ten, tenSub]) await db.append(key, [entry(JSON.stringify(key))]);
    await db.delete(main);
    expect(await db.load(main)).toBeNull();
    expect(await db.load(sub)).toBeNull();
    expect(await db.load(ten)).not.toBeNull();
    expect(await db.load(tenSub)).not.toBeNull();
    expect(await db.listSubkeys(ten)).toEqual(['subagents/agent-a']);
    expect((await db.listSessionSummaries(main.projectKey)).map((summary) => summary.sessionId)).toEqual([
      's-10',
    ]);
    const orphans = await postgres.admin(
      `SELECT count(*)::int AS n FROM ${table('session_entries')} WHERE transcript_id NOT IN (SELECT id FROM ${table('session_transcripts')})`,
    );
    expect(orphans.rows[0].n).toBe(0);
  });

  it('then append starts the session afresh, with a summary of the new entries only', async () => {
    const db = await store();
    await db.append(main, [entry('old prompt')]);
    await db.delete(main);
    const fresh = [entry('new prompt')];
    await db.append(main, fresh);
    expect(await db.load(main)).toEqual(fresh);
    const [summary] = await db.listSessionSummaries(main.projectKey);
    expect(summary?.data).toEqual(foldSessionSummary(undefined, main, fresh).data);
  });

  it('by another process is noticed by a writer that still remembers the old summary', async () => {
    const [writer, remover] = [await store(), await store()];
    await writer.append(main, [entry('before the delete')]);
    await remover.delete(main);
    const after = [entry('after the delete')];
    await writer.append(main, after);
    expect(await remover.load(main)).toEqual(after);
    const [summary] = await remover.listSessionSummaries(main.projectKey);
    expect(summary?.data).toEqual(foldSessionSummary(undefined, main, after).data);
  });
});

describe('the key row follows the entries (deferred fold)', () => {
  /** The key's row as stored, and the newest seq of its entries. */
  const stored = async (key = main) =>
    (
      await postgres.admin(
        `SELECT t.mtime::float8 AS mtime, t.summary, t.folded_seq::int AS folded,
                (SELECT max(seq)::int FROM ${table('session_entries')} e WHERE e.transcript_id = t.id) AS newest
           FROM ${table('session_transcripts')} t
          WHERE project_key = $1 AND session_id = $2 AND subpath = $3`,
        [key.projectKey, key.sessionId, key.subpath ?? ''],
      )
    ).rows[0] as { mtime: number; summary: string | null; folded: number; newest: number } | undefined;

  it('an acknowledged entry is committed at once; the row catches up within the delay without any read', async () => {
    const db = await store();
    await db.append(main, [entry('first')]);
    await db.append(main, [entry('second')]);
    // Read by another connection right away: the entries are there, the row has not folded them
    // (the append inserted them alone; the fold waits FOLD_DELAY_MS).
    const early = await stored();
    expect(await postgres.admin(`SELECT count(*)::int AS n FROM ${table('session_entries')}`)).toMatchObject({
      rows: [{ n: 2 }],
    });
    expect(early?.folded).toBe(-1);
    expect(early?.summary).toBeNull();
    for (let waited = 0; (await stored())?.folded !== early?.newest; waited += FOLD_DELAY_MS) {
      expect(waited).toBeLessThan(5_000);
      await new Promise((resolve) => setTimeout(resolve, FOLD_DELAY_MS));
    }
    const late = await stored();
    expect(JSON.parse(late?.summary ?? 'null')).toEqual(
      foldSessionSummary(undefined, main, (await db.load(main)) ?? []).data,
    );
    expect(late?.mtime).toBeGreaterThanOrEqual(early?.mtime as number);
  });

  it('close folds what is pending, so the row is current the moment it returns', async () => {
    const db = await store();
    const sent = [entry('a prompt', { gitBranch: 'topic' }), entry('b')];
    await db.append(main, sent);
    await db.append(sub, [entry('sub')]);
    await db.close();
    const [row, subRow] = [await stored(), await stored(sub)];
    expect(row?.folded).toBe(row?.newest);
    expect(subRow?.folded).toBe(subRow?.newest);
    expect(subRow?.summary).toBeNull();
    expect(JSON.parse((await stored())?.summary ?? 'null')).toEqual(
      foldSessionSummary(undefined, main, sent).data,
    );
  });

  it("two stores interleaving appends on one key: a third one's listing sees every append at once, in order", async () => {
    const [a, b, reader] = [await store(), await store(), await store()];
    const sent: SessionStoreEntry[] = [];
    let previous = 0;
    for (let round = 0; round < 12; round += 1) {
      const batch = Array.from({ length: 1 + (round % 3) }, (_, index) =>
        entry(`r${round}.${index}`, round === 5 ? { customTitle: `title from ${round}` } : {}),
      );
      sent.push(...batch);
      await (round % 2 === 0 ? a : b).append(main, batch);
      // Neither writer has folded yet (within its delay): the reader folds what it finds behind.
      const mtime = (await mtimeOf(reader)) as number;
      expect(mtime).toBeGreaterThan(previous);
      previous = mtime;
      const [summary] = await reader.listSessionSummaries(main.projectKey);
      expect(summary?.mtime).toBe(mtime);
      expect(summary?.data).toEqual(foldSessionSummary(undefined, main, sent).data);
    }
    expect(await reader.load(main)).toEqual(sent);
    const seqs = (
      await postgres.admin(`SELECT seq::int FROM ${table('session_entries')} ORDER BY seq`)
    ).rows.map((row) => row.seq);
    expect(seqs).toHaveLength(sent.length);
    for (let index = 1; index < seqs.length; index += 1) expect(seqs[index]).toBeGreaterThan(seqs[index - 1]);
    await a.close();
    await b.close();
    // The writers' own folds find the reader did their work: nothing goes backwards.
    expect((await stored())?.mtime).toBe(previous);
    expect(await mtimeOf(reader)).toBe(previous);
  });

  it('entries a process left unfolded (it died first) are folded by the next listing or cost lookup', async () => {
    const writer = await store();
    const costly: SessionStoreEntry = { type: 'cost-state', uuid: randomUUID(), totalCostUSD: 2 };
    const sent = [entry('prompt before the crash', { gitBranch: 'b' }), costly];
    await writer.append(main, sent);
    await writer.append(sub, [{ ...costly, uuid: randomUUID() }]);
    // The process goes away without folding: its pool ends under it.
    await writer.pool.end();
    expect(await stored()).toMatchObject({ folded: -1 });
    const next = await store();
    expect(await next.lastCostState(sub)).toMatchObject({ totalCostUSD: 2 });
    expect((await stored(sub))?.folded).toBe((await stored(sub))?.newest);
    const [summary] = await next.listSessionSummaries(main.projectKey);
    expect(summary?.data).toEqual(foldSessionSummary(undefined, main, sent).data);
    expect(await next.lastCostState(main)).toEqual(costly);
  });

  it('a delete racing appends leaves no entry behind without its key row', async () => {
    const [writer, remover] = [await store(), await store()];
    let done = false;
    const writing = (async () => {
      for (let round = 0; round < 150; round += 1) {
        await writer.append(round % 2 === 0 ? main : sub, [entry(`r${round}`)]);
      }
      done = true;
    })();
    while (!done) {
      await remover.delete(main);
      await new Promise((resolve) => setTimeout(resolve, 1));
    }
    await writing;
    const orphans = await postgres.admin(
      `SELECT count(*)::int AS n FROM ${table('session_entries')} WHERE transcript_id NOT IN (SELECT id FROM ${table('session_transcripts')})`,
    );
    expect(orphans.rows[0].n).toBe(0);
    await writer.append(main, [entry('after the race')]);
    expect((await writer.load(main))?.at(-1)?.message).toEqual({ role: 'user', content: 'after the race' });
  });
});

describe('lastCostState', () => {
  const cost = (total: unknown): SessionStoreEntry => ({
    type: 'cost-state',
    uuid: randomUUID(),
    totalCostUSD: total,
  });

  it('is the newest cost-state entry of the key, kept across batches without one, per key', async () => {
    const db = await store();
    expect(await db.lastCostState(main)).toBeNull();
    await db.append(main, [entry('a')]);
    expect(await db.lastCostState(main)).toBeNull();
    const newest = cost(0.5);
    await db.append(main, [cost(0.25), entry('b'), newest, entry('c')]);
    expect(await db.lastCostState(main)).toEqual(newest);
    await db.append(main, [entry('no cost in this batch')]);
    const subCost = cost(9);
    await db.append(sub, [entry('sub'), subCost]);
    expect(await db.lastCostState(main)).toEqual(newest);
    expect(await db.lastCostState(sub)).toEqual(subCost);
    const later = cost(1.75);
    await db.append(main, [later]);
    expect(await db.lastCostState(main)).toEqual(later);
  });

  it('ignores a replayed older cost-state, in a replayed batch or among new entries', async () => {
    const db = await store();
    const early = cost(0.1);
    const late = cost(0.3);
    await db.append(sub, [early]);
    await db.append(sub, [late]);
    await db.append(sub, [early]);
    await db.append(sub, [entry('new'), early]);
    expect(await db.lastCostState(sub)).toEqual(late);
    await db.append(main, [early]);
    await db.append(main, [late]);
    await db.append(main, [entry('new'), early]);
    expect(await db.lastCostState(main)).toEqual(late);
  });
});

describe('failures are whole', () => {
  it('a batch with an entry that is not a JSON object is refused before anything is written', async () => {
    const db = await store();
    const bad = [entry('fine'), 'not an object', entry('also fine')] as unknown as SessionStoreEntry[];
    await expect(db.append(main, bad)).rejects.toThrow(
      /^Refusing to store entry 1 of a batch for -work-project\/s-1 in .*: it is not a JSON object\. Nothing from this batch was written\.$/,
    );
    const cyclic: Record<string, unknown> = { type: 'user', uuid: randomUUID() };
    cyclic.self = cyclic;
    await expect(db.append(main, [entry('fine'), cyclic as SessionStoreEntry])).rejects.toThrow(
      /entry 1 .* cannot be written as JSON/,
    );
    expect(await db.load(main)).toBeNull();
  });

  it('a batch the server rejects half-way leaves none of its entries, and the error is one line', async () => {
    const db = await store();
    await db.append(main, [entry('kept')]);
    // A trigger standing in for any server-side failure in the middle of a batch.
    await postgres.admin(`
      CREATE FUNCTION ${table('refuse_boom')}() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN IF NEW.entry LIKE '%boom%' THEN RAISE EXCEPTION 'disk trouble'; END IF; RETURN NEW; END $$;
      CREATE TRIGGER refuse_boom BEFORE INSERT ON ${table('session_entries')}
        FOR EACH ROW EXECUTE FUNCTION ${table('refuse_boom')}();`);
    const error = await db
      .append(main, [entry('one'), entry('boom'), entry('three')])
      .catch((reason) => reason);
    expect(error).toBeInstanceOf(PostgresStoreError);
    expect(error.message).toMatch(
      /could not append to -work-project\/s-1: disk trouble; nothing was changed/,
    );
    expect(error.message).not.toContain('\n');
    expect(
      ((await db.load(main)) ?? []).map((stored) => (stored.message as { content: string }).content),
    ).toEqual(['kept']);
    // The next batch is unaffected and the summary never saw the failed one.
    await postgres.admin(`DROP TRIGGER refuse_boom ON ${table('session_entries')}`);
    await db.append(main, [entry('after')]);
    const [summary] = await db.listSessionSummaries(main.projectKey);
    expect(summary?.data).toEqual(foldSessionSummary(undefined, main, (await db.load(main)) ?? []).data);
  });

  it('a transcript with an unreadable row is not returned; the error names the key, the row and a query', async () => {
    const db = await store();
    await db.append(main, [entry('a'), entry('b'), entry('c')]);
    await postgres.admin(`UPDATE ${table('session_entries')} SET entry = '{"truncated' WHERE seq = 1`);
    const error = await db.load(main).catch((reason) => reason);
    expect(error).toBeInstanceOf(PostgresStoreError);
    expect(error.message).toContain(
      'the entry with seq 1 of -work-project/s-1 is not a JSON object, so none of the transcript was used',
    );
    expect(error.message).toContain(
      `-c "SELECT seq, entry FROM ${schema?.schema}.session_entries WHERE transcript_id = (SELECT id FROM ${schema?.schema}.session_transcripts WHERE project_key = '-work-project' AND session_id = 's-1' AND subpath = '') AND seq >= 1 ORDER BY seq LIMIT 1"`,
    );
    expect(error.message).not.toContain('\n');
  });

  it('loadRows gives each entry with its text as stored, and fails on an unreadable row as load does', async () => {
    const db = await store();
    const entries = [entry('a'), entry('b')];
    await db.append(main, entries);
    const spaced = `{ "type": "user", "uuid": "${entries[1]?.uuid}" }`;
    await postgres.admin(`UPDATE ${table('session_entries')} SET entry = $1 WHERE seq = 1`, [spaced]);
    expect(await db.loadRows(main)).toEqual([
      { entry: entries[0], text: JSON.stringify(entries[0]) },
      { entry: { type: 'user', uuid: entries[1]?.uuid }, text: spaced },
    ]);
    expect(await db.loadRows({ ...main, sessionId: 'never' })).toBeNull();
    await postgres.admin(`UPDATE ${table('session_entries')} SET entry = 'null' WHERE seq = 1`);
    const loadError = await db.load(main).catch((reason: Error) => reason);
    expect(loadError).toBeInstanceOf(PostgresStoreError);
    await expect(db.loadRows(main)).rejects.toThrow((loadError as Error).message);
  });

  it('readTranscript returns the readable entries and names each damaged row with its seq, uuid and position', async () => {
    const db = await store();
    const entries = [entry('a'), entry('b'), entry('c'), entry('d')];
    await db.append(main, entries);
    await postgres.admin(`UPDATE ${table('session_entries')} SET entry = 'null' WHERE seq IN (1, 2)`);
    expect(await db.readTranscript(main)).toEqual({
      entries: [entries[0], entries[3]],
      unreadable: [
        { seq: 1, uuid: entries[1]?.uuid, position: 1 },
        { seq: 2, uuid: entries[2]?.uuid, position: 1 },
      ],
      owned: true,
    });
    expect(await db.readTranscript({ ...main, sessionId: 'never' })).toBeNull();
    await expect(db.load(main)).rejects.toThrow(
      /the entry with seq 1 \(and 1 more row\) of -work-project\/s-1/,
    );
  });

  it('an unreadable summary is reported, not returned', async () => {
    const db = await store();
    await db.append(main, [entry('a')]);
    await postgres.admin(`UPDATE ${table('session_transcripts')} SET summary = '[1, 2]'`);
    await expect(db.listSessionSummaries(main.projectKey)).rejects.toThrow(
      /the summary of -work-project\/s-1 is not a JSON object/,
    );
  });
});

describe('more of the module header', () => {
  const admin = (sql: string) => postgres.admin(sql);

  it('a path is no PostgreSQL URL: the store refuses it, naming it', () => {
    expect(() => new PostgresSessionStore('runs/sessions.db')).toThrow(
      new PostgresStoreError(
        'runs/sessions.db',
        'runs/sessions.db is not a PostgreSQL URL: use postgres://user:password@host:5432/database.',
      ),
    );
  });

  it("the key's mtime is the newest append's, when several share one fold", async () => {
    const db = await store();
    const now = Date.now();
    const clock = vi.spyOn(Date, 'now').mockReturnValue(now);
    await db.append(main, [entry('first')]);
    clock.mockReturnValue(now + 10_000);
    await db.append(main, [entry('second')]);
    clock.mockReturnValue(now + 10_001);
    expect(await mtimeOf(db)).toBeGreaterThanOrEqual(now + 10_000);
  });

  it('folds within the delay round after round, without any read', async () => {
    const db = await store();
    const folded = async () =>
      (await admin(`SELECT folded_seq::int AS folded FROM ${table('session_transcripts')}`)).rows[0]?.folded;
    const newest = async () =>
      (await admin(`SELECT max(seq)::int AS newest FROM ${table('session_entries')}`)).rows[0]?.newest;
    for (let round = 0; round < 3; round += 1) {
      await db.append(main, [entry(`round ${round}`)]);
      const target = await newest();
      for (let waited = 0; (await folded()) !== target; waited += FOLD_DELAY_MS) {
        expect(waited).toBeLessThan(5_000);
        await new Promise((resolve) => setTimeout(resolve, FOLD_DELAY_MS));
      }
    }
  });

  it('a fold that fails fails the read that ran it; the next read folds everything since', async () => {
    const db = await store();
    await db.append(main, [entry('a prompt', { gitBranch: 'first' })]);
    await db.listSessions(main.projectKey);
    const good = (await admin(`SELECT summary FROM ${table('session_transcripts')}`)).rows[0]?.summary;
    await admin(`UPDATE ${table('session_transcripts')} SET summary = '[1]'`);
    await db.append(main, [entry('b', { gitBranch: 'second' })]);
    await expect(db.listSessions(main.projectKey)).rejects.toThrow(
      /summary of -work-project\/s-1 is not a JSON object/,
    );
    await db.append(main, [entry('c', { gitBranch: 'third' })]);
    await postgres.admin(`UPDATE ${table('session_transcripts')} SET summary = $1`, [good]);
    const [summary] = await db.listSessionSummaries(main.projectKey);
    expect(summary?.data).toEqual(foldSessionSummary(undefined, main, (await db.load(main)) ?? []).data);
    expect(summary?.data).toMatchObject({ firstPrompt: 'a prompt', gitBranch: 'third' });
  });

  it("another writer's damaged row folds as nothing; the listing works and readTranscript names it", async () => {
    const writer = await store();
    const sent = [entry('a prompt', { gitBranch: 'kept' }), entry('damaged', { gitBranch: 'lost' })];
    await writer.append(main, sent);
    await writer.pool.end(); // it dies before folding
    await admin(`UPDATE ${table('session_entries')} SET entry = 'null' WHERE entry LIKE '%damaged%'`);
    const reader = await store();
    const [summary] = await reader.listSessionSummaries(main.projectKey);
    expect(summary?.data).toEqual(foldSessionSummary(undefined, main, [sent[0] as SessionStoreEntry]).data);
    expect((await reader.readTranscript(main))?.unreadable).toHaveLength(1);
  });

  it('an entry that cannot be written as JSON is refused with its own words, whatever it threw', async () => {
    const db = await store();
    const odd = {
      type: 'user',
      uuid: randomUUID(),
      toJSON: () => {
        throw 'no JSON here';
      },
    };
    await expect(db.append(main, [odd as unknown as SessionStoreEntry])).rejects.toThrow(
      /entry 0 .* cannot be written as JSON \(no JSON here\)/,
    );
  });

  it('names how many damaged rows follow the first, and quotes the key for psql', async () => {
    const db = await store();
    const quoted: SessionKey = { projectKey: '-work-project', sessionId: "it's" };
    await db.append(quoted, [entry('a'), entry('b'), entry('c'), entry('d')]);
    await admin(`UPDATE ${table('session_entries')} SET entry = '[]' WHERE seq >= 1`);
    const error = await db.load(quoted).catch((reason) => reason);
    expect(error.message).toContain("the entry with seq 1 (and 2 more rows) of -work-project/it's");
    expect(error.message).toContain("session_id = 'it''s'");
    expect(error.message).toContain('ORDER BY seq LIMIT 3');
  });

  it('a damaged summary says so, with the query that shows it', async () => {
    const db = await store();
    await db.append(main, [entry('a')]);
    await db.listSessions(main.projectKey);
    await admin(`UPDATE ${table('session_transcripts')} SET summary = 'nope'`);
    const error = await db.listSessionSummaries(main.projectKey).catch((reason) => reason);
    expect(error.message).toContain(
      'the summary of -work-project/s-1 is not a JSON object, so it was not used and nothing was written over it',
    );
    expect(error.message).toContain(
      `-c "SELECT summary FROM ${schema?.schema}.session_transcripts WHERE project_key = '-work-project' AND session_id = 's-1' AND subpath = ''"`,
    );
  });

  it('close twice is nothing the second time', async () => {
    const db = await store();
    await db.append(main, [entry('a')]);
    await db.close();
    await expect(db.close()).resolves.toBeUndefined();
  });
});

/**
 * Folds this store schedules are kept from running on their own (the timer is set, never fires), so
 * a test decides when the fold happens: the next read, `flush` or `close`. Returns how many folds
 * were scheduled.
 */
function holdFolds(): { scheduled: () => number } {
  const real = globalThis.setTimeout;
  let scheduled = 0;
  vi.spyOn(globalThis, 'setTimeout').mockImplementation(((
    callback: (...args: unknown[]) => void,
    ms?: number,
    ...args: unknown[]
  ) => {
    if (ms !== FOLD_DELAY_MS) return real(callback, ms, ...args);
    scheduled += 1;
    return real(() => undefined, 2 ** 31 - 1);
  }) as typeof setTimeout);
  return { scheduled: () => scheduled };
}

/** Entries whose text holds `stored-damaged` are stored as `null` (a row damaged on the way in). */
async function damageOnWrite(): Promise<void> {
  await postgres.admin(`
    CREATE FUNCTION ${table('damage')}() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN IF NEW.entry LIKE '%stored-damaged%' THEN NEW.entry := 'null'; END IF; RETURN NEW; END $$;
    CREATE TRIGGER damage BEFORE INSERT ON ${table('session_entries')}
      FOR EACH ROW EXECUTE FUNCTION ${table('damage')}();`);
}

/** Every fold's write fails on the server (`fold refused`) until the returned function is called. */
async function refuseFolds(): Promise<() => Promise<void>> {
  await postgres.admin(`
    CREATE FUNCTION ${table('refuse_fold')}() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN RAISE EXCEPTION 'fold refused'; END $$;
    CREATE TRIGGER refuse_fold BEFORE UPDATE ON ${table('session_transcripts')}
      FOR EACH ROW EXECUTE FUNCTION ${table('refuse_fold')}();`);
  return async () => {
    await postgres.admin(`DROP TRIGGER refuse_fold ON ${table('session_transcripts')}`);
  };
}

/** Every delete of an entry fails on the server (`delete refused`). */
async function refuseEntryDeletes(): Promise<void> {
  await postgres.admin(`
    CREATE FUNCTION ${table('refuse_delete')}() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN RAISE EXCEPTION 'delete refused'; END $$;
    CREATE TRIGGER refuse_delete BEFORE DELETE ON ${table('session_entries')}
      FOR EACH ROW EXECUTE FUNCTION ${table('refuse_delete')}();`);
}

const summaryOf = async (db: PostgresSessionStore, key = main) =>
  (await db.listSessionSummaries(key.projectKey)).find((summary) => summary.sessionId === key.sessionId)
    ?.data;

describe('what a refusal or a failure names', () => {
  it('a key no session has is refused naming what was asked, before anything is read or written', async () => {
    const db = await store();
    const bad = { projectKey: 'a/b', sessionId: 's-1' };
    const refusals: Array<[string, () => Promise<unknown>]> = [
      ['store entries under', () => db.append(bad, [entry('a')])],
      ['load', () => db.load(bad)],
      ['load', () => db.readTranscript(bad)],
      ['read the cost of', () => db.lastCostState(bad)],
      ['list the sessions of', () => db.listSessions(bad.projectKey)],
      ['list the summaries of', () => db.listSessionSummaries(bad.projectKey)],
      ['count the entries of', () => db.entryCounts(bad.projectKey)],
      ['delete', () => db.delete(bad)],
      ['list the subkeys of', () => db.listSubkeys(bad)],
    ];
    for (const [action, call] of refusals) {
      await expect(call()).rejects.toThrow(`refusing to ${action} the session key {"projectKey":"a/b"`);
    }
  });

  it('a query the server refuses names the operation that ran it', async () => {
    const db = await store();
    await db.append(main, [entry('a')]);
    await db.flush();
    await postgres.admin(`ALTER TABLE ${table('session_transcripts')} RENAME TO gone`);
    const failures: Array<[string, () => Promise<unknown>]> = [
      ['load -work-project/s-1', () => db.load(main)],
      ['read the last cost of -work-project/s-1', () => db.lastCostState(main)],
      ['list sessions', () => db.listSessions(main.projectKey)],
      ['list summaries', () => db.listSessionSummaries(main.projectKey)],
      ['count entries', () => db.entryCounts(main.projectKey)],
      ['list subkeys', () => db.listSubkeys(main)],
    ];
    for (const [action, call] of failures) {
      await expect(call()).rejects.toThrow(`could not ${action}: `);
    }
    await postgres.admin(`ALTER TABLE "${schema?.schema}".gone RENAME TO session_transcripts`);
  });

  it('a server nobody answers at fails open naming the schema it was to open', async () => {
    const port = await closedPort();
    const db = new PostgresSessionStore(`postgres://postgres@127.0.0.1:${port}/test?schema=never_made`);
    opened.push(db);
    await expect(db.open()).rejects.toThrow(/could not open schema "never_made": /);
  });

  it('pool options given to the store size its pool', async () => {
    schema ??= await postgres.freshSchema('store');
    const db = new PostgresSessionStore(schema.url, { pool: { maxConnections: 1 } });
    opened.push(db);
    expect((db.pool as unknown as { options: { max: number } }).options.max).toBe(1);
  });

  it('a null entry is refused as not a JSON object', async () => {
    const db = await store();
    await expect(db.append(main, [entry('a'), null as unknown as SessionStoreEntry])).rejects.toThrow(
      /entry 1 .*: it is not a JSON object\./,
    );
  });

  it('a stored entry that is JSON but no object (a number, a string) is unreadable', async () => {
    const db = await store();
    await db.append(main, [entry('a'), entry('b')]);
    await postgres.admin(`UPDATE ${table('session_entries')} SET entry = '42' WHERE seq = 0`);
    await postgres.admin(`UPDATE ${table('session_entries')} SET entry = '"text"' WHERE seq = 1`);
    await expect(db.load(main)).rejects.toThrow(/the entry with seq 0 \(and 1 more row\)/);
  });

  it('a damaged newest cost-state is reported, not returned', async () => {
    const db = await store();
    await db.append(main, [{ type: 'cost-state', uuid: randomUUID(), totalCostUSD: 1 }]);
    await db.flush();
    await postgres.admin(`UPDATE ${table('session_entries')} SET entry = '[]'`);
    await expect(db.lastCostState(main)).rejects.toThrow(
      /the entry with seq \d+ of -work-project\/s-1 is not a JSON object/,
    );
  });
});

describe('the fold folds what this store appended as it was appended', () => {
  it('its own entries come from memory, not read back, across batches that share a fold', async () => {
    const db = await store();
    holdFolds();
    await damageOnWrite();
    const first = [entry('stored-damaged prompt', { gitBranch: 'one' })];
    const second = [entry('b', { gitBranch: 'two' }), entry('c')];
    await db.append(main, first);
    await db.append(main, second);
    expect(await summaryOf(db)).toEqual(foldSessionSummary(undefined, main, [...first, ...second]).data);
  });

  it('a burst of appends within the delay schedules one fold', async () => {
    const db = await store();
    const folds = holdFolds();
    await db.append(main, [entry('a')]);
    await db.append(main, [entry('b')]);
    await db.append(sub, [entry('c')]);
    expect(folds.scheduled()).toBe(1);
  });

  it('a batch of only known entries within the delay leaves the mtime at the first append', async () => {
    const db = await store();
    holdFolds();
    const now = Date.now();
    const clock = vi.spyOn(Date, 'now').mockReturnValue(now);
    const batch = [entry('a')];
    await db.append(main, batch);
    clock.mockReturnValue(now + 10_000);
    await db.append(main, batch);
    expect(await mtimeOf(db)).toBeLessThan(now + 10_000);
  });

  it('another writer whose every entry is damaged folds to an empty summary', async () => {
    const writer = await store();
    await damageOnWrite();
    await writer.append(main, [entry('stored-damaged a'), entry('stored-damaged b')]);
    await writer.pool.end(); // it dies before folding
    const reader = await store();
    expect(await summaryOf(reader)).toEqual({});
  });

  it('a fold that finds its row deleted by another store leaves the next append visible to others', async () => {
    const [db, remover] = [await store(), await store()];
    holdFolds();
    await db.append(main, [entry('before the delete')]);
    await remover.delete(main);
    await db.flush();
    const after = [entry('after the delete')];
    await db.append(main, after);
    expect(await remover.load(main)).toEqual(after);
  });

  it("an unreadable summary found on another writer's row names that row's key", async () => {
    const writer = await store();
    await writer.append(main, [entry('a')]);
    await writer.flush();
    await writer.append(main, [entry('b')]);
    await writer.pool.end(); // it dies before folding the second
    await postgres.admin(`UPDATE ${table('session_transcripts')} SET summary = 'nope'`);
    const reader = await store();
    await expect(reader.listSessions(main.projectKey)).rejects.toThrow(
      /the summary of -work-project\/s-1 is not a JSON object/,
    );
  });

  it('a row without a summary yet is listed as a session but has no summary', async () => {
    const db = await store();
    await db.append(main, [entry('a')]);
    await postgres.admin(
      `INSERT INTO ${table('session_transcripts')} (project_key, session_id, subpath, mtime) VALUES ($1, 's-2', '', 1)`,
      [main.projectKey],
    );
    expect((await db.listSessions(main.projectKey)).map((row) => row.sessionId).sort()).toEqual([
      's-1',
      's-2',
    ]);
    expect((await db.listSessionSummaries(main.projectKey)).map((row) => row.sessionId)).toEqual(['s-1']);
  });
});

describe('a fold that fails keeps what it was folding', () => {
  it("fails the read that ran it naming the server's words, and the next fold has every entry from memory", async () => {
    const db = await store();
    holdFolds();
    await damageOnWrite();
    const first = [entry('stored-damaged prompt', { gitBranch: 'one' })];
    await db.append(main, first);
    const allow = await refuseFolds();
    // An append lands while the failing fold waits for its connection.
    const connect = db.pool.connect.bind(db.pool);
    let reached: () => void = () => undefined;
    const atConnect = new Promise<void>((resolve) => {
      reached = resolve;
    });
    let open: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => {
      open = resolve;
    });
    vi.spyOn(db.pool, 'connect').mockImplementationOnce((async () => {
      reached();
      await gate;
      return connect();
    }) as typeof db.pool.connect);
    const reading = db.load(main).catch((reason) => reason);
    await atConnect;
    const second = [entry('stored-damaged later', { gitBranch: 'two' })];
    await db.append(main, second);
    open();
    const error = await reading;
    expect(error).toBeInstanceOf(PostgresStoreError);
    expect(error.message).toMatch(/could not update the sessions list: fold refused; nothing was changed/);
    await allow();
    expect(await summaryOf(db)).toEqual(foldSessionSummary(undefined, main, [...first, ...second]).data);
  });

  it("a listing that cannot fold another writer's row fails saying so, and works once the fold can", async () => {
    const writer = await store();
    await writer.append(main, [entry('a prompt')]);
    await writer.pool.end(); // it dies before folding
    const reader = await store();
    const allow = await refuseFolds();
    await expect(reader.listSessions(main.projectKey)).rejects.toThrow(
      /could not update the sessions list: fold refused; nothing was changed/,
    );
    await allow();
    expect((await reader.listSessions(main.projectKey)).map((row) => row.sessionId)).toEqual(['s-1']);
  });

  it("an append of this store landing before a listing folds another writer's row is kept when that fold fails", async () => {
    const writer = await store();
    const theirs = [entry('their prompt')];
    await writer.append(main, theirs);
    await writer.pool.end(); // it dies before folding
    const reader = await store();
    holdFolds();
    await damageOnWrite();
    const mine = [entry('stored-damaged mine', { gitBranch: 'mine' })];
    const flush = PostgresSessionStore.prototype.flush;
    vi.spyOn(reader, 'flush').mockImplementationOnce(async () => {
      await flush.call(reader);
      await reader.append(main, mine);
    });
    const allow = await refuseFolds();
    await expect(reader.listSessions(main.projectKey)).rejects.toThrow(/fold refused/);
    await allow();
    expect(await summaryOf(reader)).toEqual(foldSessionSummary(undefined, main, [...theirs, ...mine]).data);
  });
});

describe('mtime per store instance', () => {
  it("stays above this store's earlier mtimes on another key when its clock goes back", async () => {
    const db = await store();
    holdFolds();
    const later = Date.now() + 3_600_000;
    const clock = vi.spyOn(Date, 'now').mockReturnValue(later);
    await db.append(main, [entry('a')]);
    clock.mockReturnValue(later - 10_000);
    const other = { ...main, sessionId: 's-2' };
    await db.append(other, [entry('b')]);
    expect(await mtimeOf(db, other)).toBeGreaterThan((await mtimeOf(db)) as number);
  });

  it("folding another writer's row stays above this store's earlier mtimes", async () => {
    const reader = await store();
    const later = Date.now() + 3_600_000;
    const clock = vi.spyOn(Date, 'now').mockReturnValue(later);
    await reader.append(main, [entry('a')]);
    const mine = (await mtimeOf(reader)) as number;
    clock.mockReturnValue(later - 10_000);
    const writer = await store();
    const other = { ...main, sessionId: 's-2' };
    await writer.append(other, [entry('b')]);
    await writer.pool.end(); // it dies before folding
    expect(await mtimeOf(reader, other)).toBeGreaterThan(mine);
  });

  it("learns from a fold that another writer's clock was ahead", async () => {
    const ahead = await store();
    const later = Date.now() + 3_600_000;
    const clock = vi.spyOn(Date, 'now').mockReturnValue(later);
    await ahead.append(main, [entry('from a clock an hour ahead')]);
    await ahead.close();
    clock.mockRestore();
    const db = await store();
    await db.append(main, [entry('b')]);
    const folded = (await mtimeOf(db)) as number;
    expect(folded).toBeGreaterThan(later);
    const other = { ...main, sessionId: 's-2' };
    await db.append(other, [entry('c')]);
    expect(await mtimeOf(db, other)).toBeGreaterThan(folded);
  });
});

describe('transactions and connections', () => {
  it('folds and deletes reuse pooled connections', async () => {
    const db = await store();
    let connects = 0;
    db.pool.on('connect', () => {
      connects += 1;
    });
    for (let round = 0; round < 12; round += 1) {
      const key = { ...main, sessionId: `s-${round}` };
      await db.append(key, [entry(`r${round}`)]);
      await db.flush();
      await db.delete(key);
    }
    expect(connects).toBeLessThanOrEqual(4);
  });

  it("a fold holds its key's row lock from its read to its write", async () => {
    const db = await store();
    holdFolds();
    await db.append(main, [entry('a')]);
    const blocker = new pg.Client({ connectionString: postgres.baseUrl });
    await blocker.connect();
    try {
      await blocker.query('BEGIN');
      await blocker.query(`LOCK TABLE ${table('session_entries')} IN ACCESS EXCLUSIVE MODE`);
      const folding = db.flush();
      // The fold has read and locked the row, and waits to read the entries.
      for (let waited = 0; ; waited += 20) {
        const { rows } = await postgres.admin(
          `SELECT count(*)::int AS n FROM pg_locks WHERE NOT granted AND relation = '${table('session_entries')}'::regclass`,
        );
        if (rows[0].n > 0) break;
        expect(waited).toBeLessThan(5_000);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      await expect(
        postgres.admin(`SELECT id FROM ${table('session_transcripts')} FOR UPDATE NOWAIT`),
      ).rejects.toThrow(/could not obtain lock/);
      await blocker.query('ROLLBACK');
      await folding;
    } finally {
      await blocker.end();
    }
  });

  it('a delete that fails half-way changes nothing and names the key', async () => {
    const db = await store();
    const sent = [entry('a')];
    await db.append(main, sent);
    await refuseEntryDeletes();
    await expect(db.delete(main)).rejects.toThrow(
      /could not delete -work-project\/s-1: delete refused; nothing was changed/,
    );
    expect(await db.load(main)).toEqual(sent);
    expect((await db.listSessions(main.projectKey)).map((row) => row.sessionId)).toEqual(['s-1']);
  });

  it('a connection whose ROLLBACK failed is not put back in the pool, after a failed fold or delete', async () => {
    const db = await store();
    await db.append(main, [entry('a')]);
    const released: unknown[] = [];
    const connect = db.pool.connect.bind(db.pool);
    const rollbackFails = (async () => {
      const client = await connect();
      const query = client.query.bind(client) as (...args: unknown[]) => Promise<unknown>;
      const release = client.release;
      Object.assign(client, {
        query: (...args: unknown[]) =>
          args[0] === 'ROLLBACK' ? Promise.reject(new Error('connection lost')) : query(...args),
        release: (destroy?: boolean) => {
          released.push(destroy);
          release.call(client, true);
        },
      });
      return client;
    }) as typeof db.pool.connect;
    const allow = await refuseFolds();
    vi.spyOn(db.pool, 'connect').mockImplementationOnce(rollbackFails);
    await expect(db.flush()).rejects.toThrow(/fold refused/);
    await allow();
    await refuseEntryDeletes();
    vi.spyOn(db.pool, 'connect').mockImplementationOnce(rollbackFails);
    await expect(db.delete(main)).rejects.toThrow(/could not delete -work-project\/s-1: delete refused/);
    expect(released).toEqual([true, true]);
  });

  it('a delete that gets no connection names the key', async () => {
    const db = await store();
    vi.spyOn(db.pool, 'connect').mockRejectedValueOnce(new Error('no connection for you') as never);
    await expect(db.delete(main)).rejects.toThrow(
      /could not delete -work-project\/s-1: no connection for you/,
    );
  });
});
