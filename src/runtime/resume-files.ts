/**
 * Resuming a session from flower's store with the transcript files written by flower, from the
 * rows' stored text, instead of by the SDK.
 *
 * How the SDK resumes from a `sessionStore` (SDK 0.3.332, read in its `sdk.mjs`): it calls
 * `load` for the main key; null or [] and it leaves the binary to resume from its own config
 * directory. Otherwise it makes a fresh config directory (`<tmp>/claude-resume-<random>`), copies
 * the user's credentials and settings into it (the refresh token and plugin settings taken out),
 * writes what `load` returned as `projects/<projectKey>/<sessionId>.jsonl`, then, when the store
 * has `listSubkeys`, loads every subagent transcript and writes it as
 * `<sessionId>/<subpath>.jsonl` (its `agent_metadata` entries as `<subpath>.meta.json`), points
 * the binary's CLAUDE_CONFIG_DIR at it, starts the binary (through `spawnClaudeCodeProcess`) and
 * deletes the directory when the binary has exited. Serialising every entry there, main and
 * subagents, with the garbage it leaves, was most of flower's own CPU before the first model
 * request of a resumed realistic session (issue 23).
 *
 * So for one resume the SDK is given a store that answers the main key's `load` with a single
 * placeholder entry (the SDK still makes its directory, with the credentials, settings and
 * cleanup it knows how to do) and lists no subagents; just before the binary starts, `place`
 * writes the real files into that directory: the transcripts exactly as the rewriting layer
 * loads them (expire, trim, prune and heal as before), each entry the layer left unchanged as
 * its stored row text, only the entries it changed or added serialised.
 *
 * Invariants:
 * - The binary sees the same files the SDK's own copy would have held, in the same place, so
 *   nothing else changes: the resumed session's new entries are mirrored into the store through
 *   the same guard (`append` goes to the inner store), the copy is deleted by the SDK when the
 *   binary exits, and a copy a SIGKILL left behind is recovered from as before (leftovers.ts).
 * - The binary never starts on the placeholder: `place` finds it where the SDK wrote it (under
 *   the CLAUDE_CONFIG_DIR the binary gets) and replaces it, or throws, which fails the attempt
 *   before the binary runs, with a message saying why. A transcript file holding anything but
 *   the placeholder is never written over. Where flower does not start the binary
 *   itself (Windows: no `spawnClaudeCodeProcess`) this path is not taken (`options.ts`).
 * - The placeholder is served once, for this session's main key only; every other call goes to
 *   the inner store. If the SDK never asked, `place` writes nothing anywhere.
 * - A session the store does not hold, or whose history loads empty, is not prepared: the SDK
 *   then does what it always did (the binary resumes from its own config directory).
 * - The prepared text is let go once it is written (a long session's history is large).
 */
