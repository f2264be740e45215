/**
 * The per-module scores and the "what changed" list that `npm run mutate` and CI read from
 * StrykerJS's JSON: a not-covered mutant counts against a module, an equivalent one does not; a
 * line range counts only its lines; a module with no recorded results is always "changed".
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { mergeResults, withStableTestIds } from './run.mjs';
import { belowTarget, changedEntries, formatRows, scoreRows } from './scores.mjs';

const mutant = (status: string, line = 1) => ({ status, location: { start: { line } } });
const roots: string[] = [];
afterEach(() => {
  for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true });
});

function project(files: Record<string, string>): string {
  const root = mkdtempSync(join(tmpdir(), 'flower-mutation-'));
  roots.push(root);
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(join(root, path, '..'), { recursive: true });
    writeFileSync(join(root, path), text);
  }
  return root;
}

describe('mutation scores per module', () => {
  it('counts timeouts as killed, not-covered mutants against the module, equivalents not at all', () => {
    const report = {
      files: {
        'src/a.ts': {
          mutants: [
            mutant('Killed'),
            mutant('Timeout'),
            mutant('Survived'),
            mutant('NoCoverage'),
            mutant('Ignored'),
            mutant('CompileError'),
          ],
        },
      },
    };
    const [row] = scoreRows(report, [{ path: 'src/a.ts', target: 90 }], '/p');
    expect(row).toMatchObject({
      module: 'src/a.ts',
      killed: 2,
      survived: 1,
      noCoverage: 1,
      ignored: 1,
      other: 1,
    });
    expect(row?.score).toBe(50);
    expect(belowTarget([row!])).toEqual([row]);
  });

  it('a line range counts only the mutants on its lines; a glob names each file; absolute paths are the project', () => {
    const report = {
      files: {
        '/p/src/guard.ts': {
          mutants: [
            mutant('Survived', 9),
            mutant('Killed', 10),
            mutant('Killed', 20),
            mutant('Survived', 21),
          ],
        },
        'src/out/a.ts': { mutants: [mutant('Killed')] },
        'src/out/deep/b.ts': { mutants: [mutant('Survived')] },
      },
    };
    const rows = scoreRows(
      report,
      [
        { path: 'src/guard.ts:10-20', target: 100 },
        { path: 'src/out/*.ts', target: 100 },
      ],
      '/p',
    );
    expect(rows.map((row) => [row.module, row.score])).toEqual([
      ['src/guard.ts:10-20', 100],
      ['src/out/a.ts', 100],
    ]);
    expect(belowTarget(rows)).toEqual([]);
  });

  it('a module with nothing to count has no score and does not fail; the table marks a module under target', () => {
    const rows = scoreRows(
      {
        files: {
          'src/a.ts': { mutants: [mutant('Ignored')] },
          'src/b.ts': { mutants: [mutant('Survived')] },
        },
      },
      [
        { path: 'src/a.ts', target: 100 },
        { path: 'src/b.ts', target: 90 },
      ],
      '/p',
    );
    expect(rows[0]?.score).toBeUndefined();
    expect(belowTarget(rows).map((row) => row.module)).toEqual(['src/b.ts']);
    const table = formatRows(rows);
    expect(table).toContain('| `src/a.ts` | 0 | 0 | 0 | 1 | — | 100 % |');
    expect(table).toContain('| `src/b.ts` | 0 | 1 | 0 | 0 | 0 % ✗ | 90 % |');
  });
});

describe('modules changed since the recorded results', () => {
  it('names an entry whose file changed or has no results, and leaves an unchanged one out', () => {
    const root = project({
      'src/same.ts': 'a',
      'src/edited.ts': 'new',
      'src/new.ts': 'x',
      'src/g/one.ts': '1',
    });
    const recorded = {
      files: {
        'src/same.ts': { source: 'a' },
        'src/edited.ts': { source: 'old' },
        [`${root}/src/g/one.ts`]: { source: '1' },
      },
    };
    const modules = ['src/same.ts', 'src/edited.ts', 'src/new.ts', 'src/g/*.ts', 'src/gone.ts:1-2'].map(
      (path) => ({
        path,
        target: 90,
      }),
    );
    const read = (file: string) =>
      ({ 'src/same.ts': 'a', 'src/edited.ts': 'new', 'src/new.ts': 'x', 'src/g/one.ts': '1' })[file] ?? '';
    expect(changedEntries(recorded, modules, root, read)).toEqual([
      'src/edited.ts',
      'src/new.ts',
      'src/gone.ts:1-2',
    ]);
    expect(changedEntries(undefined, modules.slice(0, 1), root, read)).toEqual(['src/same.ts']);
  });
});

describe('the committed record', () => {
  it("a narrowed run replaces its modules' results and keeps every other module's, without failure texts", () => {
    const recorded = {
      files: {
        'src/a.ts': { source: 'a1', mutants: [mutant('Survived')] },
        'src/b.ts': { source: 'b', mutants: [] },
      },
      testFiles: { 'test/a.test.ts': { source: 'old' }, 'test/b.test.ts': { source: 'b' } },
    };
    const run = {
      schemaVersion: '2',
      config: { mutate: ['src/a.ts'], huge: true },
      files: { 'src/a.ts': { source: 'a2', mutants: [{ ...mutant('Killed'), statusReason: 'stack…' }] } },
      testFiles: { 'test/a.test.ts': { source: 'new' } },
    };
    const merged = mergeResults(recorded, run);
    expect(merged.files).toEqual({
      'src/a.ts': { source: 'a2', mutants: [mutant('Killed')] },
      'src/b.ts': recorded.files['src/b.ts'],
    });
    expect(merged.testFiles).toEqual({
      'test/a.test.ts': { source: 'new' },
      'test/b.test.ts': { source: 'b' },
    });
    expect(merged).toMatchObject({ schemaVersion: '2' });
    expect(merged).not.toHaveProperty('config');
    expect(mergeResults(undefined, run).files).toEqual({
      'src/a.ts': { source: 'a2', mutants: [mutant('Killed')] },
    });
  });

  it("a narrowed run leaves the record's other modules as recorded, though its report carries them with their new source", () => {
    const recorded = {
      files: {
        'src/a.ts': { source: 'a', mutants: [mutant('Killed')] },
        'src/b.ts': { source: 'b-old', mutants: [mutant('Killed', 1), mutant('Killed', 2)] },
      },
    };
    const run = {
      config: { mutate: ['src/a.ts'] },
      files: {
        'src/a.ts': { source: 'a', mutants: [mutant('Survived')] },
        'src/b.ts': { source: 'b-new', mutants: [mutant('Killed', 1)] },
        'src/c.ts': { source: 'c', mutants: [mutant('Killed')] },
      },
    };
    expect(mergeResults(recorded, run).files).toEqual({
      'src/a.ts': { source: 'a', mutants: [mutant('Survived')] },
      'src/b.ts': recorded.files['src/b.ts'],
    });
    // A report without its configuration mutated everything it holds.
    const { config: _config, ...whole } = run;
    expect(Object.keys(mergeResults(recorded, whole).files ?? {})).toEqual([
      'src/a.ts',
      'src/b.ts',
      'src/c.ts',
    ]);
    expect(mergeResults(recorded, whole).files?.['src/b.ts']?.source).toBe('b-new');
  });

  it("a run over some lines of an unchanged file replaces those lines' mutants and keeps the rest", () => {
    const recorded = {
      files: { 'src/a.ts': { source: 'same', mutants: [mutant('Survived', 5), mutant('Killed', 30)] } },
    };
    const run = {
      config: { mutate: ['src/a.ts:1-10'] },
      files: { 'src/a.ts': { source: 'same', mutants: [mutant('Killed', 5)] } },
    };
    expect(mergeResults(recorded, run).files?.['src/a.ts']?.mutants).toEqual([
      mutant('Killed', 30),
      mutant('Killed', 5),
    ]);
    // A report of the lines' run that carries the rest of the file over counts it once.
    const whole = {
      ...run,
      files: { 'src/a.ts': { source: 'same', mutants: [mutant('Killed', 5), mutant('Killed', 30)] } },
    };
    expect(mergeResults(recorded, whole).files?.['src/a.ts']?.mutants).toEqual([
      mutant('Killed', 30),
      mutant('Killed', 5),
    ]);
    const changed = { ...run, files: { 'src/a.ts': { source: 'edited', mutants: [mutant('Killed', 5)] } } };
    expect(mergeResults(recorded, changed).files?.['src/a.ts']?.mutants).toEqual([mutant('Killed', 5)]);
  });

  it('a mutant keeps naming the tests that killed it after another run, numbered afresh, is merged', () => {
    // StrykerJS numbers tests per run: run A's test 1 is in a.test.ts, run B's test 1 in b.test.ts.
    const recorded = {
      files: {
        'src/a.ts': {
          source: 'a',
          mutants: [{ ...mutant('Killed'), killedBy: ['1'], coveredBy: ['1', '2'] }],
        },
      },
      testFiles: {
        'test/a.test.ts': {
          source: 'a-tests',
          tests: [
            { id: '1', name: 'a kills' },
            { id: '2', name: 'a covers' },
          ],
        },
      },
    };
    const run = {
      config: { mutate: ['src/b.ts'] },
      files: {
        'src/b.ts': {
          source: 'b',
          mutants: [{ ...mutant('Killed'), killedBy: ['1'], coveredBy: ['1', '9'] }],
        },
      },
      testFiles: { 'test/b.test.ts': { source: 'b-tests', tests: [{ id: '1', name: 'b kills' }] } },
    };
    const merged = mergeResults(recorded, run);
    expect(merged.files?.['src/a.ts']?.mutants?.[0]).toMatchObject({
      killedBy: ['test/a.test.ts › a kills'],
      coveredBy: ['test/a.test.ts › a kills', 'test/a.test.ts › a covers'],
    });
    // An id no test file holds names no test.
    expect(merged.files?.['src/b.ts']?.mutants?.[0]).toMatchObject({
      killedBy: ['test/b.test.ts › b kills'],
      coveredBy: ['test/b.test.ts › b kills'],
    });
    expect(merged.testFiles?.['test/a.test.ts']?.tests?.map((test) => test.id)).toEqual([
      'test/a.test.ts › a kills',
      'test/a.test.ts › a covers',
    ]);
    expect(merged.testFiles?.['test/b.test.ts']?.tests).toEqual([
      { id: 'test/b.test.ts › b kills', name: 'b kills' },
    ]);
  });

  it('tests of one name in one file get distinct ids, and naming a named report changes nothing', () => {
    const report = {
      files: { 'src/a.ts': { mutants: [{ ...mutant('Killed'), killedBy: ['8'], coveredBy: ['7', '8'] }] } },
      testFiles: {
        'test/a.test.ts': {
          tests: [
            { id: '7', name: 'same' },
            { id: '8', name: 'same' },
          ],
        },
      },
    };
    const named = withStableTestIds(report);
    expect(named.files?.['src/a.ts']?.mutants?.[0]).toMatchObject({
      killedBy: ['test/a.test.ts › same #2'],
      coveredBy: ['test/a.test.ts › same', 'test/a.test.ts › same #2'],
    });
    expect(withStableTestIds(named)).toEqual(named);
    // A mutant StrykerJS wrote without test lists keeps none.
    const bare = withStableTestIds({ files: { 'src/a.ts': { mutants: [mutant('Killed')] } } });
    expect(bare.files?.['src/a.ts']?.mutants?.[0]).toEqual(mutant('Killed'));
  });
});
