/**
 * Runtime overhead (`npm run bench:runtime`), every side a fresh child process started in the
 * harness's clean environment (`bench/support/measure.mjs`: `env -i` plus PATH, a temp HOME, LANG)
 * with the mock model's variables (`mockModelEnv` with that clean base: the mock on 127.0.0.1 in
 * this process, a fresh CLAUDE_CONFIG_DIR, no nonessential traffic) and FLOWER_NO_UPDATE=1. The
 * sides of each part alternate round by round, the order rotated, after one uncounted run each.
 * CPU time is the verdict, wall time is printed beside it with the load average.
 *
 * Parts (BENCH_ONLY=session|start|resume|resume-jsonl runs just one):
 * - `session`: the same 20-turn scripted session (19 tool calls, then a reply) through flower's
 *   `Runtime.run` and through a bare SDK `query()`, each in its own node child. Measured to the
 *   child's exit: CPU is the node process's own (preload, µs) plus its reaped children's cutime —
 *   the Claude Code binary's, which is why every child script waits, before it ends, until it has
 *   no child left (zombie or running) so that node has reaped the binary. Target: flower / bare
 *   ≤ 1.2× on CPU. A third side, flower with Claude Code's sandbox off, is printed for information:
 *   the bare side runs without the sandbox, whose set-up in the binary is part of flower's figure.
 * - `start`: spawn to the mock's first model request, `flower once hi -w <fresh>` against a bare
 *   `query()` script. For information (no target).
 * - `resume`: a ten-hour session (20,000 entries of `transcript-generator.mjs`, written through
 *   flower's store with trim on, as `go` runs) resumed through `Runtime.run` against a bare SDK
 *   `query()` resuming the same session from a copy of the same database through the plain SQLite
 *   store. Target ≤ 1.0× on CPU to the first request.
 * - `resume-jsonl` (issue 23): a realistic Claude Code session (`realistic-transcript.mjs`,
 *   BENCH_RESUME_ENTRIES entries, default 20,000, with BENCH_SUBAGENTS subagent transcripts,
 *   default 50) resumed by `flower once --resume <id> -T 'Carry on.'` from flower's store (the
 *   session written through the rewriting layer with trim on, subagents under their
 *   `subagents/agent-<id>` keys with their `agent_metadata` entry, as the SDK mirrors them) against
 *   the bare binary's native JSONL resume: the same session as files under
 *   `CLAUDE_CONFIG_DIR/projects/<key>/` (`writeRealisticSession`), a bare `query({ resume })`
 *   without a sessionStore. Target ≤ 1.15× on CPU to the first request. The note splits each
 *   side's CPU into the node process's own (`ownCpuMs`) and the rest, the binary's.
 *
 * "CPU to the first request" (`start`, `resume`, `resume-jsonl`): when the mock receives the
 * child's first main-thread model request (its body read and parsed), this process reads
 * utime+stime+cutime+cstime of the child and of every live descendant (the binary) from
 * /proc/<pid>/stat (`processTreeCpuMs`, 10 ms ticks). Wall is spawn to that moment. Each child
 * then gets a one-line reply and ends; its CPU to exit is printed for information (flower once's
 * to-exit figure counts the binary only if flower reaps it before it exits).
 * Each resume starts from its own copy of the session (a resume appends a turn): flower's
 * `sessions.db` is copied into a run directory of its own and opened and closed once, unmeasured,
 * so it carries the stamp of a clean close as a user's would (a copy's new inode would otherwise
 * cost a whole-file integrity check); the bare side's config directory is copied.
 *
 * Environment: BENCH_ROUNDS (default 4 per side: session), BENCH_STARTS (default 4),
 * BENCH_RESUMES (default 4: both resume parts), BENCH_RESUME_ENTRIES, BENCH_SUBAGENTS,
 * BENCH_ONLY, BENCH_NO_VERDICT=1 (exit 0 when a target is missed). Exits 1 when one is missed.
 */
