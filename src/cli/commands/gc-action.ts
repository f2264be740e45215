/**
 * What `flower gc` does (its flags and help live in `gc.ts`): hold the task, gather what its
 * records say about its sessions, and drop from each of its session stores what no resume can
 * reach (`runtime/retention/`), then print one short block of what was freed.
 *
 * The stores of a task: `<run dir>/sessions.db`, the asides' `<run dir>/aside/sessions.db`, and with
 * FLOWER_STORE_URL a PostgreSQL URL, the sessions there under the workspace's project key. A store
 * file that does not exist is not created. `--dry-run` holds the task too, so what it shows is what
 * a real run would drop at that moment.
 *
 * A drop sticks: before a store's sessions are deleted, gc leaves tombstones of them (which
 * session, when, why, on which host) in each run directory of the task (`dropped-sessions.json`
 * in `runs/` and `runs/aside/`) and, with PostgreSQL, in the database. Start-up recovery and the
 * sync with the database skip what they name, and the pull hands the database's tombstones to
 * every other machine's run directory (and drops its copies there).
 *
 * Decision: gc leaves the agent's own transcripts alone (the JSONL files Claude Code keeps under
 * `projects/` in its config directory, CLAUDE_CONFIG_DIR or ~/.claude). flower never sets that
 * directory for a task (only `flower demo` uses a throw-away one, which it removes itself): it is
 * the user's Claude Code directory, which other tools (`claude --resume`) read and Claude Code
 * prunes on its own schedule (its `cleanupPeriodDays` setting). Deleting there would also reach
 * only this machine's copies; the tombstones reach every machine's. The summary says where they are.
 */

import { existsSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { loadEnvironment } from '../../config/env-chain.js';
import { writeOut } from '../../output/sink.js';
import { leaseOptionsFor } from '../../runtime/ownership/run-instance.js';
import {
  type CollectableStore,
  collectStore,
  type DroppedSession,
  type StoreOutcome,
  type StoreToCollect,
} from '../../runtime/retention/collect.js';
import { sharedReferences } from '../../runtime/retention/shared-references.js';
import { gatherTaskReferences, mergeReferences } from '../../runtime/retention/task-references.js';
import { addTombstones, tombstonesPath } from '../../runtime/retention/tombstones.js';
import { lockTask } from '../../runtime/task-lock.js';
import { ASIDE_RUN_DIR } from '../../runtime/task-spend.js';
import { agentProjectsRoot } from '../../runtime/transcript-safety.js';
import { openSessionStore } from '../../store/open-session-store.js';
import type { TaskRecordKind } from '../../store/postgres/task-records.js';
import { COLLECTABLE_KINDS, type CollectableKind } from '../../store/retention/reachability.js';
import type { Tombstone } from '../../store/retention/tombstones.js';
import { projectKeyFor } from '../../store/session-key.js';
import { openSharedStore, type SharedStore } from '../../store/shared/shared-store.js';
import type { HeldTaskLock } from '../../store/shared/task-lock-types.js';
import { starterPaths } from '../../workflow/starter.js';
import type { GlobalOptions } from '../command-line/global-options.js';
import { requireWritable } from '../command-line/writable-directories.js';
import { storeTargetOf } from '../interaction/task-store.js';
import { DEFAULT_OLDER_THAN, parseAge } from './gc.js';

export interface GcFlags {
  /** Milliseconds (parsed by `parseAge`); default 30 days. */
  olderThan?: number;
  dryRun?: boolean;
}

const KIND_NAMES: Record<CollectableKind, string> = {
  retired: 'retired handoff generations',
  aside: 'aside runs',
  archived: 'archived tasks',
};

/** Where `--new` archived earlier tasks of `workspace`: the plain workbench's and the `--isolate` one's. */
function archiveDirs(workspace: string): string[] {
  const dirs = [starterPaths({ workspace }).archive];
  try {
    dirs.push(starterPaths({ workspace, isolate: true }).archive);
  } catch {
    // Not a git repository: there is no isolated workbench.
  }
  return dirs;
}

function plural(count: number, one: string, many = `${one}s`): string {
  return `${count.toLocaleString('en-US')} ${count === 1 ? one : many}`;
}

function bytesText(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}

function ageText(ms: number): string {
  const days = ms / 86_400_000;
  return Number.isInteger(days) ? plural(days, 'day') : plural(ms / 3_600_000, 'hour');
}

/**
 * The summary block: one line per kind, what was kept and why, where. A session counts once however
 * many stores held a copy of it; transcripts, entries and bytes add up over the stores.
 */
export function gcLines(outcomes: readonly StoreOutcome[], olderThanMs: number, dryRun: boolean): string[] {
  const verb = dryRun ? 'would drop' : 'dropped';
  const lines: string[] = [];
  const dropped = new Set<string>();
  for (const kind of COLLECTABLE_KINDS) {
    const ids = new Set<string>();
    const sum = { transcripts: 0, entries: 0, bytes: 0 };
    for (const outcome of outcomes) {
      const freed = outcome.freed[kind];
      for (const id of freed.sessions) ids.add(id);
      sum.transcripts += freed.transcripts;
      sum.entries += freed.entries;
      sum.bytes += freed.bytes;
    }
    for (const id of ids) dropped.add(id);
    lines.push(
      `  ${KIND_NAMES[kind].padEnd(28)} ${plural(ids.size, 'session')}` +
        (ids.size > 0
          ? `, ${plural(sum.transcripts, 'transcript')}, ${plural(sum.entries, 'entry', 'entries')}, ${bytesText(sum.bytes)}`
          : ''),
    );
  }
  const kept = (reason: 'live' | 'recent' | 'unclaimed') =>
    new Set(outcomes.flatMap((outcome) => outcome.kept[reason])).size;
  lines.unshift(
    `gc: ${verb} ${plural(dropped.size, 'session')} no resume can reach, last written over ${ageText(olderThanMs)} ago`,
  );
  lines.push(
    `  kept: ${kept('live')} a lineage still resumes, ${kept('recent')} newer than the limit, ${kept('unclaimed')} of no known kind; manifest rows kept (the books)`,
  );
  lines.push(`  stores: ${outcomes.map((outcome) => outcome.label).join(', ') || 'none here'}`);
  if (dryRun && dropped.size > 0)
    lines.push('  nothing was changed (--dry-run); run flower gc without it to drop them');
  return lines;
}

/** The record kinds that name sessions. */
const REFERENCE_KINDS: readonly TaskRecordKind[] = [
  'manifest-run',
  'manifest-added',
  'lineage-step',
  'in-flight',
];

/** The tombstones of `drops`, dropped now on this host. */
export function tombstonesOf(drops: readonly DroppedSession[], now: number, host: string): Tombstone[] {
  return drops.map(({ session, kind }) => ({
    projectKey: session.projectKey,
    sessionId: session.sessionId,
    droppedAt: now,
    kind,
    lastWrite: session.mtime,
    host,
  }));
}

export async function runGc(flags: GcFlags, global: GlobalOptions): Promise<void> {
  // The lock goes in the run directory; gc never writes the workspace.
  requireWritable({ ...global, writesWorkspace: false });
  loadEnvironment();
  const olderThanMs = flags.olderThan ?? parseAge(DEFAULT_OLDER_THAN);
  const dryRun = flags.dryRun ?? false;
  const locks: HeldTaskLock[] = [];
  const opened: Array<{ target: StoreToCollect; close: () => void | Promise<void> }> = [];
  let shared: SharedStore | undefined;
  let closeLeases = async () => {};
  // Read before the lock is taken: a store URL that cannot be used leaves the workspace untouched.
  const target = storeTargetOf(global);
  try {
    // The file lock keeps out a flower on this machine, the lease one on any machine.
    locks.push(await lockTask(global));
    // The PostgreSQL store named by --store or FLOWER_STORE_URL; a SQLite path there is not the CLI's.
    shared = target?.kind === 'postgres' ? await openSharedStore(target) : undefined;
    if (shared) {
      const leases = shared.leases(leaseOptionsFor(global.runDir));
      closeLeases = () => leases.close();
      locks.push(await leases.acquire(global));
    }

    const { references, notes } = gatherTaskReferences(global.runDir, archiveDirs(global.workspace));
    const projectKeys = [projectKeyFor(global.workspace)];
    const open = async (location: string, allAsides: boolean) => {
      const store = await openSessionStore(location);
      opened.push({
        target: { label: location, store: store as CollectableStore, projectKeys, allAsides },
        close: () => store.close(),
      });
    };
    const local = join(global.runDir, 'sessions.db');
    if (existsSync(local)) await open(local, false);
    const aside = join(global.runDir, ASIDE_RUN_DIR, 'sessions.db');
    if (existsSync(aside)) await open(aside, true);
    if (shared) {
      const read = (runDir: string) =>
        shared!.records.read({ workspace: global.workspace, runDir }, { kinds: REFERENCE_KINDS });
      const [main, asides] = await Promise.all([
        read(global.runDir),
        read(join(global.runDir, ASIDE_RUN_DIR)),
      ]);
      mergeReferences(references, sharedReferences(main.records, asides.records));
      opened.push({
        target: { label: shared.display, store: shared.sessions, projectKeys },
        close: () => {},
      });
    }

    const now = Date.now();
    const cutoffMs = now - olderThanMs;
    // Every run directory of the task gets every tombstone: with a database each one syncs all the
    // workspace's sessions, and without one a run directory's recovery reads only its own file.
    const runDirs = [global.runDir, join(global.runDir, ASIDE_RUN_DIR)].filter((dir) => existsSync(dir));
    const recorded: Tombstone[] = [];
    const record = async (drops: readonly DroppedSession[]) => {
      const tombstones = tombstonesOf(drops, now, hostname());
      for (const dir of runDirs) addTombstones(dir, tombstones, (line) => notes.push(line));
      await shared?.tombstones.add(tombstones);
      recorded.push(...tombstones);
    };
    const outcomes: StoreOutcome[] = [];
    for (const { target } of opened)
      outcomes.push(await collectStore(target, { references, cutoffMs, dryRun, record }));
    const lines = [...gcLines(outcomes, olderThanMs, dryRun), ...notes.map((note) => `  note: ${note}`)];
    if (recorded.length > 0)
      lines.push(
        `  recorded in ${tombstonesPath(global.runDir)}${shared ? ' and the database' : ''}, so nothing copies them back; the agent's own copies in ${agentProjectsRoot(process.env)} are left alone (Claude Code's files)`,
      );
    writeOut(`${lines.join('\n')}\n`);
  } finally {
    for (const { close } of opened) await close();
    for (const lock of locks.reverse()) await lock.release();
    await closeLeases();
    await shared?.close();
  }
}
