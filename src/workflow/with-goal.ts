/**
 * `withGoal`: puts a step under the goal guard. After every round of work flower runs the goal's
 * checks itself (inside the worker's wall, checks/runner.ts), then a judge — a different role, in a fresh session — rules achieved / not
 * yet / cannot verify here, with the check results as evidence.
 *
 * Invariants:
 * - The judge runs directly on the runner, never as a step: a new session every round (no resume),
 *   labelled `<step>:verdict#<round>`, so it never enters lineage and never judges with the
 *   memory of its earlier rulings (otherwise the guard degrades into self-audit).
 * - What runs is the goal's checks as frozen when the goal was set (frozen-checks.ts), not whatever
 *   `goal.md` holds now: an agent may write that file. When they differ, the human is asked once per
 *   process and change (`approveChecks`, by default a question on the channel, asked at the start of
 *   the step, before any work): yes freezes the file's checks and runs them; no, or nobody answering
 *   (unattended: the channel does not wait, so nothing is asked), runs the frozen ones — the added
 *   checks are not run, the removed ones still are — says so (a line each), and tells the judge which items' checks flower did not run. `goal.md` is
 *   never rewritten for it.
 * - The checks run inside the sandbox the runner reports (`sandbox`, `sandboxPlaces`); a runner that
 *   reports none gets the default wall. Only the user's `--no-sandbox` runs them on the host.
 * - Only "achieved" passes, and a failing host check overrides it (`evidence.ts`): a vague ruling
 *   counts as not yet, with a reason saying so.
 * - "not yet" sends the judge's gaps and the failing checks' tails back into the same work session
 *   (`#roundN`), never a fix.
 * - "cannot verify here" is a human's call: accept and move on, change the goal, or tell the judge
 *   it was wrong. When nobody answers, the step stops (StepAbort): the goal file and the manifest
 *   stay on disk for the human to decide later, and no more rounds are spent. "Change the goal"
 *   amends the goal file as it is on disk, so a person's edits of it are not overwritten.
 * - `rounds` caps the task, not the process: rounds judged by earlier processes against the same
 *   goal count (`goal-history.ts`), a wake with none left spends nothing, and every stop says why
 *   and what continues it (`the judge ruled not yet after 2/2 rounds: …; flower --rounds 4 continues`).
 * - The no-progress brake (`stall.ts`) stops a task whose rounds end where the previous one ended;
 *   a human may wave it on, nobody answering stops.
 * - Every ruling is written onto the judge's manifest row (verdict, reason, round, checks) and every
 *   rejection onto the work row it rejected, so no rejected round reads as a bare `ok: true`.
 * - The wrapped step is copied with its other fields intact (a field-by-field rebuild once lost the
 *   resume prompt); its own gate and onReject are replaced, its `when` and resume prompt wrapped.
 */
import { basename, join } from 'node:path';
import type { HumanChannel } from '../agents/human/channel.js';
import { type JudgeOptions, judge } from '../agents/roles.js';
import {
  type CheckPolicyOverrides,
  type CheckRun,
  type CheckWall,
  checkedItems,
  runChecks,
} from '../checks/runner.js';
import { workspaceState } from '../checks/workspace-state.js';
import type { EnvMap } from '../config/paths.js';
import { oneLine } from '../output/neutralise.js';
import type { AgentSpec } from '../runtime/agent-spec.js';
import { sandboxPlaces } from '../runtime/sandbox/places.js';
import { defaultSandboxPolicy } from '../runtime/sandbox/policy.js';
import type { StepResult } from '../runtime/step-result.js';
import { isBudgetStop } from './budget.js';
import { pickChoice } from './choices.js';
import type { WorkflowContext } from './context.js';
import { checkLine, checksEvidence, manifestChecks, rulingWithChecks, sendBackText } from './evidence.js';
import {
  type ChecksChange,
  changeSignature,
  checksOf,
  compareChecks,
  type FrozenCheck,
  freezeChecks,
  hasChanged,
  loadFrozenChecks,
} from './frozen-checks.js';
import { Goal } from './goal.js';
import { type GoalHistory, goalHistory } from './goal-history.js';
import { SET_GOAL_STEP } from './goal-step.js';
import { annotateResult, type StepRunner } from './runner.js';
import { DEFAULT_STALL_ROUNDS, roundState, StallWatch } from './stall.js';
import { renderPrompt, type Step, StepAbort } from './step.js';
import { UNCLEAR_VERDICT_REASON, Verdict } from './verdict.js';

