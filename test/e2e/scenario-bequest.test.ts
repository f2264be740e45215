/**
 * The bequest (issue 13 §5): when a task ends, a read-only closing turn writes what the next tool
 * needs into CLAUDE.md and AGENTS.md, inside flower's managed block — around the user's own text,
 * identically when written again, appended when the markers are broken, and mechanical (marked
 * degraded) when the turn says too little. Real Runtime, SDK and binary; only the model is scripted.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { DEGRADED_MARK } from '../../src/bequest/document.js';
import { BLOCK_BEGIN, BLOCK_END, readBlock } from '../../src/bequest/managed-block.js';
import { lastUserText } from '../../src/testing/index.js';
import { BEQUEST_EVENT } from '../../src/workflow/bequest-turn.js';
import { starterFlow } from '../../src/workflow/starter.js';
import {
  ACHIEVED,
  BEQUEST_REPLY,
  mainRouter,
  roleOf,
  type Scenario,
  startFrozen,
} from './scenario-harness.js';

let scenario: Scenario | undefined;
afterEach(async () => {
  await scenario?.close();
  scenario = undefined;
});

const USER_NOTES = '# House rules\n\nUse tabs. Never push to main.\n';

async function bequestScenario(bequest = BEQUEST_REPLY): Promise<Scenario> {
  return startFrozen({
    main: mainRouter({
      coordinator: () => ({ text: 'hello.py is written.' }),
      verdict: () => ({ text: ACHIEVED }),
      bequest: () => ({ text: bequest }),
    }),
  });
}

describe('the bequest to the next tool', () => {
  it("(f) goes around the user's CLAUDE.md, is rewritten identically, and is appended after a broken marker pair", async () => {
    scenario = await bequestScenario();
    const { workspace } = scenario;
    const claude = join(workspace, 'CLAUDE.md');
    const agents = join(workspace, 'AGENTS.md');
    writeFileSync(claude, USER_NOTES);

    const run = () => starterFlow({ workspace }).run(scenario!.runtime(), { onEvent: scenario!.sink });
    expect((await run()).failedAt).toBeUndefined();
    const first = readFileSync(claude, 'utf8');
    expect(first.startsWith(`${USER_NOTES}\n${BLOCK_BEGIN}\n`)).toBe(true);
    const block = readBlock(first)!;
    expect(block).toContain('hello.py, a script that prints hello world.');
    expect(block).toContain('flower: the judge ruled the goal achieved.');
    expect(block).not.toContain(DEGRADED_MARK);
    expect(readBlock(readFileSync(agents, 'utf8'))).toBe(block);
    // The closing turn was read-only and came last, after the ruling.
    const requests = scenario.mock.mainRequests();
    expect(roleOf(requests.at(-1)!)).toBe('bequest');
    expect(lastUserText(requests.at(-1)!)).toContain('Do not create or edit CLAUDE.md or AGENTS.md yourself');
    expect(scenario.manifest().at(-1)).toMatchObject({ step: 'bequest', ok: true });

    // A second ending like the first: identical bytes in both files.
    const agentsFirst = readFileSync(agents);
    expect((await run()).failedAt).toBeUndefined();
    expect(readFileSync(claude, 'utf8')).toBe(first);
    expect(readFileSync(agents)).toEqual(agentsFirst);

    // Someone deleted the end marker: flower cannot tell its block apart, so it appends and says so.
    const broken = first.replace(BLOCK_END, '');
    writeFileSync(claude, broken);
    scenario.events.length = 0;
    await run();
    const third = readFileSync(claude, 'utf8');
    expect(third.startsWith(broken.trimEnd())).toBe(true);
    expect(third.endsWith(`${BLOCK_END}\n`)).toBe(true);
    expect(third.split(BLOCK_BEGIN)).toHaveLength(3);
    const warning = scenario.events.find(
      (event) => event.kind === 'system' && event.payload.subtype === BEQUEST_EVENT && event.payload.warning,
    );
    expect(warning?.text).toContain('1 begin and 0 end markers');
    expect(readFileSync(agents)).toEqual(agentsFirst);
  }, 150_000);

  it('is mechanical and marked degraded when the closing turn says too little; --no-bequest writes nothing', async () => {
    scenario = await bequestScenario('I looked around; it is fine.');
    const { workspace } = scenario;
    await starterFlow({ workspace }).run(scenario.runtime());
    const block = readBlock(readFileSync(join(workspace, 'CLAUDE.md'), 'utf8'))!;
    expect(block).toContain(
      `${DEGRADED_MARK} The closing turn could not write the handoff (its reply lacked "What this is" and "The workbench and how to read it").`,
    );
    expect(block).toContain('hello.py exists and prints hello world.');
    expect(block).toContain("flower's workbench is .flower: notes/ holds the brief");

    const other = await bequestScenario();
    try {
      await starterFlow({ workspace: other.workspace, bequest: false }).run(other.runtime());
      expect(existsSync(join(other.workspace, 'CLAUDE.md'))).toBe(false);
      expect(other.mock.mainRequests().some((request) => roleOf(request) === 'bequest')).toBe(false);
    } finally {
      await other.close();
    }
  }, 150_000);
});
