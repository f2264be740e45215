/**
 * What the model "says" in `flower demo`: a mock-model script (src/testing format) that plays every
 * role of the starter flow for one small task, so a newcomer sees the whole cycle offline.
 *
 * The story: the clarifier asks which language to use (the demo answers "1"), then writes the
 * brief; the judge sets a two-item goal, one item with a check flower runs itself; the coordinator
 * dispatches the `coder` worker, which writes hello.js and runs it with node; the coordinator
 * reports; flower runs the check on the host; the judge reads the program and rules it achieved;
 * a read-only closing turn writes the bequest that lands in CLAUDE.md and AGENTS.md.
 *
 * Invariants:
 * - Main-thread turns are answered by looking at the request (which role is asking, and what its
 *   conversation already holds), not by position: the coordinator's subagent may run in the
 *   background, which changes how many main turns there are and in which order they come.
 * - Roles are recognised by the first line of their own rules, so the script follows the rule texts
 *   instead of copying them.
 * - Everything happens inside the demo's workspace; the program is plain Node.js, which is there
 *   wherever flower runs.
 * - A resumed session is answered too (`flower demo DIR` continues a stopped demo): every role
 *   decides from what its conversation holds, and a coordinator whose coder was lost with the
 *   stopped process dispatches it again.
 */
import { join } from 'node:path';
import { CLARIFIER_RULES, COORDINATOR_RULES, JUDGE_RULES, ORACLE_RULES } from '../../agents/rules.js';
import { ASK_TOOL } from '../../agents/tools.js';
import { bequestPrompt } from '../../bequest/document.js';
import { contentText, type RecordedRequest, systemText } from '../../testing/recording.js';
import type { MockReply, MockScript } from '../../testing/script.js';
import { setGoalPrompt } from '../../workflow/goal-step.js';

export const DEMO_REQUEST = 'Write a small program that greets the world, and show me that it runs.';

export const DEMO_QUESTION = 'Which language should the program be written in?';
export const DEMO_OPTIONS = ['JavaScript (Node.js is already installed here)', 'Python'];
/** What the demo types for the human: the first option, by number. */
export const DEMO_ANSWER = '1';

export const DEMO_PROGRAM = 'hello.js';
export const DEMO_GREETING = 'Hello from flower!';

/** Main-thread turns the script answers before it stops playing along (a loop guard). */
const MAX_MAIN_TURNS = 40;

/** Says the worker's report has reached the coordinator (foreground result or task notification). */
const REPORT_MARKER = 'Conclusion: hello.js is written and runs';

const firstLine = (text: string) => text.split('\n')[0] ?? text;
const CLARIFIER = firstLine(CLARIFIER_RULES);
const COORDINATOR = firstLine(COORDINATOR_RULES);
const JUDGE = firstLine(JUDGE_RULES);
const SET_GOAL = firstLine(setGoalPrompt(''));
const ORACLE = firstLine(ORACLE_RULES);
const BEQUEST_ASKED = firstLine(bequestPrompt(''));

/** The command flower runs on the host to prove the greeting (the demo shows it pass before the judge rules). */
export const DEMO_CHECK = `node hello.js | grep -qx '${DEMO_GREETING}'`;

const BRIEF = `## Goal
A tiny program, hello.js, that greets the world.

## Acceptance
- Running \`node hello.js\` prints "${DEMO_GREETING}".

## Boundaries
- One file, no dependencies, nothing outside this directory.

## Unknowns & assumptions
- Language: JavaScript on Node.js (the human chose it).`;

const GOAL = `## Statement
hello.js exists in the workspace and greets the world when run with Node.js.

## Checklist
- hello.js exists in the workspace
- \`node hello.js\` prints "${DEMO_GREETING}" — check: \`${DEMO_CHECK}\``;

const VERDICT = `## Conclusion
achieved

## Reason
hello.js is in the workspace and prints "${DEMO_GREETING}"; the worker ran it with node and saw that output.

## Not passed
`;

const BEQUEST = `## What this is
A one-file Node.js program, hello.js, that prints "${DEMO_GREETING}". It was written by flower's demo.

## Acceptance: met and not met
- hello.js exists: met.
- \`node hello.js\` prints the greeting: met (flower's host check passed, and the judge read the program).

## Generated files and what makes them
None: hello.js is a source file; edit it directly.

## Dead ends
None: the first attempt worked.

## The workbench and how to read it
.flower/notes/ holds the brief (brief.md), the goal with its check (goal.md) and the question asked (qa-log.md); .flower/artifacts/checks/ holds what the check printed; runs/ holds the transcripts and the manifest.`;

