/**
 * `--output-format text|json|stream-json` and `--model` on `once`, `go` and `run` (issue 21,
 * medium 9), with the built binary, the real SDK and Claude Code against the scripted model:
 * - json: standard output is exactly one JSON document (outcome, steps, verdict with its "Not
 *   passed", spend, session id, run directory, schema version); people's lines go to standard error;
 * - stream-json: one JSON event per line (step start/end, checks, the verdict, spend), the document last;
 * - `--model` is the model the scripted server is asked for;
 * - `once` prints its session id and the command that resumes it without `-v`, and that command works;
 * - `--output-format xml` is a usage error naming the allowed values.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { OUTPUT_VERSION } from '../../src/cli/machine-output/output-format.js';
import { mock } from '../../src/testing/index.js';
import { startMockModel } from '../../src/testing/server.js';
import { isolatedEnv, mockedEnv, repoRoot, runFlower, tempDir } from './cli-harness.js';
import { distRoot, type Harness, runNode, startHarness } from './runtime-harness.js';
import {
  ACHIEVED,
  BEQUEST_REPLY,
  inOrder,
  mainRouter,
  notYet,
  roleOf,
  type Scenario,
  startFrozen,
} from './scenario-harness.js';

const bin = join(distRoot, 'cli', 'bin.js');

type Json = Record<string, unknown>;

/** Standard output as JSON lines: every line must parse, and there must be no other text. */
function jsonLines(stdout: string): Json[] {
  expect(stdout.endsWith('\n'), stdout).toBe(true);
  return stdout
    .slice(0, -1)
    .split('\n')
    .map((line) => JSON.parse(line) as Json);
}

let harness: Harness | undefined;
let scenario: Scenario | undefined;
afterEach(async () => {
  await harness?.cleanup();
  harness = undefined;
  await scenario?.close();
  scenario = undefined;
});

function once(h: Harness, ...args: string[]) {
  return runNode([bin, ...args], h.env, { cwd: h.root });
}

describe('flower once --output-format / --model / the session line', () => {
  it('json: exactly one document on standard output; --model reaches the request', async () => {
    harness = await startHarness([mock.text('There are no docs here.', { usage: { input_tokens: 2_000 } })]);
    const run = await once(
      harness,
      'once',
      'Find the docs.',
      '-w',
      'ws',
      '--output-format',
      'json',
      '--model',
      'claude-flag-model-1',
    );
    expect(run.code, run.stderr).toBe(0);
    const lines = jsonLines(run.stdout);
    expect(lines).toHaveLength(1);
    const document = lines[0]!;
    expect(document).toMatchObject({
      type: 'result',
      output_version: OUTPUT_VERSION,
      command: 'once',
      outcome: 'ok',
      reason: null,
      verdict: null,
      workspace: harness.workspace,
      run_dir: join(harness.workspace, 'runs'),
      manifest: join(harness.workspace, 'runs', 'manifest.json'),
    });
    const sessionId = document.session_id as string;
    expect(sessionId).toMatch(/^[0-9a-f-]{36}$/);
    const steps = document.steps as Json[];
    expect(steps).toHaveLength(1);
    expect(steps[0]).toMatchObject({
      step: 'ad-hoc',
      outcome: 'ok',
      ok: true,
      num_turns: 1,
      session_id: sessionId,
    });
    expect(steps[0]!.cost_usd).toBeGreaterThan(0);
    const spend = document.spend as Json;
    expect(spend.run_cost_usd).toBeGreaterThan(0);
    expect(spend.task_cost_usd).toBeGreaterThan(0);
    // People's lines, the session line included, went to standard error.
    expect(run.stderr).toContain('There are no docs here.');
    expect(run.stderr).toContain(`session ${sessionId}`);
    expect(harness.model.mainRequests()[0]?.body?.model).toBe('claude-flag-model-1');
  });

  it('text: prints the session id and the resume command without -v, and that command resumes it', async () => {
    harness = await startHarness([mock.text('First answer.'), mock.text('Second answer.')]);
    const first = await once(harness, 'once', 'Question one.', '-w', 'ws');
    expect(first.code, first.stderr).toBe(0);
    const line = /session (\S+) — continue it with: flower (.*) "\.\.\."$/m.exec(first.stdout);
    expect(line, first.stdout).not.toBeNull();
    const [, sessionId, command] = line!;
    // The printed command, as a person would paste it, with their next words.
    const args = command!.split(' ');
    expect(args).toEqual(['-w', harness.workspace, 'once', '--resume', sessionId]);
    const second = await once(harness, ...args, 'Question two.');
    expect(second.code, second.stderr).toBe(0);
    expect(second.stdout).toContain('Second answer.');
    expect(second.stdout).toContain(`session ${sessionId}`);
    expect(JSON.stringify(harness.model.mainRequests()[1]?.body?.messages)).toContain('First answer.');
  });

  it('refuses --output-format xml as a usage error naming the allowed values, before any request', async () => {
    harness = await startHarness([]);
    const run = await once(harness, 'once', 'x', '--output-format', 'xml');
    expect(run.code).toBe(2);
    expect(run.stderr).toContain("argument 'xml' is invalid");
    expect(run.stderr).toContain('text, json, stream-json');
    expect(run.stdout).toBe('');
    expect(harness.model.requests).toHaveLength(0);
  });
});

