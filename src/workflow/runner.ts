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
import type { StepResult } from '../runtime/step-result.js';

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
}