const REPORT = `${REPORT_MARKER} and prints "${DEMO_GREETING}".
Evidence: \`node hello.js\` exited 0 and printed the greeting.
Output: hello.js
Unverified: nothing.`;

function conversationOf(request: RecordedRequest) {
  const messages = request.body?.messages ?? [];
  const holdsToolResult = (message: (typeof messages)[number] | undefined) =>
    Array.isArray(message?.content) && message.content.some((block) => block.type === 'tool_result');
  const hasToolResult = messages.some(holdsToolResult);
  const text = messages.map((message) => contentText(message.content)).join('\n');
  const firstUser = contentText(messages.find((message) => message.role === 'user')?.content ?? '');
  const lastUser = [...messages].reverse().find((message) => message.role === 'user');
  return { hasToolResult, lastIsToolResult: holdsToolResult(lastUser), text, firstUser };
}

/** The reply for one main-thread request, decided by who asks and how far its conversation got. */
function mainTurn(request: RecordedRequest, workspace: string): MockReply {
  const system = systemText(request.body);
  const { hasToolResult, lastIsToolResult, text, firstUser } = conversationOf(request);
  if (system.includes(CLARIFIER)) {
    if (!hasToolResult) {
      return {
        text: 'Before anything is written, one thing decides the approach:',
        toolUses: [{ name: ASK_TOOL, input: { question: DEMO_QUESTION, options: DEMO_OPTIONS } }],
      };
    }
    return { text: BRIEF };
  }
  if (system.includes(ORACLE) && firstUser.includes(BEQUEST_ASKED)) return { text: BEQUEST };
  if (system.includes(JUDGE)) {
    if (firstUser.includes(SET_GOAL)) return { text: GOAL };
    if (!hasToolResult) {
      return {
        text: 'Checking the artifact itself.',
        toolUses: [{ name: 'Read', input: { file_path: join(workspace, DEMO_PROGRAM) } }],
      };
    }
    return { text: VERDICT };
  }
  if (system.includes(COORDINATOR)) {
    if (text.includes(REPORT_MARKER)) {
      return { text: `Done: the coder wrote ${DEMO_PROGRAM} and ran it; it prints "${DEMO_GREETING}".` };
    }
    // A fresh start ends with the task, a resumed session (the demo was stopped and run again) with
    // the prompt to carry on; neither with the result of a call. The coder of a stopped run is
    // gone with it, so a resumed coordinator asks for the job again.
    if (!lastIsToolResult) {
      return {
        text: hasToolResult
          ? 'Picking this up again: the coder never reported back, so I ask it once more.'
          : 'One small job: I will have the coder write and run it.',
        toolUses: [
          {
            name: 'Agent',
            input: {
              subagent_type: 'coder',
              description: `Write ${DEMO_PROGRAM} and run it`,
              prompt: `Write ${join(workspace, DEMO_PROGRAM)}, a Node.js program that prints "${DEMO_GREETING}". Run it with node to check.`,
            },
          },
        ],
      };
    }
    return { text: 'The coder is on it; I will wait for its report.' };
  }
  return { text: 'This demo has nothing scripted for that request.' };
}

/** The demo's script for a workspace (the worker writes there by absolute path, as Write requires). */
export function demoScript(workspace: string): MockScript {
  const program = join(workspace, DEMO_PROGRAM);
  return {
    main: Array.from(
      { length: MAX_MAIN_TURNS },
      () => (request: RecordedRequest) => mainTurn(request, workspace),
    ),
    agents: {
      coder: [
        {
          text: 'Writing the program.',
          toolUses: [
            {
              name: 'Write',
              input: {
                file_path: program,
                content: `// desc: greets the world\nconsole.log('${DEMO_GREETING}');\n`,
              },
            },
          ],
        },
        {
          text: 'Running it.',
          toolUses: [{ name: 'Bash', input: { command: `node ${program}`, description: 'Run hello.js' } }],
        },
        { text: REPORT },
      ],
    },
  };
}
