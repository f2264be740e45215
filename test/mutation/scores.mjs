/**
 * StrykerJS's results per mutated module, against each module's target (stryker.config.mjs), and
 * which modules changed since the committed results were recorded (what CI mutates).
 *
 * Invariants:
 * - A score is killed and timed out over killed, timed out, survived and not covered: a mutant no
 *   test reaches counts against the module (it is a promise nobody checks). Mutants disabled as
 *   equivalent (`Ignored`) and those that do not compile are outside the count.
 * - A `path:from-to` entry counts only the mutants that start on those lines.
 * - A module is "changed" when its source differs from the one the results file recorded, or the
 *   file holds no results for it: a module nobody ran StrykerJS on is never taken as passing.
 *
 * Command line: `node test/mutation/scores.mjs [report.json] [--only entry,entry]` prints the table
 * and exits 1 when a module is under its target; `--changed` prints the entries whose source
 * changed since the committed record `test/mutation/results.json` (run.mjs), comma-separated (nothing when none).
 * Hand-written instead of a library: the report is plain JSON (mutation-testing-report-schema) and
 * the globs in the list are one `*` in a file name.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, isAbsolute, join, relative } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

/** The committed record of every mutated module's results (run.mjs writes it), from the project root. */
export const RECORD = 'test/mutation/results.json';

const DETECTED = new Set(['Killed', 'Timeout']);

/** `src/x/*.ts:10-20` → the path pattern and the line range (both lines included). */
export function parseEntry(entry) {
  const match = /^(.*?)(?::(\d+)-(\d+))?$/.exec(entry);
  const [, pattern, from, to] = match;
  return { entry, pattern, lines: from === undefined ? undefined : [Number(from), Number(to)] };
}

/** Does the report's file (a path relative to the project) belong to this entry's pattern? */
export function matchesPattern(pattern, file) {
  const source = pattern.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '[^/]*');
  return new RegExp(`^${source}$`).test(file);
}

/** The files an entry names in the project at `root` (its `*` expanded). */
export function filesOf(pattern, root) {
  if (!pattern.includes('*')) return existsSync(join(root, pattern)) ? [pattern] : [];
  const folder = dirname(pattern);
  return readdirSync(join(root, folder))
    .map((name) => `${folder}/${name}`)
    .filter((file) => matchesPattern(pattern, file))
    .sort();
}

function projectPath(file, root) {
  return isAbsolute(file) ? relative(root, file) : file.replace(/^\.\//, '');
}

/**
 * One row per mutated file of the report that an entry names: counts, score (undefined when the
 * file has no countable mutant) and the entry's target.
 */
export function scoreRows(report, modules, root) {
  const rows = [];
  for (const [key, result] of Object.entries(report.files ?? {})) {
    const file = projectPath(key, root);
    for (const module of modules) {
      const { pattern, lines } = parseEntry(module.path);
      if (!matchesPattern(pattern, file)) continue;
      const counts = { killed: 0, survived: 0, noCoverage: 0, ignored: 0, other: 0 };
      for (const mutant of result.mutants ?? []) {
        const line = mutant.location?.start?.line ?? 0;
        if (lines !== undefined && (line < lines[0] || line > lines[1])) continue;
        if (DETECTED.has(mutant.status)) counts.killed += 1;
        else if (mutant.status === 'Survived') counts.survived += 1;
        else if (mutant.status === 'NoCoverage') counts.noCoverage += 1;
        else if (mutant.status === 'Ignored') counts.ignored += 1;
        else counts.other += 1;
      }
      const counted = counts.killed + counts.survived + counts.noCoverage;
      const score = counted === 0 ? undefined : (100 * counts.killed) / counted;
      rows.push({
        module: lines ? `${file}:${lines[0]}-${lines[1]}` : file,
        target: module.target,
        ...counts,
        score,
      });
    }
  }
  return rows.sort((a, b) => a.module.localeCompare(b.module));
}

/** Rows under their target. */
export function belowTarget(rows) {
  return rows.filter((row) => row.score !== undefined && row.score < row.target);
}

/**
 * The entries whose files changed since `recorded` (an incremental results file) was written, or
 * that it holds no results for. `readSource(file)` reads a file of the project.
 */
export function changedEntries(recorded, modules, root, readSource) {
  const sources = new Map(
    Object.entries(recorded?.files ?? {}).map(([key, result]) => [projectPath(key, root), result.source]),
  );
  return modules
    .map((module) => module.path)
    .filter((entry) => {
      const files = filesOf(parseEntry(entry).pattern, root);
      return files.length === 0 || files.some((file) => sources.get(file) !== readSource(file));
    });
}

export function formatRows(rows) {
  const header = '| module | killed | survived | no coverage | equivalent | score | target |';
  const lines = [header, '|---|---:|---:|---:|---:|---:|---:|'];
  for (const row of rows) {
    const score = row.score === undefined ? '—' : `${Math.floor(row.score * 10) / 10} %`;
    const mark = row.score !== undefined && row.score < row.target ? ' ✗' : '';
    lines.push(
      `| \`${row.module}\` | ${row.killed} | ${row.survived} | ${row.noCoverage} | ${row.ignored} | ${score}${mark} | ${row.target} % |`,
    );
  }
  return lines.join('\n');
}

async function main(argv) {
  const root = dirname(dirname(dirname(fileURLToPath(import.meta.url))));
  const config = await import(pathToFileURL(join(root, 'stryker.config.mjs')).href);
  const modules = config.mutatedModules;
  const record = join(root, RECORD);
  if (argv.includes('--changed')) {
    const recorded = existsSync(record) ? JSON.parse(readFileSync(record, 'utf8')) : undefined;
    const read = (file) => readFileSync(join(root, file), 'utf8');
    process.stdout.write(changedEntries(recorded, modules, root, read).join(','));
    return 0;
  }
  const onlyAt = argv.indexOf('--only');
  const only = onlyAt < 0 ? undefined : new Set(argv[onlyAt + 1].split(','));
  const reportPath = argv.find((arg, index) => !arg.startsWith('--') && (onlyAt < 0 || index !== onlyAt + 1));
  const path = reportPath ?? join(root, 'reports/mutation/mutation.json');
  if (!existsSync(path)) {
    console.error(`No StrykerJS report at ${path}: run \`npm run mutate\` first.`);
    return 1;
  }
  const report = JSON.parse(readFileSync(path, 'utf8'));
  const chosen = only ? modules.filter((module) => only.has(module.path)) : modules;
  const rows = scoreRows(report, chosen, root);
  console.log(formatRows(rows));
  const failing = belowTarget(rows);
  if (failing.length === 0) return 0;
  console.error(
    `\n${failing.length} module(s) under target: ${failing.map((row) => row.module).join(', ')}. ` +
      'Kill each survivor with a test of the promise it breaks, or disable it in place as equivalent (MUTATION.md).',
  );
  return 1;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  process.exitCode = await main(process.argv.slice(2));
}