import { copyFileSync, cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { RewritingSessionStore } from '../dist/store/rewriting-store.js';
import { projectKeyFor } from '../dist/store/session-key.js';
import { SqliteSessionStore } from '../dist/store/sqlite-session-store.js';
import { mock, mockModelEnv, startMockModel } from '../dist/testing/index.js';
import { generateRealisticSession, writeRealisticSession } from './realistic-transcript.mjs';
import {
  CLOCK_TICKS,
  cleanEnv,
  finish,
  interleaveAsync,
  judged,
  loadAverage,
  printTable,
  processTreeCpuMs,
  ratio,
  repoRoot,
  scratchDir,
  spawnMeasured,
  summarize,
} from './support/measure.mjs';
import { generateTranscript } from './transcript-generator.mjs';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 4);
const STARTS = Number(process.env.BENCH_STARTS ?? 4);
const RESUMES = Number(process.env.BENCH_RESUMES ?? 4);
const RESUME_ENTRIES = Number(process.env.BENCH_RESUME_ENTRIES ?? 20_000);
const SUBAGENTS = Number(process.env.BENCH_SUBAGENTS ?? 50);
const ONLY = process.env.BENCH_ONLY;
const runs = (part) => ONLY === undefined || ONLY === part;
const TURNS = 20;
const PROMPT = 'Read every numbered note, then summarise them in one line.';
const bin = join(repoRoot, 'dist', 'cli', 'bin.js');
const sdk = JSON.stringify(join(repoRoot, 'node_modules', '@anthropic-ai', 'claude-agent-sdk', 'sdk.mjs'));
const distFile = (file) => JSON.stringify(join(repoRoot, 'dist', file));

function script() {
  const steps = [];
  for (let turn = 1; turn < TURNS; turn++)
    steps.push(mock.toolUse('Read', { file_path: `note-${turn % 5}.txt` }));
  steps.push(mock.text('All notes read: they are five short reminders.'));
  return steps;
}

const root = mkdtempSync(join(scratchDir(), 'runtime-'));

function freshWorkspace() {
  const workspace = mkdtempSync(join(root, 'ws-'));
  for (let index = 0; index < 5; index++)
    writeFileSync(join(workspace, `note-${index}.txt`), `reminder ${index}\n`);
  return workspace;
}

const model = await startMockModel([]);
const envFor = (configDir = mkdtempSync(join(root, 'cfg-'))) =>
  mockModelEnv(model, { configDir, maxRetries: 0, base: cleanEnv(), extra: { FLOWER_NO_UPDATE: '1' } });

/**
 * The end of every child script: wait until this process has no child left, running or zombie,
 * so that node has reaped the Claude Code binary and its CPU is in our cutime (at most 20 s).
 */
const reapChildren = `
{
  const { readdirSync, readFileSync } = await import('node:fs');
  const mine = () => readdirSync('/proc').some((name) => {
    if (!/^[0-9]+$/.test(name)) return false;
    try {
      const stat = readFileSync('/proc/' + name + '/stat', 'utf8');
      return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === process.pid;
    } catch { return false; }
  });
  for (const end = Date.now() + 20_000; mine() && Date.now() < end; ) await new Promise((r) => setTimeout(r, 20));
}
`;

const bareSession = `
const { query } = await import(${sdk});
const [workspace, prompt] = process.argv.slice(1);
let ok = false;
for await (const message of query({ prompt, options: { cwd: workspace, env: { ...process.env }, settingSources: [], allowedTools: ['Read', 'Glob', 'Grep'], systemPrompt: { type: 'preset', preset: 'claude_code', append: '' } } })) {
  if (message.type === 'result') ok = !message.is_error;
}
${reapChildren}
if (!ok) { console.error('bare session failed'); process.exitCode = 1; }
`;

const flowerSession = `
const { Runtime } = await import(${distFile('runtime/runtime.js')});
const { defaultSandboxPolicy } = await import(${distFile('runtime/sandbox/policy.js')});
const [workspace, prompt, turns, sandbox] = process.argv.slice(1);
const runtime = new Runtime({ workspace, env: { ...process.env }, ...(sandbox === 'off' ? { sandbox: { ...defaultSandboxPolicy, enabled: false } } : {}) });
const result = await runtime.run({ name: 'bench', instructions: '', allowedTools: ['Read', 'Glob', 'Grep'], permissionMode: 'default' }, prompt);
runtime.close();
${reapChildren}
if (!result.ok || result.numTurns !== Number(turns)) { console.error('flower session failed: ' + result.error + ' (' + result.numTurns + ' turns)'); process.exitCode = 1; }
`;

const bareStarter = `
const { query } = await import(${sdk});
for await (const m of query({ prompt: 'hi', options: { cwd: process.cwd(), settingSources: [], allowedTools: ['Read'] } })) {}
${reapChildren}
`;

