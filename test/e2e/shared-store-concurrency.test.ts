/**
 * Issue 14, many writers of one database: four flower processes (separate CLAUDE_CONFIG_DIRs, one
 * workspace, a run directory each) write at once and lose no manifest row, lineage key or wake;
 * then the same task taken in turn by four processes that each start from an empty run directory
 * and start over (`--new`) keeps a row per process, and each start-over reaches the database (the
 * wake count starts again, the step names the newest session). And one writer per task across machines:
 * a second process on a task another holds in PostgreSQL gets the "another flower" line and exit
 * 1, stopped by the lease (no lock file exists), and a holder killed with SIGKILL is taken over at
 * once by the next start on its machine (which can prove it dead), without waiting for the lease.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { TASK_LOCK_FILE } from '../../src/runtime/task-lock.js';
import { mock } from '../../src/testing/index.js';
import { cleanUp, startMock } from '../support/scratch.js';
import { flowerBin, mockedEnv, runFlower, tempDir } from './cli-harness.js';
import { HELLO_BRIEF, mainRouter } from './scenario-harness.js';
import { dropSchemas, type SharedSchema, sharedSchema, until } from './shared-store-harness.js';

let children: ChildProcess[] = [];
afterEach(async () => {
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  children = [];
  await dropSchemas();
  await cleanUp();
});

/** The busy line names the holder's host, this machine's too (a host name is letters, digits, - and .). */
const BUSY = new RegExp(
  `^flower: another flower \\(pid (\\d+), on host ${hostname().replaceAll('.', '\\.')}, since \\d\\d:\\d\\d\\) is working on this task; wait for it, or use -w for another directory\\n$`,
);

async function records(schema: SharedSchema, kind: string) {
  return schema.query<{ run_dir: string; key: string; value: string }>(
    'SELECT t.run_dir, r.key, r.value FROM task_records r JOIN tasks t ON t.id = r.task_id WHERE r.kind = $1 ORDER BY r.seq',
    [kind],
  );
}

describe('many flowers, one database', () => {
  it('four processes at once lose no manifest row, lineage key or wake; four in turn keep every row and each start-over', async () => {
    const schema = await sharedSchema('four');
    const model = await startMock({ main: mainRouter({ clarifier: () => ({ text: HELLO_BRIEF }) }, 200) });
    const workspace = tempDir('store-four');
    const go = (runDir: string, ...extra: string[]) =>
      runFlower(
        ['-w', workspace, '-r', runDir, '--clarify-only', '--timeout', '0', ...extra, 'write hello.py'],
        {
          env: mockedEnv(model, { FLOWER_STORE_URL: schema.url }),
          cwd: workspace,
        },
      );
    const runs = await Promise.all(['runs-1', 'runs-2', 'runs-3', 'runs-4'].map((runDir) => go(runDir)));
    for (const run of runs) expect(run.status, run.stderr).toBe(0);
    const tasks = await schema.query<{ run_dir: string }>('SELECT run_dir FROM tasks ORDER BY run_dir');
    expect(tasks.map((task) => task.run_dir)).toEqual(['runs-1', 'runs-2', 'runs-3', 'runs-4']);
    for (const kind of ['manifest-run', 'lineage-step', 'woke']) {
      const found = await records(schema, kind);
      expect(found.map((record) => record.run_dir).sort(), kind).toEqual([
        'runs-1',
        'runs-2',
        'runs-3',
        'runs-4',
      ]);
    }
    for (const record of await records(schema, 'woke')) expect(JSON.parse(record.value)).toBe(1);

    // One task in turn, each process on an empty run directory (a new machine each time; the
    // workspace's files are shared, so each starts the request over to have a step to run).
    for (let turn = 0; turn < 4; turn += 1) {
      rmSync(join(workspace, 'runs'), { recursive: true, force: true });
      const run = await go('runs', '--new');
      expect(run.status, run.stderr).toBe(0);
    }
    const task = (await records(schema, 'manifest-run')).filter((record) => record.run_dir === 'runs');
    expect(task).toHaveLength(4);
    expect(new Set(task.map((record) => record.key)).size).toBe(4);
    // Each --new archived the lineage it had pulled, on every machine alike: the count starts
    // again and the step names the last turn's session, not an archived one.
    const woke = (await records(schema, 'woke')).find((record) => record.run_dir === 'runs');
    expect(JSON.parse(woke?.value ?? '0')).toBe(1);
    const steps = (await records(schema, 'lineage-step')).filter((record) => record.run_dir === 'runs');
    expect(steps.map((record) => record.key)).toEqual(['clarify']);
    const last = JSON.parse(task.at(-1)?.value ?? '[]')[0];
    expect(JSON.parse(steps[0]?.value ?? '{}').sessionId).toBe(last.session_id);
  }, 240_000);

  it('a second process is refused by the lease, whatever its config dir; a killed holder is taken over at once', async () => {
    const schema = await sharedSchema('lock');
    const model = await startMock([mock.text('First, slowly.', { delayMs: 120_000 }), mock.text('Second.')]);
    const workspace = tempDir('store-lock');
    const env = () => mockedEnv(model, { FLOWER_STORE_URL: schema.url });
    const first = spawn(process.execPath, [flowerBin, 'once', 'Answer slowly.', '-w', workspace], {
      env: env(),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(first);
    await until(
      async () => (await schema.query('SELECT 1 FROM task_leases WHERE NOT released')).length === 1,
      'the lease',
    );
    await until(() => model.mainRequests().length === 1, 'the first request');

    const second = await runFlower(['once', 'Answer quickly.', '-w', workspace], { env: env() });
    expect(second.status).toBe(1);
    expect(second.stderr).toMatch(BUSY);
    expect(Number(BUSY.exec(second.stderr)?.[1])).toBe(first.pid);
    // Not the file lock: with the state in PostgreSQL there is none.
    expect(existsSync(join(workspace, 'runs', TASK_LOCK_FILE))).toBe(false);
    expect(model.mainRequests()).toHaveLength(1);

    await new Promise<void>((resolve) => {
      first.on('exit', () => resolve());
      first.kill('SIGKILL');
    });
    const third = await runFlower(['once', 'Answer quickly.', '-w', workspace], { env: env() });
    expect(third.status, third.stderr).toBe(0);
    expect(third.stdout).toContain('Second.');
  }, 180_000);
});
