/**
 * What the sandbox costs (`npm run bench:sandbox`; issue 19), as ratios against the same work
 * unsandboxed, measured in the same script, interleaved, CPU time beside wall time:
 *  1. per Bash call of an agent: one query of the real binary against the scripted model, whose
 *     worker runs N trivial Bash calls (`true`), with Claude Code's sandbox (the worker policy
 *     flower gives) and without. Each query runs in a fresh process, as a step does; CPU is that
 *     process's and its children's (the binary, bubblewrap, socat), read from /proc after they exit,
 *     plus what each sandboxed shell reports of itself (`times`: /proc cannot see into the sandbox).
 *     The per-call cost is the difference of the medians divided by N.
 *  2. per check: a check flower runs (`bash -c CMD`) inside flower's bubblewrap wall with the worker
 *     policy, against the same spawn without it; for `true` (the fixed cost) and for a check that
 *     does some work (`node -e` reading the workspace).
 *  3. per coordinator glance: `runWalled` (the read-only wall, output to a file) against a plain
 *     spawn of the same `ls -la`.
 * Prints one JSON document with every figure and the load average beside them.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildOptions, startQuery } from '../dist/runtime/options.js';
import { walledCommand, wallPlan } from '../dist/runtime/sandbox/bubblewrap.js';
import { sandboxPlaces } from '../dist/runtime/sandbox/places.js';
import { defaultSandboxPolicy } from '../dist/runtime/sandbox/policy.js';
import { runWalled } from '../dist/runtime/sandbox/walled-run.js';
import { mockModelEnv, startMockModel } from '../dist/testing/index.js';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const CALLS = Number(process.env.BENCH_CALLS ?? 20);
const SPAWNS = Number(process.env.BENCH_SPAWNS ?? 40);
const self = fileURLToPath(import.meta.url);
const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
};
const ticks = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout.trim() || 100);
/** CPU ms of this process and of its children that have been waited for. */
function cpuWithChildren() {
  const fields = readFileSync('/proc/self/stat', 'utf8').split(') ')[1].split(' ');
  // After the command name: state is field 3, so utime..cstime (14..17) sit at 11..14 here.
  const [utime, stime, cutime, cstime] = fields.slice(11, 15).map(Number);
  return ((utime + stime + cutime + cstime) * 1000) / ticks;
}

/** One query in this fresh process: the worker's N Bash calls, with the sandbox or without. */
async function trial(mode) {
  const workspace = mkdtempSync(join(tmpdir(), 'bench-sandbox-ws-'));
  const configDir = mkdtempSync(join(tmpdir(), 'bench-sandbox-cfg-'));
  const calls = Array.from({ length: CALLS }, (_, index) => ({
    toolUses: [
      { name: 'Bash', id: `toolu_${index}`, input: { command: 'true; times', description: 'noop' } },
    ],
  }));
  const server = await startMockModel({ main: [...calls, { text: 'done' }] });
  const env = mockModelEnv(server, { configDir });
  const spec = { name: 'worker', instructions: '', allowedTools: ['Bash'], permissionMode: 'acceptEdits' };
  const options = buildOptions(spec, {
    cwd: workspace,
    usePlugin: false,
    baseEnv: env,
    ...(mode === 'on'
      ? { sandbox: { policy: defaultSandboxPolicy, env, places: sandboxPlaces({ env, workspace }) } }
      : {}),
  });
  const cpu0 = cpuWithChildren();
  const t0 = performance.now();
  let subtype = '';
  for await (const message of startQuery('go', options))
    if (message.type === 'result') subtype = message.subtype;
  const wallMs = performance.now() - t0;
  await new Promise((resolve) => setTimeout(resolve, 200)); // The binary is reaped.
  // A sandboxed command runs in bubblewrap's PID namespace, which /proc's children times do not
  // reach (see `timed` below): its shell's own `times` report, in the tool results, is added.
  const inner =
    mode === 'on'
      ? [...toolResults(server.messageRequests().at(-1))].reduce((sum, text) => sum + innerCpuMs(text), 0)
      : 0;
  const cpuMs = cpuWithChildren() - cpu0 + inner;
  await server.close();
  rmSync(workspace, { recursive: true, force: true });
  rmSync(configDir, { recursive: true, force: true });
  process.stdout.write(`${JSON.stringify({ mode, wallMs, cpuMs, subtype })}\n`);
}

/** The text of every tool result a recorded request carries. */
function* toolResults(request) {
  for (const message of request?.body?.messages ?? [])
    if (Array.isArray(message.content))
      for (const block of message.content)
        if (block.type === 'tool_result')
          yield typeof block.content === 'string'
            ? block.content
            : (block.content ?? []).map((part) => part.text ?? '').join('');
}

function runTrial(mode) {
  const child = spawnSync(process.execPath, [self, '--trial', mode], { encoding: 'utf8' });
  const line = child.stdout.trim().split('\n').at(-1);
  if (child.status !== 0 || !line) throw new Error(`trial ${mode} failed: ${child.stderr}`);
  const result = JSON.parse(line);
  if (result.subtype !== 'success') throw new Error(`trial ${mode} ended ${result.subtype}`);
  return result;
}

async function perBashCall() {
  const samples = { on: [], off: [] };
  runTrial('off'); // Warm the disk cache for the binary.
  for (let round = 0; round < ROUNDS; round += 1)
    for (const mode of round % 2 ? ['on', 'off'] : ['off', 'on']) samples[mode].push(runTrial(mode));
  const stat = (mode, key) => median(samples[mode].map((sample) => sample[key]));
  return {
    calls: CALLS,
    rounds: ROUNDS,
    queryWallMs: { sandboxed: stat('on', 'wallMs'), unsandboxed: stat('off', 'wallMs') },
    queryCpuMs: { sandboxed: stat('on', 'cpuMs'), unsandboxed: stat('off', 'cpuMs') },
    wallRatio: stat('on', 'wallMs') / stat('off', 'wallMs'),
    cpuRatio: stat('on', 'cpuMs') / stat('off', 'cpuMs'),
    perCallWallMs: (stat('on', 'wallMs') - stat('off', 'wallMs')) / CALLS,
    perCallCpuMs: (stat('on', 'cpuMs') - stat('off', 'cpuMs')) / CALLS,
  };
}

