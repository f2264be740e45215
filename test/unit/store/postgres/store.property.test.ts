/**
 * Random transcripts through the PostgreSQL backend (property tests):
 * 1. cut into random batches, with random replays of earlier batches (the SDK retrying, an import
 *    repeating itself), every entry with a uuid is stored once and in order (entries without one
 *    are appended each time, as the contract says), and the summary is the fold of exactly what is
 *    stored; awkward text (NUL characters, lone surrogates, emoji) round-trips;
 * 2. the rewrite layers applied to what the backend loads yield API-valid transcripts and never
 *    change the stored rows (the same properties the SQLite layers test checks).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { foldSessionSummary, type SessionKey, type SessionStoreEntry } from '@anthropic-ai/claude-agent-sdk';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresSessionStore } from '../../../../src/store/postgres/session-store.js';
import { resolvePolicies, rewriteForResume } from '../../../../src/store/rewrite.js';
import { createSpillWriter } from '../../../../src/store/spill.js';
import { type TestSchema, usePostgres } from '../../../support/postgres.js';
import { transcriptArbitrary } from '../../../support/transcript-arbitrary.js';
import { validateTranscript } from '../../../support/transcript-validator.js';

const postgres = usePostgres();
let schema: TestSchema;
let store: PostgresSessionStore;
const directory = mkdtempSync(path.join(tmpdir(), 'flower-pg-property-'));
let run = 0;

beforeAll(async () => {
  schema = await postgres.freshSchema('property');
  store = new PostgresSessionStore(schema.url);
  await store.open();
});
afterAll(async () => {
  await store.close();
  await schema.drop();
  rmSync(directory, { recursive: true, force: true });
});

const nextKey = (): SessionKey => {
  run += 1;
  return { projectKey: '-prop', sessionId: `s${run}` };
};

/** Text that tends to break stores: NUL (jsonb refuses it), lone surrogates, astral characters, quotes. */
const awkward = fc.string({
  unit: fc.constantFrom('\u0000', '\ud800', '\udfff', '😀', '"', '\\', '\n', "'", 'é', 'a', '\u2028'),
  maxLength: 12,
});

/** Cut points and replays: which earlier batch to send again after each batch (or none). */
const plan = fc.record({
  cuts: fc.array(fc.integer({ min: 1, max: 40 }), { maxLength: 12 }),
  replays: fc.array(fc.option(fc.nat(), { nil: undefined }), { maxLength: 12 }),
  noise: awkward,
});

function cut<T>(items: readonly T[], sizes: readonly number[]): T[][] {
  const batches: T[][] = [];
  let start = 0;
  for (const size of sizes) {
    if (start >= items.length) break;
    batches.push(items.slice(start, start + size));
    start += size;
  }
  if (start < items.length) batches.push(items.slice(start));
  return batches;
}

const rows = async (key: SessionKey) =>
  (
    await postgres.admin(
      `SELECT e.seq, e.uuid, e.entry FROM "${schema.schema}".session_entries e
         JOIN "${schema.schema}".session_transcripts t ON t.id = e.transcript_id
        WHERE t.project_key = $1 AND t.session_id = $2 AND t.subpath = '' ORDER BY e.seq`,
      [key.projectKey, key.sessionId],
    )
  ).rows;

describe('PostgreSQL backend on random transcripts (property)', () => {
  it('stores every entry once and in order, whatever the batching and replays; the summary folds exactly that', async () => {
    await fc.assert(
      fc.asyncProperty(transcriptArbitrary(25), plan, async (transcript, { cuts, replays, noise }) => {
        const key = nextKey();
        const entries: SessionStoreEntry[] = transcript.map((entry, index) =>
          index % 3 === 0 ? { ...entry, noise: `${noise}${index}` } : entry,
        );
        const batches = cut(entries, cuts);
        // The model: an entry with a stored uuid is skipped, one without a uuid always appended.
        const expected: SessionStoreEntry[] = [];
        const seen = new Set<string>();
        const send = async (batch: SessionStoreEntry[]) => {
          await store.append(key, batch);
          for (const entry of batch) {
            if (typeof entry.uuid === 'string' && seen.has(entry.uuid)) continue;
            if (typeof entry.uuid === 'string') seen.add(entry.uuid);
            expected.push(entry);
          }
        };
        for (const [index, batch] of batches.entries()) {
          await send(batch);
          const replay = replays[index];
          if (replay !== undefined) await send(batches[replay % (index + 1)] as SessionStoreEntry[]);
        }
        const loaded = await store.load(key);
        expect(loaded).toEqual(expected);
        expect(loaded?.filter((entry) => typeof entry.uuid === 'string')).toEqual(
          entries.filter((entry) => typeof entry.uuid === 'string'),
        );
        const [summary] = (await store.listSessionSummaries(key.projectKey)).filter(
          (each) => each.sessionId === key.sessionId,
        );
        expect(summary?.data).toEqual(foldSessionSummary(undefined, key, expected).data);
        const listed = (await store.listSessions(key.projectKey)).find(
          (each) => each.sessionId === key.sessionId,
        );
        expect(listed?.mtime).toBe(summary?.mtime);
      }),
      { numRuns: 40 },
    );
  });

  it('rewritten loads are API-valid, connected transcripts, and loading never changes the stored rows', async () => {
    const layerPolicies = fc.record({
      ephemeralKeep: fc.integer({ min: 0, max: 8 }),
      trimKeep: fc.integer({ min: 0, max: 4 }),
      keepDenials: fc.integer({ min: -1, max: 3 }),
    });
    await fc.assert(
      fc.asyncProperty(transcriptArbitrary(), layerPolicies, async (entries, policy) => {
        const key = nextKey();
        await store.append(key, entries);
        const before = await rows(key);
        const policies = resolvePolicies({
          ephemeral: { keepRecent: policy.ephemeralKeep },
          trim: { enabled: true, keepRecent: policy.trimKeep },
          prune: { keepDenials: policy.keepDenials },
        });
        const spill = createSpillWriter(directory, policies.trim.spillDirname);
        const { entries: rewritten, report } = rewriteForResume(
          (await store.load(key)) ?? [],
          policies,
          spill,
        );
        expect(await rows(key)).toEqual(before);
        expect(before.map((row) => JSON.parse(row.entry))).toEqual(entries);
        expect(validateTranscript(rewritten, { original: entries, singleChain: true })).toEqual([]);
        expect(rewritten.some((entry) => entry.isApiErrorMessage === true)).toBe(false);
        expect(report.spillFailures).toBe(0);
      }),
      { numRuns: 40 },
    );
  });
});
