/**
 * The later-turn guard with the real binary (issue 18, observation 10): a scripted role that calls
 * `ScheduleWakeup` or a durable `CronCreate` gets the refusal with its reason as the tool result,
 * nothing is scheduled (no "Next wakeup", no `.claude/scheduled_tasks.json` in the workspace, which
 * an interactive Claude Code session would later fire), and the step ends in one result. Without
 * the guard the binary accepts both (measured: "Next wakeup scheduled …", "Persisted to
 * .claude/scheduled_tasks.json").
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { SDKResultMessage } from '@anthropic-ai/claude-agent-sdk';
import { afterEach, describe, expect, it } from 'vitest';
import { laterTurnDenial } from '../../src/agents/guards/later-turns.js';
import { coordinator, judge } from '../../src/agents/roles.js';
import { cleanUp, resultFor, runSpec, startMock, tempDir } from './agents-harness.js';

afterEach(cleanUp);

/** The call seen in the field, and a durable cron job (it would outlive the process on disk). */
const LATER_TURN_CALLS = {
  toolUses: [
    {
      name: 'ScheduleWakeup',
      id: 'toolu_wakeup',
      input: {
        delaySeconds: 68,
        reason: 'the build needs a minute',
        prompt: 'check the build',
        noop: false,
      },
    },
    {
      name: 'CronCreate',
      id: 'toolu_cron',
      input: { cron: '*/5 * * * *', prompt: 'check the build again', durable: true },
    },
  ],
};

describe.each([
  { label: 'coordinator', spec: () => coordinator({ workers: {} }) },
  { label: 'judge', spec: () => judge({}) },
])('later-turn guard on a scripted $label (real binary)', ({ spec }) => {
  it('refuses ScheduleWakeup and CronCreate with the reason, and schedules nothing', async () => {
    const workspace = tempDir('flower-ws-');
    const server = await startMock([LATER_TURN_CALLS, { text: 'Done now; nothing left for later.' }]);

    const { thrown, messages } = await runSpec(server, spec(), workspace);
    expect(thrown).toBeUndefined();

    const wakeup = resultFor(server, 'toolu_wakeup');
    const cron = resultFor(server, 'toolu_cron');
    expect(wakeup).toContain(laterTurnDenial('ScheduleWakeup'));
    expect(cron).toContain(laterTurnDenial('CronCreate'));
    expect(wakeup).not.toMatch(/wakeup scheduled/i);
    expect(cron).not.toMatch(/scheduled recurring job|persisted/i);
    expect(existsSync(join(workspace, '.claude', 'scheduled_tasks.json'))).toBe(false);
    // The step is over after its one turn, as flower counts on.
    const results = messages.filter((message): message is SDKResultMessage => message.type === 'result');
    expect(results).toHaveLength(1);
    expect(results[0]?.subtype).toBe('success');
    expect(server.unmatched).toEqual([]);
  });
});
