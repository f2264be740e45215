/**
 * Issue 14, the database goes away mid-run: a loopback TCP proxy between flower and PostgreSQL is
 * cut for 30 s in the middle of a step (every connection dropped, new ones refused) and then
 * restored. The step goes on and finishes; every transcript entry the agent wrote (its own JSONL
 * transcript under CLAUDE_CONFIG_DIR/projects) is in PostgreSQL afterwards; the outage is said in
 * exactly one line; and the task's books reach the database too.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { cleanUp, startMock } from '../support/scratch.js';
import { mockedEnv, runFlower, tempDir } from './cli-harness.js';
import {
  agentTranscriptEntries,
  CuttableProxy,
  dropSchemas,
  sharedSchema,
  until,
  viaPort,
} from './shared-store-harness.js';

let proxy: CuttableProxy | undefined;
afterEach(async () => {
  await proxy?.close();
  proxy = undefined;
  await dropSchemas();
  await cleanUp();
});

const CUT_MS = 30_000;

describe('PostgreSQL away for 30 s in the middle of a step', () => {
  it('the run finishes, every entry the agent wrote reaches the database, one warning line', async () => {
    const schema = await sharedSchema('outage');
    proxy = await CuttableProxy.start(schema.url);
    const workspace = tempDir('store-outage');
    for (const name of ['a.txt', 'b.txt', 'c.txt'])
      writeFileSync(join(workspace, name), `contents of ${name}\n`);
    const model = await startMock([
      // Each reply is one turn whose entries are written while the database is away.
      { toolUses: [{ name: 'Read', input: { file_path: join(workspace, 'a.txt') } }], delayMs: 1000 },
      { toolUses: [{ name: 'Read', input: { file_path: join(workspace, 'b.txt') } }], delayMs: 3000 },
      { toolUses: [{ name: 'Glob', input: { pattern: '*.txt' } }], delayMs: 3000 },
      { toolUses: [{ name: 'Read', input: { file_path: join(workspace, 'c.txt') } }], delayMs: 12_000 },
      { text: 'Read all three.', delayMs: 14_000 },
    ]);
    const env = mockedEnv(model, { FLOWER_STORE_URL: viaPort(schema.url, proxy.port) });
    let cutAt = 0;
    const watcher = until(() => model.mainRequests().length >= 1, 'the first request').then(() => {
      proxy?.cut();
      cutAt = Date.now();
      setTimeout(() => proxy?.restore(), CUT_MS);
    });
    const run = await runFlower(['once', 'Read the three files.', '-w', workspace], {
      env,
      timeoutMs: 150_000,
    });
    await watcher;
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout).toContain('Read all three.');
    // The step really ran through the outage (its last reply came after the cut ended).
    expect(Date.now() - cutAt).toBeGreaterThan(CUT_MS);
    expect(proxy.refused).toBeGreaterThan(0);

    const outageLines = run.stderr
      .split('\n')
      .filter((line) => /does not answer|dropped|could not be sent/.test(line));
    expect(outageLines, run.stderr).toHaveLength(1);
    expect(outageLines[0]).toContain('the work continues in the run directory');

    const written = agentTranscriptEntries(env.CLAUDE_CONFIG_DIR as string)
      .map((entry) => entry.uuid)
      .filter((uuid): uuid is string => typeof uuid === 'string');
    expect(written.length).toBeGreaterThan(8);
    const stored = new Set(
      (await schema.query<{ uuid: string }>('SELECT uuid FROM session_entries WHERE uuid IS NOT NULL')).map(
        (row) => row.uuid,
      ),
    );
    expect(written.filter((uuid) => !stored.has(uuid))).toEqual([]);
    const rows = await schema.query("SELECT 1 FROM task_records WHERE kind = 'manifest-run'");
    expect(rows).toHaveLength(1);
  }, 200_000);
});
