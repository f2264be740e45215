/**
 * `TranscriptSafety` against real files and a real SQLite store (issue 22: no unit test guarded its
 * red lines; a dropped batch reported as recovered, killed sessions not compared at start and a
 * `runs/unsaved/` never emptied all went unnoticed). The store refuses writes the way a full disk
 * makes it: its `append` throws while `refusing` is set; everything else is the real store.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { SessionKey, SessionStoreEntry } from '@anthropic-ai/claude-agent-sdk';
import { afterEach, describe, expect, it } from 'vitest';
import { normalize } from '../../../src/runtime/events.js';
import { addTombstones } from '../../../src/runtime/retention/tombstones.js';
import { newStepResult, type StepResult } from '../../../src/runtime/step-result.js';
import {
  agentProjectsRoot,
  TranscriptSafety,
  UNSAVED_DIRECTORY,
} from '../../../src/runtime/transcript-safety.js';
import type { SqliteSessionStore } from '../../../src/store/sqlite-session-store.js';
import {
  appendTranscriptFile,
  readTranscriptFile,
  sessionsUnder,
  transcriptFile,
} from '../../../src/store/transcript-recovery.js';
import { sqliteStoresPerTest } from '../../support/sqlite-stores.js';

const openStore = sqliteStoresPerTest('flower-transcript-safety-');
const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

const projectKey = '-work-project';
const keyOf = (sessionId: string, subpath?: string): SessionKey =>
  subpath === undefined ? { projectKey, sessionId } : { projectKey, sessionId, subpath };
const entries = (id: string, count: number, from = 1): SessionStoreEntry[] =>
  Array.from({ length: count }, (_, index) => ({
    type: index % 2 === 0 ? 'user' : 'assistant',
    uuid: `${id}-${from + index}`,
    message: { content: `${id} ${from + index}` },
  }));
const uuids = (store: SqliteSessionStore, key: SessionKey) =>
  (store.loadRaw(key) ?? []).map((entry) => entry.uuid);

/** A run directory and an agent config directory, and a real store that refuses while `refusing`. */
function world() {
  const root = mkdtempSync(join(tmpdir(), 'flower-transcript-safety-run-'));
  cleanups.push(() => rmSync(root, { recursive: true, force: true }));
  const runDir = join(root, 'runs');
  mkdirSync(runDir);
  const env = { CLAUDE_CONFIG_DIR: join(root, 'claude') };
  const store = openStore();
  const control = { refusing: false };
  const append = store.append.bind(store);
  store.append = async (key: SessionKey, batch: SessionStoreEntry[]) => {
    if (control.refusing) throw new Error('database or disk is full');
    return append(key, batch);
  };
  const warnings: string[] = [];
  const verbose: string[] = [];
  /** A runtime's TranscriptSafety, as `Runtime` builds it. */
  const safety = () =>
    new TranscriptSafety({
      backend: store,
      target: store,
      runDir,
      projectKey,
      env,
      onWarning: (line) => warnings.push(line),
      onVerbose: (line) => verbose.push(line),
    });
  return {
    runDir,
    env,
    store,
    control,
    warnings,
    verbose,
    safety,
    unsavedRoot: join(runDir, UNSAVED_DIRECTORY),
    projects: agentProjectsRoot(env),
  };
}

function stepOf(sessionId: string, retired: string[] = []): StepResult {
  const result = newStepResult('work', 'run-1');
  result.sessionId = sessionId;
  result.retired = retired;
  return result;
}

/** The SDK's own messages, through the same normalisation the runtime applies. */
const mirrorError = (sessionId: string) =>
  normalize({
    type: 'system',
    subtype: 'mirror_error',
    error: 'append timed out after 60000ms',
    key: { projectKey, sessionId },
    uuid: '00000000-0000-4000-8000-000000000001',
    session_id: sessionId,
  } as never)[0] as ReturnType<typeof normalize>[number];