/** The choices offered when the judge cannot verify the goal here, in this order. */
export const CANNOT_VERIFY_CHOICES = [
  'Accept this result and move on',
  'Change the goal',
  'The judge is wrong: keep working',
] as const;

/** The choices offered when the no-progress brake trips and someone is there to answer. */
export const STALL_CHOICES = [
  'Stop here (run flower again to continue later)',
  'Go on with another round',
] as const;

/**
 * The choices offered when the goal file's checks are not the frozen ones: the safe one first, and
 * first words that differ (an answer is matched by its first word).
 */
export const CHANGED_CHECKS_CHOICES = [
  'Keep the checks as the goal was set (the changed ones do not run)',
  "Run the checks as the goal file has them now (they become the goal's checks)",
] as const;

/** Subtype of the `system` events the guard emits (check results, the round being judged). */
export const GOAL_GUARD_EVENT = 'goal-guard';

export interface WithGoalOptions {
  channel: HumanChannel;
  /** The frozen goal (normally `<workbench>/notes/goal.md`). */
  goalPath: string;
  /** The judge agent; default: the judge role on `channel`. */
  spec?: AgentSpec;
  /** Rounds of work for the current goal in total, across processes, judged after each (default 3). */
  rounds?: number;
  instructions?: string;
  /** Let the judge run commands (it still may not write files). */
  canRun?: boolean;
  /** Judge label; default `<step>:verdict`. */
  name?: string;
  /** Further judge settings. */
  role?: Omit<JudgeOptions, 'channel' | 'name' | 'instructions' | 'canRun'>;
  /** Each round's check outputs go to `<checksDir>/<round>/`; default `<workspace>/.flower/artifacts/checks`. */
  checksDir?: string;
  /** What the no-progress brake leaves out of the workspace; default the run directory and `<workspace>/.flower`. */
  exclude?: string[];
  /** Rounds in a row ending in the same state that stop the task (default 2; 0 turns the brake off). */
  stall?: number;
  /** Time limit, tail and log size of the host checks. */
  checks?: CheckPolicyOverrides;
  /** The environment checks start from (credentials are always removed); default this process's. */
  checkEnv?: EnvMap;
  /** The step that sets the goal: rounds count from its last pass. Default `set-goal`. */
  goalStep?: string;
  /**
   * Decides, once per process and change, whether the goal file's checks run although they are not
   * the frozen ones: true freezes and runs them, false runs the frozen ones. Default: a question on
   * `channel` (`changedChecksQuestion`); no answer (unattended) is false.
   */
  approveChecks?: (change: ChecksChange, goalPath: string) => Promise<boolean>;
}

export interface VerifyEvidence {
  checks?: readonly CheckRun[];
  /** Items a human accepted as unverifiable here. */
  assumptions?: readonly string[];
  /** Items whose checks were added to the goal file after it was set, and that flower did not run. */
  notRun?: readonly string[];
}

export function verifyPrompt(goal: string, report: string, evidence: VerifyEvidence = {}): string {
  const parts = [
    'Judge this round of work against the goal below (task B in your rules). Look at the artifacts',
    'yourself; the report is a claim, not evidence.',
    '',
    '# The goal',
    goal,
    '',
    '# What the worker reported',
    report,
  ];
  const checks = checksEvidence(evidence.checks ?? []);
  if (checks) parts.push('', checks);
  if (evidence.notRun?.length) {
    parts.push(
      '',
      '# Checks flower did not run',
      'These items carry a check that was added to the goal file after the goal was set, and nobody approved',
      'it, so flower did not run it: no result above is theirs, and a report that they pass is no evidence.',
      'Judge them by looking, as items without a check:',
      ...evidence.notRun.map((item) => `- ${item}`),
    );
  }
  if (evidence.assumptions?.length) {
    parts.push(
      '',
      '# Accepted as unverifiable here',
      'A human accepted these items as things this machine cannot verify. Do not hold them against the round',
      'and do not conclude "cannot verify here" because of them:',
      ...evidence.assumptions.map((item) => `- ${item}`),
    );
  }
  parts.push(
    '',
    'Reply with three sections: "## Conclusion" (exactly one of: achieved / not yet / cannot verify here),',
    '"## Reason", and "## Not passed" (the failed checks, one per line).',
  );
  return parts.join('\n');
}

