import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isLineageStepName, Lineage, lineagePath } from '../../../src/runtime/lineage.js';

let root: string;
let runDir: string;
let workspace: string;
beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'flower-lineage-'));
  runDir = join(root, 'runs');
  workspace = join(root, 'ws');
  mkdirSync(workspace);
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

const onDisk = () => JSON.parse(readFileSync(lineagePath(runDir), 'utf8'));

describe('lineage.json', () => {
  it('starts empty and records a session the moment it is remembered', () => {
    const lineage = Lineage.open(runDir, workspace);
    expect(lineage.steps).toEqual({});
    expect(lineage.woke).toBe(0);
    expect(lineage.ignoredReason).toBeUndefined();
    lineage.remember('clarify', 'session-1');
    expect(onDisk()).toEqual({ workspace, woke: 0, steps: { clarify: 'session-1' } });
  });

  it('keeps the last session per step and counts wake-ups', () => {
    const first = Lineage.open(runDir, workspace);
    expect(first.bump()).toBe(1);
    first.remember('work', 'a');
    first.remember('work', 'b');
    const second = Lineage.open(runDir, workspace);
    expect(second.bump()).toBe(2);
    expect(second.steps).toEqual({ work: 'b' });
    expect(onDisk().woke).toBe(2);
  });

  it('never records suffixed labels or empty ids', () => {
    const lineage = Lineage.open(runDir, workspace);
    for (const label of ['work#retry2', 'work#round3', 'work:verdict#1', 'work#round2:verdict#1']) {
      lineage.remember(label, 'x');
    }
    lineage.remember('work', '');
    lineage.remember('', 'x');
    expect(lineage.steps).toEqual({});
    expect(isLineageStepName('set-goal')).toBe(true);
    expect(isLineageStepName('work#retry1')).toBe(false);
  });

  it('merges with steps another process recorded in the meantime', () => {
    const mine = Lineage.open(runDir, workspace);
    const theirs = Lineage.open(runDir, workspace);
    mine.remember('clarify', 'c1');
    theirs.remember('work', 'w1');
    mine.bump();
    theirs.bump();
    expect(onDisk()).toEqual({ workspace, woke: 2, steps: { clarify: 'c1', work: 'w1' } });
    expect(mine.steps).toEqual({ clarify: 'c1', work: 'w1' });
  });

  it('ignores a lineage recorded for another workspace path, saying in one line where the task belongs', () => {
    Lineage.open(runDir, workspace).remember('work', 'w1');
    const moved = join(root, 'moved');
    const warnings: string[] = [];
    const lineage = Lineage.open(runDir, moved, { onWarning: (line) => warnings.push(line) });
    expect(lineage.steps).toEqual({});
    expect(lineage.ignoredReason).toContain(moved);
    expect(warnings).toEqual([lineage.ignoredReason]);
    expect(warnings[0]).toContain(`run flower from ${workspace}`);
    lineage.remember('work', 'w2');
    expect(onDisk()).toEqual({ workspace: moved, woke: 0, steps: { work: 'w2' } });
  });

  it('resolves a relative workspace path before comparing', () => {
    Lineage.open(runDir, workspace).remember('work', 'w1');
    const relative = join(workspace, '..', 'ws');
    expect(Lineage.open(runDir, relative).steps).toEqual({ work: 'w1' });
  });

  it('skips a recorded session the store no longer has, and says why', () => {
    const lineage = Lineage.open(runDir, workspace);
    lineage.remember('work', 'gone');
    lineage.remember('clarify', 'kept');
    const has = (id: string) => id === 'kept';
    expect(lineage.sessionFor('clarify', has)).toEqual({ sessionId: 'kept' });
    const missing = lineage.sessionFor('work', has);
    expect(missing.sessionId).toBeUndefined();
    expect('reason' in missing && missing.reason).toContain('not in the session store');
    expect(lineage.sessionFor('judge', has)).toMatchObject({ sessionId: undefined });
  });

  it('sets a corrupt file aside with a warning and starts fresh', () => {
    mkdirSync(runDir);
    writeFileSync(lineagePath(runDir), '{"workspace": ');
    const warnings: string[] = [];
    const lineage = Lineage.open(runDir, workspace, { onWarning: (line) => warnings.push(line) });
    expect(warnings).toHaveLength(1);
    expect(lineage.steps).toEqual({});
    lineage.remember('work', 'w1');
    expect(onDisk().steps).toEqual({ work: 'w1' });
    const kept = readdirSync(runDir).find((name) => name.startsWith('lineage.json.corrupt-'))!;
    expect(readFileSync(join(runDir, kept), 'utf8')).toBe('{"workspace": ');
  });

  it('accepts hand-edited values leniently: numbers as text, empty ids dropped', () => {
    mkdirSync(runDir);
    writeFileSync(
      lineagePath(runDir),
      JSON.stringify({ workspace, woke: '3', steps: { a: 12, b: '', c: 'x' } }),
    );
    const lineage = Lineage.open(runDir, workspace);
    expect(lineage.steps).toEqual({ a: '12', c: 'x' });
    expect(lineage.woke).toBe(3);
  });

  it('reports a failed write as a warning and still remembers the session in memory', () => {
    writeFileSync(join(root, 'file-not-dir'), '');
    const warnings: string[] = [];
    const lineage = Lineage.open(join(root, 'file-not-dir'), workspace, {
      onWarning: (line) => warnings.push(line),
    });
    lineage.remember('work', 'w1');
    expect(warnings).toHaveLength(1);
    expect(lineage.sessionFor('work', () => true)).toEqual({ sessionId: 'w1' });
  });
});