const writesLost = (sessionIds: string[], lost: string[] = ['transcript'], code = 'ENOSPC') =>
  normalize({
    type: 'system',
    subtype: 'session_writes_lost',
    error_code: code,
    lost,
    transcript_session_ids: sessionIds,
    uuid: '00000000-0000-4000-8000-000000000002',
    session_id: sessionIds[0],
  } as never)[0] as ReturnType<typeof normalize>[number];

describe('entries the store refused', () => {
  it('are said once in plain words, held, and written in order at the next append it accepts', async () => {
    const w = world();
    const safety = w.safety();
    w.control.refusing = true;
    await safety.sessionStore.append(keyOf('s1'), entries('s1', 2));
    await safety.sessionStore.append(keyOf('s2'), entries('s2', 1));
    expect(w.warnings).toEqual([
      'The session store did not take the transcript of session s1 (database or disk is full). flower keeps the entries and writes them as soon as it accepts writes again; the step goes on.',
    ]);
    expect(uuids(w.store, keyOf('s1'))).toEqual([]);

    w.control.refusing = false;
    await safety.sessionStore.append(keyOf('s1'), entries('s1', 1, 3));
    expect(uuids(w.store, keyOf('s1'))).toEqual(['s1-1', 's1-2', 's1-3']);

    // The step that touched s1 says so in its row.
    const step = stepOf('s1');
    await safety.settle(step);
    expect(step.transcript).toMatchObject({
      state: 'recovered',
      sessions: ['s1'],
      detail: 'the session store refused some transcript entries; all were written later',
    });
    expect(w.verbose).toEqual(['The session store has every transcript entry of this step again.']);
    // The end of the step tried every held key: s2 is in the store too.
    expect(uuids(w.store, keyOf('s2'))).toEqual(['s2-1']);
    expect(safety.problem()).toBeUndefined();

    // Settled: the next step in the same session does not report it again.
    const next = stepOf('s1');
    await safety.settle(next);
    expect(next.transcript).toBeUndefined();
  });

  it('mark every step they touched, a handoff’s retired session included', async () => {
    const w = world();
    const safety = w.safety();
    w.control.refusing = true;
    await safety.sessionStore.append(keyOf('old'), entries('old', 1));
    w.control.refusing = false;
    const step = stepOf('new', ['old']);
    await safety.settle(step);
    expect(step.transcript).toMatchObject({ state: 'recovered', sessions: ['old'], entries: 1 });
    expect(uuids(w.store, keyOf('old'))).toEqual(['old-1']);
    // A step of other sessions carries no transcript field.
    const other = stepOf('elsewhere');
    await safety.settle(other);
    expect(other.transcript).toBeUndefined();
  });
});