/**
 * A command that reports its own CPU: a process inside bubblewrap's PID namespace is not counted in
 * this process's children's times (measured: a walled 500 ms busy loop added 0 ticks), so every
 * command, walled or not, runs as `CMD; times` and the shell's own report is added to what
 * /proc says of the direct children (bubblewrap itself, or the plain shell).
 */
const timed = (command) => `${command}\ntimes`;
const seconds = (text) => {
  const match = /(\d+)m([\d.]+)s/.exec(text);
  return match ? Number(match[1]) * 60 + Number(match[2]) : 0;
};
/** CPU ms the shell's `times` reported (its own and its children's), and whether it said anything. */
function innerCpuMs(output) {
  const lines = output.trim().split('\n').slice(-2);
  return lines
    .flatMap((line) => line.trim().split(/\s+/))
    .reduce((sum, word) => sum + seconds(word) * 1000, 0);
}

/** Runs a shell command (plain or walled) and resolves with the CPU its shell reported. */
function spawnOnce(file, args, env, cwd) {
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, { env, cwd, stdio: ['ignore', 'pipe', 'ignore'] });
    let output = '';
    child.stdout.on('data', (chunk) => {
      output += chunk;
    });
    child.on('error', reject);
    child.on('close', (code) =>
      code === 0 ? resolve(innerCpuMs(output)) : reject(new Error(`${file} exit ${code}`)),
    );
  });
}

/** Median wall and CPU (children included) of `run`, interleaved between the two variants. */
async function compare(variants) {
  const samples = Object.fromEntries(Object.keys(variants).map((name) => [name, { wall: [], cpu: [] }]));
  for (let round = 0; round < SPAWNS; round += 1) {
    const names = Object.keys(variants);
    for (const name of round % 2 ? names.reverse() : names) {
      const cpu0 = cpuWithChildren();
      const t0 = performance.now();
      const inner = await variants[name]();
      samples[name].wall.push(performance.now() - t0);
      samples[name].cpu.push(cpuWithChildren() - cpu0 + inner);
    }
  }
  // CPU is summed over every run and divided: /proc counts in ticks (10 ms), a run takes a few.
  const sum = (values) => values.reduce((total, value) => total + value, 0);
  return Object.fromEntries(
    Object.entries(samples).map(([name, { wall, cpu }]) => [
      name,
      { wallMs: median(wall), cpuMs: sum(cpu) / cpu.length },
    ]),
  );
}

const ratios = (figures, sandboxed, plain) => ({
  ...figures,
  wallRatio: figures[sandboxed].wallMs / figures[plain].wallMs,
  cpuRatio: figures[sandboxed].cpuMs / Math.max(figures[plain].cpuMs, 0.01),
});

async function perCheck() {
  const workspace = mkdtempSync(join(tmpdir(), 'bench-sandbox-check-'));
  const scratch = join(workspace, '.scratch');
  mkdirSync(scratch);
  for (let index = 0; index < 200; index += 1)
    writeFileSync(join(workspace, `file-${index}.txt`), 'x'.repeat(1000));
  const env = { PATH: process.env.PATH, HOME: process.env.HOME, TMPDIR: scratch };
  const places = sandboxPlaces({ env, workspace });
  const plan = wallPlan('worker', defaultSandboxPolicy, places, workspace, scratch);
  const result = {};
  for (const [label, command] of [
    ['true', 'true'],
    [
      'node reads the workspace',
      `node -e "const fs=require('fs');for(const f of fs.readdirSync('.'))fs.statSync(f)"`,
    ],
  ]) {
    const walled = walledCommand(plan, ['bash', '-c', timed(command)]);
    result[label] = ratios(
      await compare({
        sandboxed: () => spawnOnce(walled.file, walled.args, env, workspace),
        unsandboxed: () => spawnOnce('bash', ['-c', timed(command)], env, workspace),
      }),
      'sandboxed',
      'unsandboxed',
    );
  }
  rmSync(workspace, { recursive: true, force: true });
  return result;
}

async function perGlance() {
  const workspace = mkdtempSync(join(tmpdir(), 'bench-sandbox-glance-'));
  const env = { PATH: process.env.PATH, HOME: process.env.HOME };
  const places = sandboxPlaces({ env, workspace });
  const outputPath = join(workspace, 'out');
  const plan = wallPlan('read-only', defaultSandboxPolicy, places, workspace);
  const figures = ratios(
    await compare({
      walled: () =>
        runWalled(plan, timed('ls -la'), { outputPath, timeoutMs: 60_000, maxBytes: 1 << 20, env }).then(() =>
          innerCpuMs(readFileSync(outputPath, 'utf8')),
        ),
      plain: () => spawnOnce('bash', ['-c', timed('ls -la')], env, workspace),
    }),
    'walled',
    'plain',
  );
  rmSync(workspace, { recursive: true, force: true });
  return figures;
}

if (process.argv[2] === '--trial') {
  await trial(process.argv[3]);
} else {
  const load = loadavg();
  const report = {
    bashCall: await perBashCall(),
    check: await perCheck(),
    glance: await perGlance(),
    loadavg: { before: load, after: loadavg() },
  };
  console.log(JSON.stringify(report, null, 2));
}
