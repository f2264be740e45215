import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { SessionKey, SessionStoreEntry } from '@anthropic-ai/claude-agent-sdk';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SqliteSessionStore } from '../../../src/store/sqlite-session-store.js';
import {
  appendTranscriptFile,
  bringUpToDate,
  entriesSince,
  missingEntries,
  missingSince,
  RESUME_COPY_PREFIX,
  readTranscriptFile,
  recoverResumedSince,
  recoverSession,
  removeResumeCopy,
  resumeCopiesOf,
  SIDECAR_TYPE,
  sessionFiles,
  sessionsUnder,
  type TranscriptTarget,
  transcriptFile,
} from '../../../src/store/transcript-recovery.js';

let root: string;
let store: SqliteSessionStore;
let target: TranscriptTarget;
beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'flower-recovery-'));
  store = new SqliteSessionStore(join(root, 'sessions.db'));
  target = { append: (key, entries) => store.append(key, entries), load: async (key) => store.loadRaw(key) };
});
afterEach(() => {
  store.close();
  rmSync(root, { recursive: true, force: true });
});

const main: SessionKey = { projectKey: '-w', sessionId: '11111111-1111-4111-8111-111111111111' };
const sub: SessionKey = { ...main, subpath: 'subagents/agent-abc' };
const line = (uuid: string, type = 'user'): SessionStoreEntry => ({ type, uuid, message: { content: uuid } });
const plain = (type: string, extra: Record<string, unknown> = {}): SessionStoreEntry => ({ type, ...extra });

function writeJsonl(file: string, entries: SessionStoreEntry[], tail = ''): void {
  mkdirSync(join(file, '..'), { recursive: true });
  writeFileSync(file, `${entries.map((entry) => JSON.stringify(entry)).join('\n')}\n${tail}`);
}

describe('missingEntries', () => {
  it('finds dropped runs by uuid, and uuid-less entries by walking both sequences in step', () => {
    const local = [
      line('a'),
      plain('last-prompt', { n: 1 }),
      line('b'),
      line('c'),
      plain('last-prompt', { n: 1 }),
      plain('cost-state', { total: 2 }),
    ];
    // The store lost the batch [b, c, last-prompt] and kept the rest.
    const stored = [line('a'), plain('last-prompt', { n: 1 }), plain('cost-state', { total: 2 })];
    expect(missingEntries(stored, local)).toEqual([line('b'), line('c'), plain('last-prompt', { n: 1 })]);
  });

  it('compares uuid-less entries by content, whatever the key order a backend gave back', () => {
    const local = [plain('cost-state', { a: 1, b: { c: 2, d: 3 } })];
    const stored = [{ b: { d: 3, c: 2 }, a: 1, type: 'cost-state' }];
    expect(missingEntries(stored, local)).toEqual([]);
  });

  it("skips the binary's local-only lines and ignores the store's sidecar snapshots", () => {
    const local = [plain('api-request-blob', { hash: 'x' }), plain('api-request'), line('a')];
    const stored = [plain(SIDECAR_TYPE, { agentType: 'finder' })];
    expect(missingEntries(stored, local)).toEqual([line('a')]);
  });
});

describe('missingEntries: sidecar snapshots between plain entries', () => {
  it('a sidecar snapshot in the store does not put the walk over uuid-less entries out of step', () => {
    const local = [plain('cost-state', { total: 1 }), plain('last-prompt', { n: 2 })];
    const stored = [plain(SIDECAR_TYPE, { agentType: 'finder' }), ...local];
    expect(missingEntries(stored, local)).toEqual([]);
  });
});