// The resumers run with the workspace as their directory, so modules are imported by path.
const bareStoreResumer = `
const { query } = await import(${sdk});
const { SqliteSessionStore } = await import(${distFile('store/sqlite-session-store.js')});
const [file, sessionId] = process.argv.slice(1);
const sessionStore = new SqliteSessionStore(file);
for await (const m of query({ prompt: 'Carry on.', options: { cwd: process.cwd(), resume: sessionId, sessionStore, sessionStoreFlush: 'eager', settingSources: [], allowedTools: ['Read'] } })) {}
sessionStore.close();
${reapChildren}
`;

const flowerResumer = `
const [runDir, sessionId] = process.argv.slice(1);
const { Runtime } = await import(${distFile('runtime/runtime.js')});
const runtime = new Runtime({ workspace: process.cwd(), runDir, resilience: false, store: { trim: { enabled: true } } });
await runtime.run({ name: 'work', instructions: '', allowedTools: ['Read'], permissionMode: 'default' }, 'Carry on.', { resume: sessionId });
runtime.close();
${reapChildren}
`;

const bareJsonlResumer = `
const { query } = await import(${sdk});
const [sessionId] = process.argv.slice(1);
for await (const m of query({ prompt: 'Carry on.', options: { cwd: process.cwd(), resume: sessionId, settingSources: [], allowedTools: ['Read'] } })) {}
${reapChildren}
`;

/**
 * CPU of the process `pid` alone (utime+stime from /proc, 10 ms ticks): at a child's first
 * request its binary is still running, so this is the node process's own share.
 */
function ownCpuMs(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS;
}

/** The child running now and what the mock saw of it: set by `measuredRun`, read by the step. */
let current;

/** Run `node args` to its end; with `untilFirst`, also wall and CPU at its first model request. */
async function measuredRun(args, { env = envFor(), cwd = root, steps } = {}) {
  const firstStep = (request) => {
    if (current && current.first === undefined)
      current.first = {
        wallMs: current.run.elapsed(),
        cpuMs: processTreeCpuMs(current.run.pid),
        nodeCpuMs: ownCpuMs(current.run.pid),
        request,
      };
    return mock.text('ok');
  };
  model.setScript(steps ?? [firstStep]);
  const before = model.mainRequests().length;
  current = { run: spawnMeasured(process.execPath, args, { env, cwd }) };
  const result = await current.run.done;
  const { first } = current;
  current = undefined;
  if (result.status !== 0 || model.mainRequests().length <= before)
    throw new Error(`child exited ${result.status}/${result.signal}: ${result.stderr.slice(-1500)}`);
  return {
    ...result,
    firstWallMs: first?.wallMs,
    firstCpuMs: first?.cpuMs,
    firstNodeCpuMs: first?.nodeCpuMs,
    bodyBytes: first ? JSON.stringify(first.request.body ?? {}).length : undefined,
  };
}

const SESSION_ID = '7f3c2a10-5b6d-4e8f-9a1b-2c3d4e5f6a7b';

/** A workspace whose store holds a ten-hour session, written as flower writes it (trim on). */
async function tenHourWorkspace() {
  const workspace = mkdtempSync(join(root, 'resume-'));
  const backend = new SqliteSessionStore(join(workspace, 'runs', 'sessions.db'));
  const store = new RewritingSessionStore(backend, { workspace, trim: { enabled: true } });
  const key = { projectKey: projectKeyFor(workspace), sessionId: SESSION_ID };
  const entries = generateTranscript({ entries: 20_000, seed: 42 });
  for (let index = 0; index < entries.length; index += 500)
    await store.append(key, entries.slice(index, index + 500));
  await store.close();
  return workspace;
}

/** A realistic session, in flower's store (trim on) and as the binary's own JSONL files. */
async function realisticWorkspace() {
  const workspace = mkdtempSync(join(root, 'realistic-'));
  const projectKey = projectKeyFor(workspace);
  const session = generateRealisticSession({
    entries: RESUME_ENTRIES,
    subagents: SUBAGENTS,
    seed: 42,
    sessionId: SESSION_ID,
    cwd: workspace,
  });
  const backend = new SqliteSessionStore(join(workspace, 'runs', 'sessions.db'));
  const store = new RewritingSessionStore(backend, { workspace, trim: { enabled: true } });
  const keyed = [
    [{ projectKey, sessionId: SESSION_ID }, session.main],
    ...[...session.subagents].map(([agentId, entries]) => [
      { projectKey, sessionId: SESSION_ID, subpath: `subagents/agent-${agentId}` },
      [...entries, { type: 'agent_metadata', ...session.meta.get(agentId) }],
    ]),
  ];
  for (const [key, entries] of keyed)
    for (let index = 0; index < entries.length; index += 500)
      await store.append(key, entries.slice(index, index + 500));
  await store.close();
  const configDir = join(workspace, 'native-config');
  writeRealisticSession(configDir, projectKey, SESSION_ID, session);
  const entries = keyed.reduce((sum, [, list]) => sum + list.length, 0);
  return { workspace, configDir, entries, subagents: session.subagents.size };
}

