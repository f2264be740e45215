/**
 * `Runtime`: runs one agent spec as one step, and decides what happens when something goes wrong.
 *
 * A step ends in exactly one of these ways (the run loop, `run`):
 * - success;
 * - a human interrupt: the same session is resumed with the human's words (not an attempt);
 * - a full context: the session writes a handoff document and a fresh session takes over (not an
 *   attempt either; at most `maxGenerations` times, and never twice degraded in a row);
 * - a failure: fatal ones (credentials, permissions, bad requests) stop at once with a hint to run
 *   `flower setup`, and so do the ones `fail-fast.ts` recognises while the attempt runs (a refused
 *   key, a model the endpoint lacks, a binary that never started, an endpoint that never answered
 *   this task); the others wait for the endpoint, back off, and resume the same session with a
 *   prompt that carries no error details, up to `maxAttempts`.
 *
 * Invariants (red lines):
 * - `run` never throws for a model or API failure: the outcome is in the returned `StepResult`.
 * - The handoff watermark counts main-thread context only, and it is per step and per generation.
 * - The step's session id reaches `lineage.json` the moment it appears; the manifest row is written
 *   when the step ends, or by the SIGTERM/SIGHUP rescue if the process is told to stop first; until
 *   then an in-flight marker lets the next start book a step that SIGKILL ended (`in-flight.ts`).
 * - No transcript entry goes missing silently: the SDK mirrors into a guard that keeps what the
 *   store refuses and writes it later (`transcript-safety.ts`); what earlier processes left is
 *   settled before the first step (`prepare`, `leftovers.ts`).
 * - `run_dir` resolves against the workspace, so `runs/` and `.flower/` stay together; it is
 *   private (0700, files 0600) and ignores itself in git (`run-directory.ts`).
 * - Credential values are masked in the manifest's texts, never in what the next step is told.
 * - The subprocess never compacts on its own while handoff is on (auto-compact is forced off for a
 *   spec that leaves compaction unset): a context drop always has a visible cause.
 */
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { checkCredentials } from '../config/credentials.js';
import { environmentSizeMessage } from '../config/environment-size.js';
import { type EnvMap, isSourceCheckout } from '../config/paths.js';
import { HandoffPolicy, type HandoffPolicyOptions } from '../config/policies.js';
import { defaultWindow, rememberOverflow } from '../config/window.js';
import { maskSecrets, rememberSecrets } from '../output/secrets.js';
import type { SessionBackend } from '../store/backend.js';
import { totalCostOf } from '../store/cost-state.js';
import type { RewriteOptions } from '../store/rewrite.js';
import { RewritingSessionStore } from '../store/rewriting-store.js';
import { projectKeyFor } from '../store/session-key.js';
import { SqliteSessionStore } from '../store/sqlite-session-store.js';
import { packageRoot } from '../version.js';
import type { AgentSpec } from './agent-spec.js';
import { type AttemptWatch, runAttempt } from './attempt.js';
import { StepMarks, stepReader } from './books/step-transcripts.js';
import { EndpointHistory } from './endpoint-history.js';
import { type EventSink, type FlowerEvent, messageMetaOf } from './events.js';
import { AttemptSentinel, type FailFastStop } from './fail-fast.js';
import { degradedLimitReason, generationLimitReason, isContextOverflow } from './handoff-document.js';
import { type HandoffRequest, writeHandoff } from './handoff-turn.js';
import { clearInFlight, markInFlight } from './in-flight.js';
import { ledgerCost, ledgerForStep, stepSessions } from './ledger.js';
import { settleLeftovers } from './leftovers.js';
import { Lineage } from './lineage.js';
import { manifestPath, saveManifestRows } from './manifest.js';
import { buildOptions, childEnvironment, startsAgentProcess } from './options.js';
import {
  backoffDelay,
  classifyFailure,
  describeFailure,
  describeOffline,
  describeWait,
  fatalFailureMessage,
  offlineGaveUpError,
  type ResiliencePolicy,
  resiliencePolicy,
  shouldRetry,
  waitOnline,
} from './resilience.js';
import { ResumeFiles } from './resume-files.js';
import { prepareRunDirectory } from './run-directory.js';
import { newRunId } from './run-id.js';
import { type SandboxPlaces, sandboxPlaces } from './sandbox/places.js';
import { defaultSandboxPolicy, type SandboxPolicy } from './sandbox/policy.js';
import { type RuntimeSharing, STEP_FLUSH_MS } from './shared/sharing.js';
import { onTerminationSignal } from './signals.js';
import {
  CONTEXT_FULL_HANDOFF,
  epochSeconds,
  finishStepResult,
  INTERRUPTED_BY_HUMAN,
  markKilledBySignal,
  newStepResult,
  OWNERSHIP_PAUSED,
  type RowAnnotations,
  resumeRewrite,
  type StepResult,
} from './step-result.js';
import { TranscriptSafety } from './transcript-safety.js';

