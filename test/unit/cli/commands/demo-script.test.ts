import { describe, expect, it } from 'vitest';
import { CLARIFIER_RULES, COORDINATOR_RULES, JUDGE_RULES } from '../../../../src/agents/rules.js';
import { ASK_TOOL } from '../../../../src/agents/tools.js';
import { DEMO_OPTIONS, DEMO_QUESTION, demoScript } from '../../../../src/cli/commands/demo-script.js';
import type { RecordedRequest, RequestMessage } from '../../../../src/testing/recording.js';
import type { MockReply, MockStep } from '../../../../src/testing/script.js';
import { setGoalPrompt } from '../../../../src/workflow/goal-step.js';

const workspace = '/tmp/demo-ws';
const script = demoScript(workspace);

function request(system: string, messages: RequestMessage[]): RecordedRequest {
  return { body: { system, messages } } as unknown as RecordedRequest;
}

function mainReply(system: string, messages: RequestMessage[]): MockReply {
  const step = script.main?.[0] as MockStep;
  expect(typeof step).toBe('function');
  return (step as (request: RecordedRequest) => MockReply)(request(system, messages));
}

const user = (text: string): RequestMessage => ({ role: 'user', content: text });
const toolResult = (text: string): RequestMessage => ({
  role: 'user',
  content: [{ type: 'tool_result', tool_use_id: 't1', content: text }],
});

describe('the demo script', () => {
  it('has the clarifier ask its question with options, then write the four-section brief', () => {
    const ask = mainReply(CLARIFIER_RULES, [user('Write a small program')]);
    expect(ask.toolUses).toEqual([
      { name: ASK_TOOL, input: { question: DEMO_QUESTION, options: DEMO_OPTIONS } },
    ]);
    const brief = mainReply(CLARIFIER_RULES, [user('Write a small program'), toolResult(DEMO_OPTIONS[0]!)]);
    for (const heading of ['## Goal', '## Acceptance', '## Boundaries', '## Unknowns & assumptions']) {
      expect(brief.text).toContain(heading);
    }
  });

  it('has the judge set a goal when asked to, and otherwise read the program before ruling achieved', () => {
    expect(mainReply(JUDGE_RULES, [user(setGoalPrompt('brief'))]).text).toContain('## Checklist');
    const look = mainReply(JUDGE_RULES, [user('Judge this round.')]);
    expect(look.toolUses?.[0]).toEqual({ name: 'Read', input: { file_path: `${workspace}/hello.js` } });
    expect(mainReply(JUDGE_RULES, [user('Judge this round.'), toolResult('console.log')]).text).toMatch(
      /## Conclusion\nachieved/,
    );
  });

  it('has the coordinator dispatch the coder, wait, and report once the coder has', () => {
    const dispatch = mainReply(COORDINATOR_RULES, [user('Do this')]);
    expect(dispatch.toolUses?.[0]?.name).toBe('Agent');
    expect(dispatch.toolUses?.[0]?.input.subagent_type).toBe('coder');
    expect(mainReply(COORDINATOR_RULES, [user('Do this'), toolResult('launched')]).text).toMatch(/wait/);
    const done = mainReply(COORDINATOR_RULES, [
      user('Do this'),
      toolResult('launched'),
      user('<task-notification>Conclusion: hello.js is written and runs</task-notification>'),
    ]);
    expect(done.text).toMatch(/^Done:/);
  });

  it('has the coder write hello.js, run it with node, and report in its sections', () => {
    const [write, run, report] = script.agents!.coder as MockReply[];
    expect(write?.toolUses?.[0]).toMatchObject({
      name: 'Write',
      input: { file_path: `${workspace}/hello.js` },
    });
    expect(run?.toolUses?.[0]).toMatchObject({
      name: 'Bash',
      input: { command: `node ${workspace}/hello.js` },
    });
    expect(report?.text).toMatch(/^Conclusion: /);
  });
});
