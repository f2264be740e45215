/**
 * A transcript never goes missing silently: what the runtime does when the session store does not
 * get every entry (a full disk, a damaged database, a backend that went away).
 *
 * Invariants (red lines):
 * - Entries the store refused are data at risk, not a detail for `-v`: the first refusal is said
 *   once in plain words (`onWarning`), every step it touched records it in its manifest row
 *   (`transcript`), and the store is brought up to date as soon as it accepts writes again: the
 *   `MirrorGuard` retries on every later append and at the end of every step.
 * - What is still not in the store when a step ends is written to `runs/unsaved/` (the agent's own
 *   file layout), and the next runtime in that run directory copies it in before its first step,
 *   together with any session of the lineage whose own transcript in the agent's config directory
 *   is newer than the store's copy (a process killed while the store was refusing writes).
 * - What `flower gc` dropped is never copied back (its tombstones in the run directory, pulled
 *   from the database too when there is one: runtime/retention/tombstones.ts): the agent's own
 *   transcript of a dropped session outlives the drop, and the books still name the session.
 *   Entries of a dropped session waiting in `runs/unsaved/` are discarded with it.
 * - When that could not be done the process must not look successful: `problem()` gives the
 *   one-line reason the command line ends with (exit 1).
 * - `mirror_error` (the SDK dropped a batch it could not hand over) is recovered from the agent's
 *   local transcript, and is never "recovered" when that has no file (a resumed session's copy is
 *   gone when its query ends): the step says `unsaved` and `problem()` names it.
 *   `session_writes_lost` (the agent could not write its own transcript: ENOSPC, EDQUOT) cannot be
 *   recovered at all and is reported as lost.
 * - Nothing here throws into the run: every failure becomes a warning and a manifest field.
 */
import { rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { SessionKey, SessionStore } from '@anthropic-ai/claude-agent-sdk';
import { type EnvMap, homeDirectory } from '../config/paths.js';
import { type HeldEntries, MirrorGuard } from '../store/mirror-guard.js';
import { tombstoneKey } from '../store/retention/tombstones.js';
import {
  appendTranscriptFile,
  recoverSession,
  sessionsUnder,
  type TranscriptTarget,
  transcriptFile,
} from '../store/transcript-recovery.js';
import type { FlowerEvent } from './events.js';
import { stepSessions } from './ledger.js';
import { readTombstones } from './retention/tombstones.js';
import type { StepResult, TranscriptRisk } from './step-result.js';

/** Where refused entries wait for the next start, inside the run directory. */
export const UNSAVED_DIRECTORY = 'unsaved';

/** The agent's own transcripts: `projects/` in its config directory (CLAUDE_CONFIG_DIR or ~/.claude). */
export function agentProjectsRoot(env: EnvMap): string {
  const configDir = env.CLAUDE_CONFIG_DIR?.trim() || join(homeDirectory(env), '.claude');
  return join(configDir, 'projects');
}

export interface TranscriptSafetyOptions {
  /** What the SDK mirrors into (reads may rewrite history: it is what `resume` loads). */
  backend: SessionStore;
  /** The same store, read raw: recovery compares against exactly what was appended. */
  target: TranscriptTarget;
  runDir: string;
  /** This workspace's project key (only its sessions are looked at on start). */
  projectKey: string;
  /** The agent's environment: where its config directory, and so its own transcripts, are. */
  env: EnvMap;
  onWarning?: (line: string) => void;
  onVerbose?: (line: string) => void;
}

/** Trouble seen for one session while this runtime ran. */
interface SessionTrouble {
  error: string;
  /** The SDK dropped a batch: recover from the agent's local transcript at the end of the step. */
  dropped: boolean;
  /** The agent could not write its own transcript either: nothing to recover from. */
  lost?: string;
}

/** Where a session's refused entries went at the end of its step, or when the process ends. */
interface UnsavedRecord {
  /** How many runs/unsaved/ holds (what it could not take is still held by the guard). */
  entries: number;
  /** runs/unsaved/, or the agent's own directory when runs/unsaved/ could not take them. */
  where: string;
  /** The store's refusal. */
  error: string;
}

/** What to say when the agent could not write its own transcript (nothing has the lines then). */
function lostLine(sessionId: string, why: string): string {
  return `Claude Code could not save part of the transcript of session ${sessionId} (${why}); resuming it may miss part of the conversation.`;
}

export class TranscriptSafety {
  /** Hand this to the SDK (`sessionStore`) instead of the backend. */
  readonly sessionStore: MirrorGuard;
  private readonly unsavedRoot: string;
  private readonly trouble = new Map<string, SessionTrouble>();
  /** Sessions whose refused entries are only in `runs/unsaved/` (or nowhere) now. */
  private readonly unsaved = new Map<string, UnsavedRecord>();
  /** Entries the guard wrote after the store had refused them, per session. */
  private readonly writtenLate = new Map<string, number>();
  private warned = false;
  private lostWarned = false;

  constructor(private readonly options: TranscriptSafetyOptions) {
    this.unsavedRoot = join(options.runDir, UNSAVED_DIRECTORY);
    this.sessionStore = new MirrorGuard(options.backend, {
      onFailure: ({ key, error }) => this.noteTrouble(key.sessionId, error, false),
      onCaughtUp: (key, entries) =>
        this.writtenLate.set(key.sessionId, (this.writtenLate.get(key.sessionId) ?? 0) + entries),
    });
  }

  /** Looks at every event of an attempt for the SDK's own reports of lost entries. */
  observe(event: FlowerEvent): void {
    // Stryker disable next-line ConditionalExpression: no other kind of event has the subtype mirror_error or session_writes_lost
    if (event.kind !== 'system') return;
    const data = event.payload.data;
    if (event.payload.subtype === 'mirror_error') {
      const key = data.key as Partial<SessionKey> | undefined;
      const sessionId = typeof key?.sessionId === 'string' ? key.sessionId : String(data.session_id ?? '');
      if (sessionId) this.noteTrouble(sessionId, String(data.error ?? 'the store refused a batch'), true);
      return;
    }
    if (event.payload.subtype !== 'session_writes_lost') return;
    const code = String(data.error_code ?? 'ENOSPC');
    const ids = Array.isArray(data.transcript_session_ids)
      ? data.transcript_session_ids.map(String)
      : [String(data.session_id ?? '')];
    // Stryker disable next-line ArrayDeclaration: no placeholder list includes 'transcript' either
    const lost = (Array.isArray(data.lost) ? data.lost.map(String) : []).includes('transcript');
    if (!lost) return;
    const why = `${code}: ${code === 'EDQUOT' ? 'the disk quota is used up' : 'the disk is full'}`;
    for (const sessionId of ids.filter(Boolean)) {
      // Stryker disable next-line ObjectLiteral,BooleanLiteral: a lost session is reported as lost whatever else its trouble says (riskOf and problem look at lost first)
      const trouble = this.trouble.get(sessionId) ?? { error: why, dropped: false };
      trouble.lost = why;
      this.trouble.set(sessionId, trouble);
      if (this.lostWarned) continue;
      this.lostWarned = true;
      this.options.onWarning?.(lostLine(sessionId, why));
    }
  }

  /**
   * At the end of a step: writes what the store still lacks, recovers dropped batches from the
   * agent's transcript, saves the rest to `runs/unsaved/`, and records the outcome in `result`.
   */
  async settle(result: StepResult): Promise<void> {
    const sessions = stepSessions({ session_id: result.sessionId, retired: result.retired });
    const troubled = sessions.filter((sessionId) => this.trouble.has(sessionId));
    if (troubled.length === 0) return;
    let late = 0;
    const held = await this.sessionStore.flush();
    for (const sessionId of troubled) {
      const trouble = this.trouble.get(sessionId) as SessionTrouble;
      if (!trouble.dropped) continue;
      try {
        const recovered = await recoverSession(
          this.options.target,
          agentProjectsRoot(this.options.env),
          this.options.projectKey,
          sessionId,
        );
        late += recovered.entries;
        if (recovered.files > 0) trouble.dropped = false;
      } catch (error) {
        trouble.error = (error as Error).message;
      }
    }
    this.saveHeld(held.filter((waiting) => troubled.includes(waiting.key.sessionId)));
    result.transcript = this.riskOf(troubled, late);
    // Lost entries were said when the agent reported them; where unsaved ones wait is news.
    if (result.transcript.state === 'unsaved') this.options.onWarning?.(result.transcript.detail);
    else if (result.transcript.state === 'recovered')
      this.options.onVerbose?.('The session store has every transcript entry of this step again.');
  }

  /**
   * Writes what the guard still holds to `runs/unsaved/` and lets go of it; what cannot be written
   * stays held (and in `problem()`). Synchronous: the SIGTERM rescue and `close` call it.
   */
  saveHeld(held: HeldEntries[] = this.sessionStore.pending()): void {
    for (const waiting of held) {
      const previous = this.unsaved.get(waiting.key.sessionId);
      const entries = (previous?.entries ?? 0) + waiting.entries.length;
      try {
        appendTranscriptFile(this.unsavedRoot, waiting.key, waiting.entries);
        this.sessionStore.release(waiting.key);
        this.unsaved.set(waiting.key.sessionId, { entries, where: this.unsavedRoot, error: waiting.error });
      } catch {
        // Still held (and counted as held); only the agent's own transcript has them outside memory.
        this.unsaved.set(waiting.key.sessionId, {
          entries: previous?.entries ?? 0,
          where: agentProjectsRoot(this.options.env),
          error: waiting.error,
        });
      }
    }
  }

  /** The one-line reason to end the process unsuccessfully, or undefined when nothing is at risk. */
  problem(): string | undefined {
    const lost = [...this.trouble].filter(([, trouble]) => trouble.lost !== undefined);
    if (lost.length > 0) {
      const [sessionId, trouble] = lost[0] as [string, SessionTrouble];
      // Stryker disable next-line StringLiteral: only sessions whose lost is set get here
      return `${lostLine(sessionId, trouble.lost ?? '')} Free some space before the next run.`;
    }
    // What is still held is written to runs/unsaved/ first, so the reason says where the entries
    // are: a session whose step has not settled (another one's, still running) was held in memory
    // only, and the reason used to say runs/unsaved/ could not take it when nothing had tried.
    // After this, every session with entries outside the store has its record in `unsaved`.
    this.saveHeld();
    const unsaved = [...this.unsaved];
    if (unsaved.length === 0) {
      // A batch the SDK dropped that the agent's own transcript did not give back (a resumed
      // session's copy is gone when its query ends): the store lacks it, and nothing holds it.
      const dropped = [...this.trouble].find(([, trouble]) => trouble.dropped);
      if (dropped === undefined) return undefined;
      const [sessionId, trouble] = dropped;
      return `Transcript entries of session ${sessionId} are not in the session store (${trouble.error}): the SDK dropped them, and the agent's own transcript (${agentProjectsRoot(this.options.env)}) did not have them when the step ended. flower copies them in when it next starts in this directory if that transcript has them by then.`;
    }
    const [first, record] = unsaved[0] as [string, UnsavedRecord];
    const head = `${this.outside(unsaved.map(([sessionId]) => sessionId))} transcript entries (session ${first}) are not in the session store (${record.error});`;
    if (this.sessionStore.pending().length === 0)
      return `${head} they are kept in ${this.unsavedRoot}, and flower copies them in when it next starts in this directory.`;
    // Not even runs/unsaved/ could take them: only the agent's own copy may still have them.
    return `${head} ${this.unsavedRoot} could not take them either. Free some space and run flower here again: it copies them in from the agent's own transcript (${agentProjectsRoot(this.options.env)}) if that still has them.`;
  }

  /**
   * Before the first step of a runtime: copies `runs/unsaved/` into the store, and brings sessions
   * of this workspace up to date from the agent's own transcripts: every one of `suspects` (the
   * sessions of processes that were killed: the SDK mirrors in the background, so their last
   * entries may never have been handed over), and any other whose own transcript is newer than the
   * store's copy: those the store lists, and `knownSessions` (the lineage's and the manifest's),
   * which a damaged store may have lost. Sessions gc dropped are left out of all of it.
   */
  // Stryker disable next-line ArrayDeclaration: a session nobody has finds nothing to copy in
  async recoverAtStart(knownSessions: readonly string[], suspects: readonly string[] = []): Promise<void> {
    let entries = 0;
    let sessions = 0;
    const count = (recovered: { entries: number }) => {
      entries += recovered.entries;
      if (recovered.entries > 0) sessions += 1;
    };
    const dropped = new Set(readTombstones(this.options.runDir).map(tombstoneKey));
    const wasDropped = (projectKey: string, sessionId: string) =>
      dropped.has(tombstoneKey({ projectKey, sessionId }));
    for (const [projectKey, sessionId] of sessionsUnder(this.unsavedRoot)) {
      try {
        if (!wasDropped(projectKey, sessionId))
          count(await recoverSession(this.options.target, this.unsavedRoot, projectKey, sessionId));
        rmSync(transcriptFile(this.unsavedRoot, { projectKey, sessionId }), { force: true });
        rmSync(join(this.unsavedRoot, projectKey, sessionId), { recursive: true, force: true });
      } catch (error) {
        this.options.onWarning?.(
          `Could not copy the unsaved transcript of session ${sessionId} from ${this.unsavedRoot} into the session store: ${(error as Error).message}. It stays there for the next start.`,
        );
      }
    }
    const root = agentProjectsRoot(this.options.env);
    const candidates = new Set([...suspects, ...(await this.behindStore(root, knownSessions))]);
    for (const sessionId of candidates) {
      if (wasDropped(this.options.projectKey, sessionId)) continue;
      try {
        count(await recoverSession(this.options.target, root, this.options.projectKey, sessionId));
      } catch (error) {
        this.options.onVerbose?.(
          `Could not compare session ${sessionId} with ${root}: ${(error as Error).message}`,
        );
      }
    }
    if (entries > 0) {
      this.options.onWarning?.(
        `The session store was missing ${entries} transcript entr${entries === 1 ? 'y' : 'ies'} of ${sessions} session${sessions === 1 ? '' : 's'}; they were copied back from the agents' own transcripts.`,
      );
    }
  }

  /**
   * Sessions (the store's and `known`) whose transcript in the agent's directory is newer than the
   * store's copy, or absent from the store. One `stat` per session: cheap however long the history.
   */
  private async behindStore(root: string, known: readonly string[]): Promise<string[]> {
    const stored = new Map(
      // Stryker disable next-line ArrayDeclaration: a placeholder row names no session (its id is undefined), and no agent transcript is found for it
      ((await this.options.backend.listSessions?.(this.options.projectKey)) ?? []).map((row) => [
        row.sessionId,
        row.mtime,
      ]),
    );
    return [...new Set([...known, ...stored.keys()])].filter((sessionId) => {
      let modified: number | undefined;
      try {
        modified = statSync(transcriptFile(root, { projectKey: this.options.projectKey, sessionId })).mtimeMs;
      } catch {
        // no transcript of the agent's own for it
      }
      // Stryker disable next-line ConditionalExpression,BooleanLiteral: a session without an agent file has nothing to copy in; comparing it finds nothing
      if (modified === undefined) return false;
      const mirrored = stored.get(sessionId);
      // The store stamps an append after the agent wrote the line, so a copy in step is never older.
      // Stryker disable next-line EqualityOperator: recovery compares the entries themselves, so comparing a copy in step copies nothing
      return mirrored === undefined || modified > mirrored;
    });
  }

  private noteTrouble(sessionId: string, error: string, dropped: boolean): void {
    const trouble = this.trouble.get(sessionId);
    if (trouble) {
      trouble.error = error;
      trouble.dropped ||= dropped;
    } else {
      this.trouble.set(sessionId, { error, dropped });
    }
    if (this.warned) return;
    this.warned = true;
    this.options.onWarning?.(
      `The session store did not take the transcript of session ${sessionId} (${error}). flower keeps the entries and writes them as soon as it accepts writes again; the step goes on.`,
    );
  }

  /** Entries of `sessions` not in the store: saved in `runs/unsaved/`, or still held in memory. */
  private outside(sessions: readonly string[]): number {
    const held = this.sessionStore
      .pending()
      .filter((waiting) => sessions.includes(waiting.key.sessionId))
      .reduce((sum, waiting) => sum + waiting.entries.length, 0);
    return held + sessions.reduce((sum, sessionId) => sum + (this.unsaved.get(sessionId)?.entries ?? 0), 0);
  }

  private riskOf(sessions: string[], late: number): TranscriptRisk {
    // Stryker disable next-line OptionalChaining: riskOf is given troubled sessions only: each has its trouble
    const lost = sessions.filter((sessionId) => this.trouble.get(sessionId)?.lost !== undefined);
    if (lost.length > 0) {
      // Stryker disable next-line OptionalChaining,StringLiteral: lost[0] is a troubled session whose lost is set
      const why = this.trouble.get(lost[0] as string)?.lost ?? '';
      return { state: 'lost', sessions: lost, entries: 0, detail: lostLine(lost[0] as string, why) };
    }
    const open = sessions.filter(
      // settle() saved what the store still held of these sessions first: each such session has
      // its record in `unsaved`, whether runs/unsaved/ took the entries or not.
      (sessionId) =>
        this.unsaved.has(sessionId) ||
        // Stryker disable next-line OptionalChaining: riskOf is given troubled sessions only: each has its trouble
        this.trouble.get(sessionId)?.dropped === true,
    );
    if (open.length === 0) {
      const entries =
        late + sessions.reduce((sum, sessionId) => sum + (this.writtenLate.get(sessionId) ?? 0), 0);
      // Settled: a later step in the same session must not report this step's trouble again.
      for (const sessionId of sessions) {
        this.trouble.delete(sessionId);
        this.writtenLate.delete(sessionId);
      }
      return {
        state: 'recovered',
        sessions,
        entries,
        detail: 'the session store refused some transcript entries; all were written later',
      };
    }
    const record = this.unsaved.get(open[0] as string);
    const where = record?.where ?? agentProjectsRoot(this.options.env);
    // Stryker disable next-line OptionalChaining,StringLiteral: open[0] is a troubled session, and every trouble has its error
    const error = record?.error ?? this.trouble.get(open[0] as string)?.error ?? '';
    return {
      state: 'unsaved',
      sessions: open,
      entries: this.outside(open),
      detail:
        where === this.unsavedRoot
          ? `Transcript entries of session ${open[0]} are not in the session store (${error}); they are kept in ${where}, and flower copies them in when it next starts in this directory.`
          : `Transcript entries of session ${open[0]} are not in the session store (${error}), and ${this.unsavedRoot} could not take them either; the agent's own transcript (${where}) may still have them.`,
    };
  }
}