/** Failures that are limits the caller set (budget, turns): fatal, but no reason to run `flower setup`. */
const SPENT_LIMIT = /budget|max_turns/i;

/** Appended after the human's words when a step resumes from an interrupt. */
export const INTERRUPT_NOTE =
  'Note: a tool call or subagent that was running when you were interrupted may report that it was ' +
  'interrupted or that the user did not want it. That is only a side effect of the interruption, not ' +
  'a problem with the environment: do not investigate it and do not change your approach because of ' +
  'it; run the call again if you still need its result.';

export interface RuntimeOptions {
  /** The agent's working directory; created if missing. */
  workspace: string;
  /** Sessions, manifest and lineage; default `runs`, resolved against the workspace. */
  runDir?: string;
  /**
   * The environment for credentials, the endpoint, the window and the agent process.
   * Default: this process's environment (after the `.env` chain has been applied to it).
   */
  env?: EnvMap;
  /** Default true: ignore host and project Claude Code settings. Only library callers can turn it off. */
  portable?: boolean;
  /** Outage handling: `false` turns it off, an object overrides some of the defaults. */
  resilience?: boolean | Partial<ResiliencePolicy>;
  /** Handoff: `false` turns it off (the harness compacts instead); options or a policy to tune it. */
  handoff?: boolean | HandoffPolicy | HandoffPolicyOptions;
  /** How the session store rewrites history on resume (expire, trim, prune). */
  store?: RewriteOptions;
  /**
   * Where handoff documents are kept (`handoff-<step>.md`), usually the workbench's `notes/`.
   * Without it the document only travels in the successor's prompt.
   */
  notesDir?: string;
  /** Extra directories every session may use (e.g. an external workbench). */
  addDirs?: string[];
  /**
   * The run directory whose `endpoints.json` says whether the endpoint ever answered this task;
   * default `runDir`. Side questions keep their books apart but share what the task knows.
   */
  endpointHistoryDir?: string;
  /** One line per problem with flower's own files (corrupt manifest set aside, write failed). */
  onWarning?: (line: string) => void;
  /**
   * What every session's Bash (and every check) may touch (runtime/sandbox/). Default: sandboxed,
   * the workers reaching the package registries. `enabled: false` only for the user's `--no-sandbox`.
   */
  sandbox?: SandboxPolicy;
  /**
   * The task's state is also kept in PostgreSQL (runtime/shared/): transcripts are mirrored
   * through it behind the local store, and each step's end waits (bounded) for it to catch up.
   */
  shared?: RuntimeSharing;
  /** Details shown only under `-v` (why a lineage was ignored, for instance). */
  onVerbose?: (line: string) => void;
}

export interface RunOptions {
  /** The step's name in the manifest and lineage; default `spec.name`. */
  stepName?: string;
  /** Continue this session. */
  resume?: string;
  /** With `resume`: continue in a fork instead of the session itself. */
  fork?: boolean;
  /** With `resume`: roll back to this message uuid first. */
  resumeAt?: string;
  onEvent?: EventSink;
  /** Called the moment the step's session id is known, and again after every handoff. Errors are ignored. */
  onSession?: (sessionId: string) => void;
  /**
   * Cross-process continuity for this step: its session is recorded in `lineage.json` the moment
   * it appears, and, unless `resume` is given, a session recorded by an earlier process (and still
   * in the store) is continued with the resume prompt instead of starting over with `prompt`.
   * Default false (workflows keep their own lineage; `flower once` keeps none).
   */
  continuous?: boolean;
}

/** Watermark state of one step; reset for every step and every handoff generation. */
interface StepState {
  name: string;
  /** Highest main-thread context seen in the current generation. */
  watermark: number;
  /** The `near` warning was emitted in this generation. */
  warned: boolean;
  /** The session is writing its handoff: exempt from the threshold and from interrupts. */
  writingHandoff: boolean;
}

interface SessionTarget {
  resume?: string | undefined;
  fork?: boolean;
  resumeAt?: string | undefined;
}

/** How a step goes on after an attempt that did not succeed. */
interface Continuation {
  prompt: string;
  target: SessionTarget;
  /** False for interrupts and handoffs: they do not use up the retry budget. */
  countsAsAttempt: boolean;
}

export class Runtime {
  readonly workspace: string;
  readonly runDir: string;
  readonly runId: string = newRunId();
  readonly env: EnvMap;
  readonly portable: boolean;
  readonly resilience: ResiliencePolicy;
  readonly handoff: HandoffPolicy;
  readonly sandbox: SandboxPolicy;
  /** Where transcripts are kept (`runs/sessions.db`). */
  readonly store: SqliteSessionStore;
  /**
   * What the SDK mirrors into and resumes from: `store` behind the rewrite-on-resume layers (and,
   * with a shared store, the write-behind to PostgreSQL between them).
   */
  readonly resumeStore: RewritingSessionStore<SessionBackend>;
  readonly lineage: Lineage;
  readonly notesDir: string | undefined;
  /** Keeps transcript entries the store refused and brings the store up to date again. */
  private readonly transcripts: TranscriptSafety;
  private prepared: Promise<void> | undefined;
  /** Every step this runtime ran, in order. */
  readonly results: StepResult[] = [];

