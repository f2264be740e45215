/**
 * A resume over a transcript a crash cut off at a tool call, with the real SDK and binary against
 * the mock model: the rewriting layer feeds the binary a stand-in result, and the binary links its
 * next entry to it. The stored transcript must stay a chain on its own: a later resume over the
 * plain backend (no rewriting layer) still sends the conversation from its first prompt.
 */
import { join } from 'node:path';
import { query, type SDKMessage, type SessionStore } from '@anthropic-ai/claude-agent-sdk';
import { afterEach, describe, expect, it } from 'vitest';
import { RewritingSessionStore } from '../../src/store/rewriting-store.js';
import { projectKeyFor } from '../../src/store/session-key.js';
import { SqliteSessionStore } from '../../src/store/sqlite-session-store.js';
import { conversationMessages, type MockModel, mock, mockModelEnv } from '../../src/testing/index.js';
import { cleanUp, onCleanUp, startMock, tempDir } from '../support/scratch.js';

afterEach(cleanUp);

/** One query() with a fresh, empty CLAUDE_CONFIG_DIR: anything resumed must come from the store. */
async function runTurn(
  model: MockModel,
  workspace: string,
  store: SessionStore,
  prompt: string,
  resume?: string,
) {
  const messages: SDKMessage[] = [];
  let thrown: unknown;
  try {
    for await (const message of query({
      prompt,
      options: {
        cwd: workspace,
        env: mockModelEnv(model, { configDir: tempDir('flower-config-'), maxRetries: 0 }),
        permissionMode: 'acceptEdits',
        allowedTools: ['Bash'],
        settingSources: [],
        sessionStore: store,
        ...(resume === undefined ? {} : { resume }),
      },
    })) {
      messages.push(message);
    }
  } catch (error) {
    thrown = error;
  }
  const sessionId = messages.find((message) => 'session_id' in message)?.session_id as string;
  return { thrown, sessionId };
}

describe('a resume after a crash cut a tool call off, with the real binary', () => {
  it('leaves a stored chain that a resume over the plain backend reads from the first prompt', async () => {
    const workspace = tempDir('flower-ws-');
    const backend = new SqliteSessionStore(join(workspace, 'runs', 'sessions.db'));
    onCleanUp(() => backend.close());
    const store = new RewritingSessionStore(backend, { workspace });
    const model = await startMock({
      main: [mock.text('First answer.'), mock.text('Picked up again.'), mock.text('And again.')],
    });
    const first = await runTurn(model, workspace, store, 'Start.');
    expect(first.thrown).toBeUndefined();
    const key = { projectKey: projectKeyFor(workspace), sessionId: first.sessionId };

    // The crash: an assistant tool call linked to the current leaf, and no result after it.
    const stored = backend.loadRaw(key) ?? [];
    const lastAssistant = stored.filter((entry) => entry.type === 'assistant').at(-1);
    const leaf = stored.filter((entry) => typeof entry.uuid === 'string').at(-1);
    if (lastAssistant === undefined || leaf === undefined) throw new Error('no assistant entry was mirrored');
    await store.append(key, [
      {
        ...lastAssistant,
        uuid: '0b5e0b5e-0000-4000-8000-000000000002',
        parentUuid: leaf.uuid,
        timestamp: new Date().toISOString(),
        message: {
          ...(lastAssistant.message as Record<string, unknown>),
          id: 'msg_cut_off',
          content: [{ type: 'tool_use', id: 'toolu_cut_off', name: 'Bash', input: { command: 'npm test' } }],
          stop_reason: 'tool_use',
        },
      },
    ]);

    const second = await runTurn(model, workspace, store, 'Continue.', first.sessionId);
    expect(second.thrown).toBeUndefined();
    expect(store.lastLoadReport(key)).toMatchObject({ orphansHealed: 1 });

    // Every parent a stored entry names is stored.
    const after = backend.loadRaw(key) ?? [];
    const held = new Set(after.map((entry) => entry.uuid).filter((uuid) => typeof uuid === 'string'));
    expect(
      after.filter((entry) => typeof entry.parentUuid === 'string' && !held.has(entry.parentUuid)),
    ).toEqual([]);

    const third = await runTurn(model, workspace, backend, 'Once more.', first.sessionId);
    expect(third.thrown).toBeUndefined();
    expect(model.unmatched).toEqual([]);
    const sent = conversationMessages(model.mainRequests().at(-1)?.body);
    expect(sent[0]?.role).toBe('user');
    expect(JSON.stringify(sent[0]?.content)).toContain('Start.');
    expect(JSON.stringify(sent)).toContain('Continue.');
    expect(JSON.stringify(sent.at(-1)?.content)).toContain('Once more.');
  });
});
