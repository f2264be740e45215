/**
 * The narrow slice of the runtime a workflow depends on.
 *
 * Workflows only need to run one agent turn-sequence per step and to know whether a recorded
 * session still exists. Depending on this interface instead of the whole `Runtime` keeps the
 * orchestration rules testable with a scripted runner, while production passes the real
 * `Runtime`, which satisfies it structurally.
 */
import type { AgentSpec } from '../runtime/agent-spec.js';
import type { EventSink } from '../runtime/events.js';
import type { SandboxPlaces } from '../runtime/sandbox/places.js';
import type { SandboxPolicy } from '../runtime/sandbox/policy.js';
import type { RowAnnotations, StepResult } from '../runtime/step-result.js';

export interface StepRunOptions {
  /** Label for the manifest row (a step name, or a suffixed label such as `work#round2`). */
  stepName?: string;
  /** Session to continue. */
  resume?: string;
  /** Branch off `resume` instead of continuing it (ignored without `resume`). */
  fork?: boolean;
  onEvent?: EventSink;
  /** Called as soon as the step's session id is known (and again after every handoff). */
  onSession?: (sessionId: string) => void;
}

export interface StepRunner {
  /** Runs one step to completion; never throws for API failures (they land in the result). */
  run(spec: AgentSpec, prompt: string, options?: StepRunOptions): Promise<StepResult>;
  /** Absolute workspace path; with `runDir` it enables cross-process continuity. */
  readonly workspace?: string;
  /** Absolute run directory (holds lineage.json). */
  readonly runDir?: string;
  /** Whether the session store still holds `sessionId` for this workspace. */
  hasSession?(sessionId: string): boolean;
  /**
   * Records what a gate learned about a step that already ended (its verdict, its rejection) on
   * that step's manifest row. Optional: a runner without books just keeps them in memory.
   */
  annotate?(result: StepResult, fields: RowAnnotations): void;
  /**
   * Work left over by earlier processes (transcript entries to copy into the store, a damaged
   * lineage to rebuild), done before the workflow looks its sessions up. Never rejects.
   */
  prepare?(): Promise<void>;
  /**
   * The task's sandbox policy: the goal's checks run inside the worker's wall unless it is not
   * `enabled` (`--no-sandbox`). A runner without one gets the default policy, never none.
   */
  readonly sandbox?: SandboxPolicy;
  /** The places the task's walls are drawn around (its workspace, caches, credential stores). */
  sandboxPlaces?(extraDirs?: readonly string[]): SandboxPlaces;
}

/** Adds `fields` to `result`'s row through the runner when it keeps books, else in memory. */
export function annotateResult(runner: StepRunner, result: StepResult, fields: RowAnnotations): void {
  if (runner.annotate) runner.annotate(result, fields);
  else result.annotations = { ...result.annotations, ...fields };
}

/**
 * A runner that runs steps its own way (`run`) and is `inner` in everything else: workspace, run
 * directory, session lookup, the books and the sandbox. Wrappers (guards, a budget, a speaker
 * label) stack this way without one of them silently dropping a capability of the runner below it.
 */
export function wrapRunner(inner: StepRunner, run: StepRunner['run']): StepRunner {
  return {
    run,
    ...(inner.workspace === undefined ? {} : { workspace: inner.workspace }),
    ...(inner.runDir === undefined ? {} : { runDir: inner.runDir }),
    // Bound, so a class-based runner keeps its `this`.
    ...(inner.hasSession ? { hasSession: inner.hasSession.bind(inner) } : {}),
    ...(inner.annotate ? { annotate: inner.annotate.bind(inner) } : {}),
    ...(inner.prepare ? { prepare: inner.prepare.bind(inner) } : {}),
    // Dropping these would not unwall the checks (a runner without them gets the default wall),
    // but it would lose the user's network setting and extra directories.
    ...(inner.sandbox === undefined ? {} : { sandbox: inner.sandbox }),
    ...(inner.sandboxPlaces ? { sandboxPlaces: inner.sandboxPlaces.bind(inner) } : {}),
  };
}
