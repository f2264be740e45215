/**
 * The benches' shared harness: clean child environments, CPU time beside wall time, interleaved
 * rounds, summaries, ratios, verdicts and one printed table format. Dependency-free.
 *
 * Invariants:
 * - **Verdicts are on CPU time.** On a shared machine (this one runs StrykerJS beside the benches)
 *   wall time grows with the load: a process waiting for a core is not working. The CPU time a
 *   process spends is what its code costs; it moves far less with the load than wall time, though
 *   not nothing (shared caches, clock frequency, the sibling hyperthread: clean `node -e 0` took
 *   23 ms on a quiet machine and 55–65 ms beside StrykerJS). Targets are therefore ratios of CPU
 *   times measured in the same interleaved run, or absolute figures scaled by such a baseline, so
 *   a verdict does not flip with the load. Wall time is always printed beside it, for information,
 *   with the load average before and after the run.
 * - **What `runMeasured` counts as the child's CPU** (user + system, of the child tree waited for):
 *   - node children (`command` is this node, or a file named `node`): precise. The harness puts
 *     `--require bench/support/report-cpu.cjs` first on the child's command line; on `exit` that
 *     preload writes the process's own `process.resourceUsage()` user+system (µs resolution; every
 *     thread of the process: main thread, GC helpers, libuv pool) plus the cutime+cstime of its
 *     /proc/self/stat (its own children that it waited for, in clock ticks of 10 ms). `cpuMs` is
 *     the sum. `cpuSource` is `'rusage'`.
 *   - other children (the Claude Code binary, a shell), or a node child that died of a signal and
 *     wrote nothing: the delta of this process's cutime+cstime in /proc/self/stat around the
 *     (synchronous) wait — the CPU of the child and of every descendant it waited for, as the
 *     kernel adds it when the child is reaped. Resolution: one clock tick, `getconf CLK_TCK` =
 *     100 Hz here, so 10 ms; fine for seconds-long children, coarse for a 40 ms start-up.
 *     `cpuSource` is `'ticks'`. The runs are synchronous and one at a time, so no other child of
 *     this process is reaped in between.
 *   `ticksCpuMs`, the tick delta, is returned for every child, as a cross-check of the preload.
 * - **Wall time** is spawn to exit as the parent sees it (`performance.now()` around `spawnSync`).
 * - **Clean environment**: baselines and flower start with `cleanEnv()`, like `env -i` plus PATH,
 *   a temporary HOME made here (removed on exit), TMPDIR if set and LANG=C.UTF-8. Never the
 *   caller's NODE_EXTRA_CA_CERTS (≈45 ms of certificate loading per node start), NODE_OPTIONS or
 *   ANTHROPIC_* / CLAUDE_* / FLOWER_* — only what a bench passes in `extra`.
 * - **`spawnMeasured`** is `runMeasured` without blocking this process (for a bench that serves
 *   its children, e.g. the mock model): the same CPU accounting, so it must be the only child of
 *   this process running at the time. `processTreeCpuMs(pid)` reads a live process tree's CPU
 *   so far from /proc (utime+stime+cutime+cstime of the process and every descendant, clock
 *   ticks): a snapshot at a moment of the bench's choosing, e.g. a model request's arrival.
 * - **Same load for every variant**: `interleave` runs the variants round by round, rotating the
 *   order each round, after one uncounted warm-up run of each.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const preload = path.join(repoRoot, 'bench', 'support', 'report-cpu.cjs');

/** Clock ticks per second of /proc/<pid>/stat (USER_HZ); 100 on Linux unless told otherwise. */
export const CLOCK_TICKS = (() => {
  const asked = spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' });
  const value = Number(asked.stdout?.trim());
  return Number.isFinite(value) && value > 0 ? value : 100;
})();

let scratch;
/** A temporary directory for this process's bench files (HOME, CPU reports), removed on exit. */
export function scratchDir() {
  if (scratch === undefined) {
    scratch = mkdtempSync(path.join(tmpdir(), 'flower-bench-'));
    mkdirSync(path.join(scratch, 'home'));
    process.on('exit', () => rmSync(scratch, { recursive: true, force: true }));
  }
  return scratch;
}

