/**
 * Runtime overhead: the same 20-turn scripted session (19 tool calls, then a reply) through
 * flower's `Runtime.run` and through a bare SDK `query()`, against the same mock model, alternated
 * in one process so both see the same machine load. Also: time from process start to the first
 * model request, for `flower once` and for a bare `query()` script.
 *
 * And the resume of a ten-hour session: a 20,000-entry transcript (`transcript-generator.mjs`,
 * written through flower's store with trim on, as `go` runs) resumed in a fresh process, time
 * from spawn to the mock's first model request, for `Runtime.run` against a bare SDK `query()`
 * resuming the same session from the same database through the plain SQLite store — alternated,
 * each on its own copy of the database and config directory.
 *
 * Run with `npm run bench:runtime` (builds first). Environment knobs: BENCH_ROUNDS (default 4
 * per side), BENCH_STARTS (default 4 per side), BENCH_RESUMES (default 4 per side), BENCH_ONLY
 * (`session`, `start` or `resume`: run just that part).
 *
 * Targets: flower / bare ≤ 1.2 in wall time for the session; ≤ 1.0 for the resume.
 */
import { spawn } from 'node:child_process';
import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { query } from '@anthropic-ai/claude-agent-sdk';
import { Runtime } from '../dist/runtime/runtime.js';
import { RewritingSessionStore } from '../dist/store/rewriting-store.js';
import { projectKeyFor } from '../dist/store/session-key.js';
import { SqliteSessionStore } from '../dist/store/sqlite-session-store.js';
import { mock, mockModelEnv, startMockModel } from '../dist/testing/index.js';
import { generateTranscript } from './transcript-generator.mjs';

const repoRoot = join(fileURLToPath(import.meta.url), '..', '..');
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 4);
const STARTS = Number(process.env.BENCH_STARTS ?? 4);
const RESUMES = Number(process.env.BENCH_RESUMES ?? 4);
const ONLY = process.env.BENCH_ONLY;
const runs = (part) => ONLY === undefined || ONLY === part;
const TURNS = 20;
const PROMPT = 'Read every numbered note, then summarise them in one line.';

function script() {
  const steps = [];
  for (let turn = 1; turn < TURNS; turn++)
    steps.push(mock.toolUse('Read', { file_path: `note-${turn % 5}.txt` }));
  steps.push(mock.text('All notes read: they are five short reminders.'));
  return steps;
}

function freshWorkspace(root) {
  const workspace = mkdtempSync(join(root, 'ws-'));
  for (let index = 0; index < 5; index++)
    writeFileSync(join(workspace, `note-${index}.txt`), `reminder ${index}\n`);
  return workspace;
}

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

const model = await startMockModel([]);
const root = mkdtempSync(join(tmpdir(), 'flower-bench-'));
const envFor = () =>
  mockModelEnv(model, {
    configDir: mkdtempSync(join(root, 'cfg-')),
    maxRetries: 0,
    extra: { FLOWER_NO_UPDATE: '1' },
  });

async function bareSession() {
  const workspace = freshWorkspace(root);
  model.setScript(script());
  const started = performance.now();
  let ok = false;
  for await (const message of query({
    prompt: PROMPT,
    options: {
      cwd: workspace,
      env: envFor(),
      settingSources: [],
      allowedTools: ['Read', 'Glob', 'Grep'],
      systemPrompt: { type: 'preset', preset: 'claude_code', append: '' },
    },
  })) {
    if (message.type === 'result') ok = !message.is_error;
  }
  if (!ok) throw new Error('bare session failed');
  return performance.now() - started;
}

async function flowerSession() {
  const workspace = freshWorkspace(root);
  model.setScript(script());
  const started = performance.now();
  const runtime = new Runtime({ workspace, env: envFor() });
  const result = await runtime.run(
    { name: 'bench', instructions: '', allowedTools: ['Read', 'Glob', 'Grep'], permissionMode: 'default' },
    PROMPT,
  );
  runtime.close();
  if (!result.ok || result.numTurns !== TURNS)
    throw new Error(`flower session failed: ${result.error} (${result.numTurns} turns)`);
  return performance.now() - started;
}

