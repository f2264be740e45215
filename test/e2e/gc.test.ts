/**
 * `flower gc` end to end (issue 14, item 6), on SQLite and on PostgreSQL (the real server; the
 * local run directory is then the working copy and the database the shared record, and gc
 * collects both), with the real binary and the mock model: a task with a retired handoff
 * generation, an aside and an archived task; gc keeps what is newer than the limit, `--dry-run`
 * changes nothing, a task another flower holds is refused, and after gc the live lineage still
 * resumes (the model gets the earlier history).
 *
 * The archived task runs before the store URL is set (a task from before the database; the next
 * start sends its sessions up), so on PostgreSQL its sessions are in both places too.
 *
 * gc sticks (issue 18, observation 9): every run here shares one CLAUDE_CONFIG_DIR, so the agent's
 * own transcripts of the dropped sessions are still on disk when the next start looks for entries
 * its store lacks; the task's books still name those sessions. The next start of the task and of
 * an aside copy nothing back, and on PostgreSQL a run directory from before gc (another machine
 * that never saw it: its sessions.db still holds the dropped sessions, and it has no tombstone
 * file) neither sends them back to the database nor keeps them.
 */
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseStoreTarget } from '../../src/config/store-url.js';
import { peekLineage } from '../../src/runtime/lineage.js';
import { readManifest } from '../../src/runtime/manifest.js';
import { readTombstones, TOMBSTONES_FILE } from '../../src/runtime/retention/tombstones.js';
import { lockTask } from '../../src/runtime/task-lock.js';
import { projectKeyFor } from '../../src/store/session-key.js';
import { openSharedStore } from '../../src/store/shared/shared-store.js';
import {
  lastUserText,
  type MockScript,
  messageText,
  mock,
  type RecordedRequest,
} from '../../src/testing/index.js';
import { type MockModel, startMockModel } from '../../src/testing/server.js';
import { startOver } from '../../src/workflow/starter.js';
import { mockedEnv, runFlower, tempDir } from './cli-harness.js';
import { dropSchemas, type SharedSchema, sharedSchema } from './shared-store-harness.js';
import { writeOneStepFlow } from './workflow-file.js';

const DAY_MS = 86_400_000;
/** The start-up line of a recovery from the agents' own transcripts (runtime/transcript-safety.ts). */
const COPIED_BACK = /copied back from the agents' own transcripts/;
const SUCCESSOR_TEXT = 'Finished in the successor session.';
const HANDOFF = `## Doing
Greeting the user.

## Decided
- Keep it short.

## Dead ends
- None.

## Next
Say hello.

## Scene
README.md`;

function firstUserText(request: RecordedRequest): string {
  return messageText(request.body?.messages?.find((message) => message.role === 'user'));
}

/** Routes by what a request is: the hello step climbs to a handoff once; everything else answers. */
function route(): MockScript {
  return {
    main: [],
    fallback: (request) => {
      const turn = Math.floor(((request.body?.messages?.length ?? 1) - 1) / 2);
      const first = firstUserText(request);
      if (lastUserText(request).includes('nearly full'))
        return mock.text(HANDOFF, { usage: { input_tokens: 2_000 } });
      if (turn === 0 && first.includes('taking over'))
        return mock.text(SUCCESSOR_TEXT, { usage: { input_tokens: 20_000 } });
      if (turn === 0 && first.includes('HELLO-TASK'))
        return mock.toolUse('Read', { file_path: 'README.md' }, { usage: { input_tokens: 152_000 } });
      if (first.includes('OLD-TASK')) return mock.text('Old task done.');
      if (first.includes('ASIDE-QUESTION')) return mock.text('The aside answer.');
      return mock.text('Carried on.', { usage: { input_tokens: 21_000 } });
    },
  };
}

/** Main session ids in a sessions.db, and a digest of every stored row. */
function storeState(file: string): { sessions: string[]; digest: string; rows: number } {
  const db = new Database(file, { readonly: true });
  try {
    const keys = db.prepare<[], { store_key: string }>('SELECT store_key FROM meta ORDER BY store_key').all();
    const rows = db
      .prepare<[], { store_key: string; seq: number; payload: string }>(
        'SELECT store_key, seq, payload FROM entries ORDER BY store_key, seq',
      )
      .all();
    const hash = createHash('sha256');
    for (const row of rows) hash.update(`${row.store_key}\0${row.seq}\0${row.payload}\n`);
    return {
      sessions: keys
        .map((row) => row.store_key.split('/'))
        .filter((parts) => parts.length === 2)
        .map((parts) => parts[1] as string)
        .sort(),
      digest: hash.digest('hex'),
      rows: rows.length,
    };
  } finally {
    db.close();
  }
}