/** The environment a child starts with: `env -i` plus PATH, a temp HOME, TMPDIR, LANG, `extra`. */
export function cleanEnv(extra = {}) {
  const env = {
    PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin',
    HOME: path.join(scratchDir(), 'home'),
    LANG: 'C.UTF-8',
  };
  if (process.env.TMPDIR) env.TMPDIR = process.env.TMPDIR;
  return { ...env, ...extra };
}

/** cutime + cstime of this process: CPU of the children it has waited for, in clock ticks. */
function childrenTicks() {
  const stat = readFileSync('/proc/self/stat', 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return Number(fields[13]) + Number(fields[14]);
}

const isNode = (command) => command === process.execPath || path.basename(command) === 'node';

let reports = 0;
/** A node child gets the CPU-reporting preload and the file to report in; another command runs as is. */
function launch(command, args, env) {
  if (!isNode(command)) return { report: undefined, childArgs: args, childEnv: env };
  const report = path.join(scratchDir(), `cpu-${process.pid}-${reports++}.json`);
  return {
    report,
    childArgs: ['--require', preload, ...args],
    childEnv: { ...env, BENCH_CPU_REPORT_FILE: report },
  };
}

/**
 * The CPU of a child that just ended: its preload's report (its own rusage, every thread, plus the
 * clock ticks of the children it reaped) when it wrote one, else this process's children's ticks
 * since `ticksBefore`. `ticksCpuMs` is always the latter, for comparison.
 */
function childCpu(report, ticksBefore) {
  const ticksCpuMs = ((childrenTicks() - ticksBefore) * 1000) / CLOCK_TICKS;
  if (!report || !existsSync(report)) return { cpuMs: ticksCpuMs, cpuSource: 'ticks', ticksCpuMs };
  const { selfUs, childrenTicks: theirs } = JSON.parse(readFileSync(report, 'utf8'));
  rmSync(report, { force: true });
  return { cpuMs: selfUs / 1000 + (theirs * 1000) / CLOCK_TICKS, cpuSource: 'rusage', ticksCpuMs };
}

/**
 * Run `command args` to completion. Returns `{ wallMs, cpuMs, cpuSource, ticksCpuMs, status,
 * signal, stdout, stderr }` (see the header for what `cpuMs` holds).
 */
export function runMeasured(command, args, { env = cleanEnv(), cwd, input, maxBuffer = 1 << 26 } = {}) {
  const { report, childArgs, childEnv } = launch(command, args, env);
  const ticksBefore = childrenTicks();
  const started = performance.now();
  const run = spawnSync(command, childArgs, { env: childEnv, cwd, input, encoding: 'utf8', maxBuffer });
  const wallMs = performance.now() - started;
  const cpu = childCpu(report, ticksBefore);
  if (run.error) throw run.error;
  return {
    wallMs,
    ...cpu,
    status: run.status,
    signal: run.signal,
    stdout: run.stdout,
    stderr: run.stderr,
  };
}

/** Fields after the command name of /proc/<pid>/stat (state first: `fields[1]` is the ppid). */
function statFields(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
}

/**
 * CPU so far of `pid` and of every live descendant, in ms: utime+stime (every thread) plus
 * cutime+cstime (the children each has waited for), from /proc, in clock ticks (10 ms at 100 Hz).
 * A process that exits between the listing and the read is missed; its parent's cutime has it
 * once reaped.
 */
export function processTreeCpuMs(pid) {
  const children = new Map();
  const ticks = new Map();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const fields = statFields(name);
      const each = Number(name);
      const parent = Number(fields[1]);
      if (!children.has(parent)) children.set(parent, []);
      children.get(parent).push(each);
      ticks.set(each, Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14]));
    } catch {
      // gone meanwhile
    }
  }
  let total = 0;
  const pending = [pid];
  while (pending.length > 0) {
    const each = pending.pop();
    total += ticks.get(each) ?? 0;
    pending.push(...(children.get(each) ?? []));
  }
  return (total * 1000) / CLOCK_TICKS;
}

/**
 * `runMeasured`, asynchronously: returns `{ pid, started, elapsed(), done }` at once, `done` a
 * promise of the same result as `runMeasured`'s. This process's CPU accounting of children is
 * shared, so no other child of it may end while this one runs.
 */
