import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { SessionStoreEntry } from '@anthropic-ai/claude-agent-sdk';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { RESUME_PLACEHOLDER, ResumeFiles } from '../../../src/runtime/resume-files.js';
import { RewritingSessionStore } from '../../../src/store/rewriting-store.js';
import { SqliteSessionStore } from '../../../src/store/sqlite-session-store.js';
import { cleanUp, onCleanUp, tempDir } from '../../support/scratch.js';

afterEach(cleanUp);

const SESSION = '11111111-2222-4333-8444-555555555555';
const OTHER = '66666666-7777-4888-8999-000000000000';
const PROJECT = '-tmp-project';
const BIG = 'x'.repeat(5000);
const rewrite = { trim: { enabled: true, keepRecent: 0 } };

const main: SessionStoreEntry[] = [
  { type: 'user', uuid: 'u1', parentUuid: null, message: { role: 'user', content: 'Look.' } },
  {
    type: 'assistant',
    uuid: 'a1',
    parentUuid: 'u1',
    message: {
      id: 'm1',
      role: 'assistant',
      content: [{ type: 'tool_use', id: 't1', name: 'Bash', input: { command: 'cat big' } }],
    },
  },
  {
    type: 'user',
    uuid: 'r1',
    parentUuid: 'a1',
    message: { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: BIG }] },
    toolUseResult: { stdout: BIG, stderr: '' },
  },
  {
    type: 'assistant',
    uuid: 'a2',
    parentUuid: 'r1',
    message: { id: 'm2', role: 'assistant', content: [{ type: 'text', text: 'Seen.' }] },
  },
];
const subagent: SessionStoreEntry[] = [
  {
    type: 'user',
    uuid: 's1',
    parentUuid: null,
    isSidechain: true,
    message: { role: 'user', content: 'Go.' },
  },
  { type: 'agent_metadata', agentType: 'scout', description: 'first' },
  {
    type: 'assistant',
    uuid: 's2',
    parentUuid: 's1',
    isSidechain: true,
    message: { id: 'm3', role: 'assistant', content: [{ type: 'text', text: 'Went.' }] },
  },
  { type: 'agent_metadata', agentType: 'scout', description: 'newest' },
];
const SUBPATH = 'subagents/agent-a1b2';

async function storeWithSession() {
  const workspace = tempDir('flower-resume-files-');
  const store = new SqliteSessionStore(join(workspace, 'runs', 'sessions.db'));
  onCleanUp(() => store.close());
  const key = { projectKey: PROJECT, sessionId: SESSION };
  await store.append(key, main);
  await store.append({ ...key, subpath: SUBPATH }, subagent);
  await store.append({ projectKey: PROJECT, sessionId: OTHER }, [main[0] as SessionStoreEntry]);
  return { workspace, store, key };
}

/** Replaces a stored row's text, as another writer might have stored it. */
function setRowText(store: SqliteSessionStore, storeKey: string, seq: number, payload: string): void {
  store.sync();
  const db = new Database(store.path);
  try {
    db.prepare('UPDATE entries SET payload = ? WHERE store_key = ? AND seq = ?').run(payload, storeKey, seq);
  } finally {
    db.close();
  }
}

/** A config directory as the SDK prepares it for a resume: the placeholder in its project directory. */
function sdkCopy(projectDirectory = 'some-key'): { configDir: string; session: string } {
  const configDir = tempDir('claude-resume-test-');
  const project = join(configDir, 'projects', projectDirectory);
  mkdirSync(project, { recursive: true });
  writeFileSync(join(project, `${SESSION}.jsonl`), `${JSON.stringify(RESUME_PLACEHOLDER)}\n`);
  return { configDir, session: join(project, SESSION) };
}

const lines = (file: string) =>
  readFileSync(file, 'utf8')
    .split('\n')
    .filter((line) => line !== '');

