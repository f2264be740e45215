/**
 * `runs/lineage.json`: which session each step of this workspace last ran in, so that running
 * flower again in the same directory (after a crash, kill or reboot) re-attaches every step to its
 * conversation. Shape: `{ "workspace": "<absolute path>", "woke": N, "steps": { name: sessionId } }`.
 *
 * Invariants:
 * - A session id is recorded the moment it is known (`remember`), not at the end of the step: a
 *   process killed inside its first step must still find its session next time.
 * - Every write is a merge under the file lock: re-read, change one step (or the wake counter),
 *   write atomically. Parallel processes in one run directory keep each other's steps.
 * - Only plain step names are recorded. Labels with a suffix (`#retryN`, `#roundN`,
 *   `:verdict#N`) name one attempt or one judge round; recording them would, for instance, let a
 *   judge resume its own earlier verdict session instead of judging afresh.
 * - A mismatch means "no lineage", never an error: a file recorded for another workspace path
 *   (the directory was copied or moved, or a container mounts it elsewhere, so the SDK's project
 *   key differs and the sessions cannot be found) or a recorded session the store no longer has.
 *   The first is said in one line (`onWarning`) naming the path the task belongs to and how to
 *   continue it, never silently; the second is kept for `-v`.
 * - Writing never throws: continuity is a bonus, and failing to record it must not stop the work.
 * - A damaged file is never dropped silently: it is set aside with one warning, and `damaged` tells
 *   the runtime to rebuild the steps from the manifest and the session store.
 */
import { dirname, join, resolve } from 'node:path';
import {
  type JsonDocumentCodec,
  type JsonFileOptions,
  type PeekedDocument,
  peekJsonDocument,
  readJsonDocument,
  updateJsonDocument,
} from './locked-json-file.js';
import { emitTaskChange } from './task-changes.js';

export const LINEAGE_FILE = 'lineage.json';

export interface LineageRecord {
  /** Absolute workspace path the sessions belong to. */
  workspace: string;
  /** How many times flower has woken up in this workspace (1 on the first run). */
  woke: number;
  /** Step name → session id. */
  steps: Record<string, string>;
}

/** What a lookup found: a session to resume, or why there is none (for `-v`). */
export type LineageLookup = { sessionId: string } | { sessionId: undefined; reason: string };

const SUFFIXED_LABEL = /#(?:retry|round)\d+|:verdict#\d+/;

/** Whether `step` is a plain step name that may enter lineage (no attempt or judge suffix). */
export function isLineageStepName(step: string): boolean {
  return step.length > 0 && !SUFFIXED_LABEL.test(step);
}

