/**
 * What gc's tombstones do once it has left them (issue 18, observation 9: gc did not stick):
 * - the run directory's file merges under its lock, is private, and a damaged one counts as none;
 * - start-up recovery copies back neither a dropped session from the agent's own transcripts nor
 *   its entries waiting in runs/unsaved/ (which go), while it still recovers every other session;
 * - the pull (real PostgreSQL) makes both sides' tombstones the same, sends no dropped session up,
 *   brings none down, drops the local copies, and keeps a session a lineage here still names.
 */
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { SessionStoreEntry } from '@anthropic-ai/claude-agent-sdk';
import { afterEach, describe, expect, it } from 'vitest';
import { markInFlight } from '../../../src/runtime/in-flight.js';
import { Lineage } from '../../../src/runtime/lineage.js';
import {
  addTombstones,
  readTombstones,
  settleTombstones,
  tombstonesPath,
} from '../../../src/runtime/retention/tombstones.js';
import { prepareRunDirectory } from '../../../src/runtime/run-directory.js';
import { pullTaskState } from '../../../src/runtime/shared/pull.js';
import { TranscriptSafety, UNSAVED_DIRECTORY } from '../../../src/runtime/transcript-safety.js';
import type { Tombstone } from '../../../src/store/retention/tombstones.js';
import { projectKeyFor } from '../../../src/store/session-key.js';
import { SqliteSessionStore } from '../../../src/store/sqlite-session-store.js';
import { appendTranscriptFile, transcriptFile } from '../../../src/store/transcript-recovery.js';
import { sharedStoresPerTest, usePostgres } from '../../support/postgres.js';

const postgres = usePostgres();
const shared = sharedStoresPerTest(postgres, 'tombstones');
const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0).reverse()) cleanup();
});

function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), `flower-${prefix}-`));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

function openStore(runDir: string): SqliteSessionStore {
  const store = new SqliteSessionStore(join(runDir, 'sessions.db'));
  cleanups.push(() => store.close());
  return store;
}

const stone = (projectKey: string, sessionId: string, droppedAt = 1_000): Tombstone => ({
  projectKey,
  sessionId,
  droppedAt,
  kind: 'retired',
  lastWrite: droppedAt - 10,
  host: 'gc-host',
});
const entries = (id: string): SessionStoreEntry[] => [
  { type: 'user', uuid: `${id}-1`, message: { content: 'hi' } },
  { type: 'assistant', uuid: `${id}-2`, message: { content: 'hello' } },
];

describe("the run directory's tombstones", () => {
  it('merge under the lock, keep the earliest drop, and are owner-only', () => {
    const runDir = tempDir('stones');
    addTombstones(runDir, [stone('-w', 'a', 50)]);
    const all = addTombstones(runDir, [stone('-w', 'a', 20), stone('-w', 'b', 30)]);
    expect(all.map((t) => [t.sessionId, t.droppedAt])).toEqual([
      ['a', 20],
      ['b', 30],
    ]);
    expect(readTombstones(runDir)).toEqual(all);
    expect(statSync(tombstonesPath(runDir)).mode & 0o777).toBe(0o600);
  });

  it('count as none when the file is damaged; the next write sets it aside and says so', () => {
    const runDir = tempDir('stones');
    writeFileSync(tombstonesPath(runDir), '{"dropped": [');
    expect(readTombstones(runDir)).toEqual([]);
    const warnings: string[] = [];
    addTombstones(runDir, [stone('-w', 'a')], (line) => warnings.push(line));
    expect(warnings).toEqual([expect.stringContaining('was kept as')]);
    expect(readTombstones(runDir).map((t) => t.sessionId)).toEqual(['a']);
  });
});

