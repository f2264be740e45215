/**
 * The dispatch rule: an Agent call starts only a declared worker (guards/dispatch.ts). The e2e side
 * is test/e2e/guards-dispatch.test.ts.
 */
import type { HookCallbackMatcher, HookInput, HookJSONOutput } from '@anthropic-ai/claude-agent-sdk';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  DEFAULT_SUBAGENT_TYPE,
  dispatchableNames,
  dispatchGuard,
  dispatchRefusal,
  isForkName,
  normalisedAgentName,
} from '../../../src/agents/guards/dispatch.js';
import { HumanChannel } from '../../../src/agents/human/channel.js';
import { clarifier, coordinator, judge, oracle, worker } from '../../../src/agents/roles.js';
import { COORDINATOR_RULES } from '../../../src/agents/rules.js';

async function run(
  matcher: HookCallbackMatcher,
  tool: string,
  input: Record<string, unknown>,
  agentId?: string,
): Promise<HookJSONOutput> {
  const hookInput = {
    hook_event_name: 'PreToolUse',
    session_id: 's',
    transcript_path: '/tmp/t.jsonl',
    cwd: '/tmp',
    tool_name: tool,
    tool_input: input,
    tool_use_id: 'toolu_1',
    ...(agentId ? { agent_id: agentId, agent_type: 'builder' } : {}),
  } as HookInput;
  return matcher.hooks[0]!(hookInput, 'toolu_1', { signal: new AbortController().signal });
}

const reason = (output: HookJSONOutput) =>
  (output as { hookSpecificOutput?: { permissionDecision?: string; permissionDecisionReason?: string } })
    .hookSpecificOutput;

/** Claude Code's built-in subagent types seen in the bundled binary, and the fork. */
const BUILT_INS = ['general-purpose', 'Explore', 'Plan', 'statusline-setup', 'claude', 'fork'];
const agentCall = (subagentType?: string) => ({
  description: 'd',
  prompt: 'p',
  ...(subagentType === undefined ? {} : { subagent_type: subagentType }),
});

describe('dispatch refusal', () => {
  it('lets a declared worker through and refuses every built-in, naming the declared workers', () => {
    const declared = ['builder', 'tester'];
    expect(dispatchRefusal('builder', declared)).toBeUndefined();
    expect(dispatchRefusal('tester', declared)).toBeUndefined();
    for (const type of BUILT_INS) {
      const text = dispatchRefusal(type, declared);
      expect(text).toContain(`"${type}"`);
      expect(text).toContain('Only the declared workers can be dispatched: "builder", "tester".');
      expect(text).toContain('subagent_type set to one of these names exactly');
    }
    expect(dispatchRefusal('fork', declared)).toContain('copy of this whole conversation');
  });

  it('refuses an omitted subagent_type, which the binary would run as general-purpose', () => {
    const text = dispatchRefusal(undefined, ['builder']);
    expect(text).toContain(`without subagent_type starts "${DEFAULT_SUBAGENT_TYPE}"`);
    expect(text).toContain('"builder"');
    expect(dispatchRefusal(42, ['builder'])).toContain('"42" is not a declared worker');
  });

  it('refuses near misses the binary would resolve on its own (case, dashes, spaces)', () => {
    for (const type of ['Builder', 'builder ', 'build-er', 'BUILDER']) {
      expect(dispatchRefusal(type, ['builder'])).toContain('is not a declared worker');
    }
  });

  it('tells a role without workers that Agent starts nothing', () => {
    expect(dispatchRefusal('general-purpose', [])).toContain('This role has no workers to dispatch');
    expect(dispatchRefusal(undefined, [])).toContain('This role has no workers to dispatch');
  });

  it('allows exactly the declared names (property)', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.string({ minLength: 1 }), { maxLength: 5 }),
        fc.string(),
        (names, asked) => {
          const declared = dispatchableNames(names);
          expect(dispatchRefusal(asked, declared) === undefined).toBe(declared.includes(asked));
        },
      ),
    );
  });
});

describe('fork names', () => {
  it('normalises the way the binary does, so every spelling of fork is caught', () => {
    expect(normalisedAgentName('General_Purpose')).toBe('generalpurpose');
    expect(normalisedAgentName(' Fo-r k ')).toBe('fork');
    for (const name of ['fork', 'Fork', 'FORK', ' fork', 'f_o-r k']) expect(isForkName(name)).toBe(true);
    expect(isForkName('forker')).toBe(false);
  });

  it('never counts a fork-named worker as dispatchable, and a coordinator refuses to declare one', () => {
    expect(dispatchableNames(['builder', 'Fork'])).toEqual(['builder']);
    expect(dispatchRefusal('Fork', dispatchableNames(['builder', 'Fork']))).toContain('copy of this');
    const definition = worker({ description: 'd', prompt: 'p' });
    expect(() => coordinator({ workers: { Fork: definition } })).toThrow(
      /A worker cannot be called "Fork".*Give the worker another name/,
    );
  });
});

describe('dispatch guard', () => {
  it('matches Agent and its older name Task, on the main thread and in subagents', async () => {
    const guard = dispatchGuard(['builder']);
    expect(guard.matcher).toBe('Agent|Task');
    for (const tool of ['Agent', 'Task']) {
      for (const agentId of [undefined, 'a1']) {
        const denied = reason(await run(guard, tool, agentCall('general-purpose'), agentId));
        expect(denied?.permissionDecision).toBe('deny');
        expect(denied?.permissionDecisionReason).toBe(dispatchRefusal('general-purpose', ['builder']));
        expect(reason(await run(guard, tool, agentCall(), agentId))?.permissionDecision).toBe('deny');
        expect(await run(guard, tool, agentCall('builder'), agentId)).toEqual({});
      }
    }
    expect(await run(guard, 'Bash', { command: 'ls' })).toEqual({});
  });

  it('is installed in every role: the coordinator with its workers, the walled roles with none', async () => {
    const channel = new HumanChannel();
    const specs = [
      {
        spec: coordinator({ workers: { builder: worker({ description: 'd', prompt: 'p' }) } }),
        allows: true,
      },
      { spec: judge({ channel }), allows: false },
      { spec: clarifier({ channel }), allows: false },
      { spec: oracle(), allows: false },
    ];
    for (const { spec, allows } of specs) {
      const guards = (spec.hooks?.PreToolUse ?? []).filter((matcher) => matcher.matcher === 'Agent|Task');
      expect(guards).toHaveLength(1);
      const builder = await run(guards[0]!, 'Agent', agentCall('builder'));
      expect(builder).toEqual(
        allows ? {} : expect.objectContaining({ hookSpecificOutput: expect.anything() }),
      );
      expect(reason(await run(guards[0]!, 'Agent', agentCall('fork')))?.permissionDecision).toBe('deny');
    }
    // Said up front too, so the model does not spend a turn learning it from a refusal.
    expect(COORDINATOR_RULES).toContain('Dispatch only the workers declared for you');
  });
});