  private readonly options: RuntimeOptions;
  private pendingInterrupt: string | null = null;
  private current: StepResult | null = null;
  /** Handoffs in a row that had to be assembled mechanically (across steps: the cause is the setup). */
  private degradedStreak = 0;
  private modelWarned = false;
  /** Ends the running query's current turn; set while a (non-handoff) query runs. */
  private stopTurn: (() => void) | undefined;
  /** Ends the running turn at once, even a handoff's (the lease is in danger). */
  private endTurnNow: ((graceMs?: number) => void) | undefined;
  /** The task's lease could not be renewed in time: the agent must stop until it is. */
  private ownershipPaused = false;
  /** Each session's running cost total as last reported, so a resume is charged only what it adds. */
  private readonly sessionTotals = new Map<string, number>();
  /** Whether the endpoint ever answered this task: decides "outage, wait" versus "wrong URL, stop". */
  private readonly endpoints: EndpointHistory;
  /** Steps whose last attempt hit a failure no retry can fix (fail-fast.ts). */
  private readonly stops = new WeakMap<StepResult, FailFastStop>();
  /** Load reports already written to a row: the store keeps the last one per session. */
  private readonly recordedRewrites = new WeakSet<object>();

  constructor(options: RuntimeOptions) {
    this.options = options;
    this.env = options.env ?? process.env;
    // What this run's env holds (a FLOWER_ENV file's key included) is masked wherever it is shown.
    rememberSecrets(this.env);
    const missing = checkCredentials(this.env);
    if (missing !== undefined) throw new Error(missing);
    const tooLarge = environmentSizeMessage(this.env);
    if (tooLarge !== undefined) throw new Error(tooLarge);
    this.workspace = resolve(options.workspace);
    this.runDir = resolve(this.workspace, options.runDir ?? 'runs');
    mkdirSync(this.workspace, { recursive: true });
    prepareRunDirectory(this.runDir, this.workspace);
    this.portable = options.portable ?? true;
    this.resilience =
      options.resilience === false
        ? resiliencePolicy({ enabled: false })
        : resiliencePolicy(options.resilience === true ? {} : (options.resilience ?? {}));
    this.handoff = handoffPolicyOf(options.handoff, this.env);
    this.sandbox = options.sandbox ?? defaultSandboxPolicy;
    this.notesDir = options.notesDir;
    this.store = new SqliteSessionStore(join(this.runDir, 'sessions.db'), this.fileOptions());
    const backend: SessionBackend = options.shared ? options.shared.mirror(this.store) : this.store;
    this.resumeStore = new RewritingSessionStore(backend, {
      workspace: this.workspace,
      ...options.store,
      ...(options.onWarning ? { onWarning: options.onWarning } : {}),
    });
    this.lineage = Lineage.open(this.runDir, this.workspace, this.fileOptions());
    this.endpoints = new EndpointHistory(
      resolve(this.workspace, options.endpointHistoryDir ?? this.runDir),
      this.env.ANTHROPIC_BASE_URL,
    );
    this.transcripts = new TranscriptSafety({
      // The SDK mirrors into (and resumes from) the rewriting layer; recovery compares raw rows.
      backend: this.resumeStore,
      target: this.store,
      runDir: this.runDir,
      projectKey: this.projectKey,
      env: this.env,
      ...this.fileOptions(),
    });
  }

  /**
   * The places this task's sandboxes are drawn around: the workspace and the extra directories, the
   * caches, and the credential stores (this task's run directory among them).
   */
  sandboxPlaces(extraDirs: readonly string[] = []): SandboxPlaces {
    return sandboxPlaces({
      env: this.env,
      workspace: this.workspace,
      runDir: this.runDir,
      extraDirs: [...extraDirs, ...(this.options.addDirs ?? [])],
      ...(isSourceCheckout(packageRoot) ? { sourceCheckout: packageRoot } : {}),
    });
  }

  get manifestPath(): string {
    return manifestPath(this.runDir);
  }

  /** The key the SDK files this workspace's sessions under. */
  get projectKey(): string {
    return projectKeyFor(this.workspace);
  }

  /** Whether the store holds `sessionId` for this workspace. */
  hasSession(sessionId: string): boolean {
    return this.store.hasSession(this.projectKey, sessionId);
  }

