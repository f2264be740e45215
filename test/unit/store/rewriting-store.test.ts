import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { InMemorySessionStore, type SessionKey } from '@anthropic-ai/claude-agent-sdk';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { SessionBackend, StoredTranscript } from '../../../src/store/backend.js';
import {
  RewritingSessionStore,
  type RewritingSessionStoreOptions,
  reasonOf,
} from '../../../src/store/rewriting-store.js';
import { spillFileName } from '../../../src/store/spill.js';
import { SqliteSessionStore } from '../../../src/store/sqlite-session-store.js';
import { TranscriptBuilder } from '../../support/transcript-builder.js';
import { validateTranscript } from '../../support/transcript-validator.js';

let directory: string;
let workspace: string;
let file: string;
const open: Array<{ close(): unknown }> = [];
const key: SessionKey = { projectKey: '-tmp-x-ws', sessionId: 'a1b2' };

beforeEach(() => {
  directory = mkdtempSync(path.join(tmpdir(), 'flower-rewriting-'));
  workspace = path.join(directory, 'ws');
  file = path.join(directory, 'runs', 'sessions.db');
});
afterEach(() => {
  for (const handle of open.splice(0)) handle.close();
  rmSync(directory, { recursive: true, force: true });
});

function layered(options: Partial<RewritingSessionStoreOptions> = {}) {
  const backend = new SqliteSessionStore(file);
  open.push(backend);
  const warnings: string[] = [];
  const store = new RewritingSessionStore(backend, {
    workspace,
    onWarning: (line) => warnings.push(line),
    ...options,
  });
  return { store, backend, warnings };
}

const raw = (): Database.Database => {
  const db = new Database(file);
  open.push(db);
  return db;
};
const spillDir = () => path.join(workspace, '.flower/spill');
const spillFiles = (): string[] => {
  try {
    return readdirSync(spillDir())
      .filter((name) => name.endsWith('.txt'))
      .sort();
  } catch {
    return [];
  }
};
type Block = Record<string, unknown>;
const resultOf = (entries: readonly Record<string, unknown>[], id: string): Block | undefined =>
  entries
    .flatMap((entry) => ((entry.message as { content?: unknown })?.content as Block[]) ?? [])
    .find((block) => block?.type === 'tool_result' && block.tool_use_id === id);
const entryAnswering = (entries: readonly Record<string, unknown>[], id: string) =>
  entries.find((entry) => resultOf([entry], id) !== undefined);