/** `the judge ruled not yet after 2/2 rounds: <reason>; flower --rounds 4 continues` */
export function outOfRoundsLine(
  used: number,
  total: number,
  reason: string,
  notPassed: readonly string[] = [],
): string {
  // The reason's own closing full stop would read `.;` before the next clause.
  const why = (reason.split('\n')[0]?.trim() ?? '').replace(/[.;:,\s]+$/, '') || 'no reason given';
  // What is left to do, unless the reason already said just that.
  const items = notPassed.map((item) => item.trim()).filter((item) => item && item !== why);
  const left = items.length > 0 ? `; not passed: ${items.join('; ')}` : '';
  return `the judge ruled not yet after ${used}/${total} rounds: ${why}${left}; flower --rounds ${Math.max(used, total) * 2} continues`;
}

/** What one process remembers of a guarded step between its hooks. */
interface GuardState {
  stall: StallWatch;
  history: GoalHistory;
  /** Decisions about changed checks, by change: asked once, not every round. */
  checkDecisions: Map<string, boolean>;
  /** The frozen checks when the runner has no run directory to keep them in. */
  frozen?: FrozenCheck[];
}

/** The question asked when the goal file's checks are not the frozen ones. */
export function changedChecksQuestion(change: ChecksChange, goalPath: string): string {
  const list = (checks: readonly FrozenCheck[]) => checks.map((check) => `  - ${check.item}`);
  return [
    `The checks in ${goalPath} are not the ones frozen when the goal was set (the file was edited, maybe by an agent).`,
    ...(change.added.length > 0 ? ['Added (flower would run these commands):', ...list(change.added)] : []),
    ...(change.removed.length > 0 ? ['No longer in the file:', ...list(change.removed)] : []),
    'Which checks should flower run?',
  ].join('\n');
}

/**
 * What is said when the frozen checks run instead of the file's: a line for the added checks and
 * one for the removed ones, each starting with what happened to them, so that a line cut at the
 * terminal's width still says it. The full text is in the event.
 */
export function frozenChecksLines(change: ChecksChange, goalPath: string): string[] {
  const file = basename(goalPath);
  const items = (checks: readonly FrozenCheck[]) => checks.map((check) => `"${check.item}"`).join(', ');
  return [
    ...(change.added.length > 0
      ? [
          `not run, added to ${file} after the goal was set: ${items(change.added)} (approve on a terminal, or set the goal again)`,
        ]
      : []),
    ...(change.removed.length > 0
      ? [`still run, as the goal was set, though no longer in ${file}: ${items(change.removed)}`]
      : []),
  ];
}

/** The default `approveChecks`: one question on the channel; anything but the second choice is no. */
function askOnChannel(channel: HumanChannel): NonNullable<WithGoalOptions['approveChecks']> {
  return async (change, goalPath) => {
    // Unattended (the CLI's choice when nobody is at a terminal): nobody can say yes, so no question.
    if (channel.timeoutSeconds !== null && channel.timeoutSeconds <= 0) return false;
    const question = await channel.ask(changedChecksQuestion(change, goalPath), [...CHANGED_CHECKS_CHOICES]);
    const answer = question.state === 'answered' ? question.answer : '';
    return pickChoice(answer, CHANGED_CHECKS_CHOICES) === CHANGED_CHECKS_CHOICES[1];
  };
}

type Say = (text: string, notice: 'ok' | 'fail' | 'info' | 'warning', data?: Record<string, unknown>) => void;

function sayer(ctx: WorkflowContext): Say {
  return (text, notice, data = {}) =>
    ctx.onEvent?.({
      kind: 'system',
      text,
      payload: {
        subtype: GOAL_GUARD_EVENT,
        data,
        ...(notice === 'warning' ? { warning: true } : { notice }),
      },
    });
}