  /** The main-thread context of the last turn `sessionId` recorded (0 when unknown). */
  contextOf(sessionId: string): number {
    return this.store.lastContext(this.projectKey, sessionId);
  }

  /** This process's total spend in USD, rounded to 1/100 cent. */
  totalCost(): number {
    return Math.round(this.results.reduce((sum, result) => sum + result.costUsd, 0) * 10_000) / 10_000;
  }

  /**
   * Asks the running step to stop at the next message boundary and continue in the same session
   * with `words` (empty: just continue). Safe to call at any time; ignored when no step is running.
   */
  interrupt(words = ''): void {
    if (this.current === null) return;
    this.pendingInterrupt = words;
    this.stopTurn?.();
  }

  /**
   * Work left over from earlier processes in this run directory, done once before the first step
   * (`run` calls it; a workflow calls it before it looks sessions up): transcript entries that
   * never reached the store are copied in, a damaged lineage is rebuilt (see `leftovers.ts`).
   * Never rejects.
   */
  prepare(): Promise<void> {
    this.prepared ??= settleLeftovers({
      runDir: this.runDir,
      projectKey: this.projectKey,
      store: this.store,
      lineage: this.lineage,
      transcripts: this.transcripts,
      ...this.fileOptions(),
    }).catch((error) => {
      this.options.onWarning?.(
        `Could not settle what earlier runs left in ${this.runDir}: ${(error as Error).message}`,
      );
    });
    return this.prepared;
  }

  /**
   * Why this process must not end as a success although its steps may have: transcript entries
   * that are not in the session store (one line), or undefined.
   */
  transcriptProblem(): string | undefined {
    return this.transcripts.problem();
  }

  /** Writes the step in flight as killed by a signal. Synchronous and never throws (signal handlers). */
  rescue(): void {
    try {
      this.transcripts.saveHeld();
      const result = this.current;
      if (result === null || result.endedAt !== 0) return;
      markKilledBySignal(result);
      this.results.push(result);
      this.current = null;
      if (this.persist()) clearInFlight(this.runDir, sessionsOf(result));
    } catch {
      // Last words must not turn into a crash report.
    }
  }

  close(): void {
    this.transcripts.saveHeld();
    try {
      void this.resumeStore.close();
    } catch (error) {
      // A full disk can keep the store from writing its index on close. Its rows are committed
      // (the index is rebuilt on the next open), and the command's own reason must stay its last line.
      this.options.onWarning?.((error as Error).message);
    }
  }

  /**
   * Adds fields a gate learned after `result`'s step ended (a verdict, a rejection) and writes the
   * manifest again. Results of other runtimes are only changed in memory.
   */
  annotate(result: StepResult, fields: RowAnnotations): void {
    result.annotations = { ...result.annotations, ...fields };
    if (this.results.includes(result)) this.persist();
  }