describe('what the store still lacks when a step ends', () => {
  it("waits in runs/unsaved/ in the agent's layout; the next start copies it in and empties runs/unsaved/", async () => {
    const w = world();
    const first = w.safety();
    w.control.refusing = true;
    await first.sessionStore.append(keyOf('s1'), entries('s1', 2));
    await first.sessionStore.append(keyOf('s1', 'subagents/agent-a'), entries('a', 3));
    const step = stepOf('s1');
    await first.settle(step);

    expect(step.transcript).toEqual({
      state: 'unsaved',
      sessions: ['s1'],
      entries: 5,
      detail: `Transcript entries of session s1 are not in the session store (database or disk is full); they are kept in ${w.unsavedRoot}, and flower copies them in when it next starts in this directory.`,
    });
    expect(w.warnings.at(-1)).toBe(step.transcript?.detail);
    expect(readTranscriptFile(transcriptFile(w.unsavedRoot, keyOf('s1')))).toEqual(entries('s1', 2));
    expect(readTranscriptFile(transcriptFile(w.unsavedRoot, keyOf('s1', 'subagents/agent-a')))).toEqual(
      entries('a', 3),
    );
    // Saved on disk, so no longer held in memory; the process still must not look successful.
    expect(first.sessionStore.pending()).toEqual([]);
    expect(first.problem()).toBe(
      `5 transcript entries (session s1) are not in the session store (database or disk is full); they are kept in ${w.unsavedRoot}, and flower copies them in when it next starts in this directory.`,
    );

    // The next runtime in this run directory, with a store that takes writes again.
    w.control.refusing = false;
    w.warnings.length = 0;
    const next = w.safety();
    await next.recoverAtStart([]);
    expect(uuids(w.store, keyOf('s1'))).toEqual(['s1-1', 's1-2']);
    expect(uuids(w.store, keyOf('s1', 'subagents/agent-a'))).toEqual(['a-1', 'a-2', 'a-3']);
    expect(w.warnings).toEqual([
      "The session store was missing 5 transcript entries of 1 session; they were copied back from the agents' own transcripts.",
    ]);
    // Emptied: nothing is copied twice, and nothing waits there any more.
    expect(sessionsUnder(w.unsavedRoot)).toEqual([]);
    expect(() => statSync(join(w.unsavedRoot, projectKey, 's1'))).toThrow();
    expect(next.problem()).toBeUndefined();
  });

  it('stay in runs/unsaved/ when the store still refuses at the next start, and it says so', async () => {
    const w = world();
    appendTranscriptFile(w.unsavedRoot, keyOf('s1'), entries('s1', 2));
    w.control.refusing = true;
    await w.safety().recoverAtStart([]);
    expect(w.warnings).toEqual([
      `Could not copy the unsaved transcript of session s1 from ${w.unsavedRoot} into the session store: database or disk is full. It stays there for the next start.`,
    ]);
    expect(readTranscriptFile(transcriptFile(w.unsavedRoot, keyOf('s1')))).toEqual(entries('s1', 2));
  });

  it('stay held when runs/unsaved/ cannot take them either, and the process says where they may still be', async () => {
    const w = world();
    // A file where the directory should be: no write there can succeed.
    writeFileSync(w.unsavedRoot, '');
    const safety = w.safety();
    w.control.refusing = true;
    await safety.sessionStore.append(keyOf('s1'), entries('s1', 2));
    const step = stepOf('s1');
    await expect(safety.settle(step)).resolves.toBeUndefined();
    expect(step.transcript).toEqual({
      state: 'unsaved',
      sessions: ['s1'],
      entries: 2,
      detail: `Transcript entries of session s1 are not in the session store (database or disk is full), and ${w.unsavedRoot} could not take them either; the agent's own transcript (${w.projects}) may still have them.`,
    });
    expect(safety.sessionStore.pending()).toMatchObject([{ key: keyOf('s1'), entries: entries('s1', 2) }]);
    expect(safety.problem()).toBe(
      `2 transcript entries (session s1) are not in the session store (database or disk is full); ${w.unsavedRoot} could not take them either. Free some space and run flower here again: it copies them in from the agent's own transcript (${w.projects}) if that still has them.`,
    );
    // The SIGTERM rescue and close save what they can, synchronously, and never throw.
    expect(() => safety.saveHeld()).not.toThrow();
  });
});

