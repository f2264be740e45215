/**
 * RewritingSessionStore: what a resume is fed. It wraps any backend (backend.ts; the embedded
 * SQLite store, a PostgreSQL one) and is what flower hands the SDK as `sessionStore`. It owns the
 * rewrite-on-load pipeline (expire → trim → prune/heal, rewrite.ts), the spill writer and the
 * load reports; the backend keeps entries and knows nothing of them.
 *
 * Invariants:
 * - The backend stores exactly what the SDK appended; only what `load` returns is rewritten (the
 *   entries a backend parsed for this load are edited in place, anything else is copied).
 * - A stored transcript stays a chain on its own (every stored `parentUuid` names a stored entry
 *   or is null): `load` writes nothing, and the entry the binary links its next one to is always
 *   a stored uuid (a healed stand-in result takes over the uuid of the entry it follows, see
 *   transcript-edits.ts), so a reader without this layer still finds the whole conversation.
 * - An empty batch never reaches the backend (a no-op by contract, which not every backend keeps).
 * - Spill behind the write: with trim on, `append` notes every result the trim layer may later
 *   replace and its spill file is written within `WRITE_BEHIND_MS`, batched with the others
 *   appended meanwhile, and at once by `close` and by any `load` before it reads. Why not on
 *   the append's path: creating a file costs more than inserting the row (measured 0.25–0.5 ms
 *   of CPU each under load, 3 180 files at the project's 20k entries: the layered store
 *   appended at 0.4–0.7× a raw insert), and the SDK awaits every eager append; behind it, the
 *   files are written while the session waits for the model. The stored entry is the truth, so a
 *   crash inside the window loses nothing: the next load writes the file from it (as it does for
 *   transcripts from before, or from a time the directory was not writable). Results are noted
 *   as the batch goes to the backend: one the backend refuses is retried (by the SDK, by the
 *   mirror guard) and usually lands, and a file for one that never does is a stray copy of text
 *   the agent's own JSONL holds, never a pointer to nothing. The noted texts are held until
 *   written (a caller appending in a loop that never yields holds them until `close` or a load).
 * - Durability is the backend's: `append` resolves when the backend's append resolved (for
 *   SQLite: committed); spill files are a copy of what it holds, written behind it.
 * - A spill directory that cannot be written (read-only, full) never fails an append or a load:
 *   the results stay untrimmed and `onWarning` hears about it once per store.
 * - A stored row that is not a JSON object does not stop a resume and does not vanish silently:
 *   the history is resumed without it, the chain relinked around it (its parent taken to be the
 *   entry appended before it), the load report counts it and `onWarning` names the key and seq.
 *   A backend without `readTranscript` cannot report single rows; its own `load` decides.
 * - The newest `cost-state` of a session comes from the backend's fast path when it has one.
 * - Each transcript's spill record (spill-record.ts) is kept with its spill files, so a resume
 *   finds the files of its results without hashing them again.
 */

import type {
  SessionKey,
  SessionStore,
  SessionStoreEntry,
  SessionSummaryEntry,
} from '@anthropic-ai/claude-agent-sdk';
import { writeErr } from '../output/sink.js';
import type { SessionBackend, StoredTranscript } from './backend.js';
import { lastCostStateIn } from './cost-state.js';
import type { LoadReport } from './load-report.js';
import { type RewriteOptions, type RewritePolicies, resolvePolicies, rewriteForResume } from './rewrite.js';
import { storeKeyOf } from './session-key.js';
import { createSpillWriter, type SpilledName, type SpillWriter, spillDirectory } from './spill.js';
import { appendSpillRecord, readSpillRecord } from './spill-record.js';
import { type Entry, unreadableRowPlaceholder } from './transcript.js';
import { type LargeResult, largeResults } from './trim.js';

export interface RewritingSessionStoreOptions extends RewriteOptions {
  /** The workspace the sessions run in; spill files go to `trim.spillDirname` under it. */
  workspace: string;
  /** One line per problem the user should know about. Default: standard error. */
  onWarning?: (line: string) => void;
}

/**
 * Spill files and record lines wait this long to be written together: a turn's results share one
 * batch, written while the session waits for the model's next reply.
 */
const WRITE_BEHIND_MS = 50;

const warnOnStderr = (line: string): void => {
  writeErr(`flower: ${line}\n`);
};

/** Reason for a failed write, short enough for one line (`EACCES`, `ENOSPC`, …). */
export function reasonOf(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string') return code;
  return error instanceof Error ? error.message : String(error);
}

