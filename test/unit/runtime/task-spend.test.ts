import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  manifestPath,
  peekManifest,
  type StoredManifestRow,
  saveManifestRows,
} from '../../../src/runtime/manifest.js';
import { finishStepResult, newStepResult, type StepResult } from '../../../src/runtime/step-result.js';
import {
  ASIDE_RUN_DIR,
  markTaskStart,
  readTaskStart,
  sumTaskSpend,
  TASK_START_FILE,
  taskSpend,
} from '../../../src/runtime/task-spend.js';

let runDir: string;
beforeEach(() => {
  runDir = mkdtempSync(join(tmpdir(), 'flower-spend-'));
});
afterEach(() => rmSync(runDir, { recursive: true, force: true }));

function spent(step: string, run: string, costUsd: number, at: number): StepResult {
  const result = newStepResult(step, run, at);
  result.costUsd = costUsd;
  finishStepResult(result, at + 10);
  return result;
}

describe('taskSpend', () => {
  it('adds every run of the task and the side questions, and says when it last ran', () => {
    saveManifestRows(runDir, 'run-a', [
      spent('clarify', 'run-a', 0.1, 100),
      spent('work', 'run-a', 0.25, 200),
    ]);
    saveManifestRows(runDir, 'run-b', [spent('work', 'run-b', 0.5, 300)]);
    saveManifestRows(join(runDir, ASIDE_RUN_DIR), 'aside-1', [spent('aside', 'aside-1', 0.0123, 400)]);
    expect(taskSpend(runDir)).toEqual({
      stepsUsd: 0.85,
      asidesUsd: 0.0123,
      totalUsd: 0.8623,
      archivedUsd: 0,
      runs: 2,
      lastActivity: 410,
    });
  });

  it('is all zeros for a directory where nothing ran', () => {
    expect(taskSpend(join(runDir, 'nothing-here'))).toEqual({
      stepsUsd: 0,
      asidesUsd: 0,
      totalUsd: 0,
      archivedUsd: 0,
      runs: 0,
      lastActivity: 0,
    });
  });

  it('after --new counts only the new task, and keeps the archived tasks apart', () => {
    saveManifestRows(runDir, 'run-a', [spent('work', 'run-a', 1.47, 100)]);
    saveManifestRows(join(runDir, ASIDE_RUN_DIR), 'aside-1', [spent('aside', 'aside-1', 0.03, 150)]);
    markTaskStart(runDir, 200);
    expect(readTaskStart(runDir)).toBe(200);
    expect(taskSpend(runDir)).toMatchObject({ totalUsd: 0, archivedUsd: 1.5, runs: 0, lastActivity: 160 });
    saveManifestRows(runDir, 'run-b', [spent('work', 'run-b', 0.2, 250)]);
    saveManifestRows(join(runDir, ASIDE_RUN_DIR), 'aside-2', [spent('aside', 'aside-2', 0.01, 260)]);
    expect(taskSpend(runDir)).toMatchObject({
      stepsUsd: 0.2,
      asidesUsd: 0.01,
      totalUsd: 0.21,
      archivedUsd: 1.5,
      runs: 1,
      lastActivity: 270,
    });
  });

  it('reads a missing or unreadable task start as no boundary', () => {
    expect(readTaskStart(runDir)).toBe(0);
    writeFileSync(join(runDir, TASK_START_FILE), '{"at": "yesterday"}');
    expect(readTaskStart(runDir)).toBe(0);
    writeFileSync(join(runDir, TASK_START_FILE), '{"at');
    expect(readTaskStart(runDir)).toBe(0);
  });

  it('puts rows with no time before a boundary, and counts them all without one', () => {
    const rows = [{ cost_usd: 0.5 }, { cost_usd: 0.25, ended_at: 300 }] as unknown as StoredManifestRow[];
    expect(sumTaskSpend(rows)).toMatchObject({ totalUsd: 0.75, archivedUsd: 0 });
    expect(sumTaskSpend(rows, [], 200)).toMatchObject({ totalUsd: 0.25, archivedUsd: 0.5 });
  });

  it('counts only finite, positive costs from rows another version wrote', () => {
    const rows = [
      { cost_usd: 0.2, run: 'a' },
      { cost_usd: 'lots', run: 'a' },
      { cost_usd: Number.NaN },
      { cost_usd: -5, run: 'a' },
      { cost_usd: Number.POSITIVE_INFINITY, run: 'a' },
      {},
    ] as unknown as StoredManifestRow[];
    expect(sumTaskSpend(rows).stepsUsd).toBe(0.2);
  });

  it('counts as runs only the run ids rows name', () => {
    const rows = [{ run: 'a' }, { run: 'a' }, { run: 'b' }, {}, { run: 7 }] as unknown as StoredManifestRow[];
    expect(sumTaskSpend(rows).runs).toBe(2);
  });

  it('reads a corrupt manifest as empty and leaves the file exactly where and as it was', () => {
    writeFileSync(manifestPath(runDir), '[{"step": "work", "cost_us');
    expect(taskSpend(runDir).totalUsd).toBe(0);
    expect(peekManifest(runDir).state).toBe('corrupt');
    expect(readFileSync(manifestPath(runDir), 'utf8')).toBe('[{"step": "work", "cost_us');
    expect(readdirSync(runDir)).toEqual(['manifest.json']);
  });

  it('peeks without taking the lock or creating anything', () => {
    mkdirSync(join(runDir, 'quiet'));
    expect(peekManifest(join(runDir, 'quiet')).state).toBe('missing');
    expect(readdirSync(join(runDir, 'quiet'))).toEqual([]);
  });
});