describe('RewritingSessionStore: load', () => {
  it('rewrites the returned copy, reports it, and leaves the stored rows byte-identical', async () => {
    const { store, backend } = layered({ trim: { enabled: true, keepRecent: 1 } });
    const t = new TranscriptBuilder();
    t.prompt('go');
    for (let index = 0; index < 8; index += 1)
      t.bash('git status', `On branch main\n${'M file\n'.repeat(20)}${index}`);
    t.tool('Read', { file_path: 'a' }, 'a'.repeat(5000));
    t.tool('Read', { file_path: 'b' }, 'b'.repeat(5000));
    t.apiError();
    t.prompt('again');
    await store.append(key, t.entries);
    const rowsBefore = raw().prepare('SELECT * FROM entries ORDER BY seq').all();
    const loaded = (await store.load(key)) ?? [];
    const text = JSON.stringify(loaded.map((entry) => entry.message));
    expect(text).toContain('`git status` expired');
    expect(text).toContain(`[tool result archived: 5000 chars. Full text at ${spillDir()}/`);
    expect(text).not.toContain('API Error');
    expect(store.lastLoadReport(key)).toMatchObject({
      expired: 2,
      trimmed: 1,
      kept: 1,
      pruned: 1,
      spillFailures: 0,
    });
    expect(raw().prepare('SELECT * FROM entries ORDER BY seq').all()).toEqual(rowsBefore);
    expect(backend.loadRaw(key)).toEqual(t.entries);
    expect(await store.load({ ...key, sessionId: 'unknown' })).toBeNull();
  });

  it('a rewritten result loses its duplicate copy; the copy keeps its shape and short fields', async () => {
    const { store } = layered({ trim: { enabled: true, keepRecent: 0 }, ephemeral: { keepRecent: 0 } });
    const t = new TranscriptBuilder();
    t.prompt('go');
    const read = t.call('Read', { file_path: '/work/project/big.ts' });
    const readEntry = t.push({
      type: 'user',
      message: {
        role: 'user',
        content: [{ type: 'tool_result', tool_use_id: read, content: 'r'.repeat(6000) }],
      },
      toolUseResult: {
        type: 'text',
        file: { filePath: '/work/project/big.ts', content: 'R'.repeat(5900), numLines: 200, totalLines: 200 },
      },
    });
    const bash = t.bash('npm run build', 'b'.repeat(4000));
    const glance = t.bash('git status', `On branch main\n${'M file\n'.repeat(40)}`);
    const untouched = t.bash('npm test', 'ok');
    await store.append(key, t.entries);
    const loaded = (await store.load(key)) ?? [];
    const pointer = resultOf(loaded, read)?.content as string;
    expect(pointer).toMatch(/^\[tool result archived: 6000 chars/);
    expect(entryAnswering(loaded, read)?.toolUseResult).toEqual({
      type: 'text',
      file: { filePath: '/work/project/big.ts', content: pointer, numLines: 200, totalLines: 200 },
    });
    const buildPointer = resultOf(loaded, bash)?.content as string;
    expect(entryAnswering(loaded, bash)?.toolUseResult).toEqual({
      stdout: buildPointer,
      stderr: '',
      interrupted: false,
    });
    const note = resultOf(loaded, glance)?.content as string;
    expect(note).toContain('`git status` expired');
    expect(entryAnswering(loaded, glance)?.toolUseResult).toEqual({
      stdout: note,
      stderr: '',
      interrupted: false,
    });
    expect(entryAnswering(loaded, untouched)).toEqual(entryAnswering(t.entries, untouched));
    expect(readEntry.toolUseResult).toMatchObject({ file: { content: 'R'.repeat(5900) } });
    expect(validateTranscript(loaded, { original: t.entries, singleChain: true })).toEqual([]);
  });

  it('resumes around a row that is not valid JSON: chain relinked, call and result kept paired, named once', async () => {
    const { store, warnings } = layered();
    const t = new TranscriptBuilder();
    t.prompt('go');
    const lostCall = t.call('Bash', { command: 'make' }); // seq 1: the assistant entry, damaged below
    t.result(lostCall, 'built'); //                          seq 2: its result, now answering nothing
    const lostAnswer = t.call('Bash', { command: 'make test' }); // seq 3
    t.result(lostAnswer, 'passed'); //                       seq 4: damaged below, the call is left open
    const last = t.prompt('carry on');
    await store.append(key, t.entries);
    const damage = raw().prepare('UPDATE entries SET payload = ? WHERE seq = ?');
    damage.run('{"type":"assistant","message":{"content":[', 1);
    damage.run('', 4);

    const loaded = (await store.load(key)) ?? [];
    expect(validateTranscript(loaded, { singleChain: true })).toEqual([]);
    expect(resultOf(loaded, lostCall)).toBeUndefined();
    expect(resultOf(loaded, lostAnswer)?.content).toMatch(/interrupted and has no result/);
    expect(loaded.find((entry) => entry.uuid === last.uuid)).toBeDefined();
    expect(JSON.stringify(loaded)).toContain('"go"');
    expect(store.lastLoadReport(key)).toMatchObject({ unreadableRows: 2, strayResults: 1, orphansHealed: 1 });
    expect(warnings).toEqual([
      `Transcript -tmp-x-ws/a1b2 in ${file} has rows that are not valid JSON (seq 1, 4); resuming without them, the history relinked around the gap. The stored rows are left as they are.`,
    ]);
    await store.load(key);
    expect(warnings).toHaveLength(2); // every resume that meets them says so
  });

  it('a backend that reports one unreadable row and has no location: the message says so in the singular', async () => {
    const memory = new InMemorySessionStore();
    const t = new TranscriptBuilder();
    const first = t.prompt('go');
    const answer = t.say('ok');
    const next = t.prompt('next');
    // Two rows at one position, listed out of order, one without a uuid; one more before the end.
    const rows = [
      { seq: 9, uuid: null, position: 3 },
      { seq: 5, uuid: 'lost-b', position: 1 },
      { seq: 4, uuid: 'lost-a', position: 1 },
    ];
    const backend = Object.assign(Object.create(memory) as InMemorySessionStore, {
      readTranscript: async () => ({
        entries: structuredClone(t.entries),
        unreadable: rows.slice(0, 1),
        owned: true,
      }),
    });
    const warnings: string[] = [];
    const store = new RewritingSessionStore(backend, { workspace, onWarning: (line) => warnings.push(line) });
    expect(await store.load(key)).toEqual(t.entries);
    expect(warnings).toEqual([
      'Transcript -tmp-x-ws/a1b2 has a row that is not valid JSON (seq 9); resuming without it, the history relinked around the gap. The stored rows are left as they are.',
    ]);
    expect(store.lastLoadReport(key)).toMatchObject({ unreadableRows: 1 });

    // The rows go in by position, in order of position: the chain runs around both.
    const linked = [first, { ...answer, parentUuid: 'lost-b' }, { ...next, parentUuid: answer.uuid }];
    backend.readTranscript = async () => ({
      entries: structuredClone(linked),
      unreadable: rows,
      owned: false,
    });
    const loaded = (await store.load(key)) ?? [];
    expect(loaded.map((entry) => [entry.uuid, entry.parentUuid])).toEqual([
      [first.uuid, null],
      [answer.uuid, first.uuid],
      [next.uuid, answer.uuid],
    ]);
    expect(warnings[1]).toContain('has rows that are not valid JSON (seq 9, 5, 4); resuming without them');
    expect(store.lastLoadReport(key)).toMatchObject({ unreadableRows: 3 });
  });
});

/** A backend over the SDK's in-memory store whose `readTranscript` says what `read` returns. */
function reading(read: () => StoredTranscript | null, extra: Partial<SessionBackend> = {}): SessionBackend {
  const memory = new InMemorySessionStore();
  return {
    append: (k, entries) => memory.append(k, entries),
    load: (k) => memory.load(k),
    listSessions: (projectKey) => memory.listSessions(projectKey),
    listSessionSummaries: (projectKey) => memory.listSessionSummaries(projectKey),
    delete: (k) => memory.delete(k),
    listSubkeys: (k) => memory.listSubkeys(k),
    readTranscript: async () => read(),
    ...extra,
  };
}

const recordFiles = (): string[] => {
  try {
    return readdirSync(path.join(spillDir(), 'records')).map((name) =>
      path.join(spillDir(), 'records', name),
    );
  } catch {
    return [];
  }
};

describe('RewritingSessionStore: unreadable rows, in-place edits, warnings', () => {
  it('relinks around a row without a uuid between two with one, and around a row after an entry without a uuid', async () => {
    const t = new TranscriptBuilder();
    const first = t.prompt('go');
    const cost = { type: 'cost-state', totalCostUSD: 1 };
    const next = { ...t.prompt('next'), parentUuid: 'lost-c' };
    const rows = [
      { seq: 4, uuid: 'lost-a', position: 1 },
      { seq: 5, uuid: null, position: 1 },
      { seq: 6, uuid: 'lost-c', position: 1 },
    ];
    const store = new RewritingSessionStore(
      reading(() => ({ entries: [first, next], unreadable: rows })),
      { workspace, onWarning: () => {} },
    );
    expect((await store.load(key))?.map((entry) => [entry.uuid, entry.parentUuid])).toEqual([
      [first.uuid, null],
      [next.uuid, first.uuid],
    ]);

    const after = new RewritingSessionStore(
      reading(() => ({
        entries: [first, cost, { ...next, parentUuid: 'lost' }],
        unreadable: [{ seq: 3, uuid: 'lost', position: 2 }],
      })),
      { workspace, onWarning: () => {} },
    );
    expect((await after.load(key))?.map((entry) => entry.parentUuid)).toEqual([null, undefined, first.uuid]);
  });

  it("edits in place the entries a backend says are the load's own, and only those", async () => {
    const t = new TranscriptBuilder();
    t.prompt('go');
    const old = t.bash('git status', `On branch main\n${' M file\n'.repeat(20)}`);
    for (let index = 0; index < 6; index += 1) t.bash('pwd', `/work/project/${'deep/'.repeat(30)}${index}`);
    for (const owned of [true, false]) {
      const handed = structuredClone(t.entries);
      const store = new RewritingSessionStore(
        reading(() => ({ entries: handed, unreadable: [], owned })),
        { workspace },
      );
      const loaded = (await store.load(key)) ?? [];
      const at = loaded.findIndex((entry) => resultOf([entry], old) !== undefined);
      expect(resultOf(loaded, old)?.content).toContain('`git status` expired');
      expect(loaded[at] === handed[at]).toBe(owned);
      expect(resultOf(handed, old)?.content === resultOf(loaded, old)?.content).toBe(owned);
    }
  });

  it('takes the last cost-state from the backend fast path when it has one', async () => {
    const fast = { type: 'cost-state', totalCostUSD: 7 };
    const store = new RewritingSessionStore(
      reading(() => null, { lastCostState: async () => fast }),
      { workspace },
    );
    expect(await store.lastCostState(key)).toBe(fast);
  });

  it('a backend without readTranscript: nothing is called unreadable', async () => {
    const warnings: string[] = [];
    const store = new RewritingSessionStore(new InMemorySessionStore(), {
      workspace,
      onWarning: (line) => warnings.push(line),
    });
    const t = new TranscriptBuilder();
    t.prompt('go');
    await store.append(key, t.entries);
    expect(await store.load(key)).toEqual(t.entries);
    expect(warnings).toEqual([]);
    expect(store.lastLoadReport(key)).toMatchObject({ unreadableRows: 0 });
  });

  it('warns on standard error, prefixed with flower:, when no onWarning is given', async () => {
    const written: string[] = [];
    const spy = vi.spyOn(process.stderr, 'write').mockImplementation((chunk) => {
      written.push(String(chunk));
      return true;
    });
    try {
      const store = new RewritingSessionStore(
        reading(() => ({ entries: [], unreadable: [{ seq: 2, uuid: null, position: 0 }] })),
        { workspace },
      );
      await store.load(key);
    } finally {
      spy.mockRestore();
    }
    expect(written).toEqual([
      'flower: Transcript -tmp-x-ws/a1b2 has a row that is not valid JSON (seq 2); resuming without it, the history relinked around the gap. The stored rows are left as they are.\n',
    ]);
  });

  it('names a failed write by its code, else its message, else as text', () => {
    expect(reasonOf(Object.assign(new Error('full'), { code: 'ENOSPC' }))).toBe('ENOSPC');
    expect(reasonOf(Object.assign(new Error('odd'), { code: 28 }))).toBe('odd');
    expect(reasonOf(new Error('no code'))).toBe('no code');
    expect(reasonOf(null)).toBe('null');
    expect(reasonOf('plain')).toBe('plain');
  });

  it('passes entries that are not objects on to the backend without looking into them', async () => {
    const appended: unknown[] = [];
    const store = new RewritingSessionStore(
      reading(() => null, {
        append: async (_key, entries) => {
          appended.push(...entries);
        },
      }),
      { workspace, trim: { enabled: true, keepRecent: 0 } },
    );
    await store.append(key, [null, 42, 'text', undefined, [1]] as never);
    expect(appended).toEqual([null, 42, 'text', undefined, [1]]);
  });
});

describe('RewritingSessionStore: spill records', () => {
  it('records every spilled result of a transcript once, within 50 ms of the append, without a close', async () => {
    const { store } = layered({ trim: { enabled: true, keepRecent: 0 } });
    const t = new TranscriptBuilder();
    const texts = ['P'.repeat(3000), 'Q'.repeat(3100), 'R'.repeat(3200)];
    const ids = texts.map((text, index) => t.tool('Read', { file_path: `f${index}` }, text));
    await store.append(key, t.entries.slice(0, 2));
    await store.append(key, t.entries.slice(2));
    expect(recordFiles()).toEqual([]);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const files = recordFiles();
    expect(files).toHaveLength(1);
    expect(readFileSync(files[0] as string, 'utf8')).toBe(
      ids
        .map(
          (id, index) =>
            `${id}\t${(texts[index] as string).length}\t${spillFileName(texts[index] as string)}\n`,
        )
        .join(''),
    );
  });

  it('a resume finds a result under the name its record gives, and reads the record once per store', async () => {
    const { store: writer } = layered({ trim: { enabled: true, keepRecent: 0 } });
    const t = new TranscriptBuilder();
    const text = 'S'.repeat(3000);
    const id = t.tool('Read', { file_path: 'log' }, text);
    await writer.append(key, t.entries);
    writer.close();
    const [record] = recordFiles();
    // An older writer named the file otherwise: the record says where it is.
    const legacy = path.join(spillDir(), '0123456789abcdef.txt');
    writeFileSync(legacy, text);
    rmSync(path.join(spillDir(), spillFileName(text)));
    writeFileSync(record as string, `${id}\t${text.length}\t0123456789abcdef.txt\n`);

    const { store } = layered({ trim: { enabled: true, keepRecent: 0 } });
    expect(resultOf((await store.load(key)) ?? [], id)?.content).toContain(`Full text at ${legacy}`);
    writeFileSync(path.join(spillDir(), 'fedcba9876543210.txt'), text);
    writeFileSync(record as string, `${id}\t${text.length}\tfedcba9876543210.txt\n`);
    expect(resultOf((await store.load(key)) ?? [], id)?.content).toContain(`Full text at ${legacy}`);
  });
});

/** Longer than the write behind's delay (50 ms), with room for a loaded machine. */
const afterWriteBehind = () => new Promise((resolve) => setTimeout(resolve, 300));

describe('RewritingSessionStore: spill files are written behind the append', () => {
  it('an appended large result gets its spill file after the append, without a close or load; a resume writes nothing', async () => {
    const { store } = layered({ trim: { enabled: true, keepRecent: 0 } });
    const t = new TranscriptBuilder();
    t.prompt('go');
    const text = 'L'.repeat(3000);
    t.tool('Read', { file_path: 'log' }, text);
    t.tool('Read', { file_path: 'small' }, 'tiny');
    await store.append(key, t.entries.slice(0, 2));
    await store.append(key, t.entries.slice(2));
    // Not on the append's path: the append resolved before the file was written.
    expect(spillFiles()).toEqual([]);
    await afterWriteBehind();
    expect(spillFiles()).toEqual([spillFileName(text)]);
    const target = path.join(spillDir(), spillFileName(text));
    expect(readFileSync(target, 'utf8')).toBe(text);
    const written = statSync(target).mtimeMs;

    // A fresh process after a crash: a new layer over the same file.
    const { store: resumed } = layered({ trim: { enabled: true, keepRecent: 0 } });
    const loaded = (await resumed.load(key)) ?? [];
    expect(JSON.stringify(loaded)).toContain(`Full text at ${target}`);
    expect(spillFiles()).toEqual([spillFileName(text)]);
    expect(statSync(target).mtimeMs).toBe(written);
  });

  it('an append without a large result sets no write behind going; one with a result sets one', async () => {
    // A backend with no timers of its own (SQLite's folds its index behind the append too).
    const store = new RewritingSessionStore(new InMemorySessionStore(), {
      workspace,
      trim: { enabled: true, keepRecent: 0 },
    });
    const t = new TranscriptBuilder();
    t.prompt('go');
    t.tool('Read', { file_path: 'small' }, 'tiny');
    t.tool('Read', { file_path: 'log' }, 'L'.repeat(3000));
    vi.useFakeTimers({ toFake: ['setTimeout'] });
    try {
      await store.append(key, t.entries.slice(0, 3));
      expect(vi.getTimerCount()).toBe(0);
      await store.append(key, t.entries.slice(3));
      expect(vi.getTimerCount()).toBe(1);
    } finally {
      vi.useRealTimers();
      await store.close();
    }
  });

  it('a load writes what waits first, even the results it keeps verbatim', async () => {
    const { store } = layered({ trim: { enabled: true, keepRecent: 1 } });
    const t = new TranscriptBuilder();
    const texts = ['A'.repeat(2500), 'B'.repeat(2600)];
    const ids = texts.map((text, index) => t.tool('Read', { file_path: `f${index}` }, text));
    await store.append(key, t.entries.slice(0, 2));
    await store.append(key, t.entries.slice(2));
    const loaded = (await store.load(key)) ?? [];
    expect(resultOf(loaded, ids[1] as string)?.content).toBe(texts[1]);
    // The newest result is kept, so only the write behind can have written its file.
    expect(spillFiles()).toEqual(texts.map(spillFileName).sort());
    expect(recordFiles()).toHaveLength(1);
  });

  it('a crash before the write behind loses nothing: the next load writes the file from the stored entry', async () => {
    const { store } = layered({ trim: { enabled: true, keepRecent: 0 } });
    const t = new TranscriptBuilder();
    const text = 'K'.repeat(2800);
    const id = t.tool('Read', { file_path: 'log' }, text);
    await store.append(key, t.entries);
    expect(spillFiles()).toEqual([]);
    const { store: resumed } = layered({ trim: { enabled: true, keepRecent: 0 } });
    const loaded = (await resumed.load(key)) ?? [];
    expect(resultOf(loaded, id)?.content).toContain(
      `Full text at ${path.join(spillDir(), spillFileName(text))}`,
    );
    expect(readFileSync(path.join(spillDir(), spillFileName(text)), 'utf8')).toBe(text);
  });

  it('a batch the backend refuses: the append fails with its message, the file is still written (a copy, no pointer)', async () => {
    const { store } = layered({ trim: { enabled: true, keepRecent: 0 } });
    const t = new TranscriptBuilder();
    const text = 'N'.repeat(3000);
    t.tool('Read', { file_path: 'log' }, text);
    await expect(store.append(key, [...t.entries, 'not an object' as never])).rejects.toThrow(
      /not a JSON object/,
    );
    await store.close();
    expect(spillFiles()).toEqual([spillFileName(text)]);
  });

  it('with trim off, appends write no spill files', async () => {
    const { store } = layered();
    const t = new TranscriptBuilder();
    t.tool('Read', { file_path: 'log' }, 'L'.repeat(3000));
    await store.append(key, t.entries);
    await store.close();
    expect(spillFiles()).toEqual([]);
  });

  it('a transcript appended without this layer still gets its files on load', async () => {
    const backend = new SqliteSessionStore(file);
    open.push(backend);
    const t = new TranscriptBuilder();
    const text = 'O'.repeat(2500);
    t.tool('Read', { file_path: 'old' }, text);
    await backend.append(key, t.entries);
    const { store } = layered({ trim: { enabled: true, keepRecent: 0 } });
    expect(JSON.stringify(await store.load(key))).toContain('archived: 2500 chars');
    expect(spillFiles()).toEqual([spillFileName(text)]);
  });

  it('a spill directory that cannot be written: results stay untrimmed, nothing fails, one warning', async () => {
    writeFileSync(path.join(directory, 'not-a-dir'), 'a file where the spill directory should be');
    const { store, warnings } = layered({
      trim: { enabled: true, keepRecent: 0, spillDirname: '../not-a-dir/spill' },
    });
    const t = new TranscriptBuilder();
    const ids = ['x', 'y', 'z'].map((letter) => t.tool('Read', { file_path: letter }, letter.repeat(4000)));
    for (const entry of t.entries) await store.append(key, [entry]);
    const loaded = (await store.load(key)) ?? [];
    await store.load(key);
    for (const [position, id] of ids.entries())
      expect(resultOf(loaded, id)?.content).toBe((['x', 'y', 'z'][position] as string).repeat(4000));
    expect(store.lastLoadReport(key)).toMatchObject({ trimmed: 0, spillFailures: 3 });
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(
      /^Could not write spill files in .*not-a-dir\/spill \((ENOTDIR|EEXIST)\): large tool results stay untrimmed/,
    );
  });
});

describe('RewritingSessionStore: over any backend', () => {
  it('finds the last cost-state through the backend fast path, or by reading when there is none', async () => {
    const cost = (total: number) => ({ type: 'cost-state', sessionId: key.sessionId, totalCostUSD: total });
    const t = new TranscriptBuilder();
    t.prompt('go');
    const entries = [...t.entries, cost(1) as never, { type: 'user', uuid: 'later' }, cost(2.5) as never];
    const { store } = layered();
    const memory = new RewritingSessionStore(new InMemorySessionStore(), { workspace });
    for (const each of [store, memory]) {
      expect(await each.lastCostState(key)).toBeNull();
      await each.append(key, entries);
      expect(await each.lastCostState(key)).toEqual(cost(2.5));
    }
  });
  it('lists, deletes and closes through the backend; close writes the spill files and records still waiting', async () => {
    const backend = new InMemorySessionStore();
    const store = new RewritingSessionStore(backend, { workspace, trim: { enabled: true, keepRecent: 0 } });
    const t = new TranscriptBuilder();
    t.prompt('summary prompt');
    const text = 'C'.repeat(3000);
    t.tool('Read', { file_path: 'log' }, text);
    await store.append(key, t.entries);
    await store.append({ ...key, subpath: 'subagents/agent-1' }, t.entries.slice(0, 1));
    expect((await store.listSessions(key.projectKey)).map((session) => session.sessionId)).toEqual([
      key.sessionId,
    ]);
    expect(await store.listSessionSummaries(key.projectKey)).toEqual(
      await backend.listSessionSummaries(key.projectKey),
    );
    expect(await store.listSubkeys(key)).toEqual(['subagents/agent-1']);
    expect(spillFiles()).toEqual([]);
    expect(store.close()).toBeUndefined(); // the SDK's store has no close; the files are written
    expect(spillFiles()).toEqual([spillFileName(text)]);
    expect(readdirSync(spillDir()).filter((name) => !name.endsWith('.txt'))).not.toEqual([]);
    await store.delete(key);
    expect(await backend.load(key)).toBeNull();
  });

  it('an empty batch never reaches the backend', async () => {
    const backend = new InMemorySessionStore();
    const store = new RewritingSessionStore(backend, { workspace });
    await store.append(key, []);
    expect(await backend.load(key)).toBeNull();
    expect(await backend.listSessions(key.projectKey)).toEqual([]);
  });

  it("rewrites a copy of what a backend's load hands out, never the backend's own objects", async () => {
    const backend = new InMemorySessionStore();
    const store = new RewritingSessionStore(backend, { workspace, trim: { enabled: true, keepRecent: 0 } });
    const t = new TranscriptBuilder();
    t.prompt('go');
    const text = 'M'.repeat(3000);
    const id = t.tool('Read', { file_path: 'log' }, text);
    t.prompt('next');
    await store.append(key, t.entries);
    const loaded = (await store.load(key)) ?? [];
    expect(resultOf(loaded, id)?.content).not.toBe(text);
    expect(resultOf((await backend.load(key)) ?? [], id)?.content).toBe(text);
  });
});
