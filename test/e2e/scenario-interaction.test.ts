/**
 * Scenario 9 (flower-guides §15): the interaction channel during a run — human mail lands in the
 * brief and reaches the coordinator through its inbox, an interrupt resumes the same session with
 * the human's words, a side question to the oracle leaves the main manifest untouched, a failing
 * UI sink fails the step on prose but not on questions, and the question quota and unattended mode
 * answer at once. Real Runtime, SDK and binary; only the model is scripted.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { oracle } from '../../src/agents/roles.js';
import type { Runtime } from '../../src/runtime/runtime.js';
import { lastUserText } from '../../src/testing/index.js';
import { starterFlow } from '../../src/workflow/starter.js';
import type { Workflow } from '../../src/workflow/workflow.js';
import {
  freeze,
  HELLO_BRIEF,
  mainRouter,
  roleOf,
  type Scenario,
  startScenario,
  toolResultTexts,
} from './scenario-harness.js';

let scenario: Scenario | undefined;
afterEach(async () => {
  await scenario?.close();
  scenario = undefined;
});

describe('scenario 9: the interaction channel', () => {
  it('mail reaches the brief and the inbox; an interrupt resumes the same session with the words', async () => {
    let flow: Workflow | undefined;
    let runtime: Runtime | undefined;
    scenario = await startScenario({
      main: mainRouter({
        coordinator: (request, turn) => {
          const said = lastUserText(request);
          if (said.includes("don't change the Makefile"))
            return { text: 'Understood, the Makefile stays as it is.' };
          if (turn === 0) {
            // The human speaks up while the coordinator works (as a terminal thread would).
            flow?.channel?.send('report total bytes');
            return { toolUses: [{ name: 'mcp__human__inbox', input: {} }] };
          }
          // The human interrupts this round with words of their own.
          runtime?.interrupt("don't change the Makefile");
          return { text: 'Now adding the byte count.' };
        },
      }),
    });
    const { workspace } = scenario;
    freeze(workspace);
    flow = starterFlow({ workspace, goal: false });
    runtime = scenario.runtime();
    const ctx = await flow.run(runtime, { onEvent: scenario.sink });

    expect(ctx.failedAt).toBeUndefined();
    const mailEvents = scenario.events.flatMap((event) =>
      event.kind === 'ask' && event.payload.kind === 'mail' ? [[event.text, event.payload.state]] : [],
    );
    expect(mailEvents).toEqual([
      ['report total bytes', 'queued'],
      ['report total bytes', 'delivered'],
    ]);
    const brief = readFileSync(join(workspace, '.flower/notes/brief.md'), 'utf8');
    expect(brief).toMatch(/## Added during run \(\d\d:\d\d:\d\d\)\nreport total bytes/);
    const coordinator = scenario.mock.mainRequests().filter((request) => roleOf(request) === 'coordinator');
    expect(toolResultTexts(coordinator[1]!)).toContain('report total bytes');
    // The interrupt resumed the same session: one row, one attempt, marked resumed.
    expect(coordinator).toHaveLength(3);
    expect(lastUserText(coordinator[2]!)).toContain("don't change the Makefile");
    expect(JSON.stringify(coordinator[2]!.body?.messages)).toContain('report total bytes');
    const [row] = scenario.manifest();
    expect(row).toMatchObject({ step: 'work', ok: true, attempts: 1, resumed: true });
    expect(ctx.results.work?.text).toContain('the Makefile stays');
  });

  it('answers a side question from its own run directory and leaves the main manifest as it was', async () => {
    scenario = await startScenario({
      main: mainRouter({
        coordinator: () => ({ text: 'Done with the main work.' }),
        other: () => ({ text: 'We are at the work step; the brief is frozen.' }),
      }),
    });
    const { workspace } = scenario;
    freeze(workspace);
    const flow = starterFlow({ workspace, goal: false });
    await flow.run(scenario.runtime());
    const manifestBefore = readFileSync(join(workspace, 'runs', 'manifest.json'));

    const aside = scenario.runtime({ runDir: join('runs', 'aside') });
    const answer = await aside.run(oracle({ workbench: flow.workbench! }), 'where are we?');
    expect(answer.ok).toBe(true);
    expect(answer.text).toContain('We are at the work step');
    expect(readFileSync(join(workspace, 'runs', 'manifest.json'))).toEqual(manifestBefore);
    expect(scenario.manifest(join('runs', 'aside')).map((row) => row.step)).toEqual(['aside']);
  });

  it('a sink that throws on prose fails the step; one that throws on questions only collects the error', async () => {
    scenario = await startScenario({
      main: mainRouter({
        coordinator: () => ({ text: 'Some prose.' }),
        clarifier: (_request, turn) =>
          turn === 0
            ? { toolUses: [{ name: 'mcp__human__ask', input: { question: 'Which Python?' } }] }
            : { text: HELLO_BRIEF },
      }),
    });
    const { workspace } = scenario;
    freeze(workspace);
    const failing = await starterFlow({ workspace, goal: false }).run(scenario.runtime(), {
      onEvent: (event) => {
        if (event.kind === 'text') throw new Error('renderer broke');
      },
    });
    expect(failing.failedAt).toBe('work');
    expect(failing.results.work?.error).toContain('renderer broke');

    const other = await startScenario({
      main: mainRouter({
        clarifier: (_request, turn) =>
          turn === 0
            ? { toolUses: [{ name: 'mcp__human__ask', input: { question: 'Which Python?' } }] }
            : { text: HELLO_BRIEF },
      }),
    });
    try {
      const flow = starterFlow({
        workspace: other.workspace,
        request: 'write hello.py',
        clarifyOnly: true,
        timeoutSeconds: 0,
      });
      const ctx = await flow.run(other.runtime(), {
        onEvent: (event) => {
          if (event.kind === 'ask') throw new Error('question panel broke');
        },
      });
      expect(ctx.failedAt).toBeUndefined();
      expect(flow.channel?.uiErrors.map(String)).toEqual(['Error: question panel broke']);
    } finally {
      await other.close();
    }
  });

  it('the question quota refuses at once, and unattended questions time out without waiting', async () => {
    const ask = (question: string) => ({ toolUses: [{ name: 'mcp__human__ask', input: { question } }] });
    scenario = await startScenario({
      main: mainRouter({
        clarifier: (_request, turn) =>
          [ask('Which Python?'), ask('Which name?'), ask('Which licence?'), { text: HELLO_BRIEF }][
            Math.min(turn, 3)
          ]!,
      }),
    });
    const flow = starterFlow({
      workspace: scenario.workspace,
      request: 'write hello.py',
      clarifyOnly: true,
      maxAsks: 2,
      timeoutSeconds: 0,
    });
    const started = Date.now();
    const ctx = await flow.run(scenario.runtime(), { onEvent: scenario.sink });
    expect(ctx.failedAt).toBeUndefined();
    expect(flow.channel?.asks.map((question) => question.state)).toEqual([
      'timeout',
      'timeout',
      'over_budget',
    ]);
    expect(scenario.events.some((event) => event.kind === 'ask' && event.payload.state === 'asked')).toBe(
      false,
    );
    const last = scenario.mock.mainRequests().at(-1)!;
    const results = toolResultTexts(last);
    expect(results).toContain('No one answered');
    expect(results).toContain('No more questions are allowed');
    expect(Date.now() - started).toBeLessThan(60_000);
  });
});