describe('start-up recovery from the agents’ own transcripts', () => {
  /** The agent's own file of `sessionId` with `count` entries, last written `at` (epoch seconds). */
  function agentFile(w: ReturnType<typeof world>, sessionId: string, count: number, at?: number): void {
    appendTranscriptFile(w.projects, keyOf(sessionId), entries(sessionId, count));
    if (at !== undefined) utimesSync(transcriptFile(w.projects, keyOf(sessionId)), at, at);
  }

  it('compares every killed session, even one whose file looks older than the store’s copy', async () => {
    const w = world();
    // The store stamped its last append after the agent wrote its file (the SDK mirrors in the
    // background, so a kill cut the last batch off): only the suspicion makes flower look.
    await w.store.append(keyOf('killed'), entries('killed', 1));
    agentFile(w, 'killed', 3, 1_000_000_000);

    await w.safety().recoverAtStart(['killed']);
    expect(uuids(w.store, keyOf('killed'))).toEqual(['killed-1']);

    await w.safety().recoverAtStart(['killed'], ['killed']);
    expect(uuids(w.store, keyOf('killed'))).toEqual(['killed-1', 'killed-2', 'killed-3']);
    expect(w.warnings).toEqual([
      "The session store was missing 2 transcript entries of 1 session; they were copied back from the agents' own transcripts.",
    ]);
  });

  it("copies in sessions whose own transcript is newer than the store's, or that the store lost", async () => {
    const w = world();
    await w.store.append(keyOf('listed'), entries('listed', 1));
    await w.store.append(keyOf('current'), entries('current', 1));
    const later = Date.now() / 1000 + 60;
    agentFile(w, 'listed', 2, later); // newer than the store's copy: the store lists it
    agentFile(w, 'current', 2, 1_000_000_000); // older: in step, not read
    agentFile(w, 'lost', 2); // the lineage names it, the (damaged) store has none of it
    agentFile(w, 'stranger', 2); // neither the store nor the lineage knows it

    // A suspect already in step is compared too, and not counted among the sessions copied in.
    await w.store.append(keyOf('insync'), entries('insync', 2));
    agentFile(w, 'insync', 2, 1_000_000_000);
    await w.safety().recoverAtStart(['lost'], ['insync']);
    expect(uuids(w.store, keyOf('listed'))).toEqual(['listed-1', 'listed-2']);
    expect(uuids(w.store, keyOf('current'))).toEqual(['current-1']);
    expect(uuids(w.store, keyOf('lost'))).toEqual(['lost-1', 'lost-2']);
    expect(uuids(w.store, keyOf('stranger'))).toEqual([]);
    expect(w.warnings).toEqual([
      "The session store was missing 3 transcript entries of 2 sessions; they were copied back from the agents' own transcripts.",
    ]);
  });

  it('never copies back what gc dropped: not from the agent’s transcript, not from runs/unsaved/', async () => {
    const w = world();
    agentFile(w, 'dropped', 2);
    appendTranscriptFile(w.unsavedRoot, keyOf('dropped-unsaved'), entries('dropped-unsaved', 1));
    const stone = (sessionId: string) => ({
      projectKey,
      sessionId,
      droppedAt: 2_000,
      kind: 'retired' as const,
      lastWrite: 1_000,
      host: 'gc-host',
    });
    addTombstones(w.runDir, [stone('dropped'), stone('dropped-unsaved')]);

    await w.safety().recoverAtStart(['dropped', 'dropped-unsaved'], ['dropped']);
    expect(await w.store.listSessions(projectKey)).toEqual([]);
    expect(w.warnings).toEqual([]);
    // Its waiting entries are discarded with it; the agent's own file is not flower's to remove.
    expect(sessionsUnder(w.unsavedRoot)).toEqual([]);
    expect(readFileSync(transcriptFile(w.projects, keyOf('dropped')), 'utf8')).toContain('dropped-2');
  });

  it('never throws: a store that cannot be read is said in -v and left for the next start', async () => {
    const w = world();
    agentFile(w, 's1', 2);
    const safety = w.safety();
    const load = w.store.load.bind(w.store);
    w.store.load = async () => {
      throw new Error('database disk image is malformed');
    };
    await expect(safety.recoverAtStart(['s1'], ['s1'])).resolves.toBeUndefined();
    w.store.load = load;
    expect(w.verbose).toEqual([
      `Could not compare session s1 with ${w.projects}: database disk image is malformed`,
    ]);
    expect(w.warnings).toEqual([]);
  });
});

