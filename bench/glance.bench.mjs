/**
 * Cost of the glance predicate, against the pattern-based predicate it replaced (the baseline,
 * taken from git history at BENCH_BASELINE, default c3bec04), measured in the same run:
 *
 * 1. Per call, in one warm process: both predicates judge the same mix of commands (every glance
 *    and every refused command of the unit tests, plus our adversarial campaign), alternated round
 *    by round so both see the same load. This is what the delegate guard pays on every Bash call
 *    of the coordinator (the hook runs in flower's own process) and what the expire layer pays per
 *    distinct command on resume.
 * 2. Module load, in fresh processes alternated: importing each predicate (once per flower start).
 * 3. The campaign: how many of its commands each predicate lets through.
 *
 * Run with `npm run build && node bench/glance.bench.mjs` (needs the git history for the
 * baseline). Knobs: BENCH_ROUNDS (default 15), BENCH_STARTS (fresh processes per side, default 15).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath, pathToFileURL } from 'node:url';
import ts from 'typescript';

const repoRoot = join(fileURLToPath(import.meta.url), '..', '..');
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 15);
const STARTS = Number(process.env.BENCH_STARTS ?? 15);
const BASELINE = process.env.BENCH_BASELINE ?? 'c3bec04';

const work = mkdtempSync(join(tmpdir(), 'flower-glance-bench-'));

/** A TypeScript source as an importable module in the scratch folder. */
function transpiled(source, name) {
  const { outputText } = ts.transpileModule(source, {
    compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
  });
  const path = join(work, name);
  writeFileSync(path, outputText);
  return path;
}

const oldPath = transpiled(
  execFileSync('git', ['show', `${BASELINE}:src/store/glance.ts`], { cwd: repoRoot, encoding: 'utf8' }),
  'old-glance.mjs',
);
const newPath = join(repoRoot, 'dist', 'store', 'glance.js');
const campaignPath = transpiled(
  readFileSync(join(repoRoot, 'test', 'support', 'glance-campaign.ts'), 'utf8'),
  'campaign.mjs',
);

const { isEphemeral: oldPredicate } = await import(pathToFileURL(oldPath).href);
const { isEphemeral: newPredicate } = await import(pathToFileURL(newPath).href);
const { CAMPAIGN_COMMANDS } = await import(pathToFileURL(campaignPath).href);

/** The unit tests' command tables: string literals in their allowed/denied arrays. */
function testCommands() {
  const source = readFileSync(join(repoRoot, 'test', 'unit', 'store', 'glance.test.ts'), 'utf8');
  const commands = [];
  const file = ts.createSourceFile('glance.test.ts', source, ts.ScriptTarget.ES2022);
  const visit = (node) => {
    if (ts.isArrayLiteralExpression(node))
      for (const element of node.elements) if (ts.isStringLiteralLike(element)) commands.push(element.text);
    ts.forEachChild(node, visit);
  };
  visit(file);
  return commands;
}

const mix = [...testCommands(), ...CAMPAIGN_COMMANDS];
const REPEAT = 20;

function perCallMicros(predicate) {
  const start = performance.now();
  let allowed = 0;
  for (let repeat = 0; repeat < REPEAT; repeat += 1)
    for (const command of mix) if (predicate(command)) allowed += 1;
  const elapsed = performance.now() - start;
  if (allowed < 0) throw new Error('unreachable');
  return (elapsed * 1000) / (REPEAT * mix.length);
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

// Warm both up, then alternate.
perCallMicros(oldPredicate);
perCallMicros(newPredicate);
const oldCalls = [];
const newCalls = [];
for (let round = 0; round < ROUNDS; round += 1) {
  if (round % 2 === 0) {
    oldCalls.push(perCallMicros(oldPredicate));
    newCalls.push(perCallMicros(newPredicate));
  } else {
    newCalls.push(perCallMicros(newPredicate));
    oldCalls.push(perCallMicros(oldPredicate));
  }
}

function importMillis(path) {
  const code = `const t=performance.now();await import(${JSON.stringify(pathToFileURL(path).href)});console.log(performance.now()-t)`;
  const run = spawnSync(process.execPath, ['--input-type=module', '-e', code], { encoding: 'utf8' });
  if (run.status !== 0) throw new Error(run.stderr);
  return Number(run.stdout.trim());
}
const oldImports = [];
const newImports = [];
for (let start = 0; start < STARTS; start += 1) {
  oldImports.push(importMillis(oldPath));
  newImports.push(importMillis(newPath));
}

const oldThrough = CAMPAIGN_COMMANDS.filter(oldPredicate).length;
const newThrough = CAMPAIGN_COMMANDS.filter(newPredicate).length;

const format = (value) => value.toFixed(2);
console.log(
  `mix: ${mix.length} commands (${testCommands().length} from the unit tables, ${CAMPAIGN_COMMANDS.length} campaign)`,
);
console.log(
  `per call, median of ${ROUNDS} rounds: baseline ${format(median(oldCalls))} µs, new ${format(median(newCalls))} µs, ratio ${format(median(newCalls) / median(oldCalls))}x`,
);
console.log(
  `module import, median of ${STARTS} fresh processes: baseline ${format(median(oldImports))} ms, new ${format(median(newImports))} ms, ratio ${format(median(newImports) / median(oldImports))}x`,
);
console.log(
  `campaign (${CAMPAIGN_COMMANDS.length} harmful commands): baseline lets ${oldThrough} through, new lets ${newThrough} through`,
);
rmSync(work, { recursive: true, force: true });