/**
 * The checklist items whose checks run for `goal`, and the added checks that do not: the frozen
 * checks, unless a human approves the file's. A goal seen for the first time is frozen as it is.
 */
async function settleChecks(
  ctx: WorkflowContext,
  goal: Goal,
  options: WithGoalOptions,
  state: GuardState,
): Promise<{ items: readonly string[]; notRun: readonly FrozenCheck[] }> {
  const runDir = ctx.runtime?.runDir;
  const freeze = (items: readonly string[]) => {
    if (runDir) freezeChecks(runDir, options.goalPath, items);
    else state.frozen = checksOf(items);
  };
  const frozen = runDir ? loadFrozenChecks(runDir, options.goalPath) : state.frozen;
  if (frozen === undefined) {
    freeze(goal.checks);
    return { items: goal.checks, notRun: [] };
  }
  const change = compareChecks(goal.checks, frozen);
  if (!hasChanged(change)) return { items: goal.checks, notRun: [] };
  const signature = changeSignature(change);
  let approved = state.checkDecisions.get(signature);
  if (approved === undefined) {
    approved = await (options.approveChecks ?? askOnChannel(options.channel))(change, options.goalPath);
    state.checkDecisions.set(signature, approved);
    const data = {
      added: change.added.map((check) => check.item),
      removed: change.removed.map((check) => check.item),
      path: options.goalPath,
      approved,
    };
    if (approved) {
      freeze(goal.checks);
      sayer(ctx)(
        `the checks in ${basename(options.goalPath)} as they are now are the goal's checks`,
        'info',
        data,
      );
    } else {
      for (const line of frozenChecksLines(change, options.goalPath)) sayer(ctx)(line, 'warning', data);
    }
  }
  return approved ? { items: goal.checks, notRun: [] } : { items: change.frozenItems, notRun: change.added };
}