describe("the SDK's own reports of lost entries", () => {
  it("a dropped batch (mirror_error) is recovered from the agent's local transcript", async () => {
    const w = world();
    const safety = w.safety();
    await w.store.append(keyOf('s1'), entries('s1', 1));
    appendTranscriptFile(w.projects, keyOf('s1'), entries('s1', 3));
    safety.observe(mirrorError('s1'));
    expect(w.warnings).toEqual([
      'The session store did not take the transcript of session s1 (append timed out after 60000ms). flower keeps the entries and writes them as soon as it accepts writes again; the step goes on.',
    ]);
    const step = stepOf('s1');
    await safety.settle(step);
    expect(step.transcript).toMatchObject({ state: 'recovered', sessions: ['s1'], entries: 2 });
    expect(uuids(w.store, keyOf('s1'))).toEqual(['s1-1', 's1-2', 's1-3']);
    expect(safety.problem()).toBeUndefined();
  });

  it('a dropped batch with no local transcript to recover it from is not "recovered", and fails the process', async () => {
    const w = world();
    const safety = w.safety();
    // A resumed session: the binary wrote into the SDK's resume copy, gone when the query ended.
    safety.observe(mirrorError('s1'));
    const step = stepOf('s1');
    await safety.settle(step);
    expect(step.transcript).toMatchObject({ state: 'unsaved', sessions: ['s1'] });
    // Nothing was kept anywhere: the detail names the SDK's own reason.
    expect(step.transcript?.detail).toContain('(append timed out after 60000ms)');
    expect(w.warnings.at(-1)).toBe(step.transcript?.detail);
    expect(safety.problem()).toBe(
      `Transcript entries of session s1 are not in the session store (append timed out after 60000ms): the SDK dropped them, and the agent's own transcript (${w.projects}) did not have them when the step ended. flower copies them in when it next starts in this directory if that transcript has them by then.`,
    );
  });

  it('a transcript the agent could not write (session_writes_lost) is reported as lost, once, and fails the process', async () => {
    const w = world();
    const safety = w.safety();
    safety.observe(writesLost(['s1'], ['global_config']));
    expect(w.warnings).toEqual([]);
    safety.observe(writesLost(['s1', 's2']));
    safety.observe(writesLost(['s2'], ['transcript'], 'EDQUOT'));
    const lostLine =
      'Claude Code could not save part of the transcript of session s1 (ENOSPC: the disk is full); resuming it may miss part of the conversation.';
    expect(w.warnings).toEqual([lostLine]);
    const step = stepOf('s1');
    await safety.settle(step);
    expect(step.transcript).toEqual({ state: 'lost', sessions: ['s1'], entries: 0, detail: lostLine });
    expect(safety.problem()).toBe(`${lostLine} Free some space before the next run.`);
  });
});

