import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { manifestPath, readManifest, saveManifestRows } from '../../../src/runtime/manifest.js';
import { finishStepResult, newStepResult, type StepResult } from '../../../src/runtime/step-result.js';

let runDir: string;
beforeEach(() => {
  runDir = mkdtempSync(join(tmpdir(), 'flower-manifest-'));
});
afterEach(() => rmSync(runDir, { recursive: true, force: true }));

function result(step: string, run: string): StepResult {
  const value = newStepResult(step, run, 100);
  finishStepResult(value, 101);
  return value;
}

describe('manifest.json', () => {
  it('holds one row per result of this run, as a pretty JSON array', () => {
    expect(saveManifestRows(runDir, 'run-a', [result('clarify', 'run-a'), result('work', 'run-a')])).toBe(
      true,
    );
    const text = readFileSync(manifestPath(runDir), 'utf8');
    expect(text.startsWith('[\n  {\n    "step": "clarify"')).toBe(true);
    expect(readManifest(runDir).map((row) => [row.step, row.run])).toEqual([
      ['clarify', 'run-a'],
      ['work', 'run-a'],
    ]);
  });

  it('replaces its own rows on every save instead of duplicating them', () => {
    const results = [result('clarify', 'run-a')];
    saveManifestRows(runDir, 'run-a', results);
    results.push(result('work', 'run-a'));
    saveManifestRows(runDir, 'run-a', results);
    results[1]!.ok = true;
    saveManifestRows(runDir, 'run-a', results);
    const rows = readManifest(runDir);
    expect(rows.map((row) => row.step)).toEqual(['clarify', 'work']);
    expect(rows[1]!.ok).toBe(true);
  });

  it('ends with exactly the last saved results of every run, whatever the order of saves', () => {
    const save = fc.record({
      run: fc.constantFrom('run-a', 'run-b', 'run-c'),
      steps: fc.array(fc.string(), { maxLength: 4 }),
    });
    fc.assert(
      fc.property(fc.array(save, { maxLength: 12 }), (saves) => {
        rmSync(manifestPath(runDir), { force: true });
        const last = new Map<string, string[]>();
        for (const { run, steps } of saves) {
          saveManifestRows(
            runDir,
            run,
            steps.map((step) => result(step, run)),
          );
          last.set(run, steps);
        }
        const expected = [...last].flatMap(([run, steps]) => steps.map((step) => `${run}/${step}`)).sort();
        expect(
          readManifest(runDir)
            .map((row) => `${row.run}/${row.step}`)
            .sort(),
        ).toEqual(expected);
      }),
      { numRuns: 25 },
    );
  });

  it("keeps other runs' rows untouched, including keys it does not know", () => {
    const foreign = { step: 'old', run: 'run-old', extra: { from: 'another version' } };
    writeFileSync(manifestPath(runDir), JSON.stringify([foreign]));
    saveManifestRows(runDir, 'run-b', [result('work', 'run-b')]);
    saveManifestRows(runDir, 'run-c', [result('work', 'run-c')]);
    saveManifestRows(runDir, 'run-b', [result('work', 'run-b'), result('work#retry2', 'run-b')]);
    const rows = readManifest(runDir);
    expect(rows[0]).toEqual(foreign);
    expect(rows.map((row) => `${row.run}/${row.step}`).sort()).toEqual([
      'run-b/work',
      'run-b/work#retry2',
      'run-c/work',
      'run-old/old',
    ]);
  });

  it('sets a corrupt manifest aside with a warning and starts a fresh one', () => {
    writeFileSync(manifestPath(runDir), '[{"step": "half-writ');
    const warnings: string[] = [];
    saveManifestRows(runDir, 'run-a', [result('work', 'run-a')], {
      onWarning: (line) => warnings.push(line),
    });
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/manifest\.json\.corrupt-\d{8}-\d{6}/);
    expect(readManifest(runDir).map((row) => row.step)).toEqual(['work']);
    const kept = readdirSync(runDir).find((name) => name.startsWith('manifest.json.corrupt-'))!;
    expect(readFileSync(join(runDir, kept), 'utf8')).toBe('[{"step": "half-writ');
  });

  it('treats an array holding non-objects as corrupt rather than silently dropping entries', () => {
    writeFileSync(manifestPath(runDir), '[{"step": "a", "run": "r"}, 42]');
    const warnings: string[] = [];
    expect(readManifest(runDir, { onWarning: (line) => warnings.push(line) })).toEqual([]);
    expect(warnings).toHaveLength(1);
  });

  it('reports a failed write to the warning callback instead of throwing', () => {
    writeFileSync(join(runDir, 'not-a-dir'), '');
    const warnings: string[] = [];
    const saved = saveManifestRows(join(runDir, 'not-a-dir'), 'run-a', [result('work', 'run-a')], {
      onWarning: (line) => warnings.push(line),
    });
    expect(saved).toBe(false);
    expect(warnings[0]).toContain('only in memory');
  });
});
