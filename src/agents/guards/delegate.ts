/**
 * Delegate guard: the coordinator decides and dispatches; it does not do the hands-on work.
 *
 * On the main thread, Write/Edit/NotebookEdit and any Bash command that is not a glance are denied
 * with directions to dispatch a worker instead. Subagent calls (hook input with `agent_id`) pass.
 *
 * Invariant: "may the coordinator run this itself" is decided by `isEphemeral`, the same predicate
 * the session store uses to expire stale results on resume. A command allowed here but not expired
 * would leave stale state in the context; one expired but not allowed would force a whole subagent
 * (~4k tokens of start-up) for an `ls`. One predicate, no copy.
 *
 * Why a hook and not `disallowedTools`: that setting is session-wide and would disable the same
 * tools inside the workers as well.
 *
 * Claude Code runs Bash-matcher hooks for its deferred Monitor tool too (the hook input names
 * Bash), so a command started through Monitor meets the same check (verified with the binary).
 *
 * The glance wall. The predicate is a guess from a command's text, and guesses have holes (an
 * outside corpus found 27: `git diff ~/.config /tmp/empty` printed flower's key). So with a sandbox,
 * the guard does not let an allowed glance run in the session: the session's sandbox is the
 * workers' (the SDK sets one per query, and the coordinator shares its query with its workers), which
 * may write the workspace and reach the registries. The guard runs the command itself, inside
 * flower's read-only bubblewrap (runtime/sandbox/walled-run.ts: no writes, no network, credential
 * stores covered), and the call goes on with its command replaced by one that prints that output
 * and exits with its code, so the model sees the glance's result as a Bash result.
 * Why not a nested bubblewrap inside the session's sandbox (tried, it works): it needs the
 * sandbox's `allowNestedUserNamespaces`, which lets any command of the session (the workers')
 * undo the sandbox's read and write denials.
 *
 * Invariants: one hook decides and runs (hooks of one event run side by side, so a separate
 * runner would run what this guard denies); a denied call never runs anywhere; without a sandbox
 * (`--no-sandbox`) an allowed glance runs in the session as before.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { HookCallbackMatcher } from '@anthropic-ai/claude-agent-sdk';
import type { SessionSandbox } from '../../runtime/agent-spec.js';
import { wallPlan } from '../../runtime/sandbox/bubblewrap.js';
import { runWalled } from '../../runtime/sandbox/walled-run.js';
import { isEphemeral } from '../../store/glance.js';
import { HANDS_ON, toolMatcher } from '../tools.js';
import { allowWithInput, deny, onMainThread, PASS, toolUse } from './hook-io.js';

export interface DelegateGuardOptions {
  /** Let glance-only Bash (`isEphemeral`) run on the main thread. */
  allowGlance?: boolean;
  /** Where workers should put long output, as the model should see it. */
  artifactsPath?: string;
  /** The session's sandbox: allowed glances then run inside flower's read-only wall. */
  sandbox?: SessionSandbox;
  /**
   * Which commands the coordinator may run (default: the glance predicate). A seam for the tests
   * that prove the wall holds whatever the predicate lets through.
   */
  mayGlance?: (command: string) => boolean;
}

/** The Bash tool's own limits: 2 minutes unless the call asks for more, at most 10. */
const DEFAULT_GLANCE_TIMEOUT_MS = 120_000;
const MAX_GLANCE_TIMEOUT_MS = 600_000;
/** More than the Bash tool keeps of an output (30k characters), so its own cut still applies. */
const GLANCE_OUTPUT_BYTES = 1024 * 1024;
/** Outputs kept at once (each is read by its call right after the hook; older ones are removed). */
const KEPT_OUTPUTS = 32;

/** The denial text for the coordinator reaching for `tool`. */
export function delegateDenial(tool: string, artifactsPath = '.flower/artifacts'): string {
  return (
    `The coordinator does not use ${tool} itself. Dispatch a worker with the Agent tool: state the goal ` +
    `and how to check it is met, and ask it to write any long output into ${artifactsPath}/ and reply with ` +
    'only the paths and its conclusion.'
  );
}

/** True when the coordinator's main thread may make this call itself. */
export function coordinatorMayRun(
  toolName: string,
  toolInput: Record<string, unknown>,
  allowGlance: boolean,
  mayGlance: (command: string) => boolean = isEphemeral,
): boolean {
  if (!(HANDS_ON as readonly string[]).includes(toolName)) return true;
  if (toolName !== 'Bash' || !allowGlance) return false;
  const command = toolInput.command;
  return typeof command === 'string' && mayGlance(command);
}

/** The command that stands in for a walled glance: prints its output, exits with its code. */
export function replayCommand(outputPath: string, exitCode: number): string {
  return `cat -- '${outputPath.replaceAll("'", "'\\''")}'; exit ${exitCode}`;
}

/** Where one guard keeps its glances' outputs: a private directory, removed when flower exits. */
class GlanceOutputs {
  private directory: string | undefined;
  // Stryker disable next-line ArrayDeclaration: a seeded entry is a name no output has; removing it (one glance early, with force) changes nothing kept
  private readonly paths: string[] = [];
  private count = 0;

  next(): string {
    if (this.directory === undefined) {
      const directory = mkdtempSync(join(tmpdir(), 'flower-glance-'));
      this.directory = directory;
      process.once('exit', () => rmSync(directory, { recursive: true, force: true }));
    }
    // Stryker disable next-line AssignmentOperator: the count only makes names unique in the private directory; counting down (-1.out, -2.out) does too
    this.count += 1;
    const path = join(this.directory, `${this.count}.out`);
    this.paths.push(path);
    for (const old of this.paths.splice(0, Math.max(0, this.paths.length - KEPT_OUTPUTS)))
      rmSync(old, { force: true });
    return path;
  }
}

/** A PreToolUse matcher enforcing the coordinator/worker split. */
export function delegateGuard(options: DelegateGuardOptions = {}): HookCallbackMatcher {
  const allowGlance = options.allowGlance ?? false;
  const { sandbox } = options;
  const outputs = new GlanceOutputs();
  return {
    matcher: toolMatcher(HANDS_ON),
    // A walled glance runs inside this hook: its time limit is the Bash call's, plus room to answer.
    ...(sandbox ? { timeout: MAX_GLANCE_TIMEOUT_MS / 1000 + 30 } : {}),
    hooks: [
      async (input) => {
        const call = toolUse(input);
        if (!call || !onMainThread(input)) return PASS;
        if (!coordinatorMayRun(call.toolName, call.toolInput, allowGlance, options.mayGlance))
          return deny(delegateDenial(call.toolName, options.artifactsPath));
        if (!sandbox || call.toolName !== 'Bash') return PASS;
        const command = String(call.toolInput.command);
        const cwd = input.cwd !== '' ? input.cwd : process.cwd();
        const asked = call.toolInput.timeout;
        const timeoutMs =
          typeof asked === 'number' && asked > 0
            ? Math.min(asked, MAX_GLANCE_TIMEOUT_MS)
            : DEFAULT_GLANCE_TIMEOUT_MS;
        const outputPath = outputs.next();
        const outcome = await runWalled(wallPlan('read-only', sandbox.policy, sandbox.places, cwd), command, {
          outputPath,
          timeoutMs,
          maxBytes: GLANCE_OUTPUT_BYTES,
          env: sandbox.env,
        });
        return allowWithInput({
          ...call.toolInput,
          command: replayCommand(outputPath, outcome.exitCode),
          run_in_background: false,
        });
      },
    ],
  };
}