  async run(spec: AgentSpec, prompt: string, options: RunOptions = {}): Promise<StepResult> {
    const step: StepState = {
      name: options.stepName ?? spec.name,
      watermark: 0,
      warned: false,
      writingHandoff: false,
    };
    const result = newStepResult(step.name, this.runId);
    const emit = (event: FlowerEvent): void => options.onEvent?.(event);
    const continuous = options.continuous ?? false;
    await this.prepare();
    this.current = result;
    const stopRescue = onTerminationSignal(() => this.rescue());
    const ownership = this.options.shared?.ownership;
    // No agent works while the lease may be running out: another machine could take the task.
    const stopWatching =
      ownership?.onChange((state) => {
        if (state === 'held') return;
        this.ownershipPaused = true;
        this.endTurnNow?.(ownership.stopGraceMs);
      }) ?? (() => {});
    let target: SessionTarget = {
      resume: options.resume,
      fork: options.fork ?? false,
      resumeAt: options.resumeAt,
    };
    let nextPrompt = prompt;
    if (!options.resume && continuous) {
      const found = this.lineage.sessionFor(step.name, (id) => this.hasSession(id));
      if (found.sessionId !== undefined) {
        target = { resume: found.sessionId };
        nextPrompt = this.resilience.resumePrompt;
        result.resumed = true;
      } else {
        this.options.onVerbose?.(found.reason);
      }
    }
    // Where the resumed session's transcripts stand: the books read only what the step adds.
    const marks = StepMarks.at(this.store, this.projectKey, target.resume ? [target.resume] : []);
    let attempt = 0;
    /** An attempt of this step was stopped for the lease (its query never reported a result). */
    let stoppedForLease = false;
    try {
      for (;;) {
        if (ownership !== undefined && ownership.state !== 'held') {
          const stop = await ownership.regain();
          this.ownershipPaused = false;
          if (stop !== undefined) {
            result.ok = false;
            result.error = stop;
            result.ownershipLost = true;
            break;
          }
        }
        attempt += 1;
        result.attempts = attempt;
        const errorsBefore = result.errors.length;
        await this.attempt(spec, nextPrompt, result, step, target, options.onEvent, (sessionId) => {
          if (continuous) this.lineage.remember(step.name, sessionId);
          try {
            options.onSession?.(sessionId);
          } catch {
            // The callback's failure is its own business; the step goes on.
          }
        });
        if (result.error === OWNERSHIP_PAUSED) stoppedForLease = true;
        if (result.ok) break;
        const overflowed = this.overflowed(result, errorsBefore);
        const next =
          result.error === OWNERSHIP_PAUSED
            ? await this.afterOwnershipPause(result, step, emit, { prompt: nextPrompt, target })
            : result.error === INTERRUPTED_BY_HUMAN
              ? this.afterInterrupt(result, step, emit)
              : result.error === CONTEXT_FULL_HANDOFF || overflowed
                ? await this.afterFullContext(spec, prompt, result, step, overflowed, emit)
                : await this.afterFailure(attempt, result, step, emit, { prompt: nextPrompt, target });
        if (next === undefined) break;
        // Interrupts and handoffs are not failed attempts: they must not eat the retry budget.
        if (!next.countsAsAttempt) attempt -= 1;
        nextPrompt = next.prompt;
        target = next.target;
      }
    } finally {
      // Before the rescue is unregistered: a signal during the read still gets the row written.
      if (this.current === result) {
        await this.closeBooks(result, marks);
        // A query stopped for the lease is ended before it reports its result, and the binary
        // writes no cost-state for it, so the SDK's figure misses every reply of that query (the
        // row said $0 for a minute of work; partition chaos test). Its replies are in the
        // transcript: the row takes the ledger's figure, as a killed attempt's does (in-flight.ts).
        if (stoppedForLease && result.ledger !== undefined)
          result.costUsd = Math.max(result.costUsd, ledgerCost(result.ledger) ?? 0);
        await this.transcripts.settle(result);
      }
      stopRescue();
      stopWatching();
      this.ownershipPaused = false;
      // An interrupt that arrived after the last message boundary belongs to this step, not the next.
      this.pendingInterrupt = null;
      if (this.current === result) {
        finishStepResult(result);
        this.current = null;
        this.results.push(result);
        if (this.persist()) clearInFlight(this.runDir, sessionsOf(result));
      }
      // The step's transcript and books reach the shared store before the next step starts
      // (bounded, and not at all during an outage: the work must not wait for the database).
      await this.options.shared?.flush(STEP_FLUSH_MS);
    }
    return result;
  }

  /** The attempt failed because the context no longer fits (only this attempt's errors count). */
  private overflowed(result: StepResult, errorsBefore: number): boolean {
    return (
      this.handoff.enabled &&
      Boolean(result.sessionId) &&
      isContextOverflow(result.error, ...result.errors.slice(errorsBefore))
    );
  }

  /**
   * The agent was stopped because the lease could not be renewed in time: wait (bounded) for the
   * database. Still the owner: the same session continues, as after an outage (not an attempt).
   * Otherwise the step ends with the line saying who took the task or what stays in runs/.
   */
  private async afterOwnershipPause(
    result: StepResult,
    step: StepState,
    emit: EventSink,
    current: Omit<Continuation, 'countsAsAttempt'>,
  ): Promise<Continuation | undefined> {
    const stop = await this.options.shared?.ownership?.regain();
    this.ownershipPaused = false;
    if (stop !== undefined) {
      result.error = stop;
      result.ownershipLost = true;
      return undefined;
    }
    emit({
      kind: 'retry',
      text: 'The task store answers again: continuing',
      payload: { source: 'runtime', step: step.name, reason: 'ownership' },
    });
    if (!result.sessionId) return { ...current, countsAsAttempt: false };
    result.resumed = true;
    return {
      prompt: this.resilience.resumePrompt,
      target: { resume: result.sessionId },
      countsAsAttempt: false,
    };
  }

  /** A human interrupt: the same session continues with the human's words and the note. */
  private afterInterrupt(result: StepResult, step: StepState, emit: EventSink): Continuation | undefined {
    const words = this.pendingInterrupt ?? '';
    this.pendingInterrupt = null;
    if (!result.sessionId) return undefined;
    emit({
      kind: 'retry',
      text: words ? 'Interrupted; continuing with your words' : 'Interrupted; continuing',
      payload: { source: 'runtime', step: step.name, reason: 'interrupt' },
    });
    result.resumed = true;
    return {
      prompt: interruptPrompt(words, this.resilience.resumePrompt),
      target: { resume: result.sessionId },
      countsAsAttempt: false,
    };
  }