describe('sumTaskSpend: the boundary and the figures', () => {
  const rows = (...list: object[]) => list as unknown as StoredManifestRow[];

  it('a row belongs to the task by when it started, a row started at the boundary to the new task', () => {
    const all = rows(
      { cost_usd: 1, started_at: 100, ended_at: 300, run: 'old' },
      { cost_usd: 2, started_at: 200, ended_at: 210, run: 'new' },
      { cost_usd: 4, started_at: Number.NaN, ended_at: 250, run: 'new' },
      { cost_usd: 8, started_at: 'early', ended_at: 150, run: 'old' },
    );
    expect(sumTaskSpend(all, [], 200)).toMatchObject({ stepsUsd: 6, totalUsd: 6, archivedUsd: 9, runs: 1 });
  });

  it('a side question belongs to the task by the same rule', () => {
    const asides = rows({ cost_usd: 0.5, started_at: 100 }, { cost_usd: 0.25, started_at: 300 });
    expect(sumTaskSpend([], asides, 200)).toMatchObject({
      asidesUsd: 0.25,
      totalUsd: 0.25,
      archivedUsd: 0.5,
    });
  });

  it('no boundary (zero or less) puts every row in the task', () => {
    const all = rows({ cost_usd: 1, started_at: -50 }, { cost_usd: 2 });
    expect(sumTaskSpend(all, [], 0)).toMatchObject({ totalUsd: 3, archivedUsd: 0 });
    expect(sumTaskSpend(all, [], -10)).toMatchObject({ totalUsd: 3, archivedUsd: 0 });
  });

  it('rounds each figure to 1/100 cent', () => {
    const spend = sumTaskSpend(
      rows({ cost_usd: 0.123_44 }, { cost_usd: 0.000_02 }),
      rows({ cost_usd: 0.000_03 }),
      0,
    );
    expect(spend).toMatchObject({ stepsUsd: 0.1235, asidesUsd: 0, totalUsd: 0.1235 });
    expect(sumTaskSpend(rows({ cost_usd: 0.123_44, started_at: 1 }), [], 5).archivedUsd).toBe(0.1234);
  });

  it('the last activity is the latest start or end among every row, archived and asides too', () => {
    expect(
      sumTaskSpend(rows({ started_at: 50, ended_at: Number.NaN }), rows({ started_at: 40 })).lastActivity,
    ).toBe(50);
    expect(sumTaskSpend(rows({ ended_at: 'later', started_at: 30 }), [], 100).lastActivity).toBe(30);
    expect(
      sumTaskSpend(rows({ started_at: 10, ended_at: 20 }), rows({ started_at: 70, ended_at: 90 }), 80),
    ).toMatchObject({
      lastActivity: 90,
    });
    expect(sumTaskSpend(rows({ cost_usd: 1 }), rows({ started_at: -5 })).lastActivity).toBe(0);
  });
});

describe('the task start file', () => {
  it('is private, and made with a private run directory when there is none yet', () => {
    const fresh = join(runDir, 'fresh');
    markTaskStart(fresh, 1234.5);
    expect(readFileSync(join(fresh, TASK_START_FILE), 'utf8')).toBe('{"at":1234.5}\n');
    expect(statSync(join(fresh, TASK_START_FILE)).mode & 0o777).toBe(0o600);
    expect(statSync(fresh).mode & 0o777).toBe(0o700);
    expect(readTaskStart(fresh)).toBe(1234.5);
  });

  it('reads a start at or before the epoch as no boundary', () => {
    writeFileSync(join(runDir, TASK_START_FILE), '{"at": -3}');
    expect(readTaskStart(runDir)).toBe(0);
    writeFileSync(join(runDir, TASK_START_FILE), 'null');
    expect(readTaskStart(runDir)).toBe(0);
    writeFileSync(join(runDir, TASK_START_FILE), '{"at": "300"}');
    expect(readTaskStart(runDir)).toBe(0);
    // JSON reads 1e999 as Infinity: no task starts after every row.
    writeFileSync(join(runDir, TASK_START_FILE), '{"at": 1e999}');
    expect(readTaskStart(runDir)).toBe(0);
  });
});
