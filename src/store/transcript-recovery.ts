/**
 * Bringing a session store up to date from transcript files in the agent's own layout: the JSONL
 * files Claude Code keeps under its config directory (`projects/<project key>/<session>.jsonl`,
 * subagents under `<session>/subagents/agent-<id>.jsonl`), flower's copies of entries a store
 * refused (`runs/unsaved/`, same layout), or the config directory the SDK makes for a session it
 * resumes from a store (`<tmp>/claude-resume-<random>/projects/…`).
 *
 * Measured facts this relies on (Claude Code 2.1.332, SDK 0.3.332):
 * - The SDK mirrors each line of those files, after the binary wrote it, as one entry, deep-equal
 *   to the line; the key of a file is its path below `projects/` (a subagent's subpath is the rest
 *   of the path without `.jsonl`). Lines of the `api-request*` types stay local and are never
 *   mirrored (request shapes and blobs: large, and only the binary's cache bookkeeping).
 * - A failed batch is dropped whole, never reordered, so a store's entries are the file's lines
 *   with some runs missing. Entries with a `uuid` are found by it; the others (cost-state,
 *   last-prompt, ...) by walking both sequences in step.
 * - Missing entries appended after later ones resume exactly like the original order: the binary
 *   rebuilds the conversation from `parentUuid` links (checked: the request history of a session
 *   resumed from a store repaired this way equals that of one resumed from a complete copy).
 * - A resumed session is not written to the agent's config directory at all: the SDK makes a
 *   fresh directory under the OS temp directory, the transcript loaded from the store (through
 *   flower's rewriting layer) is written into it (by flower itself, runtime/resume-files.ts, or
 *   by the SDK), the binary's CLAUDE_CONFIG_DIR points at it, and the SDK deletes it when the
 *   query ends. A SIGKILL skips the delete, so that copy is the only place that still has the
 *   entries the SDK had not handed over (measured: a killed resumed step's last replies were in
 *   no other file, and its books missed them). Its first part is the loaded transcript as
 *   rewritten (expired and trimmed results, heal entries that the store never held), so only
 *   what the binary wrote after the attempt started is taken from it (`missingSince`).
 *
 * Invariants:
 * - Works against the SDK's `SessionStore` interface (append and a raw load), so every backend
 *   gets it. Appending is idempotent by uuid, so running a recovery twice adds nothing.
 * - Never changes the source files. A line that does not parse (the torn last line of a killed
 *   process) is skipped, not fatal.
 */
import { appendFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { dirname, join, relative, sep } from 'node:path';
import type { SessionKey, SessionStore, SessionStoreEntry } from '@anthropic-ai/claude-agent-sdk';
import { PRIVATE_DIRECTORY_MODE, PRIVATE_FILE_MODE } from '../config/private-files.js';

/** Transcript line types the binary keeps to itself; the SDK never mirrors them. */
export const LOCAL_ONLY_TYPES: ReadonlySet<string> = new Set([
  'api-request',
  'api-request-shape',
  'api-request-blob',
  'api-request-resumed',
]);

/**
 * Entries the SDK adds to a subagent's transcript from its `.meta.json` sidecar (one snapshot each
 * time the sidecar changes); they have no line in the JSONL file.
 */
export const SIDECAR_TYPE = 'agent_metadata';

/**
 * Where recovered entries go and what is already there. `load` must return the entries exactly as
 * appended: pass a backend itself, not a layer that rewrites history on load.
 */
export type TranscriptTarget = Pick<SessionStore, 'append' | 'load'>;

/** The file of `key` under a `projects/`-style root. */
export function transcriptFile(projectsRoot: string, key: SessionKey): string {
  const session = join(projectsRoot, key.projectKey, key.sessionId);
  return key.subpath === undefined ? `${session}.jsonl` : join(session, `${key.subpath}.jsonl`);
}

/** The entries of one transcript file; undefined when there is no such file. */
export function readTranscriptFile(file: string): SessionStoreEntry[] | undefined {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
  const entries: SessionStoreEntry[] = [];
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    try {
      const value: unknown = JSON.parse(line);
      if (typeof value === 'object' && value !== null && !Array.isArray(value))
        entries.push(value as SessionStoreEntry);
    } catch {
      // A line torn by a kill: the rest of the file is still good.
    }
  }
  return entries;
}

/** Appends entries to the file of `key` (owner-only, directories created), for later recovery. */
export function appendTranscriptFile(
  projectsRoot: string,
  key: SessionKey,
  entries: SessionStoreEntry[],
): void {
  const file = transcriptFile(projectsRoot, key);
  mkdirSync(dirname(file), { recursive: true, mode: PRIVATE_DIRECTORY_MODE });
  appendFileSync(file, entries.map((entry) => `${JSON.stringify(entry)}\n`).join(''), {
    mode: PRIVATE_FILE_MODE,
  });
}