  /**
   * The context is full (threshold reached, or the API said it overflowed): the session writes a
   * handoff (or a degraded one is assembled) and a brand-new session takes over from it, unless
   * the runaway brake says stop.
   */
  private async afterFullContext(
    spec: AgentSpec,
    originalPrompt: string,
    result: StepResult,
    step: StepState,
    overflowed: boolean,
    emit: EventSink,
  ): Promise<Continuation | undefined> {
    // The overflow tells the real window: remember it so the next run hands off in time.
    if (overflowed && step.watermark > 0) rememberOverflow(step.watermark, { env: this.env });
    const tooMany = generationLimitReason(
      { step: step.name, generations: result.retired.length, degradedInARow: this.degradedStreak },
      this.handoff,
    );
    if (tooMany !== undefined) {
      result.error = tooMany;
      return undefined;
    }
    const handoff = await writeHandoff(
      this.handoffRequest(spec, originalPrompt, step, result, overflowed, emit),
    );
    if (result.sessionId) result.retired.push(result.sessionId);
    this.degradedStreak = handoff.degraded ? this.degradedStreak + 1 : 0;
    const unwritable = degradedLimitReason(
      { step: step.name, generations: result.retired.length, degradedInARow: this.degradedStreak },
      this.handoff,
    );
    if (unwritable !== undefined) {
      result.error = unwritable;
      result.sessionId = null;
      return undefined;
    }
    result.sessionId = null;
    step.watermark = 0;
    step.warned = false;
    return { prompt: handoff.prompt, target: {}, countsAsAttempt: false };
  }

  /**
   * A failed attempt: fatal failures stop at once (with the `flower setup` hint when it is a
   * setup problem); others wait for the endpoint, back off, and resume the session if there is one.
   */
  private async afterFailure(
    attempt: number,
    result: StepResult,
    step: StepState,
    emit: EventSink,
    current: Omit<Continuation, 'countsAsAttempt'>,
  ): Promise<Continuation | undefined> {
    // Its message (already the step's error) says what to fix; another attempt would fail the same way.
    if (this.stops.has(result)) return undefined;
    if (!this.resilience.enabled || attempt >= this.resilience.maxAttempts) return undefined;
    const kind = classifyFailure(result.error);
    if (!shouldRetry(kind, this.resilience)) {
      // A spent budget or turn cap is the caller's limit working, not a setup problem.
      if (kind === 'fatal' && !SPENT_LIMIT.test(result.error ?? '')) {
        result.error = fatalFailureMessage(result.error ?? '', this.env.ANTHROPIC_BASE_URL);
      }
      return undefined;
    }
    const notice = (text: string, reason: 'failure' | 'offline') =>
      emit({ kind: 'retry', text, payload: { source: 'runtime', step: step.name, attempt, reason } });
    const delay = backoffDelay(attempt, this.resilience);
    notice(
      `Attempt ${attempt} failed: ${describeFailure(result.error)}; retrying in ${describeWait(delay)}`,
      'failure',
    );
    const online = await waitOnline(this.env.ANTHROPIC_BASE_URL, {
      policy: this.resilience,
      onNotice: (line) => notice(line, 'offline'),
      onStatus: (offline) =>
        emit({
          kind: 'retry',
          text: describeOffline(offline),
          payload: { source: 'runtime', step: step.name, attempt, reason: 'offline', offline },
        }),
    });
    if (!online) {
      result.error = offlineGaveUpError(result.error ?? '', this.resilience);
      return undefined;
    }
    await sleep(delay);
    if (!result.sessionId) return { ...current, countsAsAttempt: true };
    result.resumed = true;
    return {
      prompt: this.resilience.resumePrompt,
      target: { resume: result.sessionId },
      countsAsAttempt: true,
    };
  }

