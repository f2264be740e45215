/**
 * The session store with the real stack: the SDK's query() runs the real Claude Code binary
 * against the mock model with `sessionStore` set to our SqliteSessionStore. Proves that
 * transcripts (main thread and subagent) are mirrored into sessions.db, and that a resume through
 * the store sends the model the rewritten history while the stored rows stay as they were: stale
 * glances expired, large results trimmed, synthetic error turns gone, old hook denials dropped
 * (the binary marks them `toolDenialKind: "permission-rule"`), a cut-off tool call healed; that
 * dropping the harness's duplicate copies of rewritten results changes nothing the model sees; and
 * that a damaged row neither stops a resume nor silently shortens its history.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  type AgentDefinition,
  InMemorySessionStore,
  type Options,
  query,
  type SDKMessage,
  type SessionKey,
  type SessionStore,
  type SessionStoreEntry,
} from '@anthropic-ai/claude-agent-sdk';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { RewritingSessionStore, type RewritingSessionStoreOptions } from '../../src/store/rewriting-store.js';
import { projectKeyFor } from '../../src/store/session-key.js';
import { SqliteSessionStore } from '../../src/store/sqlite-session-store.js';
import { conversationMessages, type MockModel, mock, mockModelEnv } from '../../src/testing/index.js';
import { cleanUp, onCleanUp, startMock, tempDir } from '../support/scratch.js';

afterEach(cleanUp);

/** The rewriting layer over a SQLite backend in `<workspace>/runs`, as the runtime builds it. */
function openStore(
  workspace: string,
  options: Partial<RewritingSessionStoreOptions> = {},
): RewritingSessionStore<SqliteSessionStore> {
  const backend = new SqliteSessionStore(join(workspace, 'runs', 'sessions.db'));
  onCleanUp(() => backend.close());
  return new RewritingSessionStore(backend, { workspace, ...options });
}

/** A copy of a transcript in a store of its own, so two resumes can start from the same history. */
async function copyOf(key: SessionKey, entries: SessionStoreEntry[]): Promise<InMemorySessionStore> {
  const copy = new InMemorySessionStore();
  await copy.append(key, entries);
  return copy;
}

/** `store` with every loaded entry's `toolUseResult` put back as it was stored. */
function withStoredCopies(store: SessionStore, stored: readonly SessionStoreEntry[]): Required<SessionStore> {
  const copies = new Map(
    stored.filter((entry) => 'toolUseResult' in entry).map((entry) => [entry.uuid, entry.toolUseResult]),
  );
  const inner = store as Required<SessionStore>;
  return {
    append: (key, entries) => inner.append(key, entries),
    load: async (key) =>
      (await inner.load(key))?.map((entry) =>
        copies.has(entry.uuid) ? { ...entry, toolUseResult: copies.get(entry.uuid) } : entry,
      ) ?? null,
    listSessions: (projectKey) => inner.listSessions(projectKey),
    listSessionSummaries: (projectKey) => inner.listSessionSummaries(projectKey),
    delete: (key) => inner.delete(key),
    listSubkeys: (key) => inner.listSubkeys(key),
  };
}

type ApiMessage = { role: string; content: unknown };
/** Problems with tool_use/tool_result pairing in a request's messages (empty: the API accepts it). */
function pairingProblems(messages: readonly ApiMessage[]): string[] {
  const problems: string[] = [];
  const blocksOf = (message: ApiMessage | undefined) =>
    Array.isArray(message?.content) ? (message.content as Array<Record<string, unknown>>) : [];
  messages.forEach((message, index) => {
    if (message.role !== 'assistant') return;
    const answers = new Set(
      blocksOf(messages[index + 1])
        .filter((block) => block.type === 'tool_result')
        .map((block) => block.tool_use_id),
    );
    for (const use of blocksOf(message).filter((block) => block.type === 'tool_use'))
      if (!answers.has(use.id)) problems.push(`tool_use ${String(use.id)} has no result after it`);
  });
  const asked = new Set(
    messages.flatMap((message) =>
      blocksOf(message)
        .filter((block) => block.type === 'tool_use')
        .map((block) => block.id),
    ),
  );
  for (const message of messages)
    for (const result of blocksOf(message).filter((block) => block.type === 'tool_result'))
      if (!asked.has(result.tool_use_id))
        problems.push(`tool_result ${String(result.tool_use_id)} answers nothing`);
  return problems;
}