describe('transcript files', () => {
  it('skips a torn line in the middle: the lines a resumed process appended after it still count', () => {
    writeJsonl(transcriptFile(root, main), [line('a')], `{"type":"user","uu\n${JSON.stringify(line('b'))}\n`);
    expect(readTranscriptFile(transcriptFile(root, main))?.map((entry) => entry.uuid)).toEqual(['a', 'b']);
  });

  it('keys only files at least two levels below the session, as the SDK does', () => {
    writeJsonl(transcriptFile(root, main), [line('a')]);
    writeJsonl(join(root, '-w', main.sessionId, 'stray.jsonl'), [line('x')]);
    expect(sessionFiles(root, '-w', main.sessionId).map((file) => file.key)).toEqual([main]);
  });

  it("maps keys to the agent's layout and lists a session's files with their subpaths", () => {
    writeJsonl(transcriptFile(root, main), [line('a')]);
    writeJsonl(transcriptFile(root, sub), [line('b')]);
    writeFileSync(join(root, '-w', main.sessionId, 'subagents', 'agent-abc.meta.json'), '{}');
    expect(transcriptFile(root, sub)).toBe(join(root, '-w', main.sessionId, 'subagents', 'agent-abc.jsonl'));
    expect(sessionFiles(root, '-w', main.sessionId).map((file) => file.key)).toEqual([main, sub]);
    expect(sessionsUnder(root)).toEqual([['-w', main.sessionId]]);
  });

  it('reads a file whose last line was torn by a kill', () => {
    writeJsonl(transcriptFile(root, main), [line('a'), line('b')], '{"type":"user","uu');
    expect(readTranscriptFile(transcriptFile(root, main))?.map((entry) => entry.uuid)).toEqual(['a', 'b']);
    expect(readTranscriptFile(join(root, 'nothing.jsonl'))).toBeUndefined();
  });

  it('appends saved entries owner-only, creating the directories', () => {
    const saved = join(root, 'unsaved');
    appendTranscriptFile(saved, sub, [line('a')]);
    appendTranscriptFile(saved, sub, [line('b')]);
    const file = transcriptFile(saved, sub);
    expect(readTranscriptFile(file)?.map((entry) => entry.uuid)).toEqual(['a', 'b']);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(statSync(join(saved, '-w')).mode & 0o777).toBe(0o700);
    expect(readFileSync(file, 'utf8').endsWith('\n')).toBe(true);
  });
});

describe('recoverSession', () => {
  it('brings a store up to date from the files, sidecar included, and adds nothing the second time', async () => {
    const mainLines = [line('a'), line('b'), plain('cost-state', { total: 1 })];
    const subLines = [line('s1'), line('s2')];
    writeJsonl(transcriptFile(root, main), mainLines);
    writeJsonl(transcriptFile(root, sub), subLines);
    writeFileSync(
      join(root, '-w', main.sessionId, 'subagents', 'agent-abc.meta.json'),
      JSON.stringify({ agentType: 'finder' }),
    );
    await store.append(main, [line('a')]);

    expect(await recoverSession(target, root, '-w', main.sessionId)).toEqual({ files: 2, entries: 5 });
    expect(store.loadRaw(main)).toEqual([line('a'), line('b'), plain('cost-state', { total: 1 })]);
    expect(store.loadRaw(sub)).toEqual([...subLines, { agentType: 'finder', type: SIDECAR_TYPE }]);
    expect(await recoverSession(target, root, '-w', main.sessionId)).toEqual({ files: 2, entries: 0 });
  });

  it('appends in chunks of the batch size and loses none between chunks', async () => {
    const sizes: number[] = [];
    const counting: TranscriptTarget = {
      append: async (key, entries) => {
        sizes.push(entries.length);
        await store.append(key, entries);
      },
      load: target.load,
    };
    const local = ['a', 'b', 'c', 'd', 'e'].map((uuid) => line(uuid));
    expect(await bringUpToDate(counting, main, local, undefined, 2)).toBe(5);
    expect(sizes).toEqual([2, 2, 1]);
    expect(store.loadRaw(main)?.map((entry) => entry.uuid)).toEqual(['a', 'b', 'c', 'd', 'e']);
  });

  it('finds nothing to do for a session without files', async () => {
    expect(await recoverSession(target, root, '-w', main.sessionId)).toEqual({ files: 0, entries: 0 });
  });
});

/** An entry written at `seconds` (epoch seconds). */
const at = (uuid: string, seconds: number, type = 'user'): SessionStoreEntry => ({
  ...line(uuid, type),
  timestamp: new Date(seconds * 1000).toISOString(),
});

describe('entriesSince', () => {
  it('cuts after the last entry stamped before the time, keeping the unstamped lines after it', () => {
    const entries = [
      at('a', 100),
      plain('cost-state', { n: 1 }),
      at('b', 200),
      plain('last-prompt'),
      at('c', 300),
    ];
    expect(entriesSince(entries, 250)).toEqual([plain('last-prompt'), at('c', 300)]);
    expect(entriesSince(entries, 50)).toEqual(entries);
    // An entry stamped at the very start belongs to the attempt.
    expect(entriesSince(entries, 200)).toEqual(entries.slice(1));
    expect(entriesSince(entries, 400)).toEqual([]);
  });
});

