import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { SessionKey, SessionStoreEntry } from '@anthropic-ai/claude-agent-sdk';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SqliteSessionStore } from '../../../src/store/sqlite-session-store.js';
import {
  appendTranscriptFile,
  bringUpToDate,
  missingEntries,
  readTranscriptFile,
  recoverSession,
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
