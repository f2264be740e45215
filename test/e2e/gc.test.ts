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
 */
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseStoreTarget } from '../../src/config/store-url.js';
import { peekLineage } from '../../src/runtime/lineage.js';
import { readManifest } from '../../src/runtime/manifest.js';
import { lockTask } from '../../src/runtime/task-lock.js';
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
    it('refuses while a flower on another machine holds the task (the advisory lock alone, no lock file)', async () => {
      const before = await state();
      const target = parseStoreTarget(schema?.url as string);
      if (target.kind !== 'postgres') throw new Error('not a PostgreSQL URL');
      const shared = await openSharedStore(target);
      const held = await shared.locks().acquire({ workspace, runDir: join(workspace, 'runs') });
      try {
        const run = await runFlower(['-w', workspace, 'gc'], { env });
        expect(run.status).toBe(1);
        expect(run.stderr).toMatch(
          /another flower \(pid \d+, on host [^,]+, since \d\d:\d\d\) is working on this task/,
        );
      } finally {
        await held.release();
        await shared.close();
      }
      expect(await state()).toEqual(before);
    });

  it('drops the retired generation, the aside and the archived task; keeps the books and the live lineage, which still resumes', async () => {
    const spendBefore = await runFlower(['-w', workspace, 'report', '--json'], { env });
    expect(spendBefore.status, spendBefore.stderr).toBe(0);
    const booksBefore = books();
    const run = await runFlower(['-w', workspace, 'gc', '--older-than', '30d'], { env });
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout).toContain('gc: dropped 3 sessions');
    expect(run.stdout).toContain('kept: 1 a lineage still resumes, 0 newer than the limit');

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
    const requests = model.mainRequests().filter((request) => model.requests.indexOf(request) >= seen);
    expect(requests.length).toBeGreaterThan(0);
    expect(JSON.stringify(requests[0]?.body?.messages ?? [])).toContain(SUCCESSOR_TEXT);
    expect(peekLineage(join(workspace, 'runs')).document.steps.hello).toBe(ids.live);
  }, 180_000);
});
