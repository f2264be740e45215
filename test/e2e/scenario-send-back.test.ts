/**
 * Scenario 2 (flower-guides §15): send-back then pass, an ambiguous verdict, rounds exhausted, and
 * plain retries — on the real Runtime, SDK and binary with only the model scripted. The brief and
 * the goal are already frozen, so the runs go straight to work (a wake without a remark).
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { AgentSpec } from '../../src/runtime/agent-spec.js';
import { lastUserText } from '../../src/testing/index.js';
import { starterFlow } from '../../src/workflow/starter.js';
import { UNCLEAR_VERDICT_REASON } from '../../src/workflow/verdict.js';
import { Workflow } from '../../src/workflow/workflow.js';
import {
  ACHIEVED,
  inOrder,
  mainRouter,
  roleOf,
  roundsScript,
  type Scenario,
  startFrozen,
  startScenario,
} from './scenario-harness.js';

let scenario: Scenario | undefined;
afterEach(async () => {
  await scenario?.close();
  scenario = undefined;
});

function workRequests(current: Scenario) {
  return current.mock.mainRequests().filter((request) => roleOf(request) === 'coordinator');
}

describe('scenario 2: send-back, ambiguity, rounds exhausted, plain retries', () => {
  it('sends "not yet" back into the same work session as round 2, which then passes', async () => {
    scenario = await startFrozen(roundsScript(['not yet: item 2 missing', ACHIEVED]));
    const flow = starterFlow({ workspace: scenario.workspace, bequest: false });
    const ctx = await flow.run(scenario.runtime(), { onEvent: scenario.sink });

    expect(ctx.failedAt).toBeUndefined();
    const rows = scenario.manifest();
    expect(rows.map((row) => row.step)).toEqual(['work', 'work:verdict#1', 'work#round2', 'work:verdict#2']);
    const [work, judge1, round2, judge2] = rows;
    // Round 2 continued the rejected session itself (no fork), told only what was missing.
    expect(round2?.session_id).toBe(work?.session_id);
    const round2Request = workRequests(scenario)[1]!;
    expect(lastUserText(round2Request)).toContain('not yet: item 2 missing');
    expect(lastUserText(round2Request)).toContain('Do not start over');
    expect(JSON.stringify(round2Request.body?.messages)).toContain('Round one: wrote hello.py.');
    // Each judge round is a fresh session of its own, outside lineage.
    expect(new Set([work?.session_id, judge1?.session_id, judge2?.session_id]).size).toBe(3);
    expect(scenario.lineage().steps).toEqual({ work: work?.session_id });
    expect(ctx.goalRounds).toBe(2);
  });

  it('treats a verdict it cannot read as not yet, with a reason that says so', async () => {
    scenario = await startFrozen(
      roundsScript(['I had a look around; it is an interesting piece of work.', ACHIEVED]),
    );
    const ctx = await starterFlow({ workspace: scenario.workspace, bequest: false }).run(scenario.runtime());
    expect(ctx.failedAt).toBeUndefined();
    expect(scenario.manifest().map((row) => row.step)).toEqual([
      'work',
      'work:verdict#1',
      'work#round2',
      'work:verdict#2',
    ]);
    expect(lastUserText(workRequests(scenario)[1]!)).toContain(UNCLEAR_VERDICT_REASON);
  });

  it('fails the work step when the rounds run out', async () => {
    scenario = await startFrozen(roundsScript(['## Conclusion\nnot yet\n## Reason\nno output']));
    const ctx = await starterFlow({ workspace: scenario.workspace, rounds: 1, bequest: false }).run(
      scenario.runtime(),
    );
    expect(ctx.failedAt).toBe('work');
    expect(ctx.verdict?.state).toBe('not yet');
    expect(ctx.aborted).toBe(
      'the judge ruled not yet after 1/1 rounds: no output; flower --rounds 2 continues',
    );
    const rows = scenario.manifest();
    expect(rows.map((row) => row.step)).toEqual(['work', 'work:verdict#1']);
    // Neither row reads as a bare success: the ruling and the rejection are on them.
    expect(rows[0]).toMatchObject({ ok: true, rejected: 'no output' });
    expect(rows[1]).toMatchObject({
      verdict: 'not yet',
      reason: 'no output',
      round: 1,
      rounds: 1,
      checks: [],
    });
  });

  it('without onReject, a retry starts over in a new session (#retry1) with the original prompt', async () => {
    scenario = await startScenario({
      main: mainRouter({ other: inOrder({ text: 'first try' }, { text: 'second try' }) }),
    });
    const writer: AgentSpec = {
      name: 'writer',
      instructions: 'Write as asked.',
      allowedTools: ['Read'],
      permissionMode: 'default',
    };
    const ctx = await new Workflow([
      {
        name: 'draft',
        spec: writer,
        prompt: 'Draft the note.',
        retries: 1,
        gate: (result) => result.text === 'second try',
      },
    ]).run(scenario.runtime());
    expect(ctx.outputs.draft).toBe('second try');
    const rows = scenario.manifest();
    expect(rows.map((row) => row.step)).toEqual(['draft', 'draft#retry1']);
    expect(rows[1]?.session_id).not.toBe(rows[0]?.session_id);
    const requests = scenario.mock.mainRequests();
    expect(lastUserText(requests[1]!)).toContain('Draft the note.');
    // A fresh session: the first try's conversation is not in it.
    expect(JSON.stringify(requests[1]?.body?.messages)).not.toContain('first try');
    expect(scenario.lineage().steps).toEqual({ draft: rows[1]?.session_id });
  });
});
