/**
 * The run's data with the task state in PostgreSQL (report/shared-run-data.ts): the pull's merge
 * without its writes — the database's rows of a run replace this machine's, unsent local rows and
 * booked rows come after them once, the database's steps win over the local ones of this
 * workspace (a lineage of another workspace is not this task's), the wake count is the larger —
 * and reading a task from a machine that has no workspace writes nothing anywhere.
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { mergedLineage, mergedManifest, openSharedRunData } from '../../../src/report/shared-run-data.js';
import { KILLED_UNRECORDED } from '../../../src/runtime/in-flight.js';
import type { TaskRecord } from '../../../src/store/postgres/task-records.js';
import { projectKeyFor } from '../../../src/store/session-key.js';
import { SqliteSessionStore } from '../../../src/store/sqlite-session-store.js';
import { sharedStoresPerTest, usePostgres } from '../../support/postgres.js';

const postgres = usePostgres();
const { open } = sharedStoresPerTest(postgres, 'report');
const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const record = (kind: TaskRecord['kind'], key: string, value: unknown, seq: number): TaskRecord => ({
  kind,
  key,
  value,
  at: 1,
  seq,
});

describe('mergedManifest', () => {
  it("puts the database's rows first in first-write order, then rows only this machine has, a booked row once", () => {
    const booked = { run: 'r1', session_id: 's-k', started_at: 3, error: KILLED_UNRECORDED };
    const merged = mergedManifest(
      [
        record('manifest-run', 'r1', [{ run: 'r1', step: 'work', cost_usd: 2 }], 2),
        record('manifest-added', 'r1/s-k/3', booked, 1), // written first
      ],
      {
        state: 'ok',
        document: [
          { run: 'r1', step: 'work', cost_usd: 1 }, // stale: the database has run r1
          booked, // already booked there
          { run: 'r2', step: 'work', cost_usd: 5 }, // never sent
        ],
      },
      true,
    );
    expect(merged).toEqual({
      state: 'ok',
      document: [booked, { run: 'r1', step: 'work', cost_usd: 2 }, { run: 'r2', step: 'work', cost_usd: 5 }],
    });
  });

  it('says a torn local file when the database has no rows either', () => {
    const torn = { state: 'corrupt' as const, reason: 'not JSON', document: [] };
    expect(mergedManifest([], torn, true)).toBe(torn);
  });
});

describe('mergedLineage', () => {
  const records = [record('lineage-step', 'work', { sessionId: 's-db' }, 1), record('woke', '', 2, 2)];
  it("takes the database's steps over this workspace's, keeps its other steps, and the larger wake count", () => {
    const merged = mergedLineage(
      records,
      { state: 'ok', document: { workspace: '/work', woke: 5, steps: { work: 's-local', plan: 's-p' } } },
      '/work',
    );
    expect(merged).toEqual({
      state: 'ok',
      document: { workspace: '/work', woke: 5, steps: { work: 's-db', plan: 's-p' } },
    });
  });

  it('ignores a local lineage written for another workspace', () => {
    const merged = mergedLineage(
      records,
      { state: 'ok', document: { workspace: '/elsewhere', woke: 9, steps: { plan: 's-far' } } },
      '/work',
    );
    expect(merged).toEqual({
      state: 'ok',
      document: { workspace: '/work', woke: 2, steps: { work: 's-db' } },
    });
  });
});

describe('openSharedRunData', () => {
  it('shows a task from the database alone and writes nothing where the workspace would be', async () => {
    const store = await open();
    const root = mkdtempSync(join(tmpdir(), 'flower-report-'));
    dirs.push(root);
    const workspace = join(root, 'work');
    const runDir = join(workspace, 'runs');
    await store.records.write({ workspace, runDir }, [
      {
        op: 'put',
        kind: 'manifest-run',
        key: 'r1',
        value: [{ run: 'r1', step: 'work', cost_usd: 2 }],
        at: 1,
      },
      { op: 'put', kind: 'lineage-step', key: 'work', value: { sessionId: 's-1' }, at: 1 },
    ]);
    const data = await openSharedRunData({ workspace, runDir }, store);
    try {
      expect(data.manifest).toEqual({ state: 'ok', document: [{ run: 'r1', step: 'work', cost_usd: 2 }] });
      expect(data.lineage.state === 'ok' && data.lineage.document.steps).toEqual({ work: 's-1' });
    } finally {
      data.close();
    }
    expect(existsSync(workspace)).toBe(false);
  });
  it('reads a session from the side that wrote it last', async () => {
    const store = await open();
    const root = mkdtempSync(join(tmpdir(), 'flower-report-'));
    dirs.push(root);
    const workspace = join(root, 'work');
    const runDir = join(workspace, 'runs');
    mkdirSync(runDir, { recursive: true });
    const key = { projectKey: projectKeyFor(workspace), sessionId: 's-1' };
    const local = new SqliteSessionStore(join(runDir, 'sessions.db'));
    await local.append(key, [{ type: 'user', uuid: 'a' }]);
    local.close();
    await new Promise((resolve) => setTimeout(resolve, 20));
    await store.sessions.append(key, [
      { type: 'user', uuid: 'a' },
      { type: 'user', uuid: 'b' },
    ]);
    const [remote] = await store.sessions.listSessions(key.projectKey);
    const data = await openSharedRunData({ workspace, runDir }, store);
    try {
      expect(data.store.state === 'ok' && data.store.sessions.get('s-1')?.mtime).toBe(remote?.mtime);
    } finally {
      data.close();
    }
  });
});
