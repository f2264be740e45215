/**
 * Brings two session backends of one project to the same entries: the local SQLite store of a
 * run directory and the shared PostgreSQL store. Used at start (the pull) and at the end of a
 * process (what write-behind could not send).
 *
 * Invariants:
 * - Cheap when nothing differs: one count query per side (entries per key); only keys whose
 *   counts differ are loaded, and only their missing entries are sent.
 * - Nothing is duplicated: an entry counts as present on the other side when its uuid is there,
 *   and an entry without a uuid (the SDK's cost-state, say) when the other side holds as many
 *   byte-identical copies of it. Backends append by uuid idempotently, so a sync that is cut off
 *   and run again sends the rest and nothing twice.
 * - Nothing is deleted or rewritten: both sides only gain entries, in the source's order.
 * - Idempotent: a second sync right after the first finds equal counts and changes nothing.
 * - Entries travel as stored text where both sides can (`loadRows`/`appendRows`, stored-row.ts):
 *   the source's text is what the target stores, so an entry is not serialised again on the way.
 * - A session `only` rules out is neither loaded nor sent, either way: the pull passes what
 *   `flower gc` dropped (its tombstones, runtime/retention/tombstones.ts), so a copy one side
 *   still holds never brings a dropped session back to the other.
 */
import type { SessionKey, SessionStoreEntry } from '@anthropic-ai/claude-agent-sdk';
import type { EntryCount } from '../backend.js';
import type { StoredRow } from '../stored-row.js';

export interface CountedBackend {
  entryCounts(projectKey: string): Promise<EntryCount[]> | EntryCount[];
  load(key: SessionKey): Promise<SessionStoreEntry[] | null>;
  append(key: SessionKey, entries: SessionStoreEntry[]): Promise<void>;
  /** `load` with each entry's stored text, when the backend can give it. */
  loadRows?(key: SessionKey): Promise<StoredRow[] | null>;
  /** `append` that stores each row's text as given, when the backend can take it. */
  appendRows?(key: SessionKey, rows: readonly StoredRow[]): Promise<void>;
}

export type { EntryCount };

export interface SessionSyncReport {
  /** Keys compared (the union of both sides). */
  keys: number;
  /** Keys whose counts differed and were loaded. */
  differing: number;
  /** Entries copied into `local`, and into `shared`. */
  pulled: number;
  pushed: number;
  ms: number;
}

const keyText = (count: Pick<EntryCount, 'sessionId' | 'subpath'>) => `${count.sessionId}\n${count.subpath}`;

/**
 * The items of `from` whose entries `into` lacks, in `from`'s order (entries, or rows through
 * `entryOf`). Uuid-less entries compare by their entries serialised afresh, never by stored text:
 * two backends (or an older writer) may keep the same entry as different text.
 */
export function missingEntries<Item = SessionStoreEntry>(
  from: readonly Item[],
  into: readonly Item[],
  entryOf: (item: Item) => SessionStoreEntry = (item) => item as SessionStoreEntry,
): Item[] {
  const uuids = new Set<string>();
  const plain = new Map<string, number>();
  for (const item of into) {
    const entry = entryOf(item);
    if (typeof entry.uuid === 'string') uuids.add(entry.uuid);
    else {
      const text = JSON.stringify(entry);
      plain.set(text, (plain.get(text) ?? 0) + 1);
    }
  }
  const missing: Item[] = [];
  for (const item of from) {
    const entry = entryOf(item);
    if (typeof entry.uuid === 'string') {
      if (!uuids.has(entry.uuid)) {
        uuids.add(entry.uuid);
        missing.push(item);
      }
      continue;
    }
    const text = JSON.stringify(entry);
    const left = plain.get(text) ?? 0;
    if (left > 0) plain.set(text, left - 1);
    else missing.push(item);
  }
  return missing;
}

/** The transcript of `key` as rows (text kept when the backend gives it); empty when it has none. */
async function loadRows(backend: CountedBackend, key: SessionKey, count: number): Promise<StoredRow[]> {
  if (count === 0) return [];
  if (backend.loadRows) return (await backend.loadRows(key)) ?? [];
  return ((await backend.load(key)) ?? []).map((entry) => ({ entry }));
}

const rowEntry = (row: StoredRow): SessionStoreEntry => row.entry;

/** Appends rows, as text where the backend takes it. */
function appendRows(backend: CountedBackend, key: SessionKey, sent: StoredRow[]): Promise<void> {
  return backend.appendRows ? backend.appendRows(key, sent) : backend.append(key, sent.map(rowEntry));
}

/**
 * Copies what each side lacks to it, for the sessions `only` accepts (all when it is not given).
 * Main transcripts go before their subagents' (a main key's summary is folded on append, and
 * readers look the session up by its main key).
 */
export async function syncSessions(
  local: CountedBackend,
  shared: CountedBackend,
  projectKey: string,
  only?: (sessionId: string) => boolean,
): Promise<SessionSyncReport> {
  const started = performance.now();
  const [localCounts, sharedCounts] = await Promise.all([
    local.entryCounts(projectKey),
    shared.entryCounts(projectKey),
  ]);
  const keys = new Map<string, { sessionId: string; subpath: string; local: number; shared: number }>();
  for (const [side, counts] of [
    ['local', localCounts],
    ['shared', sharedCounts],
  ] as const) {
    for (const count of counts) {
      if (only && !only(count.sessionId)) continue;
      const text = keyText(count);
      const found = keys.get(text) ?? {
        sessionId: count.sessionId,
        subpath: count.subpath,
        local: 0,
        shared: 0,
      };
      found[side] = count.entries;
      keys.set(text, found);
    }
  }
  const differing = [...keys.values()]
    .filter((key) => key.local !== key.shared)
    .sort((a, b) => Number(a.subpath !== '') - Number(b.subpath !== ''));
  let pulled = 0;
  let pushed = 0;
  for (const count of differing) {
    const key: SessionKey =
      count.subpath === ''
        ? { projectKey, sessionId: count.sessionId }
        : { projectKey, sessionId: count.sessionId, subpath: count.subpath };
    const [mine, theirs] = await Promise.all([
      loadRows(local, key, count.local),
      loadRows(shared, key, count.shared),
    ]);
    const toLocal = missingEntries(theirs, mine, rowEntry);
    const toShared = missingEntries(mine, theirs, rowEntry);
    if (toLocal.length > 0) await appendRows(local, key, toLocal);
    if (toShared.length > 0) await appendRows(shared, key, toShared);
    pulled += toLocal.length;
    pushed += toShared.length;
  }
  return { keys: keys.size, differing: differing.length, pulled, pushed, ms: performance.now() - started };
}