describe('missingSince (a resume copy against the store)', () => {
  // What the SDK wrote into the copy before the attempt (the store's transcript as the rewriting
  // layer returned it: an expired result, a heal entry the store never held), then what the
  // binary appended during the attempt (since 1000).
  const stored = [
    at('u1', 900),
    at('a1', 901, 'assistant'),
    plain('cost-state', { total: 1 }),
    plain('last-prompt'),
    at('u2', 1001),
    plain('atis-latch'),
  ];
  const copy = [
    { ...at('u1', 900), message: { content: '[expired: run it again]' } },
    at('a1', 901, 'assistant'),
    { ...at('heal-1', 901), message: { content: 'stand-in result' } },
    plain('cost-state', { total: 1 }),
    plain('last-prompt'),
    at('u2', 1001),
    plain('atis-latch'),
    at('a2', 1002, 'assistant'),
    plain('cost-state', { total: 2 }),
  ];

  it('takes only what the binary wrote since the attempt started, each once', () => {
    expect(missingSince(stored, copy, 1000)).toEqual([
      at('a2', 1002, 'assistant'),
      plain('cost-state', { total: 2 }),
    ]);
    expect(
      missingSince([...stored, at('a2', 1002, 'assistant'), plain('cost-state', { total: 2 })], copy, 1000),
    ).toEqual([]);
  });

  it('never takes the rewritten history in front of it, though a whole-file comparison would', () => {
    const whole = missingEntries(stored, copy);
    expect(whole).toContainEqual(expect.objectContaining({ uuid: 'heal-1' }));
    expect(missingSince(stored, copy, 1000)).not.toContainEqual(expect.objectContaining({ uuid: 'heal-1' }));
  });

  it('leaves out an entry the store holds under its uuid, wherever it is', () => {
    // Appended by an earlier recovery in front of older lines (it recovered out of order).
    const late = [stored[0]!, at('a2', 1002, 'assistant'), ...stored.slice(1)];
    expect(missingSince(late, copy, 1000)).toEqual([plain('cost-state', { total: 2 })]);
  });
});

describe('resume copies', () => {
  const copyRoot = (name: string) => join(root, 'tmp', name, 'projects');

  it('are the claude-resume-* directories of the temp directory that hold the session', () => {
    writeJsonl(transcriptFile(copyRoot(`${RESUME_COPY_PREFIX}one`), main), [line('a')]);
    writeJsonl(transcriptFile(copyRoot(`${RESUME_COPY_PREFIX}other`), { ...main, sessionId: 'x' }), [
      line('a'),
    ]);
    writeJsonl(transcriptFile(copyRoot('unrelated'), main), [line('a')]);
    expect(resumeCopiesOf(join(root, 'tmp'), '-w', main.sessionId)).toEqual([
      {
        directory: join(root, 'tmp', `${RESUME_COPY_PREFIX}one`),
        projectsRoot: copyRoot(`${RESUME_COPY_PREFIX}one`),
      },
    ]);
    expect(resumeCopiesOf(join(root, 'absent'), '-w', main.sessionId)).toEqual([]);
  });

  it("bring the store up to date with the attempt's lines, subagents included, and are removed", async () => {
    const projects = copyRoot(`${RESUME_COPY_PREFIX}k`);
    await store.append(main, [at('u1', 900)]);
    await store.append(sub, [at('s1', 950), { type: SIDECAR_TYPE, agentType: 'coder' }]);
    writeJsonl(transcriptFile(projects, main), [at('u1', 900), at('u2', 1001), at('a2', 1002, 'assistant')]);
    // An earlier worker's transcript, as the SDK copied it in: nothing new, so nothing is added.
    writeJsonl(transcriptFile(projects, sub), [at('s1', 950)]);
    writeFileSync(
      join(projects, '-w', main.sessionId, 'subagents', 'agent-abc.meta.json'),
      '{"agentType":"old"}',
    );
    // A worker started during the attempt.
    const fresh: SessionKey = { ...main, subpath: 'subagents/agent-new' };
    writeJsonl(transcriptFile(projects, fresh), [at('n1', 1003), at('n2', 1004, 'assistant')]);
    writeFileSync(
      join(projects, '-w', main.sessionId, 'subagents', 'agent-new.meta.json'),
      '{"agentType":"coder"}',
    );

    expect(await recoverResumedSince(target, projects, '-w', main.sessionId, 1000)).toEqual({
      files: 3,
      entries: 5,
    });
    expect(store.loadRaw(main)?.map((entry) => entry.uuid)).toEqual(['u1', 'u2', 'a2']);
    expect(store.loadRaw(sub)).toEqual([at('s1', 950), { type: SIDECAR_TYPE, agentType: 'coder' }]);
    expect(store.loadRaw(fresh)).toEqual([
      at('n1', 1003),
      at('n2', 1004, 'assistant'),
      { agentType: 'coder', type: SIDECAR_TYPE },
    ]);
    expect(await recoverResumedSince(target, projects, '-w', main.sessionId, 1000)).toEqual({
      files: 3,
      entries: 0,
    });

    removeResumeCopy(join(root, 'tmp', `${RESUME_COPY_PREFIX}k`));
    expect(resumeCopiesOf(join(root, 'tmp'), '-w', main.sessionId)).toEqual([]);
  });
});
