/**
 * The later-turn guard as a hook, and its registration: every role and the ad-hoc `once` agent
 * carry it, so no flower session can schedule a turn it will never run.
 */
import type { HookCallbackMatcher, HookInput, HookJSONOutput } from '@anthropic-ai/claude-agent-sdk';
import { describe, expect, it } from 'vitest';
import { LATER_TURN_TOOLS, laterTurnDenial, laterTurnGuard } from '../../../src/agents/guards/later-turns.js';
import { HumanChannel } from '../../../src/agents/human/channel.js';
import { clarifier, coordinator, judge, oracle } from '../../../src/agents/roles.js';
import { adHocSpec } from '../../../src/cli/commands/once-action.js';
import type { AgentSpec } from '../../../src/runtime/agent-spec.js';

function preToolUse(tool: string, agentId?: string): HookInput {
  return {
    hook_event_name: 'PreToolUse',
    session_id: 's',
    transcript_path: '/tmp/t.jsonl',
    cwd: '/tmp',
    tool_name: tool,
    tool_input: {},
    tool_use_id: 'toolu_1',
    ...(agentId ? { agent_id: agentId, agent_type: 'builder' } : {}),
  } as HookInput;
}

const reasonOf = (output: HookJSONOutput) =>
  (output as { hookSpecificOutput?: { permissionDecision?: string; permissionDecisionReason?: string } })
    .hookSpecificOutput;

/** What the binary does: run each matcher whose `A|B` names the tool; the first denial wins. */
async function decide(matchers: HookCallbackMatcher[], tool: string): Promise<string | undefined> {
  for (const matcher of matchers) {
    if (matcher.matcher !== undefined && !matcher.matcher.split('|').includes(tool)) continue;
    for (const hook of matcher.hooks) {
      const output = reasonOf(
        await hook(preToolUse(tool), 'toolu_1', { signal: new AbortController().signal }),
      );
      if (output?.permissionDecision === 'deny') return output.permissionDecisionReason;
    }
  }
  return undefined;
}

describe('laterTurnGuard', () => {
  it('refuses every later-turn tool, on the main thread and in a subagent, with the reason', async () => {
    const guard = laterTurnGuard();
    for (const tool of LATER_TURN_TOOLS) {
      for (const agent of [undefined, 'agent-1']) {
        const output = reasonOf(
          await guard.hooks[0]!(preToolUse(tool, agent), 'toolu_1', { signal: new AbortController().signal }),
        );
        expect(output).toEqual({
          hookEventName: 'PreToolUse',
          permissionDecision: 'deny',
          permissionDecisionReason: laterTurnDenial(tool),
        });
      }
    }
  });

  it('lets every other tool through, Monitor included (its events arrive within the query)', async () => {
    const guard = laterTurnGuard();
    for (const tool of ['Monitor', 'Bash', 'CronList', 'CronDelete', 'Agent']) {
      expect(
        await guard.hooks[0]!(preToolUse(tool), 'toolu_1', { signal: new AbortController().signal }),
      ).toEqual({});
    }
  });

  it('says why and what to do instead', () => {
    const text = laterTurnDenial('ScheduleWakeup');
    expect(text).toMatch(/^ScheduleWakeup is refused: flower runs no later turns\./);
    expect(text).toContain('Agent tool');
    expect(text).toContain('what is left');
  });
});

describe('every flower session carries it', () => {
  const channel = new HumanChannel({ timeoutSeconds: 0 });
  const specs: [string, AgentSpec][] = [
    ['coordinator', coordinator({ workers: {} })],
    ['clarifier', clarifier({ channel })],
    ['judge', judge({})],
    ['judge that can run', judge({ canRun: true })],
    ['aside', oracle()],
    [
      'once',
      adHocSpec({
        instructions: '',
        tools: ['Read', 'Bash', 'Write', 'Edit', 'NotebookEdit'],
        permissionMode: 'acceptEdits',
        trim: true,
      }),
    ],
  ];
  it.each(specs)('%s: ScheduleWakeup, CronCreate and RemoteTrigger are refused', async (_label, spec) => {
    for (const tool of LATER_TURN_TOOLS)
      expect(await decide(spec.hooks?.PreToolUse ?? [], tool)).toBe(laterTurnDenial(tool));
  });
});
