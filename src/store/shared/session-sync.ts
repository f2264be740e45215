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
 * - A session `only` rules out is neither loaded nor sent, either way: the pull passes what
 *   `flower gc` dropped (its tombstones, runtime/retention/tombstones.ts), so a copy one side
 *   still holds never brings a dropped session back to the other.
 */
import type { SessionKey, SessionStoreEntry } from '@anthropic-ai/claude-agent-sdk';

export interface CountedBackend {
  entryCounts(projectKey: string): Promise<EntryCount[]> | EntryCount[];
  load(key: SessionKey): Promise<SessionStoreEntry[] | null>;
  append(key: SessionKey, entries: SessionStoreEntry[]): Promise<void>;
}

export interface EntryCount {
  sessionId: string;
  /** '' for the main transcript. */
  subpath: string;
  entries: number;
}

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

/** The entries of `from` that `into` lacks, in `from`'s order. */
export function missingEntries(
  from: readonly SessionStoreEntry[],
  into: readonly SessionStoreEntry[],
): SessionStoreEntry[] {
  const uuids = new Set<string>();
  const plain = new Map<string, number>();
  for (const entry of into) {
    if (typeof entry.uuid === 'string') uuids.add(entry.uuid);
    else {
      const text = JSON.stringify(entry);
      plain.set(text, (plain.get(text) ?? 0) + 1);
    }
  }
  const missing: SessionStoreEntry[] = [];
  for (const entry of from) {
    if (typeof entry.uuid === 'string') {
      if (!uuids.has(entry.uuid)) {
        uuids.add(entry.uuid);
        missing.push(entry);
      }
      continue;
    }
    const text = JSON.stringify(entry);
    const left = plain.get(text) ?? 0;
    if (left > 0) plain.set(text, left - 1);
    else missing.push(entry);
  }
  return missing;
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
      count.local > 0 ? local.load(key) : Promise.resolve(null),
      count.shared > 0 ? shared.load(key) : Promise.resolve(null),
    ]);
    const toLocal = missingEntries(theirs ?? [], mine ?? []);
    const toShared = missingEntries(mine ?? [], theirs ?? []);
    if (toLocal.length > 0) await local.append(key, toLocal);
    if (toShared.length > 0) await shared.append(key, toShared);
    pulled += toLocal.length;
    pushed += toShared.length;
  }
  return { keys: keys.size, differing: differing.length, pulled, pushed, ms: performance.now() - started };
}