export function spawnMeasured(command, args, { env = cleanEnv(), cwd } = {}) {
  const { report, childArgs, childEnv } = launch(command, args, env);
  const ticksBefore = childrenTicks();
  const started = performance.now();
  const child = spawn(command, childArgs, { env: childEnv, cwd, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk) => {
    stdout += chunk;
  });
  child.stderr.setEncoding('utf8').on('data', (chunk) => {
    stderr += chunk;
  });
  const done = new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (status, signal) => {
      const wallMs = performance.now() - started;
      resolve({ wallMs, ...childCpu(report, ticksBefore), status, signal, stdout, stderr });
    });
  });
  return { pid: child.pid, started, elapsed: () => performance.now() - started, done };
}

/**
 * Run every variant `rounds` times, round by round, the order rotated each round, after `warmup`
 * uncounted runs of each. `fn(variant, round)` returns one sample. Returns Map name → samples.
 */
export function interleave(variants, rounds, fn, { warmup = 1 } = {}) {
  const samples = new Map(variants.map((variant) => [variant.name, []]));
  for (let round = 0; round < warmup; round++) for (const variant of variants) fn(variant, -1);
  for (let round = 0; round < rounds; round++) {
    for (let i = 0; i < variants.length; i++) {
      const variant = variants[(round + i) % variants.length];
      samples.get(variant.name).push(fn(variant, round));
    }
  }
  return samples;
}

/** An async `interleave`, for samples that need awaiting. */
export async function interleaveAsync(variants, rounds, fn, { warmup = 1 } = {}) {
  const samples = new Map(variants.map((variant) => [variant.name, []]));
  for (let round = 0; round < warmup; round++) for (const variant of variants) await fn(variant, -1);
  for (let round = 0; round < rounds; round++) {
    for (let i = 0; i < variants.length; i++) {
      const variant = variants[(round + i) % variants.length];
      samples.get(variant.name).push(await fn(variant, round));
    }
  }
  return samples;
}

export function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

function stats(values) {
  return {
    median: median(values),
    mean: values.reduce((sum, value) => sum + value, 0) / values.length,
    min: Math.min(...values),
    max: Math.max(...values),
  };
}

/**
 * `{ n, wall, cpu }`, each `{ median, mean, min, max }`, of samples with `wallMs` and `cpuMs`
 * (or other field names: `summarize(samples, { wall: 'firstMs', cpu: 'firstCpuMs' })`).
 */
export function summarize(samples, { wall = 'wallMs', cpu = 'cpuMs' } = {}) {
  return {
    n: samples.length,
    wall: stats(samples.map((sample) => sample[wall])),
    cpu: stats(samples.map((sample) => sample[cpu])),
  };
}

/** a / b on CPU medians and on wall medians (summaries from `summarize`). */
export function ratio(a, b) {
  return { cpu: a.cpu.median / b.cpu.median, wall: a.wall.median / b.wall.median };
}

/** a − b on CPU medians and on wall medians, in ms. */
export function difference(a, b) {
  return { cpu: a.cpu.median - b.cpu.median, wall: a.wall.median - b.wall.median };
}

/** The 1, 5 and 15 minute load averages now, and how many cores there are to share. */
export function loadAverage() {
  return { at: new Date().toISOString(), values: loadavg() };
}
const showLoad = (load) => load.values.map((value) => value.toFixed(2)).join(' ');

/**
 * PASS/FAIL of one target, on CPU time only. `target` is `{ max }` or `{ min }` in `unit` ('×' for
 * a ratio, ' ms' for a difference); `ratioCpu` is checked, `ratioWall` is shown beside it. Prints
 * the line and returns `{ pass, text, targetText }`.
 */
export function verdict({ name, ratioCpu, ratioWall, target, unit = '×', quiet = false }) {
  const pass = target.max !== undefined ? ratioCpu <= target.max : ratioCpu >= target.min;
  const targetText = formatTarget(target, unit);
  const text = pass ? 'PASS' : 'FAIL';
  if (!quiet) {
    const wall = ratioWall === undefined ? '' : ` (wall ${formatValue(ratioWall, unit)}, not checked)`;
    console.log(`${text} ${name}: cpu ${formatValue(ratioCpu, unit)}, target ${targetText}${wall}`);
  }
  return { pass, text, targetText };
}