/** The names in a directory; none when it does not exist or cannot be read. */
function namesIn(directory: string): string[] {
  try {
    return readdirSync(directory);
  } catch {
    return [];
  }
}

function jsonlBelow(directory: string): string[] {
  return namesIn(directory).flatMap((name) => {
    const path = join(directory, name);
    let isDirectory = false;
    try {
      isDirectory = statSync(path).isDirectory();
    } catch {
      return [];
    }
    if (isDirectory) return jsonlBelow(path);
    return name.endsWith('.jsonl') ? [path] : [];
  });
}

/** Every transcript file of one session under `projectsRoot`: the main one and its subagents'. */
export function sessionFiles(
  projectsRoot: string,
  projectKey: string,
  sessionId: string,
): Array<{ key: SessionKey; file: string }> {
  const main: SessionKey = { projectKey, sessionId };
  const files: Array<{ key: SessionKey; file: string }> = [];
  const mainFile = transcriptFile(projectsRoot, main);
  if (existsSync(mainFile)) files.push({ key: main, file: mainFile });
  const sessionDirectory = join(projectsRoot, projectKey, sessionId);
  for (const file of jsonlBelow(sessionDirectory)) {
    const parts = relative(sessionDirectory, file).split(sep);
    // The SDK keys only files at least two levels below the session (`subagents/agent-<id>.jsonl`).
    if (parts.length < 2) continue;
    const subpath = parts.join('/').replace(/\.jsonl$/, '');
    files.push({ key: { projectKey, sessionId, subpath }, file });
  }
  return files;
}

/** Sessions with a file under `projectsRoot`, as [projectKey, sessionId] pairs. */
export function sessionsUnder(projectsRoot: string): Array<[string, string]> {
  return namesIn(projectsRoot).flatMap((projectKey) => {
    const sessions = new Set(
      namesIn(join(projectsRoot, projectKey)).map((name) => name.replace(/\.jsonl$/, '')),
    );
    return [...sessions].map((sessionId): [string, string] => [projectKey, sessionId]);
  });
}

/** JSON with object keys sorted, so that deep-equal entries compare equal as text. */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, field: unknown) =>
    typeof field === 'object' && field !== null && !Array.isArray(field)
      ? Object.fromEntries(
          Object.entries(field as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : 1)),
        )
      : field,
  );
}

/** The entries of `local` (a transcript file's lines) that `stored` lacks, in file order. */
export function missingEntries(
  stored: readonly SessionStoreEntry[],
  local: readonly SessionStoreEntry[],
): SessionStoreEntry[] {
  const storedUuids = new Set<string>();
  const storedPlain: string[] = [];
  for (const entry of stored) {
    if (typeof entry.uuid === 'string') storedUuids.add(entry.uuid);
    else if (entry.type !== SIDECAR_TYPE) storedPlain.push(canonical(entry));
  }
  const missing: SessionStoreEntry[] = [];
  let next = 0;
  for (const entry of local) {
    if (LOCAL_ONLY_TYPES.has(entry.type)) continue;
    if (typeof entry.uuid === 'string') {
      if (!storedUuids.has(entry.uuid)) missing.push(entry);
    } else if (next < storedPlain.length && storedPlain[next] === canonical(entry)) {
      next += 1;
    } else {
      missing.push(entry);
    }
  }
  return missing;
}

/** The sidecar entry of a subagent's transcript file (`<file>.meta.json`), if there is one. */
function sidecarEntry(file: string): SessionStoreEntry | undefined {
  try {
    const value: unknown = JSON.parse(readFileSync(file.replace(/\.jsonl$/, '.meta.json'), 'utf8'));
    if (typeof value === 'object' && value !== null && !Array.isArray(value))
      return { ...(value as Record<string, unknown>), type: SIDECAR_TYPE };
  } catch {
    // No sidecar (main transcripts never have one), or an unreadable one: nothing to add.
  }
  return undefined;
}

/**
 * Appends what `target` lacks of `local` (and of the file's sidecar, when given) for `key`, in
 * chunks; returns how many entries that was.
 */
export async function bringUpToDate(
  target: TranscriptTarget,
  key: SessionKey,
  local: readonly SessionStoreEntry[],
  sidecar?: SessionStoreEntry,
  batchSize = 500,
): Promise<number> {
  const stored = (await target.load(key)) ?? [];
  return appendMissing(target, key, stored, missingEntries(stored, local), sidecar, batchSize);
}