describe('ResumeFiles', () => {
  it('writes the history as the rewriting layer loads it, unchanged rows as their stored text', async () => {
    const { workspace, store, key } = await storeWithSession();
    // Stored text that JSON.stringify would not give back (spaces): only a copy of the row has it.
    const spaced = `{ "type": "user", "uuid": "u1", "parentUuid": null, "message": { "role": "user", "content": "Look." } }`;
    setRowText(store, `${PROJECT}/${SESSION}`, 0, spaced);
    // A row stored over several lines cannot be copied into a JSONL file as it is.
    setRowText(store, `${PROJECT}/${SESSION}`, 3, JSON.stringify(main[3], null, 2));
    const expected = await new RewritingSessionStore(store, { workspace, ...rewrite }).load(key);

    const files = await ResumeFiles.prepare({ store, workspace, rewrite, key });
    if (files === undefined) throw new Error('not prepared');
    const sdkStore = files.sessionStore(store);
    expect(await sdkStore.load(key)).toEqual([RESUME_PLACEHOLDER]);
    const { configDir, session } = sdkCopy();
    files.place({ CLAUDE_CONFIG_DIR: configDir });

    const written = lines(`${session}.jsonl`);
    expect(written.map((line) => JSON.parse(line))).toEqual(expected);
    expect(written[0]).toBe(spaced);
    expect(written[3]).toBe(JSON.stringify(main[3]));
    // The trimmed result is a new entry, serialised: its pointer, not the stored text.
    expect(written[2]).toContain('[tool result archived: 5000 chars.');
    expect(written[2]).not.toContain(BIG);
    expect(files.report).toMatchObject({ trimmed: 1 });
  });

  it('copies a large unchanged row as its stored bytes, and resumes around a row that is not JSON', async () => {
    const { workspace, store, key } = await storeWithSession();
    const large = `{ "type": "user", "uuid": "u1", "parentUuid": null, "message": { "role": "user", "content": "${'é'.repeat(3000)}" } }`;
    setRowText(store, `${PROJECT}/${SESSION}`, 0, large);
    setRowText(store, `${PROJECT}/${SESSION}`, 3, 'not json');
    const warnings: string[] = [];
    const expected = await new RewritingSessionStore(store, {
      workspace,
      ...rewrite,
      onWarning: () => {},
    }).load(key);
    const files = await ResumeFiles.prepare({
      store,
      workspace,
      rewrite,
      key,
      onWarning: (line) => warnings.push(line),
    });
    if (files === undefined) throw new Error('not prepared');
    await files.sessionStore(store).load(key);
    const { configDir, session } = sdkCopy();
    files.place({ CLAUDE_CONFIG_DIR: configDir });

    const written = lines(`${session}.jsonl`);
    expect(written[0]).toBe(large);
    expect(written.map((line) => JSON.parse(line))).toEqual(expected);
    expect(written).toHaveLength(3);
    expect(warnings).toEqual([expect.stringMatching(/a row that is not valid JSON \(seq 3\)/)]);
    expect(files.report).toMatchObject({ unreadableRows: 1 });
  });

  it('writes each subagent transcript without its sidecar entries, and the newest sidecar beside it', async () => {
    const { workspace, store, key } = await storeWithSession();
    const files = await ResumeFiles.prepare({ store, workspace, rewrite, key });
    if (files === undefined) throw new Error('not prepared');
    await files.sessionStore(store).load(key);
    const { configDir, session } = sdkCopy();
    files.place({ CLAUDE_CONFIG_DIR: configDir });

    expect(lines(join(session, `${SUBPATH}.jsonl`)).map((line) => JSON.parse(line))).toEqual([
      subagent[0],
      subagent[2],
    ]);
    expect(JSON.parse(readFileSync(join(session, `${SUBPATH}.meta.json`), 'utf8'))).toEqual({
      agentType: 'scout',
      description: 'newest',
    });
  });

  it('gives the SDK the placeholder once, for this session only, and lists none of its subagents', async () => {
    const { workspace, store, key } = await storeWithSession();
    const files = await ResumeFiles.prepare({ store, workspace, rewrite, key });
    if (files === undefined) throw new Error('not prepared');
    const sdkStore = files.sessionStore(store);
    expect(await sdkStore.load({ ...key, subpath: SUBPATH })).toEqual(subagent);
    expect(await sdkStore.load({ projectKey: PROJECT, sessionId: OTHER })).toEqual([main[0]]);
    expect(await sdkStore.listSubkeys?.(key)).toEqual([]);
    expect(await sdkStore.load(key)).toEqual([RESUME_PLACEHOLDER]);
    expect(await sdkStore.load(key)).toEqual(store.loadRaw(key));
    // What the resumed session appends goes to the store.
    const next = { type: 'user', uuid: 'u9', parentUuid: 'a2', message: { role: 'user', content: 'More.' } };
    await sdkStore.append(key, [next]);
    expect(store.loadRaw(key)?.at(-1)).toEqual(next);
    expect((await sdkStore.listSessions?.(PROJECT))?.map((row) => row.sessionId).sort()).toEqual(
      [SESSION, OTHER].sort(),
    );
  });

  it('writes nothing when the SDK did not ask for the session, and fails the start when its copy is missing', async () => {
    const { workspace, store, key } = await storeWithSession();
    const files = await ResumeFiles.prepare({ store, workspace, rewrite, key });
    if (files === undefined) throw new Error('not prepared');
    const { configDir, session } = sdkCopy();
    files.place({ CLAUDE_CONFIG_DIR: configDir });
    expect(lines(`${session}.jsonl`)).toEqual([JSON.stringify(RESUME_PLACEHOLDER)]);
    expect(existsSync(session)).toBe(false);

    await files.sessionStore(store).load(key);
    const empty = tempDir('claude-resume-test-');
    expect(() => files.place({ CLAUDE_CONFIG_DIR: empty })).toThrow(
      new RegExp(`could not find the copy of session ${SESSION} .*CLAUDE_CONFIG_DIR=${empty}.*not started`),
    );
    expect(() => files.place({})).toThrow(/CLAUDE_CONFIG_DIR=unset/);
    expect(readdirSync(empty)).toEqual([]);
    // A transcript of the binary's own where the copy was expected is left as it is.
    const { configDir: own, session: ownSession } = sdkCopy();
    writeFileSync(`${ownSession}.jsonl`, `${JSON.stringify(main[0])}\n`);
    expect(() => files.place({ CLAUDE_CONFIG_DIR: own })).toThrow(/could not find the copy/);
    expect(lines(`${ownSession}.jsonl`)).toEqual([JSON.stringify(main[0])]);
  });

  it('prepares nothing for a session the store does not hold', async () => {
    const { workspace, store } = await storeWithSession();
    const key = { projectKey: PROJECT, sessionId: '99999999-9999-4999-8999-999999999999' };
    expect(await ResumeFiles.prepare({ store, workspace, rewrite, key })).toBeUndefined();
  });
});
