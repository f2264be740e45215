/**
 * Later-turn guard: refuses Claude Code's built-in tools that promise the model a turn later on,
 * because flower will never run that turn.
 *
 * Seen (issue 18): a coordinator called `ScheduleWakeup`; the binary accepted it ("re-invokes you in
 * 68s") and the step ended "done" 4 s later, so the wake-up the model counted on never came and the
 * work it had put off was silently dropped. Each flower step is one print-mode query: when the turn
 * ends and no background task is left, the binary exits, and whatever it scheduled dies with it.
 * Measured with the bundled binary: `ScheduleWakeup` answers "Next wakeup scheduled … the harness
 * re-invokes you when the wakeup fires", `CronCreate` "Session-only (… dies when Claude exits)",
 * and the query ended right after. `RemoteTrigger` (scheduled agents on claude.ai) is off in this
 * configuration but belongs to the same family: work that runs later, elsewhere, unseen by flower.
 *
 * Invariants:
 * - Refused on every thread, subagents included: a worker's scheduled turn is just as empty.
 * - The refusal says why and what to do instead (finish now, dispatch, or end the turn with what is
 *   left), so the model does not try other ways to wait. flower's own "later" is the judge's next
 *   round or the next `flower` start, both of which continue the same sessions.
 * - Refused, not hidden: with these names in `disallowedTools` the binary answers "No such tool
 *   available … disabled for this session" before any hook runs (measured), so the model would get
 *   no reason. The cost of keeping them visible: ScheduleWakeup's schema is ~4.9k of the ~31k
 *   characters of tool definitions in each request (prompt-cached).
 * - Monitor is not in the list: it is a background task, which keeps the query open, and each event
 *   starts another turn of the same query (measured: a Monitor whose command printed after 3 s gave
 *   a second result and a request carrying the event), so it promises no turn flower skips.
 */
import type { HookCallbackMatcher } from '@anthropic-ai/claude-agent-sdk';
import { toolMatcher } from '../tools.js';
import { deny, PASS, toolUse } from './hook-io.js';

/** Built-in tools whose effect is a turn after this query has ended. */
export const LATER_TURN_TOOLS = ['ScheduleWakeup', 'CronCreate', 'RemoteTrigger'] as const;

/** The refusal the model receives as the call's result. */
export function laterTurnDenial(tool: string): string {
  return (
    `${tool} is refused: flower runs no later turns. This session ends when your turn ends, so a ` +
    'wake-up, scheduled prompt or trigger would never fire. Do the work now (a coordinator dispatches ' +
    "a worker with the Agent tool; a wait belongs inside a worker's command), or end your turn " +
    "saying what is done and what is left: flower's judge decides whether another round follows."
  );
}

/** A PreToolUse matcher that refuses every later-turn tool, on the main thread and in subagents. */
export function laterTurnGuard(): HookCallbackMatcher {
  const refused: readonly string[] = LATER_TURN_TOOLS;
  return {
    matcher: toolMatcher(LATER_TURN_TOOLS),
    hooks: [
      async (input) => {
        const call = toolUse(input);
        if (!call || !refused.includes(call.toolName)) return PASS;
        return deny(laterTurnDenial(call.toolName));
      },
    ],
  };
}