/** Makes every session in the file look `days` older (the store stamps mtime at append time). */
function age(file: string, days: number): void {
  const db = new Database(file);
  try {
    db.prepare('UPDATE meta SET mtime = mtime - ?').run(days * DAY_MS);
  } finally {
    db.close();
  }
}

/** Main session ids and a digest of every stored entry in the PostgreSQL schema. */
async function sharedState(
  schema: SharedSchema,
): Promise<{ sessions: string[]; digest: string; rows: number }> {
  const keys = await schema.query<{ session_id: string }>(
    "SELECT session_id FROM session_transcripts WHERE subpath = '' ORDER BY session_id",
  );
  const rows = await schema.query<{ k: string; seq: string; entry: string }>(
    `SELECT t.project_key || '/' || t.session_id || '/' || t.subpath AS k, e.seq, e.entry
       FROM session_entries e JOIN session_transcripts t ON t.id = e.transcript_id ORDER BY k, e.seq`,
  );
  const hash = createHash('sha256');
  for (const row of rows) hash.update(`${row.k}\0${row.seq}\0${row.entry}\n`);
  return { sessions: keys.map((row) => row.session_id), digest: hash.digest('hex'), rows: rows.length };
}

afterAll(async () => {
  await dropSchemas();
});

describe.each(['sqlite', 'postgres'] as const)('flower gc on %s (real binary, mock model)', (backend) => {
  let model: MockModel;
  let workspace: string;
  let env: Record<string, string>;
  let helloFlow: string;
  let schema: SharedSchema | undefined;
  const ids = { archived: '', retired: '', live: '', aside: '' };

  beforeAll(async () => {
    model = await startMockModel(route());
    workspace = tempDir('gc');
    writeFileSync(join(workspace, 'README.md'), 'A project.\n');
    const plain = mockedEnv(model, { FLOWER_WINDOW: '200000' });
    if (backend === 'postgres') schema = await sharedSchema('gc');
    env = schema ? { ...plain, FLOWER_STORE_URL: schema.url } : plain;
    const dir = tempDir('gc-flows');
    const oldFlow = writeOneStepFlow(dir, 'old.ts', 'old', 'OLD-TASK: say done.');
    helloFlow = writeOneStepFlow(dir, 'hello.ts', 'hello', 'HELLO-TASK: greet.');

    const old = await runFlower(['-w', workspace, 'run', oldFlow], { env: plain });
    expect(old.status, old.stderr).toBe(0);
    ids.archived = peekLineage(join(workspace, 'runs')).document.steps.old as string;
    expect(startOver({ workspace })).toBeDefined();

    const hello = await runFlower(['-w', workspace, 'run', helloFlow], { env });
    expect(hello.status, hello.stderr).toBe(0);
    const row = readManifest(join(workspace, 'runs')).find((candidate) => candidate.step === 'hello');
    expect(row?.retired).toHaveLength(1);
    ids.retired = row?.retired?.[0] as string;
    ids.live = row?.session_id as string;
    expect(peekLineage(join(workspace, 'runs')).document.steps.hello).toBe(ids.live);

    const aside = await runFlower(
      ['-w', workspace, '-r', 'runs/aside', 'once', 'ASIDE-QUESTION: where are we?'],
      { env },
    );
    expect(aside.status, aside.stderr).toBe(0);
    ids.aside = readManifest(join(workspace, 'runs', 'aside'))[0]?.session_id as string;
    expect(Object.values(ids).every((id) => id !== '')).toBe(true);
    if (schema) expect((await sharedState(schema)).sessions).toEqual(Object.values(ids).sort());
  }, 300_000);

  afterAll(async () => {
    await model?.close();
  });

  const mainDb = () => join(workspace, 'runs', 'sessions.db');
  const asideDb = () => join(workspace, 'runs', 'aside', 'sessions.db');
  const books = () => [
    readFileSync(join(workspace, 'runs', 'manifest.json'), 'utf8'),
    readFileSync(join(workspace, 'runs', 'aside', 'manifest.json'), 'utf8'),
    readFileSync(join(workspace, 'runs', 'lineage.json'), 'utf8'),
  ];
  const state = async () => [
    storeState(mainDb()),
    storeState(asideDb()),
    ...(schema ? [await sharedState(schema)] : []),
  ];

  it('keeps everything newer than the limit', async () => {
    const before = await state();
    const run = await runFlower(['-w', workspace, 'gc'], { env });
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout).toContain('gc: dropped 0 sessions no resume can reach, last written over 30 days ago');
    expect(run.stdout).toContain('kept: 1 a lineage still resumes, 3 newer than the limit');
    if (schema) expect(run.stdout).toContain(schema.url.replace(/\?.*$/, '').slice(0, 20));
    expect(await state()).toEqual(before);
  });

  it('--dry-run shows what would go and changes nothing', async () => {
    age(mainDb(), 40);
    age(asideDb(), 40);
    if (schema) await schema.query('UPDATE session_transcripts SET mtime = mtime - $1', [40 * DAY_MS]);
    const before = [...(await state()), books()];
    const run = await runFlower(['-w', workspace, 'gc', '--dry-run'], { env });
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout).toContain('gc: would drop 3 sessions');
    expect(run.stdout).toMatch(
      /retired handoff generations\s+1 session, [1-9]\d* transcripts?, [1-9][\d,]* entries/,
    );
    expect(run.stdout).toMatch(/aside runs\s+1 session, /);
    expect(run.stdout).toMatch(/archived tasks\s+1 session, /);
    expect(run.stdout).toContain('nothing was changed (--dry-run)');
    expect([...(await state()), books()]).toEqual(before);
  });

  it('refuses while another flower holds the task, and changes nothing', async () => {
    const before = await state();
    const held = await lockTask({ workspace, runDir: join(workspace, 'runs') });
    try {
      const run = await runFlower(['-w', workspace, 'gc'], { env });
      expect(run.status).toBe(1);
      expect(run.stderr).toMatch(
        /another flower \(pid \d+, on host [^,]+, since \d\d:\d\d\) is working on this task/,
      );
      expect(run.stdout).toBe('');
    } finally {
      await held.release();
    }
    expect(await state()).toEqual(before);
  });

  // Only a shared store has a lock another machine can hold.
  if (backend === 'postgres')
    it('refuses while a flower on another machine holds the task (the lease alone, no lock file)', async () => {
      const before = await state();
      const target = parseStoreTarget(schema?.url as string);
      if (target.kind !== 'postgres') throw new Error('not a PostgreSQL URL');
      const shared = await openSharedStore(target);
      const leases = shared.leases({ identity: { instance: 'another-machine' } });
      const held = await leases.acquire({ workspace, runDir: join(workspace, 'runs') });
      try {
        const run = await runFlower(['-w', workspace, 'gc'], { env });
        expect(run.status).toBe(1);
        expect(run.stderr).toMatch(
          /another flower \(pid \d+, on host [^,]+, since \d\d:\d\d\) is working on this task/,
        );
      } finally {
        await held.release();
        await leases.close();
        await shared.close();
      }
      expect(await state()).toEqual(before);
    });

  /** The main store as it was before gc dropped anything (another machine's copy, for the last test). */
  const beforeGc = () => join(workspace, 'sessions-before-gc.db');

  it('drops the retired generation, the aside and the archived task; keeps the books and the live lineage, which still resumes', async () => {
    const copy = new Database(mainDb(), { readonly: true });
    try {
      await copy.backup(beforeGc());
    } finally {
      copy.close();
    }
    const spendBefore = await runFlower(['-w', workspace, 'report', '--json'], { env });
    expect(spendBefore.status, spendBefore.stderr).toBe(0);
    const booksBefore = books();
    const run = await runFlower(['-w', workspace, 'gc', '--older-than', '30d'], { env });
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout).toContain('gc: dropped 3 sessions');
    expect(run.stdout).toContain('kept: 1 a lineage still resumes, 0 newer than the limit');
    expect(run.stdout).toContain(
      `so nothing copies them back; the agent's own copies in ${join(env.CLAUDE_CONFIG_DIR as string, 'projects')} are left alone`,
    );
    // The tombstones: in both run directories, and in the database, of what was dropped and why.
    const expected = [
      { sessionId: ids.retired, kind: 'retired' },
      { sessionId: ids.aside, kind: 'aside' },
      { sessionId: ids.archived, kind: 'archived' },
    ].sort((a, b) => (a.sessionId < b.sessionId ? -1 : 1));
    const tombstonesIn = (runDir: string) =>
      readTombstones(runDir)
        .map(({ sessionId, kind }) => ({ sessionId, kind }))
        .sort((a, b) => (a.sessionId < b.sessionId ? -1 : 1));
    expect(tombstonesIn(join(workspace, 'runs'))).toEqual(expected);
    expect(tombstonesIn(join(workspace, 'runs', 'aside'))).toEqual(expected);
    if (schema)
      expect(
        await schema.query(
          'SELECT session_id AS "sessionId", kind FROM session_tombstones ORDER BY session_id',
        ),
      ).toEqual(expected);
    // The agent's own transcripts are Claude Code's files: gc leaves them (gc-action.ts says why).
    const agentFile = (id: string) =>
      join(env.CLAUDE_CONFIG_DIR as string, 'projects', projectKeyFor(workspace), `${id}.jsonl`);
    for (const { sessionId } of expected) expect(existsSync(agentFile(sessionId))).toBe(true);

    expect(storeState(mainDb()).sessions).toEqual([ids.live]);
    // With a shared store the asides' run directory also holds copies of the task's sessions (its
    // start brings it up to date with the workspace's); the live one stays there too.
    expect(storeState(asideDb()).sessions).toEqual(schema ? [ids.live] : []);
    if (schema) expect((await sharedState(schema)).sessions).toEqual([ids.live]);
    expect(books()).toEqual(booksBefore);
    const spendAfter = await runFlower(['-w', workspace, 'report', '--json'], { env });
    expect(JSON.parse(spendAfter.stdout).totals).toEqual(JSON.parse(spendBefore.stdout).totals);

    const again = await runFlower(['-w', workspace, 'gc'], { env });
    expect(again.stdout).toContain('gc: dropped 0 sessions');

    const seen = model.requests.length;
    const resumed = await runFlower(['-w', workspace, 'run', helloFlow], { env });
    expect(resumed.status, resumed.stderr).toBe(0);
    // The agent's own transcripts of all three are still in CLAUDE_CONFIG_DIR, and the books name them.
    expect(resumed.stderr).not.toMatch(COPIED_BACK);
    expect(storeState(mainDb()).sessions).toEqual([ids.live]);
    if (schema) expect((await sharedState(schema)).sessions).toEqual([ids.live]);
    const requests = model.mainRequests().filter((request) => model.requests.indexOf(request) >= seen);
    expect(requests.length).toBeGreaterThan(0);
    expect(JSON.stringify(requests[0]?.body?.messages ?? [])).toContain(SUCCESSOR_TEXT);
    expect(peekLineage(join(workspace, 'runs')).document.steps.hello).toBe(ids.live);
  }, 180_000);

  it('gc sticks: the next aside start copies nothing back either, and the dropped sessions stay gone', async () => {
    const dropped = [ids.retired, ids.aside, ids.archived];
    const aside = await runFlower(['-w', workspace, '-r', 'runs/aside', 'once', 'ASIDE-QUESTION: and now?'], {
      env,
    });
    expect(aside.status, aside.stderr).toBe(0);
    expect(aside.stderr).not.toMatch(COPIED_BACK);
    const stored = [
      ...storeState(mainDb()).sessions,
      ...storeState(asideDb()).sessions,
      ...(schema ? (await sharedState(schema)).sessions : []),
    ];
    expect(stored).toContain(ids.live);
    for (const id of dropped) expect(stored).not.toContain(id);
  }, 180_000);

  // Only a shared store has another machine.
  if (backend === 'postgres')
    it('a run directory from before gc (another machine) sends nothing dropped back, and drops its own copies', async () => {
      const dropped = [ids.retired, ids.aside, ids.archived];
      const runs = join(workspace, 'runs');
      for (const suffix of ['', '-wal', '-shm']) rmSync(`${mainDb()}${suffix}`, { force: true });
      writeFileSync(mainDb(), readFileSync(beforeGc()));
      rmSync(join(runs, TOMBSTONES_FILE), { force: true });
      expect(storeState(mainDb()).sessions).toEqual(expect.arrayContaining([ids.retired, ids.archived]));

      const run = await runFlower(['-w', workspace, 'run', helloFlow], { env });
      expect(run.status, run.stderr).toBe(0);
      expect(run.stderr).not.toMatch(COPIED_BACK);
      const shared = (await sharedState(schema as SharedSchema)).sessions;
      expect(shared).toContain(ids.live);
      for (const id of dropped) expect(shared).not.toContain(id);
      for (const id of dropped) expect(storeState(mainDb()).sessions).not.toContain(id);
      // The database told this run directory what was dropped.
      expect(existsSync(join(runs, TOMBSTONES_FILE))).toBe(true);
    }, 180_000);
});
