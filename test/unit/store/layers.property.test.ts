/**
 * Random transcripts through the rewriting layer over the SQLite backend: what a resume is fed is
 * always structurally valid for the API and the harness (validator), every layer's promise holds
 * on the output, and the stored rows never change. A second property damages random rows first:
 * the resume still gets a valid, connected history, and the report counts every damaged row.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { rewriteForResume } from '../../../src/store/rewrite.js';
import { RewritingSessionStore } from '../../../src/store/rewriting-store.js';
import { createSpillWriter } from '../../../src/store/spill.js';
import { SqliteSessionStore } from '../../../src/store/sqlite-session-store.js';
import { transcriptArbitrary } from '../../support/transcript-arbitrary.js';
import type { Entry } from '../../support/transcript-builder.js';
import { validateTranscript } from '../../support/transcript-validator.js';

const directory = mkdtempSync(path.join(tmpdir(), 'flower-property-'));
const file = path.join(directory, 'sessions.db');
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

/** A layered store over a fresh key of the shared file, and a raw reader of that key's rows. */
function open(policy: { ephemeralKeep: number; trimKeep: number; keepDenials: number }) {
  const backend = new SqliteSessionStore(file);
  const warnings: string[] = [];
  const store = new RewritingSessionStore(backend, {
    workspace: directory,
    ephemeral: { keepRecent: policy.ephemeralKeep },
    trim: { enabled: true, keepRecent: policy.trimKeep },
    prune: { keepDenials: policy.keepDenials },
    onWarning: (line) => warnings.push(line),
  });
  session += 1;
  const key = { projectKey: '-prop', sessionId: `s${session}` };
  const db = new Database(file);
  const rows = (): unknown[] =>
    db
      .prepare('SELECT seq, uid, payload FROM entries WHERE store_key = ? ORDER BY seq')
      .all(`-prop/s${session}`);
  const close = (): void => {
    db.close();
    backend.close();
  };
  return { store, key, db, rows, warnings, close, storeKey: `-prop/s${session}` };
}

describe('rewrite layers on random transcripts (property)', () => {
  it('yield API-valid, connected transcripts and never change the stored rows', async () => {
    await fc.assert(
      fc.asyncProperty(transcriptArbitrary(), policies, async (entries, policy) => {
        const { store, key, rows, warnings, close } = open(policy);
        try {
          await store.append(key, entries);
          const before = rows();
          const loaded = (await store.load(key)) ?? [];
          const after = rows();

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
          // A rewritten result's duplicate copy never keeps more text than the result itself.
          for (const entry of loaded) {
            const [result] = blocks([entry]).filter((block) => block.type === 'tool_result');
            if (result === undefined || typeof result.content !== 'string') continue;
            if (!/^\[(tool result archived|result of `)/.test(result.content)) continue;
            expect(JSON.stringify(entry.toolUseResult ?? '')).not.toMatch(/[a-j]{500}/);
          }
          expect(store.lastLoadReport(key)).toMatchObject({ spillFailures: 0, unreadableRows: 0 });
          expect(warnings).toEqual([]);
          // The store edits its freshly parsed rows in place; copying gives the same transcript.
          const copied = rewriteForResume(
            entries,
            store.policies,
            createSpillWriter(directory, '.flower/spill'),
          );
          expect(copied.entries).toEqual(loaded);
          expect(copied.report).toEqual(store.lastLoadReport(key));
        } finally {
          close();
        }
      }),
      { numRuns: 150 },
    );
  });

  it('resume around damaged rows: still valid and connected, every damaged row reported', async () => {
    const damaged = fc
      .tuple(transcriptArbitrary(), fc.array(fc.nat(), { minLength: 1, maxLength: 3 }), policies)
      .map(([entries, picks, policy]) => ({
        entries,
        policy,
        broken: [...new Set(picks.map((pick) => pick % entries.length))],
      }));
    await fc.assert(
      fc.asyncProperty(damaged, async ({ entries, policy, broken }) => {
        const { store, key, db, warnings, close, storeKey } = open(policy);
        try {
          await store.append(key, entries);
          const damage = db.prepare(
            'UPDATE entries SET payload = \'{"type": "user", cut off\' WHERE store_key = ? AND seq = ?',
          );
          for (const seq of broken) damage.run(storeKey, seq);
          const loaded = (await store.load(key)) ?? [];
          const readable: Entry[] = entries.filter((_, index) => !broken.includes(index));
          expect(validateTranscript(loaded, { original: readable, singleChain: true })).toEqual([]);
          expect(store.lastLoadReport(key)?.unreadableRows).toBe(broken.length);
          expect(warnings).toHaveLength(1);
          const seqs = [...broken].sort((a, b) => a - b).join(', ');
          expect(warnings[0]).toContain(`Transcript ${storeKey} in ${file} has`);
          expect(warnings[0]).toContain(`(seq ${seqs})`);
        } finally {
          close();
        }
      }),
      { numRuns: 100 },
    );
  });
});
