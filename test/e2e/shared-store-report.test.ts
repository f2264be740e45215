/**
 * Issue 14, acceptance: `flower report` (and `status`, `log`) from a third directory with the same
 * store URL shows both processes' spend. Two `flower run` processes (each with its own
 * CLAUDE_CONFIG_DIR) work on one task whose state is in PostgreSQL; then the run directory is
 * deleted, or replaced by a stale copy, or the whole workspace is gone, and the read-only commands
 * still show every row and the same total, read from the database, and write nothing.
 */
import { cpSync, existsSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readManifest } from '../../src/runtime/manifest.js';
import { messageText, mock, type RecordedRequest } from '../../src/testing/index.js';
import { type MockModel, startMockModel } from '../../src/testing/server.js';
import { mockedEnv, runFlower, tempDir } from './cli-harness.js';
import { dropSchemas, type SharedSchema, sharedSchema } from './shared-store-harness.js';
import { writeOneStepFlow } from './workflow-file.js';

function firstUserText(request: RecordedRequest): string {
  return messageText(request.body?.messages?.find((message) => message.role === 'user'));
}

let model: MockModel;
let schema: SharedSchema;
let workspace: string;
/** The rows both processes wrote, as the run directory had them before it was deleted. */
let rows: ReturnType<typeof readManifest>;
let before: { totals: { cost_usd: number; runs: number } };
let stale: string;

const look = (...args: string[]) =>
  runFlower(['-w', workspace, ...args], {
    cwd: tempDir('third'),
    env: mockedEnv(model, { FLOWER_STORE_URL: schema.url }),
  });

beforeAll(async () => {
  model = await startMockModel({
    main: [],
    fallback: (request) =>
      firstUserText(request).includes('ALPHA')
        ? mock.text('Alpha is done.', { usage: { input_tokens: 3_000, output_tokens: 400 } })
        : mock.text('Beta is done.', { usage: { input_tokens: 5_000, output_tokens: 700 } }),
  });
  schema = await sharedSchema('report');
  workspace = tempDir('shared-report');
  const flows = tempDir('shared-report-flows');
  const alpha = writeOneStepFlow(flows, 'alpha.ts', 'alpha', 'ALPHA: say done.');
  const beta = writeOneStepFlow(flows, 'beta.ts', 'beta', 'BETA: say done.');
  const first = await runFlower(['-w', workspace, 'run', alpha], {
    env: mockedEnv(model, { FLOWER_STORE_URL: schema.url }),
  });
  expect(first.status, first.stderr).toBe(0);
  stale = tempDir('stale-runs');
  cpSync(join(workspace, 'runs'), stale, { recursive: true });
  const second = await runFlower(['-w', workspace, 'run', beta], {
    env: mockedEnv(model, { FLOWER_STORE_URL: schema.url }),
  });
  expect(second.status, second.stderr).toBe(0);
  rows = readManifest(join(workspace, 'runs'));
  expect(new Set(rows.map((row) => row.run)).size).toBe(2);
  for (const row of rows) expect(row.cost_usd).toBeGreaterThan(0);
  const local = await runFlower(['-w', workspace, 'report', '--json'], { env: mockedEnv(model) });
  expect(local.status, local.stderr).toBe(0);
  before = JSON.parse(local.stdout);
  expect(before.totals.runs).toBe(2);
}, 240_000);

afterAll(async () => {
  await model?.close();
  await dropSchemas();
});

const expectBothRuns = (report: {
  steps: Array<{ step: string; run: string; cost_usd: number }>;
  totals: { cost_usd: number; runs: number };
}) => {
  expect(report.steps.map((step) => step.step).sort()).toEqual(['alpha', 'beta']);
  expect(new Set(report.steps.map((step) => step.run))).toEqual(new Set(rows.map((row) => row.run)));
  const sum = rows.reduce((total, row) => total + (row.cost_usd as number), 0);
  expect(report.totals.cost_usd).toBeCloseTo(sum, 4);
  expect(report.totals).toEqual(before.totals);
};

describe('report, status and log read a task kept in PostgreSQL', () => {
  it('with no run directory here: both processes rows and the total, from a third directory; nothing written', async () => {
    rmSync(join(workspace, 'runs'), { recursive: true, force: true });
    const listing = readdirSync(workspace).sort();
    const report = await look('report', '--json', '--all');
    expect(report.status, report.stderr).toBe(0);
    expectBothRuns(JSON.parse(report.stdout));

    const status = await look('status');
    expect(status.status, status.stderr).toBe(0);
    expect(status.stdout).toContain('alpha');
    expect(status.stdout).toContain('beta');
    expect(status.stdout).toContain(`$${before.totals.cost_usd.toFixed(2)}`);

    const log = await look('log', 'beta');
    expect(log.status, log.stderr).toBe(0);
    expect(log.stdout).toContain('Beta is done.');

    expect(existsSync(join(workspace, 'runs'))).toBe(false);
    expect(readdirSync(workspace).sort()).toEqual(listing);
  });

  it('with a stale run directory (from before the second process): the database fills it in, and it stays stale', async () => {
    cpSync(stale, join(workspace, 'runs'), { recursive: true });
    const staleRows = readManifest(join(workspace, 'runs'));
    expect(staleRows).toHaveLength(1);
    const report = await look('report', '--json', '--all');
    expect(report.status, report.stderr).toBe(0);
    expectBothRuns(JSON.parse(report.stdout));
    const log = await look('log', 'beta');
    expect(log.stdout).toContain('Beta is done.');
    expect(readManifest(join(workspace, 'runs'))).toEqual(staleRows);
  });

  it('with no workspace on this machine at all: -w names the task, and is not created', async () => {
    rmSync(workspace, { recursive: true, force: true });
    const report = await look('report', '--json', '--all');
    expect(report.status, report.stderr).toBe(0);
    expectBothRuns(JSON.parse(report.stdout));
    expect(existsSync(workspace)).toBe(false);
  });
});