/** Appends `missing` (and the sidecar, when `stored` lacks it) in chunks; returns how many. */
async function appendMissing(
  target: TranscriptTarget,
  key: SessionKey,
  stored: readonly SessionStoreEntry[],
  missing: SessionStoreEntry[],
  sidecar: SessionStoreEntry | undefined,
  batchSize = 500,
): Promise<number> {
  if (sidecar !== undefined) {
    const text = canonical(sidecar);
    if (!stored.some((entry) => entry.type === SIDECAR_TYPE && canonical(entry) === text))
      missing.push(sidecar);
  }
  for (let start = 0; start < missing.length; start += batchSize)
    await target.append(key, missing.slice(start, start + batchSize));
  return missing.length;
}

export interface SessionRecovery {
  /** Transcript files found for the session (0: nothing to recover from). */
  files: number;
  /** Entries the target lacked and now has. */
  entries: number;
}

/** Brings every transcript of one session up to date from its files under `projectsRoot`. */
export async function recoverSession(
  target: TranscriptTarget,
  projectsRoot: string,
  projectKey: string,
  sessionId: string,
): Promise<SessionRecovery> {
  const files = sessionFiles(projectsRoot, projectKey, sessionId);
  let entries = 0;
  for (const { key, file } of files)
    entries += await bringUpToDate(target, key, readTranscriptFile(file) ?? [], sidecarEntry(file));
  return { files: files.length, entries };
}

/** The prefix of the directories the SDK makes for a session it resumes from a store. */
export const RESUME_COPY_PREFIX = 'claude-resume-';

/**
 * The resume copies under `tmpRoot` (the OS temp directory of the process that ran the SDK) that
 * hold a transcript of `sessionId`: each one's directory and its `projects/` root.
 */
export function resumeCopiesOf(
  tmpRoot: string,
  projectKey: string,
  sessionId: string,
): Array<{ directory: string; projectsRoot: string }> {
  return namesIn(tmpRoot)
    .filter((name) => name.startsWith(RESUME_COPY_PREFIX))
    .map((name) => ({ directory: join(tmpRoot, name), projectsRoot: join(tmpRoot, name, 'projects') }))
    .filter(({ projectsRoot }) => sessionFiles(projectsRoot, projectKey, sessionId).length > 0);
}

function stampOf(entry: SessionStoreEntry): number | undefined {
  if (typeof entry.timestamp !== 'string') return undefined;
  const ms = Date.parse(entry.timestamp);
  return Number.isFinite(ms) ? ms / 1000 : undefined;
}

/**
 * The entries after the last one stamped before `since` (epoch seconds): what was written from
 * then on, with the unstamped bookkeeping lines that follow the older part. The same cut in the
 * store and in a resume copy leaves two sequences that start at the same line, so the in-step
 * walk of `missingEntries` lines their unstamped entries up again.
 */
export function entriesSince(entries: readonly SessionStoreEntry[], since: number): SessionStoreEntry[] {
  let cut = 0;
  entries.forEach((entry, index) => {
    const stamp = stampOf(entry);
    if (stamp !== undefined && stamp < since) cut = index + 1;
  });
  return entries.slice(cut);
}

/**
 * What the store lacks of the lines a resume copy got since `since`. Pure. Entries written before
 * (the transcript the SDK loaded, as rewritten for the model) are never taken: the store holds the
 * originals, and a rewritten copy is not one.
 */
export function missingSince(
  stored: readonly SessionStoreEntry[],
  local: readonly SessionStoreEntry[],
  since: number,
): SessionStoreEntry[] {
  const storedUuids = new Set(
    stored.flatMap((entry) => (typeof entry.uuid === 'string' ? [entry.uuid] : [])),
  );
  return missingEntries(entriesSince(stored, since), entriesSince(local, since)).filter(
    (entry) => typeof entry.uuid !== 'string' || !storedUuids.has(entry.uuid),
  );
}

/**
 * Brings one session up to date from a resume copy (`projectsRoot` inside it) with what the
 * binary wrote there since the attempt started at `since` (epoch seconds).
 */
export async function recoverResumedSince(
  target: TranscriptTarget,
  projectsRoot: string,
  projectKey: string,
  sessionId: string,
  since: number,
): Promise<SessionRecovery> {
  const files = sessionFiles(projectsRoot, projectKey, sessionId);
  let entries = 0;
  for (const { key, file } of files) {
    const stored = (await target.load(key)) ?? [];
    const missing = missingSince(stored, readTranscriptFile(file) ?? [], since);
    // The copy's sidecars of earlier subagents are the SDK's rendering of what the store holds;
    // only a transcript that brings new lines brings its sidecar.
    if (missing.length > 0) entries += await appendMissing(target, key, stored, missing, sidecarEntry(file));
  }
  return { files: files.length, entries };
}

/**
 * Removes a resume copy, as the SDK would have when its query ended (it holds a transcript, and
 * possibly a copy of the credentials file). Never throws.
 */
export function removeResumeCopy(directory: string): void {
  try {
    rmSync(directory, { recursive: true, force: true });
  } catch {
    // Left for the next start; it only costs a comparison.
  }
}
