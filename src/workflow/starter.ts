/**
 * The starter workflow behind `flower "do X"`: clarify → set-goal → work (under the goal guard),
 * plus the two things around it: the read-only wake probe and starting over (`--new`).
 *
 * Invariants:
 * - This module is the single definition of where the workbench and its notes live for the
 *   starter flow (`<ws>/.flower`, or `<parent>/.flower-<name>` with isolation). Paths assembled by
 *   hand elsewhere drift apart silently (brief written to one place, index read from another).
 * - A wake is "a complete brief exists". Waking with a remark puts it in three places — appended to
 *   the brief, the goal derived again from the changed brief, and the work prompt — because missing
 *   any one of them silently loses the remark. Deriving the goal again keeps what a person added
 *   to goal.md by hand (goal-edits.ts). Waking with nothing said costs nothing extra.
 * - A remark given with `clarifyOnly` reaches the brief at once, but no goal or work sees it in that
 *   run: it waits in `notes/pending-remark.md`, and the next run takes it as its remark (goal derived
 *   again, remark in the work prompt) until the work step has run with it. Otherwise words added to
 *   an achieved task would sit in the brief while every later wake said there was nothing to do.
 * - Starting over moves the brief, the goal and the lineage together into
 *   `notes/archive/<timestamp>/` (half an archive leaves "goal still here, conversation gone");
 *   the session store is never touched, so every old transcript stays readable. The manifest
 *   stays too; `--new` marks where the new task starts (task-spend.ts), so its budget and
 *   "whole task" figure start at zero while the archived tasks' spend stays in status and report.
 * - `--isolate` outside a git repository fails before any model is called.
 */
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import type { OnIsolate } from '../agents/guards/isolate.js';
import { HumanChannel } from '../agents/human/channel.js';
import { coordinator, worker } from '../agents/roles.js';
import { Workbench } from '../agents/workbench.js';
import { Lineage, lineagePath } from '../runtime/lineage.js';
import { emitTaskChange } from '../runtime/task-changes.js';
import { markTaskStart, type TaskSpend, taskSpend } from '../runtime/task-spend.js';
import { leaveBequest } from './bequest-turn.js';
import { Brief } from './brief.js';
import { CLARIFY_STEP, clarifyStep } from './clarify-step.js';
import { newContext, type WorkflowContext } from './context.js';
import { Goal } from './goal.js';
import { goalHistory, type PastRuling } from './goal-history.js';
import { goalStep, SET_GOAL_STEP } from './goal-step.js';
import type { Step } from './step.js';
import { withGoal } from './with-goal.js';
import { Workflow } from './workflow.js';

export const WORK_STEP = 'work';
/** The judge's label on the starter's work step (`work:verdict#N` in the manifest). */
export const WORK_VERDICT = `${WORK_STEP}:verdict`;
/** Heading label of a remark given when waking up (appended to the brief). */
export const WAKE_LABEL = 'Added on wake';
export const DEFAULT_WORKER_PROMPT =
  'You implement. Verify after every change you make; do not save the checking for the end.';

/** File names inside the workbench's notes/ directory. */
export interface NoteNames {
  brief?: string;
  goal?: string;
  log?: string;
}

export interface StarterLocation {
  /** Absolute workspace. */
  workspace?: string;
  /** Run directory, relative to the workspace unless absolute (default `runs`). */
  runDir?: string;
  /** Workbench outside the repository, for workers in their own git worktrees. */
  isolate?: boolean;
  notes?: NoteNames;
}

/** Where the starter flow keeps everything, derived in one place. */
export interface StarterPaths {
  workspace: string;
  runDir: string;
  workbench: Workbench;
  brief: string;
  goal: string;
  log: string;
  archive: string;
  /** Words given with `--clarify-only` on a task that already has a brief, kept for the next run. */
  pending: string;
}

/**
 * Resolves the starter flow's locations. With `isolate` the workspace must be a git repository
 * (throws the workbench's IsolationError otherwise); nothing is created on disk.
 */
export function starterPaths(location: StarterLocation = {}): StarterPaths {
  const workspace = resolve(location.workspace ?? '.');
  const workbench = location.isolate ? Workbench.isolated(workspace) : new Workbench(workspace);
  const notes = location.notes ?? {};
  return {
    workspace,
    runDir: resolve(workspace, location.runDir ?? 'runs'),
    workbench,
    brief: join(workbench.notes, notes.brief ?? 'brief.md'),
    goal: join(workbench.notes, notes.goal ?? 'goal.md'),
    log: join(workbench.notes, notes.log ?? 'qa-log.md'),
    archive: join(workbench.notes, 'archive'),
    pending: join(workbench.notes, 'pending-remark.md'),
  };
}

