/**
 * When a session hands off to a fresh one (HandoffPolicy), and what the Claude Code harness may do
 * with its own compaction (CompactPolicy).
 *
 * Handoff thresholds (tokens of main-thread context):
 *   room   = headroom if > 0, else max(50 000, 25% of the window)
 *   at     = max(10 000, window − room)          the handoff starts here
 *   warnAt = max(1 000, at − 20 000)             one early warning per session
 * e.g. 200k window → room 50k, at 150k, warn 130k; 1M window → room 250k, at 750k.
 *
 * A fixed 50k headroom at a 1M window left too little room to write the handoff document itself
 * (measured: 7 of 8 handoffs in one run came out empty), hence the proportional default.
 */
import { defaultWindow } from './window.js';

/** Fraction of the window kept free when no headroom is given. */
export const HEADROOM_FRACTION = 0.25;
/** Never keep less than this free: the handoff turn plus the harness's own compaction point (window − 33k). */
export const HEADROOM_FLOOR = 50_000;
/** The handoff threshold never drops below this, whatever the window and headroom. */
export const HANDOFF_AT_FLOOR = 10_000;
/** The warning comes this many tokens before the handoff threshold. */
export const WARN_OFFSET = 20_000;
/** ...but never below this. */
export const WARN_AT_FLOOR = 1_000;

export interface HandoffPolicyOptions {
  enabled?: boolean;
  window?: number;
  headroom?: number;
  maxGenerations?: number;
}

export class HandoffPolicy {
  /** Off means no handoff: the harness's own compaction takes over near the limit. */
  readonly enabled: boolean;
  /** Context window in tokens; fixed at construction so one run uses one value throughout. */
  readonly window: number;
  /** Tokens kept free below the window; 0 means automatic (see `room`). */
  readonly headroom: number;
  /** Handoffs allowed per step: stops a loop when `at` is below what a fresh session starts with. */
  readonly maxGenerations: number;

  constructor(options: HandoffPolicyOptions = {}) {
    this.enabled = options.enabled ?? true;
    this.window = options.window ?? defaultWindow();
    this.headroom = options.headroom ?? 0;
    this.maxGenerations = options.maxGenerations ?? 8;
  }

  /** The free space actually kept below the window. */
  get room(): number {
    return this.headroom > 0
      ? this.headroom
      : Math.max(HEADROOM_FLOOR, Math.floor(this.window * HEADROOM_FRACTION));
  }

  /** Main-thread context (tokens) at which the session writes its handoff and retires. */
  get at(): number {
    return Math.max(HANDOFF_AT_FLOOR, this.window - this.room);
  }

  /** Context at which the one early warning is emitted. */
  get warnAt(): number {
    return Math.max(WARN_AT_FLOOR, this.at - WARN_OFFSET);
  }
}

/**
 * - `auto`: the harness summarises the conversation near window − 33k (its default);
 * - `no-summary`: no automatic compaction (what a handoff-enabled run wants: flower hands off instead);
 * - `off`: no compaction at all, not even a manual `/compact`.
 */
export type CompactMode = 'auto' | 'no-summary' | 'off';
const COMPACT_MODES: readonly string[] = ['auto', 'no-summary', 'off'];

export interface CompactPolicyOptions {
  mode?: CompactMode;
  window?: number;
}

export class CompactPolicy {
  /** What the harness may compact on its own. */
  readonly mode: CompactMode;
  /** The window the harness should assume (it cannot know a gateway's real limit); unset = its own guess. */
  readonly window?: number;

  constructor(options: CompactPolicyOptions = {}) {
    this.mode = options.mode ?? 'auto';
    if (options.window !== undefined) this.window = options.window;
  }

  /**
   * The variables this policy sets for the Claude Code subprocess. Only the copy flower passes to
   * the subprocess counts; the same names in the user's shell are overridden.
   */
  env(): Record<string, string> {
    const variables: Record<string, string> = {};
    // JavaScript callers are not held to the type; say what is wrong instead of silently compacting.
    if (!COMPACT_MODES.includes(this.mode)) {
      throw new Error(
        `CompactPolicy mode must be one of ${COMPACT_MODES.join(', ')}; got "${String(this.mode)}"`,
      );
    }
    if (this.mode === 'no-summary') variables.DISABLE_AUTO_COMPACT = '1';
    if (this.mode === 'off') variables.DISABLE_COMPACT = '1';
    if (this.window !== undefined) variables.CLAUDE_CODE_AUTO_COMPACT_WINDOW = String(this.window);
    return variables;
  }
}