describe('the accounting per session', () => {
  it("a step's end saves only its own sessions' entries, and counts only theirs", async () => {
    const w = world();
    const safety = w.safety();
    w.control.refusing = true;
    await safety.sessionStore.append(keyOf('s1'), entries('s1', 2));
    // Another session, still running elsewhere in this process: its step has not ended.
    await safety.sessionStore.append(keyOf('s2'), entries('s2', 1));
    const step = stepOf('s1');
    await safety.settle(step);
    expect(step.transcript).toMatchObject({ state: 'unsaved', sessions: ['s1'], entries: 2 });
    expect(safety.sessionStore.pending()).toMatchObject([{ key: keyOf('s2'), entries: entries('s2', 1) }]);
    expect(sessionsUnder(w.unsavedRoot)).toEqual([[projectKey, 's1']]);
  });

  it('a batch the SDK dropped after the store had refused others of the session is still recovered', async () => {
    const w = world();
    const safety = w.safety();
    w.control.refusing = true;
    await safety.sessionStore.append(keyOf('s1'), entries('s1', 1));
    // The agent's own file has the whole session; the SDK then dropped the batch s1-2, s1-3.
    appendTranscriptFile(w.projects, keyOf('s1'), entries('s1', 3));
    safety.observe(mirrorError('s1'));
    w.control.refusing = false;
    const step = stepOf('s1');
    await safety.settle(step);
    expect(uuids(w.store, keyOf('s1'))).toEqual(['s1-1', 's1-2', 's1-3']);
    expect(step.transcript).toMatchObject({ state: 'recovered', entries: 3 });
  });

  it('the SDK reports without a key or a list of sessions fall back to session_id; nameless ones are ignored', async () => {
    const w = world();
    const safety = w.safety();
    safety.observe(
      normalize({
        type: 'system',
        subtype: 'mirror_error',
        error: 'x',
        uuid: 'u',
        session_id: '',
      } as never)[0] as ReturnType<typeof normalize>[number],
    );
    expect(w.warnings).toEqual([]);
    safety.observe(
      normalize({
        type: 'system',
        subtype: 'mirror_error',
        error: 'gone',
        uuid: 'u',
        session_id: 's9',
      } as never)[0] as ReturnType<typeof normalize>[number],
    );
    expect(w.warnings).toEqual([
      'The session store did not take the transcript of session s9 (gone). flower keeps the entries and writes them as soon as it accepts writes again; the step goes on.',
    ]);
    safety.observe(
      normalize({
        type: 'system',
        subtype: 'session_writes_lost',
        lost: ['transcript'],
        uuid: 'u',
        session_id: 's8',
      } as never)[0] as ReturnType<typeof normalize>[number],
    );
    expect(w.warnings.at(-1)).toBe(
      'Claude Code could not save part of the transcript of session s8 (ENOSPC: the disk is full); resuming it may miss part of the conversation.',
    );
  });

  it('a session that ran out of quota is reported with its own reason, and a lost step says nothing in -v', async () => {
    const w = world();
    const safety = w.safety();
    safety.observe(writesLost(['s1'], ['transcript'], 'EDQUOT'));
    const step = stepOf('s1');
    await safety.settle(step);
    expect(step.transcript?.detail).toBe(
      'Claude Code could not save part of the transcript of session s1 (EDQUOT: the disk quota is used up); resuming it may miss part of the conversation.',
    );
    expect(w.verbose).toEqual([]);
  });

  it('runs/unsaved/ holding only a subagent transcript is copied in and emptied', async () => {
    const w = world();
    appendTranscriptFile(w.unsavedRoot, keyOf('s1', 'subagents/agent-a'), entries('a', 1));
    await w.safety().recoverAtStart([]);
    expect(uuids(w.store, keyOf('s1', 'subagents/agent-a'))).toEqual(['a-1']);
    expect(sessionsUnder(w.unsavedRoot)).toEqual([]);
    expect(w.warnings).toEqual([
      "The session store was missing 1 transcript entry of 1 session; they were copied back from the agents' own transcripts.",
    ]);
  });

  it('never throws without callbacks: every warning is optional', async () => {
    const w = world();
    const safety = new TranscriptSafety({
      backend: w.store,
      target: w.store,
      runDir: w.runDir,
      projectKey,
      env: w.env,
    });
    w.control.refusing = true;
    await safety.sessionStore.append(keyOf('s1'), entries('s1', 1));
    safety.observe(writesLost(['s2']));
    await safety.settle(stepOf('s1'));
    appendTranscriptFile(w.projects, keyOf('s3'), entries('s3', 1));
    await expect(safety.recoverAtStart(['s3'])).resolves.toBeUndefined();
    w.control.refusing = false;
    await expect(safety.recoverAtStart(['s3'])).resolves.toBeUndefined();
    w.control.refusing = true;
    await safety.sessionStore.append(keyOf('s4'), entries('s4', 1));
    w.control.refusing = false;
    await safety.settle(stepOf('s4'));
    expect(uuids(w.store, keyOf('s3'))).toEqual(['s3-1']);
  });
});

describe('agentProjectsRoot', () => {
  it('is projects/ in CLAUDE_CONFIG_DIR (trimmed), else in ~/.claude', () => {
    expect(agentProjectsRoot({ CLAUDE_CONFIG_DIR: ' /c/claude ', HOME: '/h' })).toBe('/c/claude/projects');
    expect(agentProjectsRoot({ HOME: '/h' })).toBe('/h/.claude/projects');
    expect(agentProjectsRoot({ CLAUDE_CONFIG_DIR: '  ', HOME: '/h' })).toBe('/h/.claude/projects');
  });
});