export interface WakeState {
  /** A complete brief exists: this run continues earlier work. */
  waking: boolean;
  brief: string;
  goal: string;
  /** Items in the frozen goal (0 when there is none). */
  items: number;
  /** Of those, the items with a command flower runs on the host (`check: …`). */
  hostChecks: number;
  /** @deprecated the same as `items` (every item was once called a check); read `items`. */
  checks: number;
  /** Wakes counted so far (this run will be `woke + 1`). */
  woke: number;
  /** Step name → session id recorded by earlier runs. */
  steps: Record<string, string>;
  /** The goal's statement ('' when there is none). */
  goalStatement: string;
  /** The judge's last ruling on the current goal, when there was one. */
  lastRuling?: PastRuling;
  /** What the task has spent so far, in every run. */
  spend: TaskSpend;
  /** Words added with `--clarify-only` that no run has worked on yet ('' when none). */
  pendingRemark: string;
}

/** What a banner needs before the run starts. Reads only; writes nothing. */
export function wakeState(location: StarterLocation = {}): WakeState {
  const paths = starterPaths(location);
  // Read only: a damaged lineage is the runtime's to set aside, with its warning and its rebuild.
  const lineage = Lineage.peek(paths.runDir, paths.workspace);
  const goal = Goal.load(paths.goal);
  const { last } = goalHistory(paths.runDir, WORK_VERDICT, SET_GOAL_STEP);
  return {
    waking: Brief.load(paths.brief)?.complete ?? false,
    brief: paths.brief,
    goal: paths.goal,
    items: goal?.checks.length ?? 0,
    hostChecks: goal?.items().filter((item) => item.kind === 'check').length ?? 0,
    checks: goal?.checks.length ?? 0,
    woke: lineage.woke,
    steps: lineage.steps,
    goalStatement: goal?.statement ?? '',
    ...(last && goal ? { lastRuling: last } : {}),
    spend: taskSpend(paths.runDir),
    pendingRemark: readText(paths.pending).trim(),
  };
}

/** `YYYYmmdd-HHMMSS` in local time. */
function stamp(at: Date): string {
  const pad = (value: number) => String(value).padStart(2, '0');
  return (
    `${at.getFullYear()}${pad(at.getMonth() + 1)}${pad(at.getDate())}-` +
    `${pad(at.getHours())}${pad(at.getMinutes())}${pad(at.getSeconds())}`
  );
}

/**
 * Starts over: moves the lineage, the brief and the goal into `notes/archive/<timestamp>/` and
 * returns that directory, or undefined when there was nothing to move. The session store stays.
 */
export function startOver(location: StarterLocation = {}, at: Date = new Date()): string | undefined {
  const paths = starterPaths(location);
  const present = [lineagePath(paths.runDir), paths.brief, paths.goal, paths.pending].filter((path) =>
    existsSync(path),
  );
  if (present.length === 0) return undefined;
  // Steps from here on are the new task's; what the old one spent stays in the manifest.
  markTaskStart(paths.runDir, at.getTime() / 1000);
  let target = join(paths.archive, stamp(at));
  for (let n = 2; existsSync(target); n++) target = join(paths.archive, `${stamp(at)}-${n}`);
  mkdirSync(target, { recursive: true });
  for (const path of present) renameSync(path, join(target, basename(path)));
  // A task kept in PostgreSQL too must forget the archived lineage there (runtime/shared/).
  if (present.includes(lineagePath(paths.runDir))) emitTaskChange(paths.runDir, { kind: 'lineage-archived' });
  return target;
}

export interface StarterFlowOptions extends StarterLocation {
  /** The human's request (on a wake: an optional remark). */
  request?: string;
  /** Start over first (see `startOver`). */
  startOver?: boolean;
  /** Only clarify, then stop. */
  clarifyOnly?: boolean;
  /** Put the work under the goal guard (default true). */
  goal?: boolean;
  /** Total rounds of work under the guard (default 3). */
  rounds?: number;
  /** Let the judge run commands. */
  judgeCanRun?: boolean;
  /** Question quota (undefined = unlimited). */
  maxAsks?: number;
  /** How long a question waits; 0 or less = unattended (default 1800). */
  timeoutSeconds?: number;
  /** Extra instructions for the coordinator. */
  instructions?: string;
  workerPrompt?: string;
  /** Told whenever a dispatch is moved into its own worktree. */
  onIsolate?: OnIsolate;
  /** Rounds in a row ending in the same state that stop the task (default 2; 0 turns the brake off). */
  stall?: number;
  /** Leave a bequest in CLAUDE.md and AGENTS.md when the task ends (default true). */
  bequest?: boolean;
}