describe('flower go --output-format', () => {
  it('json: one document with the stop, the steps, and the verdict with its "Not passed" items', async () => {
    scenario = await startFrozen({
      main: mainRouter({
        coordinator: () => ({ text: 'Round one: wrote hello.py.' }),
        verdict: () => ({ text: notYet('GAP-OUTPUT-FORMAT hello.py prints nothing') }),
      }),
    });
    const run = await scenario.flower(
      ['--timeout', '0', '--rounds', '1', '--no-bequest', '--output-format', 'json'],
      { input: '\n' },
    );
    expect(run.status, run.stderr).toBe(1);
    const lines = jsonLines(run.stdout);
    expect(lines).toHaveLength(1);
    const document = lines[0]!;
    expect(document).toMatchObject({
      type: 'result',
      output_version: OUTPUT_VERSION,
      command: 'go',
      outcome: 'stopped',
      verdict: {
        verdict: 'not yet',
        reason: 'GAP-OUTPUT-FORMAT hello.py prints nothing',
        not_passed: ['GAP-OUTPUT-FORMAT hello.py prints nothing'],
        round: 1,
        rounds: 1,
      },
      run_dir: join(scenario.workspace, 'runs'),
    });
    // The reason is the stop line people get on standard error.
    expect(document.reason).toContain('GAP-OUTPUT-FORMAT');
    expect(run.stderr).toContain(`flower: ${document.reason as string}`);
    const steps = document.steps as Json[];
    expect(steps.map((step) => [step.step, step.outcome])).toEqual([
      ['work', 'rejected'],
      ['work:verdict#1', 'verdict'],
    ]);
    expect(steps[0]).toMatchObject({ missing: ['GAP-OUTPUT-FORMAT hello.py prints nothing'] });
    for (const step of steps) {
      expect(step.cost_usd).toBeGreaterThan(0);
      expect(step.num_turns).toBeGreaterThan(0);
    }
    // The session that continues the work is the work step's, not the judge's.
    expect(document.session_id).toBe(steps[0]!.session_id);
    expect(document.sessions).toEqual({ work: steps[0]!.session_id });
    expect((document.spend as Json).run_cost_usd).toBeGreaterThan(0);
    // The human screen went to standard error.
    expect(run.stderr).toContain('== work · round 1/1');
  });

  it('stream-json: one event per line — steps, checks, the verdict, spend — then the document; --model is used', async () => {
    scenario = await startFrozen(
      {
        main: mainRouter({
          coordinator: () => ({ text: 'Nothing to do: node is there.' }),
          verdict: inOrder({ text: ACHIEVED }),
          bequest: () => ({ text: BEQUEST_REPLY }),
        }),
      },
      '## Statement\nnode runs.\n## Checklist\n- node runs — check: `node -e "process.exit(0)"`',
    );
    const run = await scenario.flower(
      ['--timeout', '0', '--output-format', 'stream-json', '--model', 'claude-flag-model-2'],
      { input: '\n' },
    );
    expect(run.status, run.stderr).toBe(0);
    const events = jsonLines(run.stdout);
    for (const event of events) {
      expect(typeof event.type).toBe('string');
      expect(event.output_version).toBe(OUTPUT_VERSION);
    }
    const types = events.map((event) => event.type);
    expect(types.at(-1)).toBe('result');
    expect(types.filter((type) => type === 'result')).toHaveLength(1);
    const of = (type: string) => events.filter((event) => event.type === type);
    expect(of('step_start').map((event) => event.step)).toEqual(
      expect.arrayContaining(['work', 'work:verdict#1']),
    );
    expect(of('step_end').find((event) => event.step === 'work')).toMatchObject({ outcome: 'ok', ok: true });
    expect(of('check')).toEqual([
      expect.objectContaining({ command: 'node -e "process.exit(0)"', passed: true, exit_code: 0 }),
    ]);
    expect(of('verdict')).toEqual([
      expect.objectContaining({ step: 'work:verdict#1', verdict: 'achieved', round: 1, not_passed: [] }),
    ]);
    expect(of('spend').length).toBeGreaterThan(1);
    // In order: the work starts and ends, its check runs, then the judge rules.
    const at = (type: string, step?: string) =>
      events.findIndex((event) => event.type === type && (step === undefined || event.step === step));
    expect(at('step_start', 'work')).toBeLessThan(at('step_end', 'work'));
    expect(at('step_end', 'work')).toBeLessThan(at('check'));
    expect(at('check')).toBeLessThan(at('verdict'));
    const workSession = of('step_end').find((event) => event.step === 'work')?.session_id;
    expect(events.at(-1)).toMatchObject({
      outcome: 'ok',
      verdict: { verdict: 'achieved' },
      session_id: workSession,
    });
    // --model is the model every role asks for.
    const coordinator = scenario.mock.mainRequests().find((request) => roleOf(request) === 'coordinator');
    expect(coordinator?.body?.model).toBe('claude-flag-model-2');
  });
});