export function lineagePath(runDir: string): string {
  return join(runDir, LINEAGE_FILE);
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Keeps only usable records: non-empty ids (numbers written by hand are accepted as text). */
function decodeSteps(value: unknown): Record<string, string> {
  const steps: Record<string, string> = {};
  if (!isPlainObject(value)) return steps;
  for (const [name, id] of Object.entries(value)) {
    if ((typeof id === 'string' || typeof id === 'number') && String(id) !== '') steps[name] = String(id);
  }
  return steps;
}

/** The file as found on disk; `workspace` is empty when the file has none. */
const lineageCodec: JsonDocumentCodec<LineageRecord> = {
  empty: () => ({ workspace: '', woke: 0, steps: {} }),
  decode: (value) => {
    if (!isPlainObject(value)) return undefined;
    const woke = Number(value.woke ?? 0);
    return {
      workspace: typeof value.workspace === 'string' ? value.workspace : '',
      woke: Number.isFinite(woke) && woke > 0 ? Math.floor(woke) : 0,
      steps: decodeSteps(value.steps),
    };
  },
};

/** The lineage file as it is, read without the lock and never repaired (for read-only views). */
export function peekLineage(runDir: string): PeekedDocument<LineageRecord> {
  return peekJsonDocument(lineagePath(runDir), lineageCodec);
}

export interface LineageOptions extends JsonFileOptions {
  /** Receives the reason when the file exists but is ignored (shown under `-v`). */
  onVerbose?: (message: string) => void;
}

export class Lineage {
  /** Why an existing lineage file was ignored when opened, if it was. */
  readonly ignoredReason: string | undefined;
  /**
   * The file was damaged when opened (set aside, or unreadable): its steps are lost from here, and
   * the runtime rebuilds them from the manifest and the session store (`lineage-rebuild.ts`).
   */
  readonly damaged: boolean;
  private record: LineageRecord;

  private constructor(
    readonly path: string,
    readonly workspace: string,
    private readonly options: LineageOptions,
    record: LineageRecord,
    ignoredReason: string | undefined,
    damaged = false,
  ) {
    this.record = record;
    this.ignoredReason = ignoredReason;
    this.damaged = damaged;
  }

  /**
   * Opens the lineage of `workspace` kept in `runDir`; a missing or foreign file reads as empty. A
   * damaged one is set aside with one warning (see `locked-json-file.ts`) and reads as empty.
   */
  static open(runDir: string, workspace: string, options: LineageOptions = {}): Lineage {
    const path = lineagePath(runDir);
    const absolute = resolve(workspace);
    let onDisk: LineageRecord;
    let setAside = false;
    try {
      onDisk = readJsonDocument(path, lineageCodec, {
        ...options,
        onWarning: (line) => {
          setAside = true;
          options.onWarning?.(line);
        },
      });
    } catch (error) {
      const reason = `${path} could not be read (${(error as Error).message}); this run keeps no lineage.`;
      options.onWarning?.(reason);
      return new Lineage(path, absolute, options, Lineage.emptyFor(absolute), reason, true);
    }
    if (setAside)
      return new Lineage(path, absolute, options, { ...onDisk, workspace: absolute }, undefined, true);
    if (
      onDisk.workspace === absolute ||
      (onDisk.workspace === '' && Object.keys(onDisk.steps).length === 0)
    ) {
      return new Lineage(path, absolute, options, { ...onDisk, workspace: absolute }, undefined);
    }
    const reason = onDisk.workspace
      ? `${path} was written for the workspace ${onDisk.workspace}, not ${absolute}: to continue that task, run flower from ${onDisk.workspace} (in a container, mount the workspace there); starting fresh here.`
      : `${path} names no workspace, so its sessions cannot be matched to ${absolute}; starting fresh here.`;
    options.onWarning?.(reason);
    return new Lineage(path, absolute, options, Lineage.emptyFor(absolute), reason);
  }

  /**
   * What the file says, read without the lock and without setting a damaged file aside (for views
   * that must not change anything, such as the wake banner): the steps of this workspace, or none.
   */
  static peek(runDir: string, workspace: string): { woke: number; steps: Record<string, string> } {
    const peeked = peekLineage(runDir);
    const record = peeked.document;
    if (peeked.state !== 'ok' || (record.workspace !== resolve(workspace) && record.workspace !== ''))
      return { woke: 0, steps: {} };
    return { woke: record.woke, steps: { ...record.steps } };
  }

  private static emptyFor(workspace: string): LineageRecord {
    return { workspace, woke: 0, steps: {} };
  }

  /** Wake count as last read or written. */
  get woke(): number {
    return this.record.woke;
  }

  /** A copy of step name → session id, as last read or written. */
  get steps(): Record<string, string> {
    return { ...this.record.steps };
  }

  /**
   * Records that `step` now runs in `sessionId`, merged into the file at once. Suffixed labels and
   * empty values are ignored.
   */
  remember(step: string, sessionId: string): void {
    if (!isLineageStepName(step) || sessionId === '') return;
    this.merge((record) => ({ ...record, steps: { ...record.steps, [step]: sessionId } }));
    emitTaskChange(dirname(this.path), { kind: 'lineage-step', step, sessionId });
    // Keep our view even if the write failed, so this process still resumes correctly.
    this.record.steps[step] = sessionId;
  }

  /** Counts one more wake-up in this workspace and returns the new count (1 on the first run). */
  bump(): number {
    const before = this.record.woke;
    this.merge((record) => ({ ...record, woke: record.woke + 1 }));
    if (this.record.woke === before) this.record.woke = before + 1;
    emitTaskChange(dirname(this.path), { kind: 'wake', woke: this.record.woke });
    return this.record.woke;
  }

  /**
   * The session to resume for `step`: the recorded one, unless the session store does not have
   * it (lineage can outlive `sessions.db`, and resuming a missing session fails only later,
   * inside the agent process).
   */
  sessionFor(step: string, hasSession: (sessionId: string) => boolean): LineageLookup {
    const sessionId = this.record.steps[step];
    if (sessionId === undefined)
      return { sessionId: undefined, reason: `no session recorded for step "${step}"` };
    if (!hasSession(sessionId)) {
      return {
        sessionId: undefined,
        reason: `session ${sessionId} recorded for step "${step}" is not in the session store; starting fresh`,
      };
    }
    return { sessionId };
  }

  /**
   * Applies `change` to the on-disk record under the lock. A file that belongs to another
   * workspace is replaced: its sessions cannot be resumed from here, and the first write of this
   * workspace takes the file over. Nothing is lost: the copy it came from still has its own lineage.
   */
  private merge(change: (record: LineageRecord) => LineageRecord): void {
    try {
      const written = updateJsonDocument(
        this.path,
        lineageCodec,
        (onDisk) => change(onDisk.workspace === this.workspace ? onDisk : Lineage.emptyFor(this.workspace)),
        this.options,
      );
      this.record = written;
    } catch (error) {
      this.options.onWarning?.(`Could not write ${this.path}: ${(error as Error).message}.`);
    }
  }
}

/**
 * Applies `change` to the lineage file of `runDir` under the lock, emitting nothing: for the
 * shared store's pull, which brings in what other processes recorded.
 */
export function replaceLineage(
  runDir: string,
  change: (record: LineageRecord) => LineageRecord,
  options: JsonFileOptions = {},
): LineageRecord {
  return updateJsonDocument(lineagePath(runDir), lineageCodec, change, options);
}
