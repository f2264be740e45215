import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runWriter } from '../support/manifest-writer-harness.js';

let root: string;
let runDir: string;
let workspace: string;
beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'flower-corrupt-manifest-'));
  runDir = join(root, 'runs');
  workspace = join(root, 'ws');
  mkdirSync(runDir);
  mkdirSync(workspace);
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

describe('a corrupt runs/manifest.json', () => {
  it('is kept beside a fresh manifest, with one warning, and the process does not crash', async () => {
    const corrupt = '[\n  {"step": "clarify", "run": "20261129-230000-abcdef", "ok": tr';
    writeFileSync(join(runDir, 'manifest.json'), corrupt);

    const outcome = await runWriter(['once', runDir, workspace, '20261130-010000-123456']);

    expect(outcome.code).toBe(0);
    const warnings = outcome.stderr.trim().split('\n');
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/manifest\.json could not be read/);
    const kept = readdirSync(runDir).filter((name) => name.startsWith('manifest.json.corrupt-'));
    expect(kept).toHaveLength(1);
    expect(warnings[0]).toContain(join(runDir, kept[0]!));
    expect(readFileSync(join(runDir, kept[0]!), 'utf8')).toBe(corrupt);
    const rows = JSON.parse(readFileSync(join(runDir, 'manifest.json'), 'utf8'));
    expect(rows).toMatchObject([{ step: 'work', ok: true, run: '20261130-010000-123456' }]);
  });

  it('is also set aside when it is valid JSON of the wrong shape', async () => {
    writeFileSync(join(runDir, 'manifest.json'), '{"rows": []}');
    const outcome = await runWriter(['once', runDir, workspace, '20261130-010000-123456']);
    expect(outcome.code).toBe(0);
    expect(outcome.stderr).toMatch(/not the expected structure/);
    expect(readdirSync(runDir).some((name) => name.startsWith('manifest.json.corrupt-'))).toBe(true);
    expect(JSON.parse(readFileSync(join(runDir, 'manifest.json'), 'utf8'))).toHaveLength(1);
  });
});