/** Raised for a request flower cannot start from; the message says what to do. */
export class StarterError extends Error {
  override readonly name = 'StarterError';
}

export function workPrompt(ctx: WorkflowContext): string {
  const parts = [
    `Do this, as the brief below says:\n\n${ctx.outputs[CLARIFY_STEP] ?? '(there is no brief)'}`,
  ];
  const goal = ctx.goal?.promptBlock();
  if (goal) parts.push(`What counts as done (an independent judge checks every item):\n\n${goal}`);
  return parts.join('\n\n---\n\n');
}

export function wakePrompt(remark: string, goalRederived: boolean, ctx: WorkflowContext): string {
  const parts = [
    remark || 'Carry on from where you stopped last time. First say in one sentence what you will do next.',
  ];
  const goal = ctx.goal?.promptBlock();
  if (goalRederived && goal) {
    parts.push(
      `The checklist was derived again after this remark; this version is the one that counts:\n\n${goal}`,
    );
  }
  return parts.join('\n\n');
}

/** Builds the starter workflow. Throws StarterError (or IsolationError) before any model call. */
export function starterFlow(options: StarterFlowOptions = {}): Workflow {
  const request = (options.request ?? '').trim();
  const paths = starterPaths(options);
  paths.workbench.ensure();
  if (options.startOver) startOver(options);

  const brief = Brief.load(paths.brief);
  const waking = brief?.complete ?? false;
  if (!waking && !request) {
    throw new StarterError(
      'Tell flower what you want in one sentence, for example: flower "write a CLI that counts words"',
    );
  }

  const context = newContext();
  const channel = new HumanChannel({
    // Questions and mail reach the sink of whichever run is active.
    onEvent: (event) => context.onEvent?.(event),
    logPath: paths.log,
    amendPath: paths.brief,
    ...(options.maxAsks === undefined ? {} : { maxAsks: options.maxAsks }),
    ...(options.timeoutSeconds === undefined ? {} : { timeoutSeconds: options.timeoutSeconds }),
  });

  // Words an earlier --clarify-only put in the brief reach this run as if typed now: that run only
  // clarified, so no goal and no work has seen them yet (issue 21).
  const pending = waking ? readText(paths.pending).trim() : '';
  const said = waking ? request : '';
  const amended = said !== '' && !readText(paths.brief).includes(said) && channel.amend(said, WAKE_LABEL);
  const remark = [pending, said].filter(Boolean).join('\n\n');
  const goalRederived = amended || pending !== '';
  if (options.clarifyOnly && amended) writeFileSync(paths.pending, `${remark}\n`);

  const steps: Step[] = [clarifyStep({ channel, briefPath: paths.brief, prompt: request })];
  if (!options.clarifyOnly) {
    const guarded = options.goal ?? true;
    if (guarded)
      steps.push(
        goalStep({ channel, goalPath: paths.goal, briefKey: CLARIFY_STEP, alwaysSet: goalRederived }),
      );
    const coder = worker({
      description: 'Writes code and tests. Dispatch hands-on implementation work to it.',
      prompt: options.workerPrompt ?? DEFAULT_WORKER_PROMPT,
      isolate: options.isolate ?? false,
    });
    const work: Step = {
      name: WORK_STEP,
      spec: coordinator({
        workers: { coder },
        channel,
        workbench: paths.workbench,
        instructions: options.instructions ?? '',
        ...(options.onIsolate ? { onIsolate: options.onIsolate } : {}),
      }),
      prompt: workPrompt,
      resumePrompt: (ctx) => wakePrompt(remark, goalRederived, ctx),
    };
    steps.push(
      guarded
        ? withGoal(work, {
            channel,
            goalPath: paths.goal,
            rounds: options.rounds ?? 3,
            canRun: options.judgeCanRun ?? false,
            checksDir: join(paths.workbench.artifacts, 'checks'),
            exclude: [paths.runDir, paths.workbench.root],
            ...(options.stall === undefined ? {} : { stall: options.stall }),
          })
        : work,
    );
  }
  const bequeath = !options.clarifyOnly && (options.bequest ?? true);
  return new Workflow(steps, {
    name: 'starter',
    context,
    channel,
    workbench: paths.workbench,
    onEnd: async (ctx, runner) => {
      // Only a task that worked in this process ends here; a wake that did nothing leaves the last bequest.
      if (ctx.results[WORK_STEP] === undefined) return;
      // The pending words reached the goal (derived again before the work) and the work prompt.
      if (pending !== '') rmSync(paths.pending, { force: true });
      if (!bequeath) return;
      await leaveBequest(runner, ctx, {
        workspace: paths.workspace,
        workbench: paths.workbench,
        workStep: WORK_STEP,
      });
    },
  });
}

function readText(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return '';
  }
}
