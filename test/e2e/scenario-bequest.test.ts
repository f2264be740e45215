/**
 * The bequest (issue 13 §5): when a task ends, a read-only closing turn writes what the next tool
 * needs into CLAUDE.md and AGENTS.md, inside flower's managed block — around the user's own text,
 * identically when written again, appended when the markers are broken, and mechanical (marked
 * degraded) when the turn says too little; another tool's `flower:begin` block is never taken for
 * flower's (issue 20). Real Runtime, SDK and binary (and the built CLI); only the model is scripted.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { DEGRADED_MARK } from '../../src/bequest/document.js';
import {
  BLOCK_BEGIN,
  BLOCK_END,
  blockBegin,
  blockEnd,
  flowerBlocks,
  readBlock,
} from '../../src/bequest/managed-block.js';
import { lastUserText } from '../../src/testing/index.js';
import { BEQUEST_EVENT, BEQUEST_FILES } from '../../src/workflow/bequest-turn.js';
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
const OTHER_TOOL = '<!-- flower:begin other-tool -->\nmine\n<!-- flower:end -->';

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
    expect(warning?.text).toContain('1 begin marker without an end');
    expect(readFileSync(agents)).toEqual(agentsFirst);
  }, 150_000);

  it("(issue 20, observation 7) leaves another tool's flower:begin block byte for byte across three tasks run by the CLI, its own block once", async () => {
    scenario = await bequestScenario();
    const { workspace } = scenario;
    const user = `${USER_NOTES}\n${OTHER_TOOL}\n`;
    for (const name of BEQUEST_FILES) writeFileSync(join(workspace, name), user);
    // Three tasks in one workspace: a task is the workspace and its run directory.
    for (const runDir of ['runs-1', 'runs-2', 'runs-3']) {
      const run = await scenario.flower(['-r', runDir, '--timeout', '0'], { input: '\n' });
      expect(run.status, run.stderr).toBe(0);
      expect(run.stderr).toBe('');
      expect(run.stdout).not.toContain('were folded into one');
      expect(run.stdout).not.toContain('pair with nothing');
      expect(scenario.manifest(runDir).at(-1)).toMatchObject({ step: 'bequest', ok: true });
      for (const name of BEQUEST_FILES) {
        const text = readFileSync(join(workspace, name), 'utf8');
        expect(text.startsWith(`${user}\n${blockBegin(runDir)}\n`), name).toBe(true);
        expect(text.endsWith(`${blockEnd(runDir)}\n`), name).toBe(true);
        expect(text.split(OTHER_TOOL), name).toHaveLength(2);
        expect(flowerBlocks(text), name).toHaveLength(1);
        expect(text.match(/<!-- flower:(begin|end) task=/g), name).toHaveLength(2);
        expect(readBlock(text)).toContain('hello.py, a script that prints hello world.');
      }
    }
  }, 600_000);

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
