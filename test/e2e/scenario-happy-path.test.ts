/**
 * Scenario 1 (flower-guides §15): the happy path of `flower "write hello.py"` — the starter flow on
 * the real Runtime, SDK and Claude Code binary, with only the model scripted.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Brief } from '../../src/workflow/brief.js';
import { starterFlow } from '../../src/workflow/starter.js';
import {
  ACHIEVED,
  answerQuestions,
  BEQUEST_REPLY,
  HELLO_GOAL,
  inOrder,
  mainRouter,
  type Scenario,
  startScenario,
} from './scenario-harness.js';

let scenario: Scenario | undefined;
afterEach(async () => {
  await scenario?.close();
  scenario = undefined;
});

const WORKER_REPORT =
  'WORKER-REPORT: conclusion done; evidence: python3 hello.py printed hello world; output: hello.py';

describe('scenario 1: happy path of the starter flow', () => {
  it('clarifies, sets the goal, dispatches a worker, and the judge rules achieved', async () => {
    const briefWithCode = [
      'Here is the brief:',
      '## Goal',
      'A script hello.py that prints "hello world".',
      '```python',
      'print("hello world")',
      '```',
      '## Acceptance',
      '- `python3 hello.py` prints hello world',
      '## Boundaries',
      'No packaging.',
      '## Unknowns & assumptions',
      'Python 3.12 as chosen.',
    ].join('\n');
    scenario = await startScenario((workspace) => ({
      main: mainRouter({
        clarifier: (_request, turn) =>
          [
            { toolUses: [{ name: 'mcp__human__ask', input: { question: 'What should it print?' } }] },
            {
              toolUses: [
                { name: 'mcp__human__ask', input: { question: 'Which Python?', options: ['3.10', '3.12'] } },
              ],
            },
            { text: briefWithCode },
          ][Math.min(turn, 2)]!,
        'set-goal': () => ({ text: HELLO_GOAL }),
        coordinator: inOrder(
          {
            toolUses: [
              {
                name: 'Agent',
                input: {
                  subagent_type: 'coder',
                  description: 'write hello.py',
                  prompt: 'Create hello.py printing hello world in the workspace and run it once.',
                },
              },
            ],
          },
          { text: 'hello.py is written and was run by the worker; it prints hello world.' },
        ),
        verdict: () => ({ text: ACHIEVED }),
        bequest: () => ({ text: BEQUEST_REPLY }),
      }),
      agents: {
        coder: [
          {
            toolUses: [
              {
                name: 'Write',
                input: { file_path: join(workspace, 'hello.py'), content: 'print("hello world")\n' },
              },
            ],
          },
          { toolUses: [{ name: 'Bash', input: { command: 'python3 hello.py', description: 'run it' } }] },
          { text: WORKER_REPORT },
        ],
      },
    }));
    const { workspace } = scenario;
    const flow = starterFlow({ workspace, request: 'write hello.py', timeoutSeconds: 60 });
    const channel = flow.channel!;
    const runtime = scenario.runtime({ notesDir: flow.workbench!.notes });
    const answers = ['hello world', '2'];
    const onEvent = answerQuestions(channel, scenario.events, () => answers.shift());

    const ctx = await flow.run(runtime, { onEvent });

    expect(ctx.failedAt).toBeUndefined();
    // The brief is frozen without the code block, and poured into the context.
    const briefPath = join(workspace, '.flower/notes/brief.md');
    const brief = readFileSync(briefPath, 'utf8');
    expect(brief).not.toContain('print("hello world")');
    expect(Brief.load(briefPath)?.complete).toBe(true);
    expect(ctx.brief?.goal).toContain('hello.py');
    // The questions were answered (the second by number) and logged.
    expect(channel.asks.map((ask) => [ask.state, ask.answer])).toEqual([
      ['answered', 'hello world'],
      ['answered', '3.12'],
    ]);
    const log = readFileSync(join(workspace, '.flower/notes/qa-log.md'), 'utf8');
    expect(log).toContain('What should it print?');
    expect(log).toContain('3.12');
    // The goal has three checks; the worker really wrote and ran the program.
    expect(ctx.goal?.checks).toHaveLength(3);
    expect(existsSync(join(workspace, 'hello.py'))).toBe(true);
    expect(scenario.mock.agentRequests('coder').length).toBeGreaterThanOrEqual(3);
    // The worker's report never becomes the work step's own text.
    expect(ctx.results.work?.text).toContain('hello.py is written');
    expect(ctx.results.work?.text).not.toContain('WORKER-REPORT');
    // Books: five manifest rows, the judge and the closing turn outside lineage, first wake.
    const rows = scenario.manifest();
    expect(rows.map((row) => row.step)).toEqual(['clarify', 'set-goal', 'work', 'work:verdict#1', 'bequest']);
    expect(rows.every((row) => row.ok && row.num_turns > 0 && row.session_id)).toBe(true);
    expect(rows[3]).toMatchObject({ verdict: 'achieved', round: 1, rounds: 3 });
    const judgeSession = rows[3]!.session_id;
    expect(new Set(rows.map((row) => row.session_id)).size).toBe(5);
    const lineage = scenario.lineage();
    expect(Object.keys(lineage.steps).sort()).toEqual(['clarify', 'set-goal', 'work']);
    expect(Object.values(lineage.steps)).not.toContain(judgeSession);
    expect(Object.values(lineage.steps)).not.toContain(rows[4]!.session_id);
    // The task ended with its bequest for the next tool.
    expect(readFileSync(join(workspace, 'CLAUDE.md'), 'utf8')).toContain(
      'hello.py, a script that prints hello world.',
    );
    expect(ctx.woke).toBe(1);
    // Events: three step headers; each question asked then answered.
    const steps = scenario.events.filter((event) => event.kind === 'step').map((event) => event.text);
    expect(steps).toEqual(['clarify', 'set-goal', 'work']);
    const questionStates = scenario.events
      .filter((event) => event.kind === 'ask')
      .map((event) => `${String(event.payload.id)}:${String(event.payload.state)}`);
    expect(questionStates).toEqual(['q1:asked', 'q1:answered', 'q2:asked', 'q2:answered']);
  });
});