/** Milliseconds from spawning `node <args>` to the mock's first main-thread request. */
/** Milliseconds from spawning `node <args>` to the mock's first main-thread request, and that request. */
async function timeToFirstRequest(args, options = {}) {
  model.setScript([mock.text('ok')]);
  const before = model.mainRequests().length;
  const started = performance.now();
  const child = spawn(process.execPath, args, {
    env: options.env ?? envFor(),
    cwd: options.cwd ?? repoRoot,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (chunk) => {
    stderr += chunk;
  });
  const exited = new Promise((resolve) => child.on('close', resolve));
  await Promise.race([
    model.waitForRequest(() => model.mainRequests().length > before, 120_000),
    exited.then(() => {
      if (model.mainRequests().length <= before)
        throw new Error(`child exited before any request: ${stderr}`);
    }),
  ]);
  const elapsed = performance.now() - started;
  await exited;
  return { elapsed, request: model.mainRequests()[before] };
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

/** A fresh copy of the database for one resume (each resume adds its own turn to the session). */
function freshDatabase(workspace, name) {
  const copy = join(workspace, 'runs', `${name}.db`);
  copyFileSync(join(workspace, 'runs', 'sessions.db'), copy);
  return copy;
}

// The resumers run with the workspace as their directory, so the SDK is imported by path.
const bareResumer = `
import { query } from ${JSON.stringify(join(repoRoot, 'node_modules', '@anthropic-ai', 'claude-agent-sdk', 'sdk.mjs'))};
import { SqliteSessionStore } from ${JSON.stringify(join(repoRoot, 'dist', 'store', 'sqlite-session-store.js'))};
const [file, sessionId] = process.argv.slice(1);
const sessionStore = new SqliteSessionStore(file);
for await (const m of query({ prompt: 'Carry on.', options: { cwd: process.cwd(), resume: sessionId, sessionStore, sessionStoreFlush: 'eager', settingSources: [], allowedTools: ['Read'] } })) {}
sessionStore.close();
`;

const flowerResumer = `
import { mkdirSync, renameSync } from 'node:fs';
import { join } from 'node:path';
const [file, sessionId] = process.argv.slice(1);
// The runtime keeps its store at runs/sessions.db: put this run's copy there.
const runDir = join(process.cwd(), 'runs-' + sessionId.slice(0, 4) + '-' + process.pid);
mkdirSync(runDir);
renameSync(file, join(runDir, 'sessions.db'));
const { Runtime } = await import(${JSON.stringify(join(repoRoot, 'dist', 'runtime', 'runtime.js'))});
const runtime = new Runtime({ workspace: process.cwd(), runDir, resilience: false, store: { trim: { enabled: true } } });
await runtime.run({ name: 'work', instructions: '', allowedTools: ['Read'], permissionMode: 'default' }, 'Carry on.', { resume: sessionId });
runtime.close();
`;

const bareStarter = `
import { query } from '@anthropic-ai/claude-agent-sdk';
for await (const m of query({ prompt: 'hi', options: { cwd: process.cwd(), settingSources: [], allowedTools: ['Read'] } })) {}
`;

const ms = (value) => `${Math.round(value)} ms`;

try {
  const lines = [];
  if (runs('session')) {
    // One unmeasured run each: the first binary start pays for cold caches.
    await bareSession();
    await flowerSession();
    const bare = [];
    const flower = [];
    for (let round = 0; round < ROUNDS; round++) {
      bare.push(await bareSession());
      flower.push(await flowerSession());
    }
    lines.push(
      `${TURNS}-turn session with ${TURNS - 1} tool calls, ${ROUNDS} alternated rounds per side (medians):`,
      `  bare query():   ${ms(median(bare))}   [${bare.map(ms).join(', ')}]`,
      `  Runtime.run:    ${ms(median(flower))}   [${flower.map(ms).join(', ')}]`,
      `  overhead ratio: ${(median(flower) / median(bare)).toFixed(3)}x (target <= 1.2x)`,
    );
  }
  if (runs('start')) {
    const startBare = [];
    const startOnce = [];
    for (let round = 0; round < STARTS; round++) {
      startBare.push((await timeToFirstRequest(['--input-type=module', '-e', bareStarter])).elapsed);
      startOnce.push(
        (
          await timeToFirstRequest([
            join(repoRoot, 'dist', 'cli', 'bin.js'),
            'once',
            'hi',
            '-w',
            mkdtempSync(join(root, 'once-')),
          ])
        ).elapsed,
      );
    }
    lines.push(
      `Process start to first model request, ${STARTS} runs per side (medians):`,
      `  bare query() script: ${ms(median(startBare))}   [${startBare.map(ms).join(', ')}]`,
      `  flower once:         ${ms(median(startOnce))}   [${startOnce.map(ms).join(', ')}]`,
      `  ratio:               ${(median(startOnce) / median(startBare)).toFixed(3)}x`,
    );
  }
  if (runs('resume')) {
    const workspace = await tenHourWorkspace();
    const bare = [];
    const flower = [];
    let bareBody = 0;
    let flowerBody = 0;
    const resume = async (script, name) => {
      const file = freshDatabase(workspace, `${name}-${Date.now()}`);
      const configDir = mkdtempSync(join(root, 'cfg-'));
      const env = mockModelEnv(model, { configDir, maxRetries: 0, extra: { FLOWER_NO_UPDATE: '1' } });
      const result = await timeToFirstRequest(['--input-type=module', '-e', script, file, SESSION_ID], {
        env,
        cwd: workspace,
      });
      rmSync(configDir, { recursive: true, force: true });
      rmSync(file, { force: true });
      return { elapsed: result.elapsed, body: JSON.stringify(result.request?.body ?? {}).length };
    };
    // One unmeasured run each (cold caches).
    await resume(bareResumer, 'warm-bare');
    await resume(flowerResumer, 'warm-flower');
    for (let round = 0; round < RESUMES; round++) {
      const b = await resume(bareResumer, 'bare');
      const f = await resume(flowerResumer, 'flower');
      bare.push(b.elapsed);
      flower.push(f.elapsed);
      bareBody = b.body;
      flowerBody = f.body;
    }
    lines.push(
      `Resume of a 20,000-entry (51.8 MB) session, spawn to first model request, ${RESUMES} alternated runs per side (medians):`,
      `  bare query() resume (plain store):  ${ms(median(bare))}   [${bare.map(ms).join(', ')}]   request ${(bareBody / 1e6).toFixed(1)} MB`,
      `  flower Runtime.run resume:          ${ms(median(flower))}   [${flower.map(ms).join(', ')}]   request ${(flowerBody / 1e6).toFixed(1)} MB`,
      `  ratio:                              ${(median(flower) / median(bare)).toFixed(3)}x (target <= 1.0x)`,
    );
  }
  console.log(lines.join('\n'));
} finally {
  await model.close();
  rmSync(root, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
}
