/**
 * Start-up time of the `flower` binary: wall time of whole processes, from spawn to exit, for
 * `flower --version`, `flower --help` and `flower doctor`, against two baselines: a bare
 * `node -e 0` and a node that only imports commander (flower's floor: the command tree needs it).
 *
 * For a before/after in one run, "eager" rows emulate the former eager CLI: the same process
 * first imports every `commands/*-action.js` (the modules `main.js` used to pull in statically),
 * then runs `dist/cli/bin.js` with the same arguments.
 *
 * All variants are alternated round by round (the order rotates each round), so they see the same
 * machine load. Nothing leaves the machine: the update check is off, and `doctor`'s reachability
 * check points at a closed port on 127.0.0.1. Every run uses the same temporary HOME and cwd,
 * made for this benchmark.
 *
 * Run with `npm run build && node bench/startup.bench.mjs`. Environment knobs: BENCH_ROUNDS
 * (default 15 runs per variant); BENCH_BEFORE, the `dist/cli/bin.js` of an older build, adds rows
 * for that build's `--version` and `doctor` (a real before, next to the emulated one). Prints
 * medians, min/max, and the ratios to both baselines.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath, pathToFileURL } from 'node:url';

const repoRoot = join(fileURLToPath(import.meta.url), '..', '..');
const bin = join(repoRoot, 'dist', 'cli', 'bin.js');
const commandsDir = join(repoRoot, 'dist', 'cli', 'commands');
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 15);

const world = mkdtempSync(join(tmpdir(), 'flower-startup-bench-'));
const home = join(world, 'home');
const project = join(world, 'project');
mkdirSync(home);
mkdirSync(project);

const env = {};
for (const [key, value] of Object.entries(process.env)) {
  if (!/^(ANTHROPIC_|CLAUDE_|FLOWER_|NODE_OPTIONS$)/.test(key)) env[key] = value;
}
Object.assign(env, {
  HOME: home,
  XDG_CONFIG_HOME: '',
  FLOWER_NO_UPDATE: '1',
  ANTHROPIC_API_KEY: 'bench-key',
  ANTHROPIC_BASE_URL: 'http://127.0.0.1:9',
});

/** Node code that imports every command implementation, then runs the CLI with `args`. */
function eagerly(args) {
  const actions = readdirSync(commandsDir)
    .filter((name) => name.endsWith('-action.js'))
    .map((name) => pathToFileURL(join(commandsDir, name)).href);
  if (actions.length === 0) throw new Error(`no *-action.js in ${commandsDir}; run npm run build first`);
  return [
    '--input-type=module',
    '-e',
    `for (const m of ${JSON.stringify(actions)}) await import(m);` +
      `process.argv = [process.execPath, ${JSON.stringify(bin)}, ...${JSON.stringify(args)}];` +
      `await import(${JSON.stringify(pathToFileURL(bin).href)});`,
  ];
}

const variants = [
  { name: 'node -e 0', args: ['-e', '0'] },
  {
    name: 'node -e "await import(\'commander\')"',
    args: ['--input-type=module', '-e', "await import('commander')"],
  },
  { name: 'flower --version', args: [bin, '--version'] },
  { name: 'flower --help', args: [bin, '--help'] },
  { name: 'flower doctor', args: [bin, 'doctor'] },
  { name: 'eager flower --version (before)', args: eagerly(['--version']) },
  { name: 'eager flower doctor (before)', args: eagerly(['doctor']) },
  ...(process.env.BENCH_BEFORE
    ? [
        { name: 'BENCH_BEFORE --version', args: [process.env.BENCH_BEFORE, '--version'] },
        { name: 'BENCH_BEFORE doctor', args: [process.env.BENCH_BEFORE, 'doctor'] },
      ]
    : []),
];

function runOnce(variant) {
  const started = performance.now();
  // commander resolves from the repository, so the import baseline runs there; flower runs in the project.
  const cwd = variant.args[0].endsWith('bin.js') ? project : repoRoot;
  const result = spawnSync(process.execPath, variant.args, { cwd, env, encoding: 'utf8' });
  const elapsed = performance.now() - started;
  if (result.status !== 0) {
    throw new Error(`${variant.name} exited ${result.status}: ${result.stderr.trim().split('\n')[0]}`);
  }
  return elapsed;
}

const samples = new Map(variants.map((variant) => [variant.name, []]));
try {
  for (const variant of variants) runOnce(variant); // warm the file cache; not counted
  for (let round = 0; round < ROUNDS; round++) {
    for (let i = 0; i < variants.length; i++) {
      const variant = variants[(round + i) % variants.length];
      samples.get(variant.name).push(runOnce(variant));
    }
  }
} finally {
  rmSync(world, { recursive: true, force: true });
}

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
};
const ms = (value) => `${Math.round(value)} ms`;
const bare = median(samples.get(variants[0].name));
const withCommander = median(samples.get(variants[1].name));

console.log(`flower start-up, ${ROUNDS} alternated runs each (wall time, spawn to exit)`);
console.log('| command | median | min–max | × node -e 0 | × node + commander |');
console.log('|---|---|---|---|---|');
for (const variant of variants) {
  const values = samples.get(variant.name);
  const middle = median(values);
  console.log(
    `| \`${variant.name}\` | ${ms(middle)} | ${ms(Math.min(...values))}–${ms(Math.max(...values))} | ` +
      `${(middle / bare).toFixed(2)}× | ${(middle / withCommander).toFixed(2)}× |`,
  );
}
