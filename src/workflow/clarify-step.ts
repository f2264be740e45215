/**
 * The clarify step: a questions-only role asks the human until the requirement is pinned down,
 * and its four-section reply is frozen as the brief.
 *
 * Invariants:
 * - The step passes only when all four brief sections have content; the brief is written to disk
 *   only then, so a half-clarified brief never unblocks the work.
 * - A complete brief on disk skips the step (a restart does not ask again) but still fills the
 *   context: a skipped step writes nothing itself, and the next step needs the brief.
 * - Downstream gets the brief's compact block, never the clarifier's raw reply (which may hold
 *   pasted code) and never the Q&A: the next step starts a new session (no `resumeFrom`).
 * - Continuing an interrupted clarification sends CLARIFY_RESUME instead of the original request,
 *   so answered questions are not asked again.
 */

import type { HumanChannel } from '../agents/human/channel.js';
import { type ClarifierOptions, clarifier } from '../agents/roles.js';
import type { AgentSpec } from '../runtime/agent-spec.js';
import { Brief } from './brief.js';
import type { WorkflowContext } from './context.js';
import { annotateResult } from './runner.js';
import type { OnFail, PromptSource, Step } from './step.js';

export const CLARIFY_STEP = 'clarify';

export const CLARIFY_RESUME =
  'You were clarifying the requirement and did not finish. Carry on from where you stopped: do not ask ' +
  'again what has already been answered, ask only what the empty sections still need, then reply with ' +
  'the complete four-section brief.';

export interface ClarifyStepOptions {
  channel: HumanChannel;
  /** Where the brief is frozen; must be inside the workbench the run actually uses. */
  briefPath: string;
  /** The human's request. */
  prompt: PromptSource;
  name?: string;
  /** The agent to run; default: the clarifier role on `channel`. */
  spec?: AgentSpec;
  instructions?: string;
  /** Ask even when a complete brief is already on disk. */
  alwaysAsk?: boolean;
  onFail?: OnFail;
  retries?: number;
  /** Further clarifier settings (model, budget, workbench, ...). */
  role?: Omit<ClarifierOptions, 'channel' | 'name' | 'instructions'>;
}

/** Puts a brief into the context the way downstream steps read it. */
function pourBrief(ctx: WorkflowContext, name: string, brief: Brief): void {
  ctx.brief = brief;
  ctx.outputs[name] = brief.promptBlock();
  delete ctx.briefMissing;
}

export function clarifyStep(options: ClarifyStepOptions): Step {
  const name = options.name ?? CLARIFY_STEP;
  const spec =
    options.spec ??
    clarifier({ ...options.role, name, channel: options.channel, instructions: options.instructions ?? '' });
  return {
    name,
    spec,
    prompt: options.prompt,
    resumePrompt: CLARIFY_RESUME,
    retries: options.retries ?? 0,
    onFail: options.onFail ?? 'stop',
    when: (ctx) => {
      if (options.alwaysAsk) return true;
      const onDisk = Brief.load(options.briefPath);
      if (!onDisk?.complete) return true;
      pourBrief(ctx, name, onDisk);
      return false;
    },
    gate: (result, ctx) => {
      const brief = Brief.parse(result.text);
      if (!brief.complete) {
        ctx.briefMissing = brief.missing();
        if (ctx.runtime)
          annotateResult(ctx.runtime, result, {
            rejected: 'the reply is not a complete brief',
            missing: brief.missing(),
          });
        return false;
      }
      brief.write(options.briefPath);
      pourBrief(ctx, name, brief);
      return true;
    },
    reduce: (result, ctx) => ctx.brief?.promptBlock() ?? result.text,
  };
}