  /**
   * One query of `spec` for the step, with the runtime's hooks, store and compaction rules applied.
   * An attempt that failed in a way no retry can fix is noted in `stops`, its message the error.
   */
  private async attempt(
    spec: AgentSpec,
    prompt: string,
    result: StepResult,
    step: StepState,
    target: SessionTarget,
    sink: EventSink | undefined,
    onSession: (sessionId: string) => void,
  ): Promise<void> {
    const effective: AgentSpec =
      this.handoff.enabled && spec.compact === undefined
        ? { ...spec, compact: { mode: 'no-summary' } }
        : spec;
    const preamble = target.resume ? '' : (spec.sessionPreamble?.() ?? '');
    const sentinel = new AttemptSentinel({
      env: this.env,
      endpoints: this.endpoints,
      probeTimeoutMs: this.resilience.probeTimeoutMs,
    });
    const resumeFiles = target.resume ? await this.resumeFilesFor(target.resume) : undefined;
    const options = buildOptions(effective, {
      cwd: this.workspace,
      sessionStore: resumeFiles?.sessionStore(this.transcripts.sessionStore) ?? this.transcripts.sessionStore,
      ...(resumeFiles ? { beforeSpawn: (env) => resumeFiles.place(env) } : {}),
      resume: target.resume,
      fork: target.fork,
      resumeAt: target.resumeAt,
      portable: this.portable,
      addDirs: this.options.addDirs,
      baseEnv: this.env,
      stderr: sentinel.onStderr,
      sandbox: {
        policy: this.sandbox,
        places: this.sandboxPlaces([...(effective.addDirs ?? []), ...(effective.cwd ? [effective.cwd] : [])]),
        env: childEnvironment(effective, this.env),
      },
    });
    const baseline = target.resume ? await this.sessionCostOf(target.resume) : 0;
    const startedAt = epochSeconds();
    const watch = {
      ...this.watchFor(step, sink, (sessionId) => {
        // Until the step's row is written, a SIGKILL would lose this attempt's books (see in-flight.ts).
        markInFlight(this.runDir, {
          sessionId,
          step: step.name,
          run: this.runId,
          startedAt,
          baselineUsd: baseline,
          resumed: Boolean(target.resume),
        });
        onSession(sessionId);
      }),
      inspect: async (event: FlowerEvent) => (await sentinel.inspect(event))?.message,
    };
    let total: number;
    try {
      total = await runAttempt(
        preamble ? `${preamble}\n\n${prompt}` : prompt,
        options,
        result,
        watch,
        sink,
        baseline,
      );
    } finally {
      this.stopTurn = undefined;
      this.endTurnNow = undefined;
    }
    // A turn ended early by an interrupt reports an error result rather than another message.
    if (!result.ok && this.pendingInterrupt !== null && !step.writingHandoff)
      result.error = INTERRUPTED_BY_HUMAN;
    // Whatever else the turn reported: it was stopped for the lease, and waits for it.
    if (this.ownershipPaused) {
      result.ok = false;
      result.error = OWNERSHIP_PAUSED;
    }
    if (result.sessionId) this.sessionTotals.set(result.sessionId, total);
    const rewrite =
      target.resume &&
      (resumeFiles?.report ??
        this.resumeStore.lastLoadReport({ projectKey: this.projectKey, sessionId: target.resume }));
    if (target.resume && rewrite && !this.recordedRewrites.has(rewrite)) {
      this.recordedRewrites.add(rewrite);
      result.rewrites = [...(result.rewrites ?? []), resumeRewrite(target.resume, rewrite)];
    }
    const stop = await sentinel.conclude(result);
    if (stop === undefined) return;
    result.error = stop.message;
    this.stops.set(result, stop);
  }

  /**
   * The transcript files of a resume, written by flower instead of the SDK (resume-files.ts);
   * undefined where flower does not start the agent itself, the store does not hold the session,
   * or its rows could not be read here.
   */
  private async resumeFilesFor(sessionId: string): Promise<ResumeFiles | undefined> {
    if (!startsAgentProcess) return undefined;
    try {
      return await ResumeFiles.prepare({
        store: this.store,
        workspace: this.workspace,
        rewrite: this.resumeStore.policies,
        ...(this.options.onWarning ? { onWarning: this.options.onWarning } : {}),
        key: { projectKey: this.projectKey, sessionId },
      });
    } catch {
      // The SDK's own path reads the same rows through the store, and reports what fails there.
      return undefined;
    }
  }

  /**
   * The step's ledger (main thread and workers, from what the step appended to the stored
   * transcripts since `marks`) and its threshold.
   */
  private async closeBooks(result: StepResult, marks: StepMarks): Promise<void> {
    if (this.handoff.enabled) result.handoffAt = this.handoff.at;
    result.ledger = await ledgerForStep(
      stepReader(this.store, marks),
      this.projectKey,
      result,
      epochSeconds(),
    );
  }

  /**
   * The running cost total a session had when it last stopped: as last seen in this process, else
   * from the newest `cost-state` entry the store holds for it (a session from an earlier process).
   */
  private async sessionCostOf(sessionId: string): Promise<number> {
    const seen = this.sessionTotals.get(sessionId);
    if (seen !== undefined) return seen;
    try {
      return (
        totalCostOf(await this.resumeStore.lastCostState({ projectKey: this.projectKey, sessionId })) ?? 0
      );
    } catch {
      // Unreadable history: charge the whole reported total rather than fail the step.
      return 0;
    }
  }