let copies = 0;
/** A run directory of its own holding a copy of `workspace/runs/sessions.db`, stamped as closed. */
function stampedCopy(workspace) {
  const runDir = join(workspace, `runs-copy-${copies++}`);
  mkdirSync(runDir);
  const file = join(runDir, 'sessions.db');
  copyFileSync(join(workspace, 'runs', 'sessions.db'), file);
  new SqliteSessionStore(file).close();
  return { runDir, file };
}

const loadBefore = loadAverage();
const rows = [];
const notes = [];
let pass = true;
const judge = (name, ours, theirs, max) => {
  const { pass: met, ...judgement } = judged(name, ratio(ours, theirs), { max });
  if (!met) pass = false;
  return judgement;
};
const firstOf = { wall: 'firstWallMs', cpu: 'firstCpuMs' };
const cpuList = (samples, field = 'cpuMs') => samples.map((sample) => Math.round(sample[field])).join(', ');

/**
 * Runs a resume part's two variants (bare first, flower second) and adds its rows: both to the
 * first request, flower's judged against `max`, and flower's spawn to exit for information.
 * Returns the samples and `body(i)`, the MB of variant i's last first request.
 */
async function resumeRows(variants, name, max) {
  const samples = await interleaveAsync(variants, RESUMES, (variant) => variant.run());
  const [bare, flower] = variants.map((variant) => summarize(samples.get(variant.name), firstOf));
  rows.push({ name: `${variants[0].name}, to 1st request`, summary: bare });
  rows.push({
    name: `${variants[1].name}, to 1st request`,
    summary: flower,
    ...judge(name, flower, bare, max),
  });
  const [bareExit, flowerExit] = variants.map((variant) => summarize(samples.get(variant.name)));
  const exitRatio = ratio(flowerExit, bareExit);
  rows.push({
    name: '… same, spawn to exit (info)',
    summary: flowerExit,
    ratioCpu: exitRatio.cpu,
    ratioWall: exitRatio.wall,
  });
  const body = (index) => (samples.get(variants[index].name).at(-1).bodyBytes / 1e6).toFixed(1);
  return { samples, body };
}

