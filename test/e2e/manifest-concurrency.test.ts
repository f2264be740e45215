import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runWriter } from '../support/manifest-writer-harness.js';

let root: string;
beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'flower-concurrent-'));
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

/** Runs `writers` writer processes that start together and each save `perWriter` rows and steps. */
async function writeConcurrently(runDir: string, workspace: string, writers: number, perWriter: number) {
  const startAt = String(Date.now() + 1_500);
  return Promise.all(
    Array.from({ length: writers }, (_, writer) =>
      runWriter([
        'concurrent',
        runDir,
        workspace,
        `20261130-000000-00000${writer}`,
        String(writer),
        String(perWriter),
        startAt,
      ]),
    ),
  );
}

describe('several flower processes writing one run directory at once', () => {
  it('keeps every manifest row and every lineage step', async () => {
    const runDir = join(root, 'runs');
    const workspace = join(root, 'ws');
    mkdirSync(workspace);
    const writers = 4;
    const perWriter = 25;
    const startAt = String(Date.now() + 1_500);
    const outcomes = await Promise.all(
      Array.from({ length: writers }, (_, writer) =>
        runWriter([
          'concurrent',
          runDir,
          workspace,
          `20261130-000000-00000${writer}`,
          String(writer),
          String(perWriter),
          startAt,
        ]),
      ),
    );
    for (const outcome of outcomes) expect(outcome).toMatchObject({ code: 0, stderr: '' });

    const rows = JSON.parse(readFileSync(join(runDir, 'manifest.json'), 'utf8')) as {
      step: string;
      run: string;
    }[];
    expect(rows).toHaveLength(writers * perWriter);
    const expectedSteps = Array.from({ length: writers }, (_, writer) =>
      Array.from({ length: perWriter }, (_, i) => `w${writer}-${i}`),
    ).flat();
    expect(rows.map((row) => row.step).sort()).toEqual(expectedSteps.sort());
    for (const row of rows) expect(row.run.endsWith(row.step.slice(1, 2))).toBe(true);

    const lineage = JSON.parse(readFileSync(join(runDir, 'lineage.json'), 'utf8')) as {
      workspace: string;
      woke: number;
      steps: Record<string, string>;
    };
    expect(lineage.workspace).toBe(workspace);
    expect(lineage.woke).toBe(writers);
    expect(Object.keys(lineage.steps)).toHaveLength(writers * perWriter);
    for (let writer = 0; writer < writers; writer += 1) {
      for (let i = 0; i < perWriter; i += 1)
        expect(lineage.steps[`step-${writer}-${i}`]).toBe(`session-${writer}-${i}`);
    }
    // Nothing left behind: no lock, no temporary file, no corrupt copy.
    expect(readdirSync(runDir).sort()).toEqual(['lineage.json', 'manifest.json']);
  });

  it('take over a lock left by a crashed process exactly once, and still lose nothing', async () => {
    const runDir = join(root, 'runs');
    const workspace = join(root, 'ws');
    mkdirSync(runDir, { recursive: true });
    mkdirSync(workspace);
    const crashed = spawnSync(process.execPath, ['-e', '0']).pid;
    for (const file of ['manifest.json', 'lineage.json']) {
      const lock = { pid: crashed, host: hostname(), createdAt: Date.now(), token: 'crashed' };
      writeFileSync(join(runDir, `${file}.lock`), JSON.stringify(lock));
    }
    const outcomes = await writeConcurrently(runDir, workspace, 3, 10);
    for (const outcome of outcomes) expect(outcome).toMatchObject({ code: 0, stderr: '' });
    expect(JSON.parse(readFileSync(join(runDir, 'manifest.json'), 'utf8'))).toHaveLength(30);
    expect(Object.keys(JSON.parse(readFileSync(join(runDir, 'lineage.json'), 'utf8')).steps)).toHaveLength(
      30,
    );
    expect(readdirSync(runDir).sort()).toEqual(['lineage.json', 'manifest.json']);
  });
});
