/**
 * The live status: while the model works, a person sees what flower is waiting for and for how
 * long (`~ waiting for the model · 0:14`), instead of a screen that stays blank for half a minute.
 *
 * Invariants:
 * - `LiveStatus` is pure state fed by the same events as the renderer; it does no I/O. The elapsed
 *   time is the time since the situation last changed, so it measures exactly the silence.
 * - On a terminal that takes a footer, the status is a row above the prompt, redrawn in place every
 *   second; nothing is added to the scrollback.
 * - Off a terminal (a pipe, a CI log, `TERM=dumb`) there is no row to redraw, and a line a second
 *   would bury the log. A plain `~ still waiting for the model · 0:30` line is printed only after
 *   30 s of unchanged silence, then after 1, 2, 4, 8 minutes of it and from then on every 10
 *   minutes (CI runners commonly kill a job after 10 silent minutes).
 * - The ticker never keeps the process alive (its timer is unref'd) and stops with `stop()`.
 */
import { ASK_TOOL } from '../../agents/tools.js';
import { type FlowerEvent, messageMetaOf } from '../../runtime/events.js';
import { formatElapsed } from './format.js';
import { toolLabel, workerName } from './renderer.js';
import { oneLine, truncate } from './terminal-text.js';

export interface LiveStatusPolicy {
  /** How often the footer row is redrawn (its clock moves). */
  readonly tickMs: number;
  /** Off a terminal: the silence after which the first "still …" line is printed. */
  readonly firstHeartbeatMs: number;
  /** Off a terminal: the gap between "still …" lines doubles up to this. */
  readonly maxHeartbeatGapMs: number;
}

export const defaultLiveStatusPolicy: LiveStatusPolicy = {
  tickMs: 1000,
  firstHeartbeatMs: 30_000,
  maxHeartbeatGapMs: 600_000,
};

/** How much of a tool's argument the status shows (`running Bash: npm test`). */
const ARGUMENT_CHARS = 40;

const MODEL = 'waiting for the model';

export class LiveStatus {
  private situation: string | undefined;
  private since: number;
  private readonly workers = new Map<string, string>();

  constructor(private readonly now: () => number = Date.now) {
    this.since = now();
  }

  /** What is being waited for, with how long; undefined before the first event and after `stop`. */
  text(): string | undefined {
    if (this.situation === undefined) return undefined;
    return `~ ${this.situation} · ${formatElapsed(this.quietMs())}`;
  }

  /** The situation alone, without the clock (undefined when idle). */
  get waitingFor(): string | undefined {
    return this.situation;
  }

  /** Milliseconds since the situation last changed. */
  quietMs(): number {
    return this.now() - this.since;
  }

  /** Nothing to wait for any more (the run ended). */
  stop(): void {
    this.situation = undefined;
  }

  observe(event: FlowerEvent): void {
    const meta = messageMetaOf(event);
    const worker = meta?.subagent ? this.workerOf(meta.parentToolUseId) : undefined;
    switch (event.kind) {
      case 'dispatch': {
        const name = workerName(event.payload.subagentType, event.payload.description);
        this.workers.set(event.payload.id, name);
        this.set(`${name} at work`);
        return;
      }
      case 'tool_call': {
        // A question is waited on as an answer (its ask event), not as a running tool.
        if (event.tool === ASK_TOOL) return;
        const argument = truncate(oneLine(event.text), ARGUMENT_CHARS);
        const running = `running ${toolLabel(event.tool ?? '')}${argument ? `: ${argument}` : ''}`;
        this.set(worker ? `${worker} ${running}` : running);
        return;
      }
      case 'ask': {
        const payload = event.payload as { kind?: unknown; state?: unknown };
        if (payload.kind !== 'question') return;
        this.set(payload.state === 'asked' ? 'waiting for your answer' : MODEL);
        return;
      }
      case 'task':
        this.set(
          event.payload.phase === 'notification'
            ? MODEL
            : `${oneLine(event.payload.description ?? '') || 'a worker'} at work`,
        );
        return;
      case 'retry':
        this.set(
          event.payload.offline
            ? `waiting for ${oneLine(event.payload.offline.endpoint)} to answer again`
            : 'waiting to retry the API request',
        );
        return;
      case 'handoff':
        this.set('writing a handoff for a fresh session');
        return;
      case 'result':
        this.set('working');
        return;
      default:
        this.set(worker ? `${worker} at work` : MODEL);
    }
  }

  private workerOf(parentToolUseId: string | undefined): string {
    return (parentToolUseId && this.workers.get(parentToolUseId)) || 'a worker';
  }

  private set(situation: string): void {
    if (situation === this.situation) {
      // The same wait goes on, but something happened: the silence starts again.
      this.since = this.now();
      return;
    }
    this.situation = situation;
    this.since = this.now();
  }
}

/** Off a terminal: when the next "still …" line is due, given the silence at which the last one came. */
export function nextHeartbeatAt(lastAtMs: number | undefined, policy: LiveStatusPolicy): number {
  if (lastAtMs === undefined) return policy.firstHeartbeatMs;
  return lastAtMs + Math.min(lastAtMs, policy.maxHeartbeatGapMs);
}

/** What the ticker draws on. `Terminal` satisfies it. */
export interface StatusSurface {
  readonly drawsFooter: boolean;
  setStatus(status: (() => string | undefined) | undefined, paint?: (text: string) => string): void;
  redraw(): void;
  print(lines: readonly string[]): void;
}

export interface LiveStatusDisplayOptions {
  readonly paint: (text: string) => string;
  readonly policy?: LiveStatusPolicy;
}

/**
 * Shows `status` on `surface` until the returned function is called: a footer row redrawn every
 * tick on a terminal, sparse "still …" lines elsewhere.
 */
export function showLiveStatus(
  surface: StatusSurface,
  status: LiveStatus,
  options: LiveStatusDisplayOptions,
): () => void {
  const policy = options.policy ?? defaultLiveStatusPolicy;
  let lastHeartbeat: { situation: string; atMs: number } | undefined;
  const tick = () => {
    if (surface.drawsFooter) {
      surface.redraw();
      return;
    }
    const situation = status.waitingFor;
    if (situation === undefined) return;
    const quiet = status.quietMs();
    // A new silence (the situation changed, or it started again) restarts the schedule.
    if (lastHeartbeat && (lastHeartbeat.situation !== situation || quiet < lastHeartbeat.atMs))
      lastHeartbeat = undefined;
    if (quiet < nextHeartbeatAt(lastHeartbeat?.atMs, policy)) return;
    lastHeartbeat = { situation, atMs: quiet };
    surface.print([options.paint(`  ~ still ${situation} · ${formatElapsed(quiet)}`)]);
  };
  if (surface.drawsFooter) surface.setStatus(() => status.text(), options.paint);
  const timer = setInterval(tick, policy.tickMs);
  timer.unref();
  return () => {
    clearInterval(timer);
    status.stop();
    if (surface.drawsFooter) surface.setStatus(undefined);
  };
}