try {
  if (runs('session')) {
    const variants = [
      { name: 'session: bare `query()`', code: bareSession },
      { name: 'session: `Runtime.run`', code: flowerSession },
      { name: 'session: `Runtime.run`, sandbox off', code: flowerSession, sandbox: 'off' },
    ];
    const samples = await interleaveAsync(variants, ROUNDS, (variant) =>
      measuredRun(
        [
          '--input-type=module',
          '-e',
          variant.code,
          freshWorkspace(),
          PROMPT,
          String(TURNS),
          variant.sandbox ?? 'on',
        ],
        { steps: script() },
      ),
    );
    const [bare, flower, unsandboxed] = variants.map((variant) => summarize(samples.get(variant.name)));
    rows.push({ name: `${variants[0].name}, spawn to exit`, summary: bare });
    rows.push({
      name: `${variants[1].name}, spawn to exit`,
      summary: flower,
      ...judge('session overhead', flower, bare, 1.2),
    });
    // The bare side runs without Claude Code's sandbox, which flower turns on by default: this row
    // shows how much of the overhead is the binary setting its sandbox up.
    const withoutSandbox = ratio(unsandboxed, bare);
    rows.push({
      name: `${variants[2].name}, spawn to exit (info)`,
      summary: unsandboxed,
      ratioCpu: withoutSandbox.cpu,
      ratioWall: withoutSandbox.wall,
    });
    notes.push(
      `session (${TURNS} turns, ${TURNS - 1} tool calls; CPU = node child + the binary it reaped): bare CPU [${cpuList(samples.get(variants[0].name))}] ms, flower [${cpuList(samples.get(variants[1].name))}] ms, flower with the sandbox off [${cpuList(samples.get(variants[2].name))}] ms`,
    );
  }
  if (runs('start')) {
    const variants = [
      { name: 'start: bare `query()` script', args: () => ['--input-type=module', '-e', bareStarter] },
      {
        name: 'start: `flower once hi`',
        args: () => [bin, 'once', 'hi', '-w', mkdtempSync(join(root, 'once-'))],
      },
    ];
    const samples = await interleaveAsync(variants, STARTS, (variant) => measuredRun(variant.args()));
    const [bare, flower] = variants.map((variant) => summarize(samples.get(variant.name), firstOf));
    const over = ratio(flower, bare);
    rows.push({ name: `${variants[0].name}, to 1st request`, summary: bare });
    rows.push({
      name: `${variants[1].name}, to 1st request (info)`,
      summary: flower,
      ratioCpu: over.cpu,
      ratioWall: over.wall,
    });
  }
  if (runs('resume')) {
    const workspace = await tenHourWorkspace();
    const variants = [
      {
        name: 'resume 20k (project gen.): bare `query()`, plain SQLite store',
        run: () => {
          const { file } = stampedCopy(workspace);
          return measuredRun(['--input-type=module', '-e', bareStoreResumer, file, SESSION_ID], {
            cwd: workspace,
          });
        },
      },
      {
        name: 'resume 20k (project gen.): `Runtime.run`',
        run: () => {
          const { runDir } = stampedCopy(workspace);
          return measuredRun(['--input-type=module', '-e', flowerResumer, runDir, SESSION_ID], {
            cwd: workspace,
          });
        },
      },
    ];
    const { samples, body } = await resumeRows(variants, 'resume', 1.0);
    notes.push(
      `resume (project generator, 20,000 entries): first request ${body(0)} MB bare, ${body(1)} MB flower; CPU to 1st request bare [${cpuList(samples.get(variants[0].name), 'firstCpuMs')}] ms, flower [${cpuList(samples.get(variants[1].name), 'firstCpuMs')}] ms`,
    );
  }
  if (runs('resume-jsonl')) {
    const prepared = await realisticWorkspace();
    const { workspace, configDir } = prepared;
    const variants = [
      {
        name: `resume realistic ${RESUME_ENTRIES / 1000}k + ${prepared.subagents} subagents: bare binary, native JSONL`,
        run: () => {
          const copy = mkdtempSync(join(root, 'native-'));
          cpSync(configDir, copy, { recursive: true });
          return measuredRun(['--input-type=module', '-e', bareJsonlResumer, SESSION_ID], {
            env: envFor(copy),
            cwd: workspace,
          }).finally(() => rmSync(copy, { recursive: true, force: true }));
        },
      },
      {
        name: `resume realistic ${RESUME_ENTRIES / 1000}k + ${prepared.subagents} subagents: \`flower once --resume -T\``,
        run: () => {
          const { runDir } = stampedCopy(workspace);
          return measuredRun(
            [bin, '-w', workspace, '-r', runDir, '-T', 'once', '--resume', SESSION_ID, 'Carry on.'],
            {
              cwd: workspace,
            },
          ).finally(() => rmSync(runDir, { recursive: true, force: true }));
        },
      },
    ];
    const { samples, body } = await resumeRows(
      variants,
      'resume of a realistic session with subagents',
      1.15,
    );
    notes.push(
      `resume (realistic, ${prepared.entries} entries over the main transcript and ${prepared.subagents} subagents'): first request ${body(0)} MB bare, ${body(1)} MB flower (trimmed); CPU to 1st request bare [${cpuList(samples.get(variants[0].name), 'firstCpuMs')}] ms, flower [${cpuList(samples.get(variants[1].name), 'firstCpuMs')}] ms; of which the node process's own: bare [${cpuList(samples.get(variants[0].name), 'firstNodeCpuMs')}] ms, flower [${cpuList(samples.get(variants[1].name), 'firstNodeCpuMs')}] ms (the rest is the binary's)`,
    );
  }
} finally {
  await model.close();
  rmSync(root, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
}

printTable({
  title: 'flower runtime overhead against the bare SDK (fresh child processes, mock model on 127.0.0.1)',
  loadBefore,
  loadAfter: loadAverage(),
  rows,
  notes: [
    '',
    '"to 1st request": wall from spawn, CPU of the child and its descendants (/proc ticks) when the mock received the first model request; "spawn to exit": the whole child, the binary through its cutime.',
    ...notes,
  ],
});
finish(pass);