export function withGoal(step: Step, options: WithGoalOptions): Step {
  const label = options.name ?? `${step.name}:verdict`;
  const total = Math.max(1, options.rounds ?? 3);
  const judgeSpec =
    options.spec ??
    judge({
      ...options.role,
      name: label,
      channel: options.channel,
      instructions: options.instructions ?? '',
      canRun: options.canRun ?? false,
    });
  const states = new WeakMap<WorkflowContext, GuardState>();
  const stateOf = (ctx: WorkflowContext): GuardState => {
    let state = states.get(ctx);
    if (state === undefined) {
      state = {
        stall: new StallWatch(options.stall ?? DEFAULT_STALL_ROUNDS),
        history: { rounds: 0 },
        checkDecisions: new Map(),
      };
      states.set(ctx, state);
    }
    return state;
  };

  const when = async (ctx: WorkflowContext): Promise<boolean> => {
    if (step.when && !(await step.when(ctx))) return false;
    const runDir = ctx.runtime?.runDir;
    const history = runDir ? goalHistory(runDir, label, options.goalStep ?? SET_GOAL_STEP) : { rounds: 0 };
    stateOf(ctx).history = history;
    ctx.goalRounds = history.rounds;
    if (history.rounds < total) {
      // Asked now, while whoever started flower is still there, not after a round of work.
      await settleChecks(ctx, currentGoal(ctx, options.goalPath), options, stateOf(ctx));
      return true;
    }
    // No rounds left for this goal: say so, and spend nothing.
    const last = history.last;
    if (last) ctx.verdict = new Verdict({ state: last.verdict, reason: last.reason, failed: last.notPassed });
    if (last?.verdict === 'achieved') return false;
    throw new StepAbort(outOfRoundsLine(history.rounds, total, last?.reason ?? '', last?.notPassed));
  };

  const gate = async (result: StepResult, ctx: WorkflowContext): Promise<boolean> => {
    const runner = ctx.runtime;
    if (!runner)
      throw new StepAbort('No runtime is available to run the judge, so the goal cannot be checked.');
    const round = (ctx.goalRounds ?? 0) + 1;
    ctx.goalRounds = round;
    const goal = currentGoal(ctx, options.goalPath);
    const workspace = runner.workspace ?? process.cwd();
    const say = sayer(ctx);

    const settled = await settleChecks(ctx, goal, options, stateOf(ctx));
    const checked = checkedItems(settled.items).length;
    say(
      `judging round ${round}/${total}${checked > 0 ? `: ${checked} check${checked === 1 ? '' : 's'} on this machine, then the judge` : ''}`,
      'info',
      { round, rounds: total },
    );
    const runs = await runChecks(settled.items, {
      cwd: workspace,
      dir: join(options.checksDir ?? join(workspace, '.flower', 'artifacts', 'checks'), String(round)),
      ...(options.checkEnv ? { env: options.checkEnv } : {}),
      ...(options.checks ? { policy: options.checks } : {}),
      ...checkWall(runner, workspace, options.checkEnv),
      onResult: (run) => say(checkLine(run), run.passed ? 'ok' : 'fail', { check: manifestChecks([run])[0] }),
    });
    ctx.checkRuns = runs;

    const ruling = await runner.run(
      judgeSpec,
      verifyPrompt(
        goal.promptBlock() || '(there is no goal)',
        result.text || '(the worker said nothing this round)',
        {
          checks: runs,
          assumptions: goal.assumptions,
          notRun: settled.notRun.map((check) => check.item),
        },
      ),
      { stepName: `${label}#${round}`, ...(ctx.onEvent ? { onEvent: ctx.onEvent } : {}) },
    );
    // The budget ran out while the judge was reading: nothing was ruled, so no round was spent.
    if (isBudgetStop(ruling)) throw new StepAbort(ruling.error ?? '');
    const verdict = rulingWithChecks(readRuling(ruling), runs);
    ctx.verdict = verdict;
    annotateResult(runner, ruling, {
      verdict: verdict.state ?? 'not yet',
      reason: verdict.reason,
      not_passed: [...verdict.failed],
      round,
      rounds: total,
      checks: manifestChecks(runs),
    });
    if (verdict.achieved) return true;

    const guard = stateOf(ctx);
    if (verdict.cannotVerify) {
      if (await askHuman(ctx, verdict, goal, options)) return true;
      // A human decided how to go on: the brake counts afresh from here.
      guard.stall.record(roundState(runs, verdict, workspaceState(workspace, excluded(options, runner))));
      guard.stall.restart();
    }
    const rejection = ctx.verdict?.reason || verdict.reason || UNCLEAR_VERDICT_REASON;
    annotateResult(runner, result, { rejected: rejection, missing: [...verdict.failed] });
    if (round >= total) throw new StepAbort(outOfRoundsLine(round, total, rejection, verdict.failed));
    if (!verdict.cannotVerify)
      await brake(
        guard.stall,
        roundState(runs, verdict, workspaceState(workspace, excluded(options, runner))),
        options.channel,
      );
    return false;
  };

  return {
    ...step,
    retries: total - 1,
    when,
    roundOf: (ctx) => ({ round: (ctx.goalRounds ?? 0) + 1, rounds: total }),
    resumePrompt: (ctx) => {
      const prompt = renderPrompt(step, ctx, true);
      const last = stateOf(ctx).history.last;
      if (last === undefined || last.verdict === 'achieved') return prompt;
      const feedback = new Verdict({
        state: last.verdict,
        reason: last.reason,
        failed: last.notPassed,
      }).feedback();
      return `${prompt}\n\nWhen you stopped last time, the judge had ruled on your work. ${feedback}`;
    },
    gate,
    onReject: (_result, ctx) => (ctx.verdict ? sendBackText(ctx.verdict, ctx.checkRuns ?? []) : ''),
  };
}

/**
 * The wall the checks run in: the runner's policy and places. A runner that says nothing about the
 * sandbox (a library runner, a test double) gets the default policy: only an explicit
 * `enabled: false` (`--no-sandbox`) runs checks on the host.
 */
function checkWall(runner: StepRunner, workspace: string, env: EnvMap | undefined): { wall?: CheckWall } {
  const policy = runner.sandbox ?? defaultSandboxPolicy;
  if (!policy.enabled) return {};
  const places =
    runner.sandboxPlaces?.() ??
    sandboxPlaces({
      env: env ?? process.env,
      workspace,
      ...(runner.runDir === undefined ? {} : { runDir: runner.runDir }),
    });
  return { wall: { policy, places } };
}