describe("the SDK's reports: which session, and what it says", () => {
  const system = (fields: Record<string, unknown>) =>
    normalize({ type: 'system', uuid: 'u', ...fields } as never)[0] as ReturnType<typeof normalize>[number];

  it('a mirror_error names its session by its key first, and says a plain reason when it gives none', () => {
    const w = world();
    const safety = w.safety();
    safety.observe(
      system({ subtype: 'mirror_error', key: { projectKey, sessionId: 's1' }, session_id: 'parent' }),
    );
    expect(w.warnings).toEqual([
      'The session store did not take the transcript of session s1 (the store refused a batch). flower keeps the entries and writes them as soon as it accepts writes again; the step goes on.',
    ]);
  });

  it('a mirror_error naming no session at all is ignored', () => {
    const w = world();
    w.safety().observe(system({ subtype: 'mirror_error', error: 'x' }));
    expect(w.warnings).toEqual([]);
  });

  it('session_writes_lost skips nameless sessions in its list, and a report naming none is ignored', () => {
    const w = world();
    const safety = w.safety();
    safety.observe(system({ subtype: 'session_writes_lost', lost: ['transcript'] }));
    expect(w.warnings).toEqual([]);
    safety.observe(
      system({ subtype: 'session_writes_lost', lost: ['transcript'], transcript_session_ids: ['', 's1'] }),
    );
    expect(w.warnings).toEqual([
      'Claude Code could not save part of the transcript of session s1 (ENOSPC: the disk is full); resuming it may miss part of the conversation.',
    ]);
  });
});

describe('later trouble of a session keeps what was known about it', () => {
  it('a lost transcript stays lost after the store refuses the session too', async () => {
    const w = world();
    const safety = w.safety();
    safety.observe(writesLost(['s1']));
    w.control.refusing = true;
    await safety.sessionStore.append(keyOf('s1'), entries('s1', 1));
    const step = stepOf('s1');
    await safety.settle(step);
    expect(step.transcript?.state).toBe('lost');
  });

  it('a batch the SDK dropped is still recovered after the store refused the session later', async () => {
    const w = world();
    const safety = w.safety();
    appendTranscriptFile(w.projects, keyOf('s1'), entries('s1', 2));
    safety.observe(mirrorError('s1'));
    w.control.refusing = true;
    await safety.sessionStore.append(keyOf('s1'), entries('s1', 1, 3));
    w.control.refusing = false;
    const step = stepOf('s1');
    await safety.settle(step);
    expect(uuids(w.store, keyOf('s1'))).toEqual(expect.arrayContaining(['s1-1', 's1-2', 's1-3']));
    expect(step.transcript?.state).toBe('recovered');
  });
});

describe('a store that cannot list its sessions', () => {
  it('still brings the known sessions up to date at start', async () => {
    const w = world();
    appendTranscriptFile(w.projects, keyOf('s1'), entries('s1', 2));
    // listSessions is optional in the SDK's SessionStore: this one has only append and load.
    const backend = { append: w.store.append.bind(w.store), load: w.store.load.bind(w.store) };
    const safety = new TranscriptSafety({
      backend: backend as never,
      target: w.store,
      runDir: w.runDir,
      projectKey,
      env: w.env,
      onWarning: (line) => w.warnings.push(line),
    });
    await safety.recoverAtStart(['s1']);
    expect(uuids(w.store, keyOf('s1'))).toEqual(['s1-1', 's1-2']);
  });
});

describe('what the unsaved detail names', () => {
  it("the store's own refusal of the entries kept, not a later report about the session", async () => {
    const w = world();
    const safety = w.safety();
    w.control.refusing = true;
    await safety.sessionStore.append(keyOf('s1'), entries('s1', 1));
    safety.observe(mirrorError('s1'));
    const step = stepOf('s1');
    await safety.settle(step);
    expect(step.transcript?.state).toBe('unsaved');
    expect(step.transcript?.detail).toContain('are not in the session store (database or disk is full)');
  });
});

