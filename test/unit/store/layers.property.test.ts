import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { SqliteSessionStore } from '../../../src/store/sqlite-session-store.js';
import { transcriptArbitrary } from '../../support/transcript-arbitrary.js';
import { validateTranscript } from '../../support/transcript-validator.js';

const directory = mkdtempSync(path.join(tmpdir(), 'flower-property-'));
const file = path.join(directory, 'sessions.db');
const reader = (): Database.Database => new Database(file, { readonly: true });
afterAll(() => rmSync(directory, { recursive: true, force: true }));

type Block = { type?: string; is_error?: boolean; content?: unknown };
const blocks = (entries: readonly Record<string, unknown>[]): Block[] =>
  entries.flatMap((entry) => {
    const content = (entry.message as { content?: unknown } | undefined)?.content;
    return Array.isArray(content) ? (content as Block[]) : [];
  });

const policies = fc.record({
  ephemeralKeep: fc.integer({ min: 0, max: 8 }),
  trimKeep: fc.integer({ min: 0, max: 4 }),
  keepDenials: fc.integer({ min: -1, max: 3 }),
});

let session = 0;

describe('rewrite layers on random transcripts (property)', () => {
  it('yield API-valid, connected transcripts and never change the stored rows', async () => {
    await fc.assert(
      fc.asyncProperty(transcriptArbitrary(), policies, async (entries, policy) => {
        const store = new SqliteSessionStore(file, {
          workspace: directory,
          ephemeral: { keepRecent: policy.ephemeralKeep },
          trim: { enabled: true, keepRecent: policy.trimKeep },
          prune: { keepDenials: policy.keepDenials },
        });
        try {
          session += 1;
          const key = { projectKey: '-prop', sessionId: `s${session}` };
          await store.append(key, entries);
          const db = reader();
          const rows = (): unknown[] =>
            db
              .prepare('SELECT seq, uid, payload FROM entries WHERE store_key = ? ORDER BY seq')
              .all(`-prop/s${session}`);
          const before = rows();
          const loaded = (await store.load(key)) ?? [];
          const after = rows();
          db.close();

          expect(after).toEqual(before);
          expect(before.map((row) => JSON.parse((row as { payload: string }).payload))).toEqual(entries);
          expect(validateTranscript(loaded, { original: entries, singleChain: true })).toEqual([]);
          // What each layer promises, checked on the output:
          expect(loaded.some((entry) => entry.isApiErrorMessage === true)).toBe(false);
          expect(
            blocks(loaded).some(
              (block) => block.is_error === true && String(block.content).includes('[Request interrupted'),
            ),
          ).toBe(false);
          const denialsLeft = loaded.filter(
            (entry) =>
              entry.toolDenialKind === 'permission-rule' &&
              blocks([entry]).some((block) => block.type === 'tool_result'),
          );
          expect(denialsLeft.length).toBeLessThanOrEqual(Math.max(0, policy.keepDenials));
          const report = store.lastLoadReport(key);
          expect(report?.spillFailures).toBe(0);
        } finally {
          store.close();
        }
      }),
      { numRuns: 150 },
    );
  });
});
