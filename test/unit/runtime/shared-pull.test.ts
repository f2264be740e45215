/**
 * The pull on the real server: a run directory's state goes up, an empty run directory on another
 * "machine" comes back equivalent (manifest, lineage, wake, marker, endpoints, spill files,
 * sessions), two pulls in a row change nothing, an earlier process's outbox is sent before
 * anything is read, changes this process makes are sent and pulled ones never sent back, and a
 * task of a workspace with the same name elsewhere is said in one line.
 */
import {
  appendFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { type PostgresTarget, parseStoreTarget } from '../../../src/config/store-url.js';
import { EndpointHistory } from '../../../src/runtime/endpoint-history.js';
import {
  holdAcrossMachines,
  KILLED_UNRECORDED,
  killedSessions,
  markInFlight,
  restoreInFlight,
} from '../../../src/runtime/in-flight.js';
import { Lineage } from '../../../src/runtime/lineage.js';
import { addManifestRows, readManifest, saveManifestRows } from '../../../src/runtime/manifest.js';
import { prepareRunDirectory } from '../../../src/runtime/run-directory.js';
import { appendOutbox, outboxPath, readOutbox } from '../../../src/runtime/shared/outbox.js';
import { pullTaskState } from '../../../src/runtime/shared/pull.js';
import { SharedTask } from '../../../src/runtime/shared/shared-task.js';
import { newStepResult, toManifestRow } from '../../../src/runtime/step-result.js';
import { subscribeTaskChanges } from '../../../src/runtime/task-changes.js';
import { projectKeyFor } from '../../../src/store/session-key.js';
import { openSharedStore, type SharedStore } from '../../../src/store/shared/shared-store.js';
import { SqliteSessionStore } from '../../../src/store/sqlite-session-store.js';
import { type TestSchema, usePostgres } from '../../support/postgres.js';

const postgres = usePostgres();
const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function setUp(): Promise<{
  store: SharedStore;
  target: PostgresTarget;
  schema: TestSchema;
  root: string;
}> {
  const schema = await postgres.freshSchema('pull');
  cleanups.push(schema.drop);
  const target = parseStoreTarget(schema.url) as PostgresTarget;
  const store = await openSharedStore(target);
  cleanups.push(() => store.close());
  const root = mkdtempSync(join(tmpdir(), 'flower-pull-'));
  cleanups.push(() => rmSync(root, { recursive: true, force: true }));
  return { store, target, schema, root };
}

/** Every file of a run directory (and the spill directory) with its content; sessions by their entries. */
function snapshot(workspace: string): Record<string, string> {
  const files: Record<string, string> = {};
  const walk = (dir: string, prefix: string) => {
    let names: string[];
    try {
      names = readdirSync(dir, { withFileTypes: true }).map((entry) =>
        entry.isDirectory() ? `${entry.name}/` : entry.name,
      );
    } catch {
      return;
    }
    for (const name of names) {
      if (name.endsWith('/')) walk(join(dir, name), `${prefix}${name}`);
      else if (!name.startsWith('sessions.db'))
        files[`${prefix}${name}`] = readFileSync(join(dir, name), 'utf8');
    }
  };
  walk(join(workspace, 'runs'), 'runs/');
  walk(join(workspace, '.flower', 'spill'), 'spill/');
  const sessions = new SqliteSessionStore(join(workspace, 'runs', 'sessions.db'));
  try {
    const key = projectKeyFor(workspace);
    for (const count of sessions.entryCounts(key)) {
      files[`session ${count.sessionId} ${count.subpath}`] = JSON.stringify(
        sessions.loadRaw(
          count.subpath === ''
            ? { projectKey: key, sessionId: count.sessionId }
            : { projectKey: key, sessionId: count.sessionId, subpath: count.subpath },
        ),
      );
    }
  } finally {
    sessions.close();
  }
  return files;
}

/** A run directory as a process leaves it: rows, lineage, a wake, a marker, an endpoint, a spill file, a session. */
function writeState(workspace: string): void {
  const runDir = join(workspace, 'runs');
  prepareRunDirectory(runDir, workspace);
  const result = { ...newStepResult('work', 'run-a'), sessionId: 's-1', ok: true, costUsd: 0.5, endedAt: 10 };
  saveManifestRows(runDir, 'run-a', [result]);
  const lineage = Lineage.open(runDir, workspace);
  lineage.remember('work', 's-1');
  lineage.bump();
  markInFlight(runDir, {
    sessionId: 's-2',
    step: 'judge',
    run: 'run-a',
    startedAt: 5,
    baselineUsd: 0,
    resumed: false,
  });
  new EndpointHistory(runDir, 'http://127.0.0.1:9999').recordAnswer();
  mkdirSync(join(workspace, '.flower', 'spill'), { recursive: true });
  writeFileSync(join(workspace, '.flower', 'spill', '0123456789abcdef.txt'), 'a large tool result');
  const sessions = new SqliteSessionStore(join(runDir, 'sessions.db'));
  sessions.appendNow({ projectKey: projectKeyFor(workspace), sessionId: 's-1' }, [
    { type: 'user', uuid: 'u1', message: { content: 'hi' } },
    { type: 'assistant', uuid: 'u2', message: { content: 'hello' } },
  ]);
  sessions.appendNow(
    { projectKey: projectKeyFor(workspace), sessionId: 's-1', subpath: 'subagents/agent-x' },
    [{ type: 'user', uuid: 'w1' }],
  );
  sessions.close();
}

/** A marker another machine left: its pid means nothing here. */
const FAR_MARKER = {
  sessionId: 's-far',
  step: 'work',
  run: 'r',
  pid: process.pid,
  host: 'machine-a.example',
  startedAt: 1,
  baselineUsd: 0,
  resumed: false,
};

describe('pullTaskState', () => {
  it('sends a run directory up, rebuilds it on an empty one, and a second pull changes nothing', async () => {
    const { store, root } = await setUp();
    const workspace = join(root, 'work');
    writeState(workspace);
    const task = { workspace, runDir: join(workspace, 'runs') };
    const before = snapshot(workspace);

    const up = await pullTaskState(store, task);
    expect(up.recordsPulled).toBe(0);
    expect(up.recordsPushed).toBeGreaterThanOrEqual(6);
    expect(up.sessions).toMatchObject({ pushed: 3, pulled: 0 });
    expect(snapshot(workspace)).toEqual(before);

    // Another machine: the same workspace path, nothing local.
    rmSync(join(workspace, 'runs'), { recursive: true, force: true });
    rmSync(join(workspace, '.flower'), { recursive: true, force: true });
    // Nothing pulled is this process's change: a listener (the shared task's sync) hears none of it.
    const heard: string[] = [];
    const stop = subscribeTaskChanges(join(workspace, 'runs'), (change) => heard.push(change.kind));
    const down = await pullTaskState(store, task);
    stop();
    expect(heard).toEqual([]);
    expect(down.recordsPushed).toBe(0);
    expect(down.sessions).toMatchObject({ pushed: 0, pulled: 3 });
    expect(snapshot(workspace)).toEqual(before);

    const again = await pullTaskState(store, task);
    expect(again).toMatchObject({ replayed: 0, recordsPulled: 0, recordsPushed: 0 });
    expect(again.sessions).toMatchObject({ differing: 0, pulled: 0, pushed: 0 });
    expect(snapshot(workspace)).toEqual(before);
  });

  it("stores the database's entries on a new machine as the text the database holds, not serialised again", async () => {
    const { store, schema, root } = await setUp();
    const workspace = join(root, 'work');
    const task = { workspace, runDir: join(workspace, 'runs') };
    const projectKey = projectKeyFor(workspace);
    const main = { projectKey, sessionId: 's-1' };
    const sub = { ...main, subpath: 'subagents/agent-x' };
    await store.sessions.append(main, [{ type: 'user', uuid: 'u1', message: { content: 'hi' } }]);
    await store.sessions.append(sub, [{ type: 'user', uuid: 'w1' }]);
    // Text another writer kept as valid JSON, though not as JSON.stringify writes it.
    const spaced = {
      u1: '{"type": "user", "uuid": "u1", "message": {"content": "hi"}}',
      w1: '{ "uuid": "w1", "type": "user" }',
    };
    for (const [uuid, text] of Object.entries(spaced))
      await postgres.admin(`UPDATE "${schema.schema}".session_entries SET entry = $1 WHERE uuid = $2`, [
        text,
        uuid,
      ]);

    const report = await pullTaskState(store, task);
    expect(report.sessions).toMatchObject({ pulled: 2, pushed: 0 });
    const db = new Database(join(task.runDir, 'sessions.db'), { readonly: true });
    try {
      expect(db.prepare('SELECT uid, payload FROM entries ORDER BY uid').all()).toEqual([
        { uid: 'u1', payload: spaced.u1 },
        { uid: 'w1', payload: spaced.w1 },
      ]);
    } finally {
      db.close();
    }
    // The entries read back as the database's, and the session is indexed as any other.
    const local = new SqliteSessionStore(join(task.runDir, 'sessions.db'));
    try {
      expect(local.loadRaw(main)).toEqual([{ type: 'user', uuid: 'u1', message: { content: 'hi' } }]);
      expect(local.loadRaw(sub)).toEqual([{ uuid: 'w1', type: 'user' }]);
      expect(
        (await local.listSessionSummaries(projectKey)).map((summary) => summary.data.firstPrompt),
      ).toEqual(['hi']);
    } finally {
      local.close();
    }
  });

  /** A task pulled once onto this machine: its store, its directories and its sessions.db. */
  async function pulledTask() {
    const { store, root } = await setUp();
    const workspace = join(root, 'work');
    writeState(workspace);
    const task = { workspace, runDir: join(workspace, 'runs') };
    await pullTaskState(store, task);
    return { store, task, file: join(task.runDir, 'sessions.db') };
  }

  it("at a level start reads the run directory's transcripts without opening them for writing", async () => {
    const { store, task, file } = await pulledTask();
    // The store's clean close leaves a stamp (sqlite-integrity.ts); an open for writing renews it.
    const stamp = () => statSync(`${file}.verified`, { bigint: true }).mtimeNs;
    const before = stamp();
    const level = await pullTaskState(store, task);
    expect(level.sessions).toMatchObject({ differing: 0, pulled: 0, pushed: 0 });
    expect(stamp()).toBe(before);
    expect(existsSync(`${file}-wal`)).toBe(false);
  });

  it('sets a damaged sessions.db aside with one line and pulls the transcripts into a fresh one', async () => {
    const { store, task, file } = await pulledTask();
    writeFileSync(file, 'not a database, though long enough to be looked at as one');
    rmSync(`${file}.verified`, { force: true });
    const warnings: string[] = [];
    const report = await pullTaskState(store, task, { onWarning: (line) => warnings.push(line) });
    expect(report.sessions).toMatchObject({ pulled: 3, pushed: 0 });
    expect(warnings.join('\n')).toContain('sessions.db');
    expect(readdirSync(task.runDir).some((name) => name.startsWith('sessions.db.corrupt-'))).toBe(true);
  });

  it('sends an earlier process outbox first, so its newer value is not overwritten by the older one', async () => {
    const { store, root } = await setUp();
    const workspace = join(root, 'work');
    const runDir = join(workspace, 'runs');
    const task = { workspace, runDir };
    await store.records.write(task, [
      { op: 'put', kind: 'lineage-step', key: 'work', value: { sessionId: 'old' }, at: 1 },
    ]);
    mkdirSync(runDir, { recursive: true });
    Lineage.open(runDir, workspace); // nothing recorded
    appendOutbox(runDir, [
      { op: 'put', kind: 'lineage-step', key: 'work', value: { sessionId: 'newer' }, at: 2 },
    ]);
    const report = await pullTaskState(store, task);
    expect(report.replayed).toBe(1);
    expect(Lineage.open(runDir, workspace).steps).toEqual({ work: 'newer' });
    expect(readdirSync(runDir)).not.toContain(outboxPath(runDir).split('/').at(-1));
  });

  it('says in one line when the database holds the task for a workspace of the same name elsewhere', async () => {
    const { store, root } = await setUp();
    await store.records.write({ workspace: '/work', runDir: '/work/runs' }, [
      { op: 'put', kind: 'lineage-step', key: 'work', value: { sessionId: 's' }, at: 1 },
    ]);
    const workspace = join(root, 'work');
    const warnings: string[] = [];
    const report = await pullTaskState(
      store,
      { workspace, runDir: join(workspace, 'runs') },
      {
        onWarning: (line) => warnings.push(line),
      },
    );
    expect(report.foreignWorkspace).toBe('/work');
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain(
      `holds a task for /work, not for ${workspace}: to continue it, run flower from /work`,
    );
    expect(Lineage.open(join(workspace, 'runs'), workspace).steps).toEqual({});
  });

  it('a shared task sends what this process changes, and not what it pulled', async () => {
    const { store, target, root } = await setUp();
    const workspace = join(root, 'work');
    const runDir = join(workspace, 'runs');
    const task = { workspace, runDir };
    await store.records.write(task, [
      {
        op: 'put',
        kind: 'manifest-run',
        key: 'run-other',
        value: [{ run: 'run-other', step: 'work' }],
        at: 1,
      },
    ]);
    const shared = await SharedTask.open(target, task);
    const opened = shared;
    cleanups.push(() => opened.close(2000));
    expect(readManifest(runDir)).toEqual([{ run: 'run-other', step: 'work' }]);
    // Another machine changes the pulled run meanwhile; nothing here may send the old copy back.
    await store.records.write(task, [
      {
        op: 'put',
        kind: 'manifest-run',
        key: 'run-other',
        value: [{ run: 'run-other', step: 'work', cost_usd: 2 }],
        at: 5,
      },
    ]);
    const result = { ...newStepResult('own', 'run-mine'), ok: true, endedAt: 3 };
    saveManifestRows(runDir, 'run-mine', [result]);
    Lineage.open(runDir, workspace).remember('own', 's-mine');
    expect(await shared.flush(5000)).toBe(true);
    const records = (await store.records.read(task)).records;
    expect(records.find((record) => record.key === 'run-other')?.value).toEqual([
      { run: 'run-other', step: 'work', cost_usd: 2 },
    ]);
    expect(records.find((record) => record.key === 'run-mine')).toBeDefined();
    expect(records.find((record) => record.kind === 'lineage-step')?.value).toEqual({ sessionId: 's-mine' });
    // An aside answered meanwhile: its books go up under the aside run directory's own key.
    const aside = { ...newStepResult('aside', 'run-aside'), ok: true, endedAt: 4, costUsd: 0.25 };
    saveManifestRows(join(runDir, 'aside'), 'run-aside', [aside]);
    expect(await shared.flush(5000)).toBe(true);
    const asideRecords = (await store.records.read({ workspace, runDir: join(runDir, 'aside') })).records;
    expect(asideRecords.map((record) => [record.kind, record.key])).toEqual([['manifest-run', 'run-aside']]);
    expect(asideRecords[0]?.value).toMatchObject([{ run: 'run-aside', step: 'aside', cost_usd: 0.25 }]);
    // A result spilled during the run reaches the database when the process ends.
    mkdirSync(join(workspace, '.flower', 'spill'), { recursive: true });
    writeFileSync(join(workspace, '.flower', 'spill', 'fedcba9876543210.txt'), 'spilled during the run');
    await shared.close(2000);
    expect(readdirSync(runDir)).not.toContain('shared-outbox.jsonl');
    expect(await store.records.readValues(task, 'spill', ['fedcba9876543210.txt'])).toEqual(
      new Map([['fedcba9876543210.txt', 'spilled during the run']]),
    );
  });

  it("books another machine's marker only while this process holds the task across machines", () => {
    const runDir = mkdtempSync(join(tmpdir(), 'flower-markers-'));
    cleanups.push(() => rmSync(runDir, { recursive: true, force: true }));
    restoreInFlight(runDir, FAR_MARKER);
    expect(killedSessions(runDir)).toEqual([]);
    const release = holdAcrossMachines(runDir);
    expect(killedSessions(runDir)).toEqual(['s-far']);
    release();
    expect(killedSessions(runDir)).toEqual([]);
  });
});

describe('the outbox', () => {
  it('holds every change of a shared task before it is sent, in order', async () => {
    const { target, root } = await setUp();
    const workspace = join(root, 'work');
    const runDir = join(workspace, 'runs');
    const shared = await SharedTask.open(target, { workspace, runDir });
    cleanups.push(() => shared.close(2000));
    saveManifestRows(runDir, 'run-mine', [{ ...newStepResult('own', 'run-mine'), ok: true, endedAt: 3 }]);
    Lineage.open(runDir, workspace).remember('own', 's-mine');
    // Synchronously, before any write could be confirmed: both change sets are on disk.
    expect(
      readOutbox(runDir).flatMap(({ epoch, changes }) =>
        changes.map((change) => (change.op === 'put' ? [change.kind, change.key, epoch] : [])),
      ),
    ).toEqual([
      ['manifest-run', 'run-mine', shared.lease.epoch],
      ['lineage-step', 'own', shared.lease.epoch],
    ]);
    expect(await shared.flush(5000)).toBe(true);
    expect(existsSync(outboxPath(runDir))).toBe(false);
  });

  it('a torn last line (a crash mid-write) is skipped, the rest replayed', async () => {
    const { store, root } = await setUp();
    const workspace = join(root, 'work');
    const runDir = join(workspace, 'runs');
    mkdirSync(runDir, { recursive: true });
    appendOutbox(runDir, [
      { op: 'put', kind: 'lineage-step', key: 'work', value: { sessionId: 's' }, at: 2 },
    ]);
    appendFileSync(outboxPath(runDir), '[{"op":"put","kind":"lineage-st');
    const report = await pullTaskState(store, { workspace, runDir });
    expect(report.replayed).toBe(1);
    expect(Lineage.open(runDir, workspace).steps).toEqual({ work: 's' });
  });

  it('is kept when the database does not take it', async () => {
    const { target, root } = await setUp();
    const gone = await openSharedStore(target);
    await gone.close();
    const workspace = join(root, 'work');
    const runDir = join(workspace, 'runs');
    mkdirSync(runDir, { recursive: true });
    appendOutbox(runDir, [
      { op: 'put', kind: 'lineage-step', key: 'work', value: { sessionId: 's' }, at: 2 },
    ]);
    await expect(pullTaskState(gone, { workspace, runDir })).rejects.toThrow();
    expect(readOutbox(runDir)).toHaveLength(1);
  });
});

describe('pullTaskState merges', () => {
  it('sends nothing of a lineage written for another workspace path', async () => {
    const { store, root } = await setUp();
    const workspace = join(root, 'work');
    const runDir = join(workspace, 'runs');
    mkdirSync(runDir, { recursive: true });
    writeFileSync(
      join(runDir, 'lineage.json'),
      JSON.stringify({ workspace: '/elsewhere', woke: 2, steps: { work: 's-far' } }),
    );
    await pullTaskState(store, { workspace, runDir });
    expect((await store.records.read({ workspace, runDir })).records.map((record) => record.kind)).toEqual(
      [],
    );
  });

  it("takes the database's step over the local one, and the larger wake count both ways", async () => {
    const { store, root } = await setUp();
    const workspace = join(root, 'work');
    const runDir = join(workspace, 'runs');
    const task = { workspace, runDir };
    await store.records.write(task, [
      { op: 'put', kind: 'lineage-step', key: 'work', value: { sessionId: 's-db' }, at: 1 },
      { op: 'wake', run: 'far', atLeast: 1, at: 1 },
    ]);
    mkdirSync(runDir, { recursive: true });
    const lineage = Lineage.open(runDir, workspace);
    lineage.remember('work', 's-local');
    lineage.bump();
    lineage.bump();
    lineage.bump();
    await pullTaskState(store, task);
    const after = Lineage.open(runDir, workspace);
    expect(after.steps).toEqual({ work: 's-db' });
    expect(after.woke).toBe(3);
    const woke = (await store.records.read(task, { kinds: ['woke'] })).records[0]?.value;
    expect(woke).toBe(3);
  });

  it('keeps a booked row once: a second pull neither doubles nor sends it', async () => {
    const { store, root } = await setUp();
    const workspace = join(root, 'work');
    const runDir = join(workspace, 'runs');
    const task = { workspace, runDir };
    prepareRunDirectory(runDir, workspace);
    const killed = { ...newStepResult('work', 'r'), sessionId: 's', startedAt: 1, error: KILLED_UNRECORDED };
    addManifestRows(runDir, [{ ...toManifestRow(killed), run: 'r' }]);
    await pullTaskState(store, task);
    const again = await pullTaskState(store, task);
    expect(again.recordsPushed).toBe(0);
    expect(readManifest(runDir)).toHaveLength(1);
  });
});

describe('SharedTask', () => {
  it("judges another machine's markers only until it closes", async () => {
    const { target, root } = await setUp();
    const workspace = join(root, 'work');
    const runDir = join(workspace, 'runs');
    const shared = await SharedTask.open(target, { workspace, runDir });
    restoreInFlight(runDir, FAR_MARKER);
    expect(killedSessions(runDir)).toEqual(['s-far']);
    await shared.close(2000);
    expect(killedSessions(runDir)).toEqual([]);
  });

  it('an open that fails after taking the lock gives the lock back', async () => {
    const { target, root } = await setUp();
    const workspace = join(root, 'work');
    const runDir = join(workspace, 'runs');
    mkdirSync(workspace, { recursive: true });
    writeFileSync(runDir, 'a file where the run directory goes');
    await expect(SharedTask.open(target, { workspace, runDir })).rejects.toThrow();
    rmSync(runDir);
    const shared = await SharedTask.open(target, { workspace, runDir });
    await shared.close(2000);
  });
});