describe('what the process ends with', () => {
  it("writes what another session still holds to runs/unsaved/ before it says why, and counts every session's entries", async () => {
    const w = world();
    const safety = w.safety();
    w.control.refusing = true;
    await safety.sessionStore.append(keyOf('s1'), entries('s1', 2));
    // A session whose step has not settled (another workflow step's): held in memory only.
    await safety.sessionStore.append(keyOf('s2'), entries('s2', 1));
    await safety.settle(stepOf('s1'));
    expect(safety.sessionStore.pending()).toHaveLength(1);
    expect(safety.problem()).toBe(
      `3 transcript entries (session s1) are not in the session store (database or disk is full); they are kept in ${w.unsavedRoot}, and flower copies them in when it next starts in this directory.`,
    );
    expect(safety.sessionStore.pending()).toEqual([]);
    expect(readTranscriptFile(transcriptFile(w.unsavedRoot, keyOf('s2')))).toEqual(entries('s2', 1));
  });

  it('held entries nothing has tried to save yet are counted, and said to be in runs/unsaved/ once they are', async () => {
    const w = world();
    const safety = w.safety();
    w.control.refusing = true;
    await safety.sessionStore.append(keyOf('s1'), entries('s1', 3));
    expect(safety.problem()).toBe(
      `3 transcript entries (session s1) are not in the session store (database or disk is full); they are kept in ${w.unsavedRoot}, and flower copies them in when it next starts in this directory.`,
    );
  });

  it('a later save runs/unsaved/ cannot take keeps the count of what it took before, and says where the rest may be', async () => {
    const w = world();
    const safety = w.safety();
    w.control.refusing = true;
    await safety.sessionStore.append(keyOf('s1'), entries('s1', 2));
    await safety.settle(stepOf('s1'));
    // The session's file in runs/unsaved/ becomes something no append can write to.
    const file = transcriptFile(w.unsavedRoot, keyOf('s1'));
    rmSync(file);
    mkdirSync(file);
    await safety.sessionStore.append(keyOf('s1'), entries('s1', 1, 3));
    const step = stepOf('s1');
    await safety.settle(step);
    expect(step.transcript).toEqual({
      state: 'unsaved',
      sessions: ['s1'],
      // The two runs/unsaved/ took earlier, and the one still held.
      entries: 3,
      detail: `Transcript entries of session s1 are not in the session store (database or disk is full), and ${w.unsavedRoot} could not take them either; the agent's own transcript (${w.projects}) may still have them.`,
    });
  });
});

describe('recovery at the end of a step', () => {
  it("reads the agent's own transcript only for batches the SDK dropped, not for entries the store refused and took later", async () => {
    const w = world();
    const safety = w.safety();
    w.control.refusing = true;
    await safety.sessionStore.append(keyOf('s1'), entries('s1', 2));
    // The agent's file holds more than the store was ever handed (a later batch still in flight).
    appendTranscriptFile(w.projects, keyOf('s1'), entries('s1', 4));
    w.control.refusing = false;
    const step = stepOf('s1');
    await safety.settle(step);
    expect(step.transcript).toMatchObject({ state: 'recovered', entries: 2 });
    expect(uuids(w.store, keyOf('s1'))).toEqual(['s1-1', 's1-2']);
  });

  it('a recovery that fails is said with its own reason, and the batch is not taken as recovered', async () => {
    const w = world();
    const safety = w.safety();
    appendTranscriptFile(w.projects, keyOf('s1'), entries('s1', 2));
    safety.observe(mirrorError('s1'));
    // The store refuses the recovery's own append.
    w.control.refusing = true;
    const step = stepOf('s1');
    await safety.settle(step);
    expect(step.transcript?.state).toBe('unsaved');
    expect(step.transcript?.detail).toContain('(database or disk is full)');
    expect(step.transcript?.detail).not.toContain('append timed out');
  });
});

describe('which reports say a transcript is lost', () => {
  it('only session_writes_lost: another system message listing a lost transcript is not one', async () => {
    const w = world();
    const safety = w.safety();
    safety.observe(
      normalize({
        type: 'system',
        subtype: 'files_lost',
        error_code: 'ENOSPC',
        lost: ['transcript'],
        transcript_session_ids: ['s1'],
        uuid: '00000000-0000-4000-8000-000000000003',
        session_id: 's1',
      } as never)[0] as ReturnType<typeof normalize>[number],
    );
    expect(w.warnings).toEqual([]);
    expect(safety.problem()).toBeUndefined();
  });
});