describe('a command that cannot start', () => {
  it('json: still one document, outcome failed with the reason, and exit 1', async () => {
    const workspace = tempDir('json-no-key');
    const run = await runFlower(
      ['-w', workspace, '--timeout', '0', '--output-format', 'json', 'count the words'],
      {
        env: isolatedEnv(),
      },
    );
    expect(run.status).toBe(1);
    const lines = jsonLines(run.stdout);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({
      type: 'result',
      command: 'go',
      outcome: 'failed',
      steps: [],
      verdict: null,
    });
    expect(run.stderr).toContain(`flower: ${lines[0]!.reason as string}`);
    expect(lines[0]!.reason).toContain('ANTHROPIC_API_KEY');
  });
});

describe('flower run --output-format json', () => {
  it('prints one document for a workflow of its own', async () => {
    const model = await startMockModel({ main: [{ text: 'Hello from the flow.' }] });
    try {
      const workspace = tempDir('run-json');
      const workflowModule = join(repoRoot, 'src', 'workflow', 'workflow.js');
      writeFileSync(
        join(workspace, 'flow.ts'),
        [
          `import { Workflow } from ${JSON.stringify(workflowModule)};`,
          "const spec = { name: 'greeter', instructions: '', allowedTools: ['Read'], permissionMode: 'default' as const };",
          "export const flow = new Workflow([{ name: 'greet', spec, prompt: 'Say hello.' }]);",
        ].join('\n'),
      );
      const run = await runFlower(['-w', workspace, 'run', './flow.ts:flow', '--output-format', 'json'], {
        cwd: workspace,
        env: mockedEnv(model),
      });
      expect(run.status, run.stderr).toBe(0);
      const lines = jsonLines(run.stdout);
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatchObject({
        type: 'result',
        command: 'run',
        outcome: 'ok',
        run_dir: join(workspace, 'runs'),
      });
      expect(lines[0]!.steps).toEqual([
        expect.objectContaining({ step: 'greet', role: 'greeter', outcome: 'ok' }),
      ]);
      expect(run.stderr).toContain('Hello from the flow.');
    } finally {
      await model.close();
    }
  });
});
