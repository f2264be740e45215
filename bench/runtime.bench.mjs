/**
 * Runtime overhead: the same 20-turn scripted session (19 tool calls, then a reply) through
 * flower's `Runtime.run` and through a bare SDK `query()`, against the same mock model, alternated
 * in one process so both see the same machine load. Also: time from process start to the first
 * model request, for `flower once` and for a bare `query()` script.
 *
 * Run with `npm run bench:runtime` (builds first). Environment knobs: BENCH_ROUNDS (default 4
 * per side), BENCH_STARTS (default 4 per side).
 *
 * Target: flower / bare ≤ 1.2 in wall time for the session.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { query } from '@anthropic-ai/claude-agent-sdk';
import { Runtime } from '../dist/runtime/runtime.js';
import { mock, mockModelEnv, startMockModel } from '../dist/testing/index.js';

const repoRoot = join(fileURLToPath(import.meta.url), '..', '..');
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 4);
const STARTS = Number(process.env.BENCH_STARTS ?? 4);
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
async function timeToFirstRequest(args) {
  model.setScript([mock.text('ok')]);
  const before = model.mainRequests().length;
  const started = performance.now();
  const child = spawn(process.execPath, args, { env: envFor(), cwd: repoRoot, stdio: 'ignore' });
  const exited = new Promise((resolve) => child.on('close', resolve));
  await model.waitForRequest(() => model.mainRequests().length > before, 60_000);
  const elapsed = performance.now() - started;
  await exited;
  return elapsed;
}

const bareStarter = `
import { query } from '@anthropic-ai/claude-agent-sdk';
for await (const m of query({ prompt: 'hi', options: { cwd: process.cwd(), settingSources: [], allowedTools: ['Read'] } })) {}
`;

try {
  // One unmeasured run each: the first binary start pays for cold caches.
  await bareSession();
  await flowerSession();
  const bare = [];
  const flower = [];
  for (let round = 0; round < ROUNDS; round++) {
    bare.push(await bareSession());
    flower.push(await flowerSession());
  }
  const startBare = [];
  const startOnce = [];
  for (let round = 0; round < STARTS; round++) {
    startBare.push(await timeToFirstRequest(['--input-type=module', '-e', bareStarter]));
    startOnce.push(
      await timeToFirstRequest([
        join(repoRoot, 'dist', 'cli', 'bin.js'),
        'once',
        'hi',
        '-w',
        mkdtempSync(join(root, 'once-')),
      ]),
    );
  }
  const ms = (value) => `${Math.round(value)} ms`;
  const lines = [
    `${TURNS}-turn session with ${TURNS - 1} tool calls, ${ROUNDS} alternated rounds per side (medians):`,
    `  bare query():   ${ms(median(bare))}   [${bare.map(ms).join(', ')}]`,
    `  Runtime.run:    ${ms(median(flower))}   [${flower.map(ms).join(', ')}]`,
    `  overhead ratio: ${(median(flower) / median(bare)).toFixed(3)}x (target <= 1.2x)`,
    `Process start to first model request, ${STARTS} runs per side (medians):`,
    `  bare query() script: ${ms(median(startBare))}   [${startBare.map(ms).join(', ')}]`,
    `  flower once:         ${ms(median(startOnce))}   [${startOnce.map(ms).join(', ')}]`,
    `  ratio:               ${(median(startOnce) / median(startBare)).toFixed(3)}x`,
  ];
  console.log(lines.join('\n'));
} finally {
  await model.close();
  rmSync(root, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
}