  private watchFor(
    step: StepState,
    sink: EventSink | undefined,
    onSession: (sessionId: string) => void,
  ): AttemptWatch {
    return {
      onSession: (sessionId) => {
        if (!step.writingHandoff) onSession(sessionId);
      },
      breakReason: (result) => {
        if (this.ownershipPaused) return OWNERSHIP_PAUSED;
        if (step.writingHandoff) return undefined;
        if (this.handoff.enabled && step.watermark >= this.handoff.at && result.sessionId)
          return CONTEXT_FULL_HANDOFF;
        if (this.pendingInterrupt !== null) return INTERRUPTED_BY_HUMAN;
        return undefined;
      },
      onRunning: (stopTurn, endNow) => {
        this.endTurnNow = endNow;
        // The lease went into danger before the binary was up: stop it as soon as it is.
        if (this.ownershipPaused) endNow(this.options.shared?.ownership?.stopGraceMs);
        if (!step.writingHandoff) this.stopTurn = stopTurn;
      },
      observe: (event, result) => {
        this.transcripts.observe(event);
        if (step.writingHandoff) return;
        const meta = messageMetaOf(event);
        if (meta === undefined || meta.subagent) return;
        const { context, model } = meta;
        if (context !== undefined && context > 0) {
          step.watermark = Math.max(step.watermark, context);
          result.context = step.watermark;
          this.maybeWarnNear(step, sink);
        }
        if (model) this.warnModelMismatch(model, sink);
      },
    };
  }

  private maybeWarnNear(step: StepState, sink: EventSink | undefined): void {
    if (!this.handoff.enabled || step.warned || step.watermark < this.handoff.warnAt) return;
    step.warned = true;
    const { window, at } = this.handoff;
    sink?.({
      kind: 'handoff',
      text: `context ${kilo(step.watermark, 1)}/${kilo(window, 0)} · about ${kilo(Math.max(0, at - step.watermark), 0)} until handoff`,
      payload: { phase: 'near', step: step.name, context: step.watermark, window, at },
    });
  }

  /** Once per runtime: the endpoint served another model than configured, so the window guess may be off. */
  private warnModelMismatch(served: string, sink: EventSink | undefined): void {
    if (this.modelWarned) return;
    this.modelWarned = true;
    const want = (this.env.ANTHROPIC_MODEL ?? '').trim();
    if (want === '' || want.toLowerCase() === served.toLowerCase()) return;
    sink?.({
      kind: 'error',
      text:
        `The endpoint served ${served}, not the configured ${want}. The context window used for ` +
        `handoff (${kilo(this.handoff.window, 0)}) may be wrong: set FLOWER_WINDOW or --window if it is.`,
      payload: { modelMismatch: true, want, served },
    });
  }

  private handoffRequest(
    spec: AgentSpec,
    originalPrompt: string,
    step: StepState,
    result: StepResult,
    forced: boolean,
    emit: EventSink,
  ): HandoffRequest {
    return {
      step: step.name,
      result,
      originalPrompt,
      context: step.watermark,
      policy: this.handoff,
      notesDir: this.notesDir,
      forced,
      emit,
      runTurn: async (prompt, probe) => {
        step.writingHandoff = true;
        try {
          const unbudgeted: AgentSpec = { ...spec, maxBudgetUsd: undefined };
          await this.attempt(
            unbudgeted,
            prompt,
            probe,
            step,
            { resume: result.sessionId ?? undefined },
            undefined,
            () => {},
          );
        } finally {
          step.writingHandoff = false;
        }
      },
    };
  }

  private fileOptions() {
    const options: { onWarning?: (line: string) => void; onVerbose?: (line: string) => void } = {};
    if (this.options.onWarning) options.onWarning = this.options.onWarning;
    if (this.options.onVerbose) options.onVerbose = this.options.onVerbose;
    return options;
  }

  private persist(): boolean {
    // The manifest is read and shared by people: secrets in step texts are masked there (only
    // there: the results in memory are what the next step is told).
    const mask = maskSecrets;
    const shown = this.results.map((result) => ({
      ...result,
      text: mask(result.text),
      error: result.error === null ? null : mask(result.error),
      errors: result.errors.map(mask),
    }));
    return saveManifestRows(this.runDir, this.runId, shown, this.fileOptions());
  }
}

/** The sessions a step's row names: the one holding it now and those its handoffs retired. */
function sessionsOf(result: StepResult): string[] {
  return stepSessions({ session_id: result.sessionId, retired: result.retired });
}

/** The handoff policy from the constructor option; the window defaults from `env`, not `process.env`. */
function handoffPolicyOf(option: RuntimeOptions['handoff'], env: EnvMap): HandoffPolicy {
  if (option instanceof HandoffPolicy) return option;
  const given: HandoffPolicyOptions = typeof option === 'object' ? option : { enabled: option ?? true };
  return new HandoffPolicy({ ...given, window: given.window ?? defaultWindow({ env }) });
}

/** Tokens as `12.3K` (one decimal) or `200K` (none). */
function kilo(tokens: number, decimals: number): string {
  return `${(tokens / 1000).toFixed(decimals)}K`;
}

/** The prompt that continues a step after an interrupt. */
export function interruptPrompt(words: string, resumePrompt: string): string {
  const head = words.trim()
    ? `The human interrupted you here and said:\n\n${words.trim()}\n\nAdjust to that and carry on.`
    : resumePrompt;
  return `${head}\n\n${INTERRUPT_NOTE}`;
}