describe('start-up recovery', () => {
  it("copies back no dropped session from the agent's own transcripts or runs/unsaved/, and every other one", async () => {
    const runDir = tempDir('recovery-runs');
    const configDir = tempDir('recovery-claude');
    const projectKey = '-work-p';
    const store = openStore(runDir);
    const projects = join(configDir, 'projects');
    for (const id of ['kept', 'dropped'])
      appendTranscriptFile(projects, { projectKey, sessionId: id }, entries(id));
    const unsaved = join(runDir, UNSAVED_DIRECTORY);
    appendTranscriptFile(unsaved, { projectKey, sessionId: 'dropped-unsaved' }, entries('dropped-unsaved'));
    addTombstones(runDir, [stone(projectKey, 'dropped'), stone(projectKey, 'dropped-unsaved')]);

    const warnings: string[] = [];
    const safety = new TranscriptSafety({
      backend: store,
      target: store,
      runDir,
      projectKey,
      env: { CLAUDE_CONFIG_DIR: configDir },
      onWarning: (line) => warnings.push(line),
    });
    await safety.recoverAtStart(['kept', 'dropped', 'dropped-unsaved']);

    expect((await store.listSessions(projectKey)).map((row) => row.sessionId)).toEqual(['kept']);
    expect(warnings).toEqual([
      "The session store was missing 2 transcript entries of 1 session; they were copied back from the agents' own transcripts.",
    ]);
    // The dropped session's waiting entries go with it; the agent's own files are not flower's.
    expect(() => statSync(transcriptFile(unsaved, { projectKey, sessionId: 'dropped-unsaved' }))).toThrow();
    expect(readFileSync(transcriptFile(projects, { projectKey, sessionId: 'dropped' }), 'utf8')).toContain(
      'dropped-1',
    );
  });
});

describe('the pull and the tombstones (real PostgreSQL)', () => {
  function workspaceWith(): { workspace: string; runDir: string; projectKey: string } {
    const workspace = tempDir('pull-ws');
    const runDir = join(workspace, 'runs');
    prepareRunDirectory(runDir, workspace);
    return { workspace, runDir, projectKey: projectKeyFor(workspace) };
  }
  const ids = async (store: Pick<SqliteSessionStore, 'listSessions'>, projectKey: string) =>
    (await store.listSessions(projectKey)).map((row) => row.sessionId).sort();

  it('sends no dropped session up, brings none down, and the tombstones end on both sides', async () => {
    const db = await shared.open();
    const { workspace, runDir, projectKey } = workspaceWith();
    // The database still holds a session another machine's gc tombstoned (its delete was cut
    // off), and this run directory holds one that only its own file names as dropped.
    await db.sessions.append({ projectKey, sessionId: 'far-dropped' }, entries('far-dropped'));
    await db.sessions.append({ projectKey, sessionId: 'far-live' }, entries('far-live'));
    await db.tombstones.add([stone(projectKey, 'far-dropped')]);
    const local = openStore(runDir);
    await local.append({ projectKey, sessionId: 'near-dropped' }, entries('near-dropped'));
    await local.append({ projectKey, sessionId: 'near-live' }, entries('near-live'));
    addTombstones(runDir, [stone(projectKey, 'near-dropped')]);
    local.close();

    const report = await pullTaskState(db, { workspace, runDir });
    expect(await ids(db.sessions, projectKey)).toEqual(['far-dropped', 'far-live', 'near-live']);
    const after = openStore(runDir);
    expect(await ids(after, projectKey)).toEqual(['far-live', 'near-live']);
    expect(report.sessions).toMatchObject({ pulled: 2, pushed: 2 });
    const both = ['far-dropped', 'near-dropped'];
    expect(
      readTombstones(runDir)
        .map((t) => t.sessionId)
        .sort(),
    ).toEqual(both);
    expect((await db.tombstones.list(projectKey)).map((t) => t.sessionId).sort()).toEqual(both);
  });

  it('drops the local copy of a session gc dropped elsewhere, unless a lineage here still names it', async () => {
    const db = await shared.open();
    const { workspace, runDir, projectKey } = workspaceWith();
    const local = openStore(runDir);
    for (const id of ['old', 'named', 'in-flight'])
      await local.append({ projectKey, sessionId: id }, entries(id));
    Lineage.open(runDir, workspace).remember('work', 'named');
    // A step killed in that session: the next start books it from the transcript.
    markInFlight(runDir, {
      sessionId: 'in-flight',
      step: 'judge',
      run: 'r',
      startedAt: 1,
      baselineUsd: 0,
      resumed: true,
    });
    const dropped = await settleTombstones({ tombstones: db.tombstones }, runDir, projectKey, local);
    expect(dropped).toEqual(new Set());
    await db.tombstones.add(['old', 'named', 'in-flight'].map((id) => stone(projectKey, id)));
    const verbose: string[] = [];
    const now = await settleTombstones({ tombstones: db.tombstones }, runDir, projectKey, local, {
      onVerbose: (line) => verbose.push(line),
    });
    expect(now).toEqual(new Set(['old']));
    expect(await ids(local, projectKey)).toEqual(['in-flight', 'named']);
    expect(verbose).toEqual([expect.stringContaining('Session old was dropped by flower gc')]);
    expect(
      readTombstones(runDir)
        .map((t) => t.sessionId)
        .sort(),
    ).toEqual(['in-flight', 'named', 'old']);
  });
});
