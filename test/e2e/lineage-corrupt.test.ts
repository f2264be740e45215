import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runWriter } from '../support/manifest-writer-harness.js';

let root: string;
let runDir: string;
let workspace: string;
beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'flower-corrupt-lineage-'));
  runDir = join(root, 'runs');
  workspace = join(root, 'ws');
  mkdirSync(runDir);
  mkdirSync(workspace);
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

describe('a corrupt runs/lineage.json', () => {
  it('is kept beside a fresh lineage, with one warning, and new sessions are recorded', async () => {
    const corrupt = '{"workspace": "/somewhere", "woke": 2, "steps": {"work": "abc';
    writeFileSync(join(runDir, 'lineage.json'), corrupt);

    const outcome = await runWriter(['once', runDir, workspace, '20261130-010000-123456']);

    expect(outcome.code).toBe(0);
    const warnings = outcome.stderr.trim().split('\n');
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/lineage\.json could not be read/);
    const kept = readdirSync(runDir).filter((name) => name.startsWith('lineage.json.corrupt-'));
    expect(kept).toHaveLength(1);
    expect(readFileSync(join(runDir, kept[0]!), 'utf8')).toBe(corrupt);
    expect(JSON.parse(readFileSync(join(runDir, 'lineage.json'), 'utf8'))).toEqual({
      workspace,
      woke: 0,
      steps: { work: 'session-after-corruption' },
    });
  });

  it('belonging to another workspace is not corrupt: one line naming that workspace, and this workspace takes it over', async () => {
    writeFileSync(
      join(runDir, 'lineage.json'),
      JSON.stringify({ workspace: '/elsewhere', woke: 5, steps: { work: 'old-session' } }),
    );
    const outcome = await runWriter(['once', runDir, workspace, '20261130-010000-123456']);
    expect(outcome.code).toBe(0);
    // Issue 14: never silently; the line says where the task belongs and how to continue it.
    const lines = outcome.stderr.trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain('was written for the workspace /elsewhere');
    expect(lines[0]).toContain('run flower from /elsewhere');
    expect(lines[0]).toContain('starting fresh here');
    expect(readdirSync(runDir).some((name) => name.includes('corrupt'))).toBe(false);
    expect(JSON.parse(readFileSync(join(runDir, 'lineage.json'), 'utf8'))).toEqual({
      workspace,
      woke: 0,
      steps: { work: 'session-after-corruption' },
    });
  });
});