import { closeSync, mkdirSync, openSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { SessionKey, SessionStore, SessionStoreEntry } from '@anthropic-ai/claude-agent-sdk';
import { PRIVATE_DIRECTORY_MODE, PRIVATE_FILE_MODE } from '../config/private-files.js';
import type { LoadReport } from '../store/load-report.js';
import type { RewriteOptions } from '../store/rewrite.js';
import { RewritingSessionStore } from '../store/rewriting-store.js';
import type { SqliteSessionStore } from '../store/sqlite-session-store.js';
import { TextKeptTranscripts } from '../store/text-kept-transcripts.js';
import { SIDECAR_TYPE } from '../store/transcript-recovery.js';

/** The one entry the SDK is given for the main transcript; `place` replaces its file. */
export const RESUME_PLACEHOLDER: Readonly<SessionStoreEntry> = Object.freeze({
  type: 'flower-resume-placeholder',
});

/** Bytes gathered before each write (the SDK's own writer uses 256 KiB). */
const WRITE_CHUNK = 1 << 20;

/** One transcript file of the resume: its lines, and for a subagent its sidecar's text. */
interface PreparedTranscript {
  /** Undefined for the main transcript. */
  subpath?: string;
  /** Each line's text without its line break: an unchanged entry's stored bytes, else its JSON. */
  lines: Array<Buffer | string>;
  meta?: string;
}

export interface ResumeFilesOptions {
  /** The local store (its rows are read as text, through a read-only connection of their own). */
  store: SqliteSessionStore;
  /** The workspace the session runs in (spill files are found and written under it). */
  workspace: string;
  /** The same rewrite policies the runtime's rewriting layer resumes with. */
  rewrite: RewriteOptions;
  onWarning?: (line: string) => void;
  /** The session to resume (main key). */
  key: SessionKey;
}

export class ResumeFiles {
  readonly key: SessionKey;
  /** What the rewriting layer changed in the main transcript. */
  readonly report: LoadReport | undefined;
  private transcripts: PreparedTranscript[];
  private served = false;

  private constructor(key: SessionKey, transcripts: PreparedTranscript[], report: LoadReport | undefined) {
    this.key = key;
    this.transcripts = transcripts;
    this.report = report;
  }

  /**
   * Loads the session's transcripts as a resume sees them; undefined when the store does not
   * hold the session or its history loads empty (then the SDK's own path is taken).
   */
  static async prepare(options: ResumeFilesOptions): Promise<ResumeFiles | undefined> {
    const rows = new TextKeptTranscripts(options.store);
    const layer = new RewritingSessionStore(rows, {
      workspace: options.workspace,
      ...options.rewrite,
      ...(options.onWarning ? { onWarning: options.onWarning } : {}),
    });
    try {
      const { key } = options;
      const main = await layer.load(key);
      if (main === null || main.length === 0) return undefined;
      const transcripts: PreparedTranscript[] = [{ lines: linesOf(main, rows) }];
      for (const subpath of await options.store.listSubkeys(key)) {
        const entries = (await layer.load({ ...key, subpath })) ?? [];
        const sidecars = entries.filter((entry) => entry.type === SIDECAR_TYPE);
        const lines = linesOf(
          entries.filter((entry) => entry.type !== SIDECAR_TYPE),
          rows,
        );
        const last = sidecars.at(-1);
        const transcript: PreparedTranscript = { subpath, lines };
        if (last !== undefined) {
          // The SDK writes the newest sidecar entry without its `type`, as the binary wrote it.
          const { type: _sidecar, ...meta } = last;
          transcript.meta = JSON.stringify(meta);
        }
        transcripts.push(transcript);
      }
      return new ResumeFiles(key, transcripts, layer.lastLoadReport(key));
    } finally {
      await layer.close();
    }
  }

  /**
   * The store the SDK is given for this resume: `inner` (what the SDK mirrors into), except that
   * the first `load` of this session's main transcript answers the placeholder and this
   * session's subagents are not listed (`place` writes them).
   */
  sessionStore(inner: SessionStore): SessionStore {
    const isThisSession = (key: { sessionId: string }) => key.sessionId === this.key.sessionId;
    const store: SessionStore = {
      append: (key, entries) => inner.append(key, entries),
      load: async (key) => {
        if (this.served || !isThisSession(key) || key.subpath !== undefined) return inner.load(key);
        this.served = true;
        return [{ ...RESUME_PLACEHOLDER }];
      },
    };
    if (inner.listSessions) store.listSessions = inner.listSessions.bind(inner);
    if (inner.listSessionSummaries) store.listSessionSummaries = inner.listSessionSummaries.bind(inner);
    if (inner.delete) store.delete = inner.delete.bind(inner);
    const listSubkeys = inner.listSubkeys?.bind(inner);
    store.listSubkeys = async (key) => (isThisSession(key) || !listSubkeys ? [] : listSubkeys(key));
    return store;
  }

  /**
   * Writes the transcripts into the resume copy the SDK made, before the binary starts with
   * `env`. Nothing when the SDK did not ask for this session; throws when its copy is not where
   * the binary will look for it.
   */
  place(env: Readonly<Record<string, string | undefined>>): void {
    if (!this.served) return;
    const { sessionId } = this.key;
    const configDir = env.CLAUDE_CONFIG_DIR;
    const projects = configDir === undefined ? undefined : join(configDir, 'projects');
    // The SDK names the project directory itself (its own key rules, CLAUDE_CODE_PROJECT_DIR_NAME):
    // the directory is the one it wrote the placeholder into. A file holding anything else (a
    // transcript of the binary's own) is never written over.
    const project =
      projects &&
      namesIn(projects).find((name) => holdsPlaceholder(join(projects, name, `${sessionId}.jsonl`)));
    if (projects === undefined || project === undefined) {
      throw new Error(
        `flower could not find the copy of session ${sessionId} that the Claude Agent SDK prepares for a resume (CLAUDE_CONFIG_DIR=${configDir ?? 'unset'}), so it cannot put the history in place; the session was not started. This SDK version resumes differently from the one flower was built for: report it.`,
      );
    }
    const session = join(projects, project, sessionId);
    for (const transcript of this.transcripts) {
      if (transcript.subpath === undefined) {
        writeLines(`${session}.jsonl`, transcript.lines);
        continue;
      }
      const file = join(session, `${transcript.subpath}.jsonl`);
      if (transcript.lines.length > 0 || transcript.meta !== undefined)
        mkdirSync(dirname(file), { recursive: true, mode: PRIVATE_DIRECTORY_MODE });
      if (transcript.lines.length > 0) writeLines(file, transcript.lines);
      if (transcript.meta !== undefined)
        writeFileSync(join(session, `${transcript.subpath}.meta.json`), transcript.meta, {
          mode: PRIVATE_FILE_MODE,
        });
    }
    this.transcripts = [];
  }
}

/** Each entry's stored text when the layer left it unchanged, else the entry serialised. */
function linesOf(entries: readonly SessionStoreEntry[], rows: TextKeptTranscripts): Array<Buffer | string> {
  return entries.map((entry) => rows.storedText(entry) ?? JSON.stringify(entry));
}

/**
 * Writes `lines` as a JSONL file (owner-only when created), about `WRITE_CHUNK` bytes at a time:
 * runs of string lines are encoded together, stored bytes are written as they are.
 */
function writeLines(file: string, lines: ReadonlyArray<Buffer | string>): void {
  const fd = openSync(file, 'w', PRIVATE_FILE_MODE);
  try {
    let parts: Buffer[] = [];
    let text = '';
    let size = 0;
    const endText = () => {
      if (text === '') return;
      parts.push(Buffer.from(text));
      text = '';
    };
    const flush = () => {
      endText();
      // writeFileSync on a descriptor writes all of it (a bare writeSync may write less).
      writeFileSync(fd, parts.length === 1 ? (parts[0] as Buffer) : Buffer.concat(parts));
      parts = [];
      size = 0;
    };
    for (const line of lines) {
      if (typeof line === 'string') {
        text += `${line}\n`;
      } else {
        endText();
        parts.push(line, LINE_BREAK);
      }
      size += line.length + 1;
      if (size >= WRITE_CHUNK) flush();
    }
    if (size > 0) flush();
  } finally {
    closeSync(fd);
  }
}

const LINE_BREAK = Buffer.from('\n');

const PLACEHOLDER_LINE = `${JSON.stringify(RESUME_PLACEHOLDER)}\n`;

/** Whether `file` holds the placeholder and nothing else (read only when it is that small). */
function holdsPlaceholder(file: string): boolean {
  try {
    return (
      statSync(file).size === Buffer.byteLength(PLACEHOLDER_LINE) &&
      readFileSync(file, 'utf8') === PLACEHOLDER_LINE
    );
  } catch {
    return false;
  }
}

/** The names in a directory; none when it cannot be read. */
function namesIn(directory: string): string[] {
  try {
    return readdirSync(directory);
  } catch {
    return [];
  }
}
