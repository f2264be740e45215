/**
 * `npm run mutate [-- <stryker options>]`: StrykerJS with the committed results carried over, and
 * the per-module scores against their targets at the end.
 *
 * Invariants:
 * - The committed record (`test/mutation/results.json`) keeps every mutated module's results: a
 *   narrowed run (`--mutate <module>`) replaces that module's results and keeps the others' as
 *   the record held them, source included; a run
 *   over some lines (`<module>:10-20`) of a file the record holds unchanged replaces those lines'.
 *   (StrykerJS writes its incremental file with the results of its own run only, so it writes a
 *   scratch copy in reports/ and the record is merged here.)
 * - The run reuses the record (StrykerJS's incremental mode): only mutants whose code or covering
 *   tests changed are tested again; `--force` tests all of them.
 * - Tests are named the same way in every report of the record: a test's id is its file and name
 *   (`withStableTestIds`). StrykerJS numbers tests afresh in each run, and a mutant names the tests
 *   that covered and killed it by those numbers; merging one run's test files into a record whose
 *   other modules came from other runs pointed their mutants at whatever test now had their
 *   number (transcript-safety's mutants "killed by" later-turns.test.ts), so incremental mode
 *   found their killing tests gone and tested 2 563 of 4 635 mutants again.
 * - `--merge <file>` merges the results file of a run made by `npx stryker run` directly (with its
 *   own `--incrementalFile`) into the record, and runs nothing.
 * - The exit code is StrykerJS's when it failed, else 1 when a module of this run is under its target.
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { belowTarget, formatRows, matchesPattern, parseEntry, RECORD, scoreRows } from './scores.mjs';

/**
 * The record with a run's files and test files in place of the ones it held before. Kept small
 * enough to commit: what incremental mode reuses (sources, tests, each mutant's status, location
 * and tests), without the run's configuration or each failure's message and stack.
 */
export function mergeResults(recordedReport, runReport) {
  const recorded = recordedReport === undefined ? undefined : withStableTestIds(recordedReport);
  const run = withStableTestIds(runReport);
  const files = { ...(recorded?.files ?? {}) };
  for (const [path, file] of Object.entries(run.files ?? {})) {
    // StrykerJS's report also carries the record's other files over, each with its current
    // source and the results of its unchanged code: taken, a module edited since the record
    // would look tested (CI's `--changed` saw nothing to mutate after a narrowed run elsewhere).
    if (!inScope(path, run.config?.mutate)) continue;
    const ranges = rangesOf(path, run.config?.mutate ?? []);
    const before = files[path];
    // A run over some lines of an unchanged file replaces those lines' mutants only. Its report
    // may hold the rest of the file too, carried over from the record unchanged (StrykerJS's
    // incremental mode does that): those are taken from the record, once.
    files[path] =
      ranges === undefined || before === undefined || before.source !== file.source
        ? file
        : {
            ...file,
            mutants: [
              ...before.mutants.filter((m) => !within(m, ranges)),
              ...file.mutants.filter((m) => within(m, ranges)),
            ],
          };
  }
  for (const [path, file] of Object.entries(files)) {
    files[path] = { ...file, mutants: (file.mutants ?? []).map(({ statusReason, ...mutant }) => mutant) };
  }
  return {
    schemaVersion: run.schemaVersion,
    thresholds: run.thresholds,
    projectRoot: run.projectRoot,
    files,
    testFiles: { ...(recorded?.testFiles ?? {}), ...(run.testFiles ?? {}) },
  };
}

/**
 * The report with each test's id replaced by its file and name (`#2`, `#3` after a name repeated
 * in one file), in its test files and in every mutant's `coveredBy` and `killedBy`; an id no test
 * file of the report holds is dropped. A report already named this way comes back unchanged.
 */
export function withStableTestIds(report) {
  const stableIds = new Map();
  const testFiles = {};
  for (const [file, testFile] of Object.entries(report.testFiles ?? {})) {
    const seen = new Map();
    if (testFile.tests === undefined) {
      testFiles[file] = testFile;
      continue;
    }
    const tests = testFile.tests.map((test) => {
      const name = `${file} › ${test.name}`;
      const count = (seen.get(name) ?? 0) + 1;
      seen.set(name, count);
      const id = count === 1 ? name : `${name} #${count}`;
      stableIds.set(test.id, id);
      return { ...test, id };
    });
    testFiles[file] = { ...testFile, tests };
  }
  const rename = (ids) => ids?.map((id) => stableIds.get(id)).filter((id) => id !== undefined);
  const files = {};
  for (const [path, file] of Object.entries(report.files ?? {})) {
    files[path] = {
      ...file,
      mutants: (file.mutants ?? []).map((mutant) => {
        const renamed = { ...mutant };
        if (mutant.coveredBy !== undefined) renamed.coveredBy = rename(mutant.coveredBy);
        if (mutant.killedBy !== undefined) renamed.killedBy = rename(mutant.killedBy);
        return renamed;
      }),
    };
  }
  return { ...report, files, testFiles };
}

/** Whether a run mutated `path` (a run whose report names no `mutate` list mutated everything). */
function inScope(path, mutate) {
  if (mutate === undefined) return true;
  const file = path.replace(/^\.\//, '');
  return mutate.some((entry) => matchesPattern(parseEntry(entry).pattern, file));
}

/** The line ranges a run's `mutate` list gave for `path`; undefined when it mutated the whole file. */
function rangesOf(path, mutate) {
  const ranges = [];
  for (const entry of mutate) {
    const { pattern, lines } = parseEntry(entry);
    if (!matchesPattern(pattern, path.replace(/^\.\//, ''))) continue;
    if (lines === undefined) return undefined;
    ranges.push(lines);
  }
  return ranges.length === 0 ? undefined : ranges;
}

const within = (mutant, ranges) => {
  const line = mutant.location?.start?.line ?? 0;
  return ranges.some(([from, to]) => line >= from && line <= to);
};

/** Merges a run's results file (StrykerJS's incremental file of a run made elsewhere) into the record. */
function mergeInto(record, runFile) {
  const run = JSON.parse(readFileSync(runFile, 'utf8'));
  const recorded = existsSync(record) ? JSON.parse(readFileSync(record, 'utf8')) : undefined;
  writeFileSync(record, `${JSON.stringify(mergeResults(recorded, run))}\n`);
  return run;
}

async function main(args) {
  const root = dirname(dirname(dirname(fileURLToPath(import.meta.url))));
  const config = await import(pathToFileURL(join(root, 'stryker.config.mjs')).href);
  const record = join(root, RECORD);
  if (args[0] === '--merge' && args[1] !== undefined) {
    mergeInto(record, args[1]);
    return 0;
  }
  const scratch = join(root, config.default.incrementalFile);
  mkdirSync(dirname(scratch), { recursive: true });
  if (existsSync(record)) copyFileSync(record, scratch);
  const stryker = spawnSync('npx', ['stryker', 'run', ...args], { cwd: root, stdio: 'inherit' });
  if (stryker.status !== 0) return stryker.status ?? 1;
  const run = mergeInto(record, scratch);
  const rows = scoreRows(run, config.mutatedModules, root);
  console.log(`\nScores of this run (targets in stryker.config.mjs):\n${formatRows(rows)}`);
  const failing = belowTarget(rows);
  if (failing.length === 0) return 0;
  console.error(
    `\nUnder target: ${failing.map((row) => row.module).join(', ')}. Kill each survivor with a test of ` +
      'the promise it breaks, or disable it in place as equivalent (MUTATION.md).',
  );
  return 1;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  process.exitCode = await main(process.argv.slice(2));
}