export class RewritingSessionStore<Backend extends SessionBackend = SessionBackend>
  implements Required<SessionStore>
{
  readonly backend: Backend;
  readonly policies: RewritePolicies;
  private readonly workspace: string;
  private readonly spillDirectory: string;
  /** One writer for appends and loads: it lists the directory once and remembers what it wrote. */
  private readonly spill: SpillWriter;
  /** Spill names by tool_use id: the records of the transcripts loaded so far, and what was learnt since. */
  private readonly names = new Map<string, SpilledName>();
  private readonly recordsRead = new Set<string>();
  private readonly warn: (line: string) => void;
  private readonly reports = new Map<string, LoadReport>();
  private spillWarned = false;
  private named: Array<[string, SpilledName]> = [];
  /** Large results appended whose spill files are not written yet, by store key. */
  private readonly unspilled = new Map<string, LargeResult[]>();
  /** Record lines not written yet, by store key (written together, like the backend's index). */
  private readonly unrecorded = new Map<string, Array<[string, SpilledName]>>();
  private writeBehindTimer: NodeJS.Timeout | undefined;

  constructor(backend: Backend, options: RewritingSessionStoreOptions) {
    this.backend = backend;
    this.policies = resolvePolicies(options);
    this.warn = options.onWarning ?? warnOnStderr;
    this.workspace = options.workspace;
    this.spillDirectory = spillDirectory(options.workspace, this.policies.trim.spillDirname);
    this.spill = this.spillWriter();
  }

  /** Not `async`: the backend's own promise is the answer (one hop less per eager append). */
  append(key: SessionKey, entries: SessionStoreEntry[]): Promise<void> {
    // An empty batch is a no-op by contract; not every backend honours that (the SDK's
    // InMemorySessionStore creates an empty transcript), so it never reaches one.
    if (entries.length === 0) return Promise.resolve();
    if (this.policies.trim.enabled) this.noteLargeResults(key, entries);
    return this.backend.append(key, entries);
  }

  /** The transcript as a resume should see it (see the module header); null for an unknown key. */
  async load(key: SessionKey): Promise<SessionStoreEntry[] | null> {
    this.writeBehind();
    const stored = await this.read(key);
    if (stored === null) return null;
    const storeKey = storeKeyOf(key);
    if (this.policies.trim.enabled && !this.recordsRead.has(storeKey)) {
      for (const [toolUseId, spilled] of readSpillRecord(this.spillDirectory, storeKey))
        this.names.set(toolUseId, spilled);
      this.recordsRead.add(storeKey);
    }
    const { entries, report } = rewriteForResume(withPlaceholders(stored), this.policies, this.spill, {
      inPlace: stored.owned === true,
    });
    this.recordNames(storeKey);
    this.reports.set(storeKey, report);
    if (stored.unreadable.length > 0) {
      const seqs = stored.unreadable.map((row) => row.seq).join(', ');
      const where = this.backend.location === undefined ? '' : ` in ${this.backend.location}`;
      this.warn(
        `Transcript ${storeKey}${where} has ${stored.unreadable.length === 1 ? 'a row' : 'rows'} that ${stored.unreadable.length === 1 ? 'is' : 'are'} not valid JSON (seq ${seqs}); resuming without ${stored.unreadable.length === 1 ? 'it' : 'them'}, the history relinked around the gap. The stored rows are left as they are.`,
      );
    }
    return entries;
  }

  /** What the rewrite layers changed in the most recent `load` of this key. */
  lastLoadReport(key: SessionKey): LoadReport | undefined {
    return this.reports.get(storeKeyOf(key));
  }

  /** The newest `cost-state` entry of a transcript (the session's running total); null if none. */
  async lastCostState(key: SessionKey): Promise<SessionStoreEntry | null> {
    if (this.backend.lastCostState !== undefined) return this.backend.lastCostState(key);
    // Stryker disable next-line ArrayDeclaration: a list holding a string has no cost-state entry either
    return lastCostStateIn((await this.backend.load(key)) ?? []);
  }

  listSessions(projectKey: string): Promise<Array<{ sessionId: string; mtime: number }>> {
    return this.backend.listSessions(projectKey);
  }

  listSessionSummaries(projectKey: string): Promise<SessionSummaryEntry[]> {
    return this.backend.listSessionSummaries(projectKey);
  }

  delete(key: SessionKey): Promise<void> {
    return this.backend.delete(key);
  }

  listSubkeys(key: { projectKey: string; sessionId: string }): Promise<string[]> {
    return this.backend.listSubkeys(key);
  }

  /** Writes the spill files and record lines waiting, then closes the backend. */
  close(): void | Promise<void> {
    this.writeBehind();
    return this.backend.close?.();
  }

  /**
   * Note the large results of a batch for the write behind. Indexed loops: this runs on every
   * eager append, mostly before the code is optimised, where they cost less than iterators.
   */
  private noteLargeResults(key: SessionKey, entries: readonly SessionStoreEntry[]): void {
    let noted: LargeResult[] | undefined;
    // Stryker disable next-line EqualityOperator: one past the end is undefined, skipped below
    for (let index = 0; index < entries.length; index += 1) {
      const entry = entries[index];
      // Not an object: the backend's to refuse, with its own message. Only these two would throw
      // below; any other value has no `type` and no results.
      if (entry === null || entry === undefined) continue;
      const results = largeResults(entry, this.policies.trim);
      if (results.length === 0) continue;
      noted ??= this.unspilledOf(storeKeyOf(key));
      for (let at = 0; at < results.length; at += 1) noted.push(results[at] as LargeResult);
    }
    if (noted !== undefined) this.scheduleWriteBehind();
  }

  private unspilledOf(storeKey: string): LargeResult[] {
    const known = this.unspilled.get(storeKey);
    if (known !== undefined) return known;
    const results: LargeResult[] = [];
    this.unspilled.set(storeKey, results);
    return results;
  }

  private scheduleWriteBehind(): void {
    this.writeBehindTimer ??= setTimeout(() => this.writeBehind(), WRITE_BEHIND_MS).unref();
  }

  /** Write the spill files of the results noted so far, then every record line waiting. */
  private writeBehind(): void {
    for (const [storeKey, results] of this.unspilled) {
      for (const { toolUseId, text } of results) this.spill(text, toolUseId);
      this.recordNames(storeKey);
    }
    this.unspilled.clear();
    for (const [storeKey, lines] of this.unrecorded) appendSpillRecord(this.spillDirectory, storeKey, lines);
    this.unrecorded.clear();
    // Last: naming what was just written scheduled another turn, and nothing is left for it.
    clearTimeout(this.writeBehindTimer);
    this.writeBehindTimer = undefined;
  }

  /** The spill writer: warns once per store, keeps the names it learns for the records. */
  private spillWriter(): SpillWriter {
    return createSpillWriter(this.workspace, this.policies.trim.spillDirname, {
      recorded: this.names,
      onNamed: (toolUseId, spilled) => {
        this.names.set(toolUseId, spilled);
        this.named.push([toolUseId, spilled]);
      },
      onFailure: (error, directory) => {
        if (this.spillWarned) return;
        this.spillWarned = true;
        this.warn(
          `Could not write spill files in ${directory} (${reasonOf(error)}): large tool results stay untrimmed in resumed history until it is writable again. Check its permissions and the free disk space.`,
        );
      },
    });
  }

  /** Keep the names the writer learnt for `storeKey`'s record (written by the write behind). */
  private recordNames(storeKey: string): void {
    for (const line of this.named.splice(0)) {
      const lines = this.unrecorded.get(storeKey);
      if (lines === undefined) this.unrecorded.set(storeKey, [line]);
      else lines.push(line);
      this.scheduleWriteBehind();
    }
  }

  private async read(key: SessionKey): Promise<StoredTranscript | null> {
    if (this.backend.readTranscript !== undefined) return this.backend.readTranscript(key);
    const entries = await this.backend.load(key);
    // `load` may hand out the objects it keeps (the SDK's InMemorySessionStore does): copy on write.
    return entries === null ? null : { entries, unreadable: [], owned: false };
  }
}

/** The readable entries with a placeholder where each unreadable row was (prune drops them). */
function withPlaceholders(stored: StoredTranscript): Entry[] {
  // No shortcut for the usual case (no unreadable row): it saved one pass of pushes over the
  // entries, and every load now runs the same code.
  const output: Entry[] = [];
  let lastUuid: string | null = null;
  let next = 0;
  const rows = [...stored.unreadable].sort((a, b) => a.position - b.position);
  for (let position = 0; position <= stored.entries.length; position += 1) {
    while (next < rows.length && (rows[next] as (typeof rows)[number]).position === position) {
      const row = rows[next] as (typeof rows)[number];
      output.push(unreadableRowPlaceholder(row.uuid, lastUuid, row.seq));
      lastUuid = row.uuid ?? lastUuid;
      next += 1;
    }
    const entry = stored.entries[position];
    if (entry === undefined) break;
    output.push(entry);
    if (typeof entry.uuid === 'string') lastUuid = entry.uuid;
  }
  return output;
}