/** What the brake leaves out of the workspace's state. */
function excluded(options: WithGoalOptions, runner: { workspace?: string; runDir?: string }): string[] {
  if (options.exclude) return options.exclude;
  const workspace = runner.workspace ?? process.cwd();
  return [...(runner.runDir ? [runner.runDir] : []), join(workspace, '.flower')];
}

/** Records the round's state; when the brake trips, a human may wave it on, otherwise the task stops. */
async function brake(
  stall: StallWatch,
  state: ReturnType<typeof roundState>,
  channel: HumanChannel,
): Promise<void> {
  if (!stall.record(state)) return;
  const line = stall.stopLine();
  const question = await channel.ask(`${line.split(';')[0]}. Go on anyway?`, [...STALL_CHOICES]);
  const answer = question.state === 'answered' ? question.answer : '';
  if (pickChoice(answer, STALL_CHOICES) === STALL_CHOICES[1]) {
    stall.restart();
    return;
  }
  throw new StepAbort(line);
}

/**
 * The verdict of a judge run. A run that failed rules nothing, whatever text it left behind, and
 * an unreadable ruling says so in its reason (it is what the worker is told).
 */
function readRuling(ruling: StepResult): Verdict {
  if (!ruling.ok) {
    return new Verdict({
      reason: `${UNCLEAR_VERDICT_REASON} (The judge's own run failed: ${ruling.error ?? 'no reason recorded'}.)`,
    });
  }
  const verdict = Verdict.parse(ruling.text);
  if (verdict.parsed) return verdict;
  return verdict.withReason(
    verdict.reason ? `${UNCLEAR_VERDICT_REASON} It wrote:\n${verdict.reason}` : UNCLEAR_VERDICT_REASON,
  );
}

/** The complete goal in the context, else the one on disk, else an empty one. */
function currentGoal(ctx: WorkflowContext, goalPath: string): Goal {
  if (ctx.goal?.complete) return ctx.goal;
  return Goal.load(goalPath) ?? new Goal();
}

/** The judge could not verify: the human decides. Returns whether the step passes. */
async function askHuman(
  ctx: WorkflowContext,
  verdict: Verdict,
  goal: Goal,
  options: WithGoalOptions,
): Promise<boolean> {
  const { channel, goalPath } = options;
  const question = await channel.ask(
    `The judge says the goal cannot be verified here: ${verdict.reason || '(no reason given)'}\nWhat now?`,
    [...CANNOT_VERIFY_CHOICES],
  );
  if (question.state !== 'answered') {
    // The question was never on screen when nobody was there to answer: the line says what it was.
    const why = oneLine(verdict.reason) || 'no reason given';
    throw new StepAbort(
      `The judge could not verify the goal in this environment (${why.length > 100 ? `${why.slice(0, 97)}...` : why}) ` +
        `and nobody answered whether to accept it. Decide, then run flower ` +
        `again: change ${goalPath}, or read the verdict in runs/manifest.json.`,
    );
  }
  const answer = question.answer.trim();
  const [accept, change] = CANNOT_VERIFY_CHOICES;
  const choice = pickChoice(answer, [accept, change]);
  if (choice === accept) return true;
  if (choice === change) {
    const newGoal = await channel.ask(
      'What should the goal be now? It is added to the current goal; the checklist stays as it is.',
    );
    const text = newGoal.state === 'answered' ? newGoal.answer.trim() : '';
    if (text) {
      // Amend the file as it is now, not the goal this process read: a person's edits since stay.
      const onDisk = Goal.load(goalPath);
      const amended = (onDisk?.complete ? onDisk : goal).amend(text);
      amended.write(goalPath);
      ctx.goal = amended;
      ctx.verdict = verdict.withReason(`A human changed the goal. The new goal: ${text}`);
    }
    return false;
  }
  ctx.verdict = verdict.withReason(
    `A human says the goal can be reached here and the judge was wrong. In their words: ${answer}`,
  );
  return false;
}
