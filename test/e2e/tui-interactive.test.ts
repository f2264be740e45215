/**
 * The interactive path in a real pseudo-terminal (issue 6, acceptance 2). `script` gives flower a
 * pty, so stdin is a terminal in raw mode exactly as for a person; the test types keys into it.
 *
 * One run: type a number that is no option (asked again), answer a question by number, skip the next, ask `? where are we` (answered by the oracle
 * under runs/aside/ while the run goes on), type a requirement mid-run (inbox + brief), Ctrl-C and
 * tell the agent something (it arrives in the same session), then Ctrl-C twice quits with 130.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLARIFIER_RULES, COORDINATOR_RULES, ORACLE_RULES } from '../../src/agents/rules.js';
import { ASK_TOOL, INBOX_TOOL } from '../../src/agents/tools.js';
import { contentText, lastMessage, type RecordedRequest, systemText } from '../../src/testing/recording.js';
import type { MockReply } from '../../src/testing/script.js';
import { type MockModel, startMockModel } from '../../src/testing/server.js';
import { mockedEnv, PtySession, tempDir } from './cli-harness.js';

const heading = (rules: string) => rules.split('\n')[0]!;
const LANGUAGE_OPTIONS = ['Python', 'JavaScript'];
const ORACLE_ANSWER = 'The work step is running; the coordinator keeps checking its inbox.';
const INTERRUPT_WORDS = 'use plain JS only';
const MAIL = 'also print the date';

function askResults(request: RecordedRequest): number {
  let count = 0;
  for (const message of request.body?.messages ?? []) {
    if (!Array.isArray(message.content)) continue;
    count += message.content.filter((block) => block.type === 'tool_result').length;
  }
  return count;
}

/** Answers by role: two questions then a brief; a coordinator that keeps working; the oracle. */
function respond(request: RecordedRequest): MockReply {
  const system = systemText(request.body);
  if (system.includes(heading(CLARIFIER_RULES))) {
    const answered = askResults(request);
    if (answered === 0) {
      return {
        toolUses: [{ name: ASK_TOOL, input: { question: 'Which language?', options: LANGUAGE_OPTIONS } }],
      };
    }
    if (answered === 1) return { toolUses: [{ name: ASK_TOOL, input: { question: 'Any naming rules?' } }] };
    return {
      text: '## Goal\nhello\n\n## Acceptance\n- it prints\n\n## Boundaries\n- one file\n\n## Unknowns & assumptions\n- none',
    };
  }
  if (system.includes(heading(ORACLE_RULES))) return { text: ORACLE_ANSWER };
  if (system.includes(heading(COORDINATOR_RULES))) {
    // Slow, endless work: one inbox check every turn, so there is time to type and to interrupt.
    return { delayMs: 800, text: 'Checking the inbox.', toolUses: [{ name: INBOX_TOOL, input: {} }] };
  }
  return { text: 'not scripted' };
}

let model: MockModel;
beforeAll(async () => {
  model = await startMockModel({ main: Array.from({ length: 200 }, () => respond) });
});
afterAll(async () => {
  await model.close();
});

describe('the interactive terminal', () => {
  it('answers, skips, asks aside, takes mail, interrupts, and quits on a second Ctrl-C with 130', async () => {
    const workspace = tempDir('tui');
    const pty = PtySession.flower(
      ['-w', workspace, '--no-goal', '--timeout', '120', 'write hello'],
      mockedEnv(model),
    );

    // A question with options: a number that is no option asks again; then answered by its number.
    let at = await pty.waitFor('? Which language?');
    at = await pty.waitFor('2) JavaScript', at);
    at = await pty.waitFor('your answer', at);
    pty.type('7\r');
    at = await pty.waitFor('! there is no option 7: answer 1-2, or type the answer in words', at);
    pty.type('2\r');
    at = await pty.waitFor('+ JavaScript', at);

    // The next question: skipped with an empty line.
    at = await pty.waitFor('? Any naming rules?', at);
    pty.type('\r');
    at = await pty.waitFor('. skipped', at);

    // During the work: a side question, answered without touching the run.
    at = await pty.waitFor('== work', at);
    at = await pty.waitFor('* human:inbox', at);
    pty.type('? where are we\r');
    const asideAt = await pty.waitFor('# aside: where are we', at);
    await pty.waitFor(ORACLE_ANSWER, asideAt);
    // ... while this flower holds the task's lock (issue 9): asides are not a second writer.
    expect(existsSync(join(workspace, 'runs', 'task.lock'))).toBe(true);

    // A requirement typed mid-run goes to the inbox (and the brief), and is delivered.
    pty.type(`${MAIL}\r`);
    at = await pty.waitFor(`+ received ${MAIL}`, at);
    await pty.waitFor(`+ delivered ${MAIL}`, at);

    // Ctrl-C: the prompt asks what to tell the agent; the words reach the same session.
    pty.type('\x03');
    at = await pty.waitFor('interrupted: what should it hear?', at);
    pty.type(`${INTERRUPT_WORDS}\r`);
    at = await pty.waitFor('! interrupted this round', at);
    const deadline = Date.now() + 60_000;
    while (
      !model
        .mainRequests()
        .some((request) => contentText(lastMessage(request.body)?.content).includes(INTERRUPT_WORDS))
    ) {
      if (Date.now() > deadline)
        throw new Error(`the interrupt never reached the model; screen:\n${pty.screen}`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }

    // Ctrl-C twice: quit at once with 130.
    pty.type('\x03');
    await pty.waitFor('interrupted: what should it hear?', at);
    pty.type('\x03');
    expect(await pty.exited()).toBe(130);

    // What the run left behind: the answers in the Q&A log, the mail in the brief, the aside in its own books.
    const notes = join(workspace, '.flower', 'notes');
    const log = readFileSync(join(notes, 'qa-log.md'), 'utf8');
    expect(log).toContain('JavaScript');
    expect(log).toContain(
      'Which language?\n  - options: Python / JavaScript\n  - **A** [answered] JavaScript\n',
    );
    expect(readFileSync(join(notes, 'brief.md'), 'utf8')).toMatch(
      new RegExp(`Added during run[\\s\\S]*${MAIL}`),
    );
    const asideManifest = JSON.parse(
      readFileSync(join(workspace, 'runs', 'aside', 'manifest.json'), 'utf8'),
    ) as Array<{ step: string }>;
    expect(asideManifest.map((row) => row.step)).toEqual(['aside']);
    const mainManifest = join(workspace, 'runs', 'manifest.json');
    expect(existsSync(mainManifest)).toBe(true);
    const mainRows = JSON.parse(readFileSync(mainManifest, 'utf8')) as Array<{ step: string }>;
    expect(mainRows.map((row) => row.step)).not.toContain('aside');
  }, 150_000);
});
