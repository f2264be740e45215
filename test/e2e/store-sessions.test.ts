/**
 * The session store with the real stack: the SDK's query() runs the real Claude Code binary
 * against the mock model with `sessionStore` set to our SqliteSessionStore. Proves that
 * transcripts (main thread and subagent) are mirrored into sessions.db, and that a resume through
 * the store sends the model the rewritten history while the stored rows stay as they were: stale
 * glances expired, large results trimmed, synthetic error turns gone, old hook denials dropped
 * (the binary marks them `toolDenialKind: "permission-rule"`), a cut-off tool call healed.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  type AgentDefinition,
  type Options,
  query,
  type SDKMessage,
  type SessionStore,
} from '@anthropic-ai/claude-agent-sdk';
import { afterEach, describe, expect, it } from 'vitest';
import { RewritingSessionStore, type RewritingSessionStoreOptions } from '../../src/store/rewriting-store.js';
import { projectKeyFor } from '../../src/store/session-key.js';
import { SqliteSessionStore } from '../../src/store/sqlite-session-store.js';
import { type MockModel, mock, mockModelEnv } from '../../src/testing/index.js';
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
    const messages = model.mainRequests().at(-1)?.body?.messages ?? [];
    const useAt = messages.findIndex((entry) =>
      JSON.stringify(entry.content).includes('"id":"toolu_cut_off"'),
    );
    expect(useAt).toBeGreaterThan(0);
    const answer = JSON.stringify(messages[useAt + 1]?.content);
    expect(answer).toContain('"tool_use_id":"toolu_cut_off"');
    expect(answer).toContain('this step was interrupted and has no result');
    expect(JSON.stringify(messages.at(-1)?.content)).toContain('Continue.');
  });
});