/**
 * `over` (a ratio or a difference: `{ cpu, wall }`) judged on CPU against `target`: the fields of a
 * table row (ratios, unit, target, verdict) and `pass`, which `printTable` does not read.
 */
export function judged(name, over, target, unit = '×') {
  const result = verdict({ name, ratioCpu: over.cpu, ratioWall: over.wall, target, unit, quiet: true });
  return { ratioCpu: over.cpu, ratioWall: over.wall, unit, target, verdict: result.text, pass: result.pass };
}

export function formatTarget(target, unit = '×') {
  return target.max !== undefined
    ? `≤ ${formatValue(target.max, unit)}`
    : `≥ ${formatValue(target.min, unit)}`;
}

export function formatValue(value, unit = '×') {
  if (value === undefined || Number.isNaN(value)) return '–';
  if (unit === '×') return `${value.toFixed(2)}×`;
  return `${value >= 0 ? '+' : ''}${value.toFixed(1)}${unit}`;
}

export const ms = (value) =>
  value === undefined ? '–' : `${value < 10 ? value.toFixed(1) : Math.round(value)} ms`;

/** The command that reproduces this run: the BENCH_* variables set, then node and its arguments. */
export function reproduceCommand(extraVariables = []) {
  const names = Object.keys(process.env)
    .filter((name) => name.startsWith('BENCH_') || extraVariables.includes(name))
    .sort();
  const script = path.relative(process.cwd(), process.argv[1]) || process.argv[1];
  const flags = process.execArgv.join(' ');
  return [
    ...names.map((name) => `${name}=${process.env[name]}`),
    'node',
    ...(flags ? [flags] : []),
    script,
    ...process.argv.slice(2),
  ].join(' ');
}

/**
 * The shared report: a header (title, load average before/after, node version, cores, command),
 * then `name | wall median | cpu median | ratio wall | ratio cpu | target | verdict` rows, as a
 * Markdown table. Rows: `{ name, summary, ratioWall, ratioCpu, unit, target, verdict }`; a row
 * without a target prints '–' there.
 */
export function printTable({ title, loadBefore, loadAfter, rows, notes = [] }) {
  const lines = [
    `## ${title}`,
    `command: \`${reproduceCommand()}\``,
    `node ${process.version}, ${process.platform}/${process.arch}; load average (1/5/15 min) before ${showLoad(loadBefore)}, after ${showLoad(loadAfter)}; CPU = user+system of the measured process (see bench/support/measure.mjs); verdicts on CPU only`,
    '',
    '| name | wall median | cpu median | ratio wall | ratio cpu | target | verdict |',
    '|---|---|---|---|---|---|---|',
  ];
  for (const row of rows) {
    const unit = row.unit ?? '×';
    lines.push(
      `| ${row.name} | ${ms(row.summary?.wall.median)} | ${ms(row.summary?.cpu.median)} | ` +
        `${formatValue(row.ratioWall, unit)} | ${formatValue(row.ratioCpu, unit)} | ` +
        `${row.target ? formatTarget(row.target, unit) : '–'} | ${row.verdict ?? '–'} |`,
    );
  }
  for (const note of notes) lines.push(note);
  console.log(lines.join('\n'));
}

/** Exit code 1 when a target failed, unless BENCH_NO_VERDICT=1. */
export function finish(pass) {
  if (!pass && process.env.BENCH_NO_VERDICT === '1') {
    console.log('targets missed (BENCH_NO_VERDICT=1: exit code 0)');
    process.exitCode = 0;
    return;
  }
  console.log(pass ? 'all targets met (CPU time)' : 'TARGETS MISSED (CPU time)');
  process.exitCode = pass ? 0 : 1;
}

/** Clean `node -e 0` CPU on a quiet machine (issue 23's measurement): the scale of start-up targets. */
export const QUIET_NODE_START_MS = 23;

/**
 * A start-up target of `ms` over clean `node -e 0` (quiet-machine milliseconds), scaled to this
 * run: CPU time stretches with the machine's load (caches, frequency, a busy sibling thread), and
 * this run's own clean `node -e 0` CPU says by how much.
 */
export function scaledStartTarget(ms, cleanNodeCpuMs) {
  return { max: (ms * cleanNodeCpuMs) / QUIET_NODE_START_MS };
}