interface Turn {
  prompt: string;
  resume?: string;
  agents?: Record<string, AgentDefinition>;
  hooks?: Options['hooks'];
}

/** One query() with a fresh, empty CLAUDE_CONFIG_DIR: anything resumed must come from the store. */
async function runTurn(model: MockModel, workspace: string, store: SessionStore, turn: Turn) {
  const messages: SDKMessage[] = [];
  let thrown: unknown;
  try {
    for await (const message of query({
      prompt: turn.prompt,
      options: {
        cwd: workspace,
        env: mockModelEnv(model, { configDir: tempDir('flower-config-'), maxRetries: 0 }),
        permissionMode: 'acceptEdits',
        allowedTools: ['Bash', 'Agent'],
        settingSources: [],
        sessionStore: store,
        ...(turn.resume === undefined ? {} : { resume: turn.resume }),
        ...(turn.agents === undefined ? {} : { agents: turn.agents }),
        ...(turn.hooks === undefined ? {} : { hooks: turn.hooks }),
      },
    })) {
      messages.push(message);
    }
  } catch (error) {
    thrown = error;
  }
  const sessionId = messages.find((message) => 'session_id' in message)?.session_id as string;
  return { messages, thrown, sessionId };
}

describe('session store with the real SDK and binary', () => {
  it('mirrors the main transcript and a subagent transcript (under its subpath) into sessions.db', async () => {
    const workspace = tempDir('flower-ws-');
    const store = openStore(workspace);
    const model = await startMock({
      main: [
        mock.toolUse('Agent', {
          description: 'Look around',
          prompt: 'Report what the workspace holds.',
          subagent_type: 'scout',
          run_in_background: false,
        }),
        mock.text('The scout reported back.'),
      ],
      agents: { scout: [mock.text('The scout saw an empty workspace.')] },
    });
    const run = await runTurn(model, workspace, store, {
      prompt: 'Send the scout.',
      agents: { scout: { description: 'Looks around', prompt: 'You are a scout.', tools: ['Read'] } },
    });
    expect(run.thrown).toBeUndefined();
    expect(model.unmatched).toEqual([]);

    const projectKey = projectKeyFor(workspace);
    expect(store.backend.projects()).toEqual([projectKey]);
    expect((await store.listSessions(projectKey)).map((session) => session.sessionId)).toEqual([
      run.sessionId,
    ]);
    expect(store.backend.hasSession(projectKey, run.sessionId)).toBe(true);

    const main = store.backend.loadRaw({ projectKey, sessionId: run.sessionId }) ?? [];
    const mainText = JSON.stringify(main);
    expect(mainText).toContain('Send the scout.');
    expect(mainText).toContain('The scout reported back.');

    const subkeys = await store.listSubkeys({ projectKey, sessionId: run.sessionId });
    const agentKey = subkeys.find((subpath) => /^subagents\/agent-[\w-]+$/.test(subpath));
    expect(agentKey, `subkeys: ${JSON.stringify(subkeys)}`).toBeDefined();
    const sub = store.backend.loadRaw({ projectKey, sessionId: run.sessionId, subpath: agentKey }) ?? [];
    expect(JSON.stringify(sub)).toContain('The scout saw an empty workspace.');
    expect(JSON.stringify(sub)).toContain('Report what the workspace holds.');
    expect(sub.every((entry) => entry.type !== 'assistant' || entry.isSidechain === true)).toBe(true);

    const [summary] = await store.listSessionSummaries(projectKey);
    expect(summary?.sessionId).toBe(run.sessionId);
    expect(summary?.data).toMatchObject({ firstPrompt: 'Send the scout.' });
    expect(store.backend.lastContext(projectKey, run.sessionId)).toBeGreaterThan(0);
  });

  it('resumes through the store with the rewritten history: expired glance, trimmed pointer, no error turn', async () => {
    const workspace = tempDir('flower-ws-');
    execFileSync('git', ['init', '-q'], { cwd: workspace });
    const big = Array.from({ length: 120 }, (_, line) => `line ${line}: ${'data '.repeat(8)}`).join('\n');
    writeFileSync(join(workspace, 'big.txt'), `${big}\n`);
    const store = openStore(workspace, {
      ephemeral: { keepRecent: 2 },
      trim: { enabled: true, keepRecent: 0 },
    });
    const model = await startMock({
      main: [
        mock.toolUse('Bash', { command: 'git status' }),
        mock.toolUse('Bash', { command: 'pwd' }),
        mock.toolUse('Bash', { command: 'ls -a' }),
        mock.toolUse('Bash', { command: 'cat big.txt' }),
        mock.text('Looked around.'),
        mock.error(500),
        mock.text('Resumed with a clean history.'),
      ],
    });

    const first = await runTurn(model, workspace, store, { prompt: 'Look around.' });
    expect(first.thrown).toBeUndefined();
    const projectKey = projectKeyFor(workspace);
    const key = { projectKey, sessionId: first.sessionId };

    // The second turn hits a 500; with no retries the binary writes a synthetic error turn.
    const second = await runTurn(model, workspace, store, {
      prompt: 'Now build it.',
      resume: first.sessionId,
    });
    expect(String(second.thrown)).toMatch(/error/i);
    const stored = store.backend.loadRaw(key) ?? [];
    expect(stored.some((entry) => entry.isApiErrorMessage === true)).toBe(true);
    const storedText = JSON.stringify(stored);
    expect(storedText).toContain('On branch');
    expect(storedText).toContain('line 119: data');

    const third = await runTurn(model, workspace, store, { prompt: 'Carry on.', resume: first.sessionId });
    expect(third.thrown).toBeUndefined();
    expect(third.sessionId).toBe(first.sessionId);
    expect(model.unmatched).toEqual([]);

    const request = model.mainRequests().at(-1);
    const sent = JSON.stringify(request?.body?.messages);
    expect(sent).toContain('Carry on.');
    expect(sent).toContain('result of `git status` expired');
    expect(sent).not.toContain('On branch');
    expect(sent).toMatch(
      /\[tool result archived: \d+ chars\. Full text at \/[^;]*\/\.flower\/spill\/[0-9a-f]{16}\.txt; Read it when needed\]/,
    );
    expect(sent).not.toContain('line 119: data');
    expect(sent).not.toContain('API Error');
    expect(sent).toContain('Now build it.'); // the user's words survive; only the error turn went

    const pointer = /Full text at (\/[^;]*\/\.flower\/spill\/[0-9a-f]{16}\.txt)/.exec(sent)?.[1] as string;
    expect(pointer.startsWith(workspace)).toBe(true);
    expect(readFileSync(pointer, 'utf8')).toContain('line 119: data');
    expect(store.lastLoadReport(key)).toMatchObject({ expired: 1, trimmed: 1, pruned: 1 });

    // The database still holds every original character.
    expect(JSON.stringify(store.backend.loadRaw(key))).toContain('On branch');
  });

  it('drops old hook-denied calls on resume, keeping the newest (the binary marks them permission-rule)', async () => {
    const workspace = tempDir('flower-ws-');
    const store = openStore(workspace);
    const model = await startMock({
      main: [
        mock.toolUse('Bash', { command: 'rm -rf build' }),
        mock.toolUse('Bash', { command: 'make install' }),
        mock.text('Both were refused.'),
        mock.text('Understood.'),
      ],
    });
    const denyBash: NonNullable<Options['hooks']> = {
      PreToolUse: [
        {
          matcher: 'Bash',
          hooks: [
            async () => ({
              hookSpecificOutput: {
                hookEventName: 'PreToolUse' as const,
                permissionDecision: 'deny' as const,
                permissionDecisionReason: 'The coordinator does not run commands; delegate them.',
              },
            }),
          ],
        },
      ],
    };
    const first = await runTurn(model, workspace, store, { prompt: 'Clean and install.', hooks: denyBash });
    expect(first.thrown).toBeUndefined();
    const key = { projectKey: projectKeyFor(workspace), sessionId: first.sessionId };
    const denials = (store.backend.loadRaw(key) ?? []).filter(
      (entry) => entry.toolDenialKind === 'permission-rule',
    );
    expect(denials).toHaveLength(2);

    const second = await runTurn(model, workspace, store, { prompt: 'What now?', resume: first.sessionId });
    expect(second.thrown).toBeUndefined();
    expect(model.unmatched).toEqual([]);
    const sent = JSON.stringify(model.mainRequests().at(-1)?.body?.messages);
    expect(sent).not.toContain('rm -rf build');
    expect(sent).toContain('make install');
    expect(sent).toContain('delegate them');
    expect(store.lastLoadReport(key)).toMatchObject({ denialsDropped: 1 });
  });

  it('heals a tool call cut off without a result, and the binary resumes the healed history', async () => {
    const workspace = tempDir('flower-ws-');
    const store = openStore(workspace);
    const model = await startMock({ main: [mock.text('First answer.'), mock.text('Picked up again.')] });
    const first = await runTurn(model, workspace, store, { prompt: 'Start.' });
    expect(first.thrown).toBeUndefined();
    const key = { projectKey: projectKeyFor(workspace), sessionId: first.sessionId };

    // A disconnect that cut the transcript after a tool_use: the same shape the binary writes for
    // an assistant tool call, linked to the current leaf, with no result after it.
    const stored = store.backend.loadRaw(key) ?? [];
    const lastAssistant = stored.filter((entry) => entry.type === 'assistant').at(-1);
    // The leaf is the newest entry with a uuid of any type (attachments are links of the chain too).
    const leaf = stored.filter((entry) => typeof entry.uuid === 'string').at(-1);
    if (lastAssistant === undefined || leaf === undefined) throw new Error('no assistant entry was mirrored');
    const message = lastAssistant.message as Record<string, unknown>;
    await store.append(key, [
      {
        ...lastAssistant,
        uuid: '0b5e0b5e-0000-4000-8000-000000000001',
        parentUuid: leaf.uuid,
        timestamp: new Date().toISOString(),
        message: {
          ...message,
          id: 'msg_cut_off',
          content: [{ type: 'tool_use', id: 'toolu_cut_off', name: 'Bash', input: { command: 'npm test' } }],
          stop_reason: 'tool_use',
        },
      },
    ]);

    const second = await runTurn(model, workspace, store, { prompt: 'Continue.', resume: first.sessionId });
    expect(second.thrown).toBeUndefined();
    expect(model.unmatched).toEqual([]);
    expect(store.lastLoadReport(key)).toMatchObject({ orphansHealed: 1 });
    const messages = conversationMessages(model.mainRequests().at(-1)?.body);
    const useAt = messages.findIndex((entry) =>
      JSON.stringify(entry.content).includes('"id":"toolu_cut_off"'),
    );
    expect(useAt).toBeGreaterThan(0);
    const answer = JSON.stringify(messages[useAt + 1]?.content);
    expect(answer).toContain('"tool_use_id":"toolu_cut_off"');
    expect(answer).toContain('this step was interrupted and has no result');
    expect(JSON.stringify(messages.at(-1)?.content)).toContain('Continue.');
  });

  it('a rewritten transcript resumes through the binary, and dropping duplicate copies changes no request', async () => {
    const workspace = tempDir('flower-ws-');
    execFileSync('git', ['init', '-q'], { cwd: workspace });
    const big = Array.from({ length: 150 }, (_, line) => `row ${line}: ${'payload '.repeat(8)}`).join('\n');
    writeFileSync(join(workspace, 'big.txt'), `${big}\n`);
    const rewrite = { trim: { enabled: true, keepRecent: 0 }, ephemeral: { keepRecent: 0 } };
    const store = openStore(workspace, rewrite);
    const model = await startMock({
      main: [
        mock.toolUse('Bash', { command: 'cat big.txt' }),
        mock.toolUse('Bash', { command: 'git status' }),
        mock.text('Looked around.'),
        mock.text('Resumed without the copies.'),
        mock.text('Resumed with the copies.'),
      ],
    });
    const first = await runTurn(model, workspace, store, { prompt: 'Look around.' });
    expect(first.thrown).toBeUndefined();
    const key = { projectKey: projectKeyFor(workspace), sessionId: first.sessionId };
    const stored = store.backend.loadRaw(key) ?? [];
    expect(JSON.stringify(stored.map((entry) => entry.toolUseResult))).toContain('row 149: payload');

    const stripped = new RewritingSessionStore(await copyOf(key, stored), { workspace, ...rewrite });
    const restored = withStoredCopies(
      new RewritingSessionStore(await copyOf(key, stored), { workspace, ...rewrite }),
      stored,
    );
    // What the binary is handed to parse: the copies made up most of what trimming left behind.
    const strippedText = JSON.stringify(await stripped.load(key));
    const restoredText = JSON.stringify(await restored.load(key));
    expect(strippedText).not.toContain('row 149: payload');
    expect(restoredText).toContain('row 149: payload');
    expect(strippedText.length).toBeLessThan(restoredText.length - big.length);

    const withoutCopies = await runTurn(model, workspace, stripped, {
      prompt: 'Carry on.',
      resume: first.sessionId,
    });
    const withCopies = await runTurn(model, workspace, restored, {
      prompt: 'Carry on.',
      resume: first.sessionId,
    });
    expect(withoutCopies.thrown).toBeUndefined();
    expect(withCopies.thrown).toBeUndefined();
    expect(withoutCopies.sessionId).toBe(first.sessionId);
    expect(model.unmatched).toEqual([]);
    const [sentWithout, sentWith] = model
      .mainRequests()
      .slice(-2)
      .map((request) => request.body?.messages ?? []);
    expect(sentWithout).toEqual(sentWith);

    const sent = JSON.stringify(sentWithout);
    expect(sent).toContain('Carry on.');
    expect(sent).toMatch(
      /\[tool result archived: \d+ chars\. Full text at \/[^;]*\.txt; Read it when needed\]/,
    );
    expect(sent).toContain('result of `git status` expired');
    expect(sent).not.toContain('row 149: payload');
    expect(pairingProblems(sentWithout as ApiMessage[])).toEqual([]);
  });

  it('a stored row that is not valid JSON: the resume goes on around it, names it, and keeps the rest', async () => {
    const workspace = tempDir('flower-ws-');
    const warnings: string[] = [];
    const store = openStore(workspace, { onWarning: (line) => warnings.push(line) });
    const model = await startMock({
      main: [
        mock.toolUse('Bash', { command: 'echo alpha-output' }),
        mock.toolUse('Bash', { command: 'echo beta-output' }),
        mock.text('Both ran.'),
        mock.text('Still here.'),
      ],
    });
    const first = await runTurn(model, workspace, store, { prompt: 'Run two commands.' });
    expect(first.thrown).toBeUndefined();
    const key = { projectKey: projectKeyFor(workspace), sessionId: first.sessionId };
    const storeKey = `${key.projectKey}/${key.sessionId}`;

    // Damage the assistant entry that made the first call: its result then answers nothing.
    const db = new Database(join(workspace, 'runs', 'sessions.db'));
    onCleanUp(() => {
      db.close();
    });
    const seq = db
      .prepare(
        `SELECT seq FROM entries WHERE store_key = ? AND json_extract(payload, '$.type') = 'assistant'
           AND instr(payload, 'echo alpha-output') > 0`,
      )
      .pluck()
      .get(storeKey) as number;
    expect(typeof seq).toBe('number');
    db.prepare('UPDATE entries SET payload = ? WHERE store_key = ? AND seq = ?').run(
      '{"type":"assistant","message":{"content":[{"type":"tool_',
      storeKey,
      seq,
    );
    await expect(store.backend.load(key)).rejects.toThrow(`${storeKey} (seq ${seq} is not a JSON object)`);

    const second = await runTurn(model, workspace, store, { prompt: 'And now?', resume: first.sessionId });
    expect(second.thrown).toBeUndefined();
    expect(model.unmatched).toEqual([]);
    const messages = (model.mainRequests().at(-1)?.body?.messages ?? []) as ApiMessage[];
    const sent = JSON.stringify(messages);
    expect(sent).toContain('Run two commands.'); // before the gap
    expect(sent).toContain('beta-output'); // after it
    expect(sent).toContain('Both ran.');
    expect(sent).toContain('And now?');
    expect(sent).not.toContain('alpha-output');
    expect(pairingProblems(messages)).toEqual([]);
    expect(store.lastLoadReport(key)).toMatchObject({ unreadableRows: 1, strayResults: 1 });
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain(
      `Transcript ${storeKey} in ${join(workspace, 'runs', 'sessions.db')} has a row`,
    );
    expect(warnings[0]).toContain(`(seq ${seq})`);
  });
});
