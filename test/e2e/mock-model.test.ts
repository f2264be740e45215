/**
 * The mock model with the real stack: the SDK's query() runs the real Claude Code binary against
 * it. Proves scripted text and tool calls work end to end, that the binary's own retry loop sees
 * each scripted fault the way it would see the real API's, and that subagents get their own replies.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { type AgentDefinition, query, type SDKMessage } from '@anthropic-ai/claude-agent-sdk';
import { afterEach, describe, expect, it } from 'vitest';
import { lastMessage, type MockModel, mock, mockModelEnv } from '../../src/testing/index.js';
import { cleanUp, startMock, tempDir } from '../support/scratch.js';

afterEach(cleanUp);

interface RunOutcome {
  messages: SDKMessage[];
  /** What the SDK's iterator threw, if it did (it throws after an error result). */
  thrown: unknown;
}

async function runQuery(
  server: MockModel,
  workspace: string,
  {
    maxRetries = 0,
    agents,
    extraEnv,
  }: {
    maxRetries?: number;
    agents?: Record<string, AgentDefinition>;
    extraEnv?: Record<string, string>;
  } = {},
): Promise<RunOutcome> {
  const messages: SDKMessage[] = [];
  const run = query({
    prompt: 'Do the scripted thing.',
    options: {
      cwd: workspace,
      env: mockModelEnv(server, { configDir: tempDir('flower-config-'), maxRetries, extra: extraEnv }),
      permissionMode: 'acceptEdits',
      allowedTools: ['Write'],
      settingSources: [],
      ...(agents === undefined ? {} : { agents }),
    },
  });
  try {
    for await (const message of run) messages.push(message);
    return { messages, thrown: undefined };
  } catch (error) {
    return { messages, thrown: error };
  }
}

function results(messages: SDKMessage[]) {
  return messages.flatMap((message) => (message.type === 'result' ? [message] : []));
}

function resultTexts(messages: SDKMessage[]): string[] {
  return results(messages).map((message) =>
    message.subtype === 'success' ? message.result : message.subtype,
  );
}

function retries(messages: SDKMessage[]) {
  return messages.flatMap((message) =>
    message.type === 'system' && message.subtype === 'api_retry' ? [message] : [],
  );
}

describe('mock model with the real Claude Code binary', () => {
  it('returns the scripted text and performs a scripted Write', async () => {
    const workspace = tempDir('flower-ws-');
    const target = join(workspace, 'hello.txt');
    const server = await startMock({
      main: [
        mock.toolUse('Write', { file_path: target, content: 'written by the script\n' }),
        { text: 'Wrote hello.txt as asked.', usage: { input_tokens: 1234, output_tokens: 9 } },
      ],
    });

    const { messages, thrown } = await runQuery(server, workspace);

    expect(thrown).toBeUndefined();
    expect(resultTexts(messages)).toEqual(['Wrote hello.txt as asked.']);
    expect(readFileSync(target, 'utf8')).toBe('written by the script\n');
    expect(server.mainRequests()).toHaveLength(2);
    expect(server.unmatched).toEqual([]);
    expect(server.sideRequests()).toEqual([]);
    // The second request carries the Write call's result back to the model.
    expect(JSON.stringify(server.mainRequests()[1]?.body?.messages)).toContain('tool_result');
  });

  it('retries a 529 itself and then succeeds', async () => {
    const workspace = tempDir('flower-ws-');
    const server = await startMock([mock.error(529), { text: 'Recovered after overload.' }]);

    const { messages, thrown } = await runQuery(server, workspace, { maxRetries: 1 });

    expect(thrown).toBeUndefined();
    expect(retries(messages).map((retry) => retry.error_status)).toEqual([529]);
    expect(resultTexts(messages)).toEqual(['Recovered after overload.']);
    expect(server.mainRequests().map((request) => request.outcome.kind)).toEqual(['error', 'reply']);
  });

  it('gives up after CLAUDE_CODE_MAX_RETRIES: a synthetic assistant message, an error result, a throw', async () => {
    const workspace = tempDir('flower-ws-');
    const server = await startMock({ main: [], fallback: mock.error(529) });

    const { messages, thrown } = await runQuery(server, workspace, { maxRetries: 1 });

    expect(String(thrown)).toContain('Claude Code returned an error result: API Error: 529');
    const synthetic = messages.find(
      (message) => message.type === 'assistant' && message.message.model === '<synthetic>',
    );
    expect(synthetic).toBeDefined();
    expect(results(messages).map((result) => result.is_error)).toEqual([true]);
    expect(retries(messages)).toHaveLength(1);
    expect(server.mainRequests()).toHaveLength(2);
  });

  it('retries a 401 like a server error (flower must stop on credential errors itself)', async () => {
    const workspace = tempDir('flower-ws-');
    const server = await startMock([mock.error(401), { text: 'Accepted on the second try.' }]);

    const { messages, thrown } = await runQuery(server, workspace, { maxRetries: 1 });

    expect(thrown).toBeUndefined();
    expect(retries(messages).map((retry) => [retry.error_status, retry.error])).toEqual([
      [401, 'authentication_failed'],
    ]);
    expect(resultTexts(messages)).toEqual(['Accepted on the second try.']);
  });

  it('retries a stream cut mid-reply and never shows the partial text', async () => {
    const workspace = tempDir('flower-ws-');
    const server = await startMock([
      mock.drop({ afterEvents: 5, partial: { text: 'PARTIAL-TEXT-THAT-MUST-NOT-SURVIVE '.repeat(3) } }),
      { text: 'Complete reply.' },
    ]);

    const { messages, thrown } = await runQuery(server, workspace, { maxRetries: 1 });

    expect(thrown).toBeUndefined();
    expect(retries(messages).map((retry) => retry.error_status)).toEqual([null]);
    expect(resultTexts(messages)).toEqual(['Complete reply.']);
    expect(JSON.stringify(messages)).not.toContain('PARTIAL-TEXT');
  });

  it('rides out refused connections and reaches the endpoint again on the same port', async () => {
    const workspace = tempDir('flower-ws-');
    const server = await startMock([mock.refuse(1_000), { text: 'Reachable again.' }]);

    const { messages, thrown } = await runQuery(server, workspace, { maxRetries: 4 });

    expect(thrown).toBeUndefined();
    expect(resultTexts(messages)).toEqual(['Reachable again.']);
    // Attempts made while the port was closed never reached the server; the retry delays
    // (about 0.5 s, 1 s, 2 s) outlast the one-second outage.
    expect(retries(messages).length).toBeGreaterThanOrEqual(1);
    expect(server.mainRequests().map((request) => request.outcome.kind)).toEqual(['refuse', 'reply']);
  });
});

describe('context level driven by scripted usage', () => {
  it("triggers the binary's automatic compaction, which is answered as a side request", async () => {
    const workspace = tempDir('flower-ws-');
    // The default model's window is 1,000,000 tokens; 990,000 reported input tokens is past the
    // binary's automatic compaction threshold.
    const nearlyFull = { input_tokens: 100, cache_read_input_tokens: 990_000, output_tokens: 50 };
    const server = await startMock({
      main: [
        mock.toolUse('Write', { file_path: join(workspace, 'a.txt'), content: 'a' }, { usage: nearlyFull }),
        { text: 'Carried on after compaction.' },
      ],
      side: [{ text: '<summary>SCRIPTED-SUMMARY of the work so far.</summary>' }],
    });

    const { messages, thrown } = await runQuery(server, workspace);

    expect(thrown).toBeUndefined();
    expect(resultTexts(messages)).toEqual(['Carried on after compaction.']);
    expect(
      messages.some((message) => message.type === 'system' && message.subtype === 'compact_boundary'),
    ).toBe(true);
    expect(server.sideRequests().map((request) => request.agent)).toEqual([
      { kind: 'side', purpose: 'compact' },
    ]);
    // The turn after compaction starts from the scripted summary.
    expect(JSON.stringify(server.mainRequests()[1]?.body?.messages)).toContain('SCRIPTED-SUMMARY');
    expect(server.unmatched).toEqual([]);
  });
});

describe('subagents against the mock model', () => {
  const scribe: AgentDefinition = {
    description: 'Writes files it is asked to write.',
    prompt: 'You are the scribe. You write the files you are asked to write.',
    tools: ['Write'],
  };

  function delegatingScript(target: string, background: boolean) {
    return {
      main: [
        mock.toolUse('Agent', {
          description: 'write the notes',
          prompt: `Write ${target}.`,
          subagent_type: 'scribe',
          ...(background ? {} : { run_in_background: false }),
        }),
        { text: 'Main thread: first turn over.' },
        { text: 'Main thread: saw the scribe finish.' },
      ],
      agents: {
        scribe: [
          mock.toolUse('Write', { file_path: target, content: 'notes\n' }),
          { text: 'Scribe: notes written.' },
        ],
      },
    };
  }

  it('routes a foreground subagent to its own replies and returns one result', async () => {
    const workspace = tempDir('flower-ws-');
    const target = join(workspace, 'notes.txt');
    const server = await startMock(delegatingScript(target, false));

    const { messages, thrown } = await runQuery(server, workspace, { agents: { scribe } });

    expect(thrown).toBeUndefined();
    expect(readFileSync(target, 'utf8')).toBe('notes\n');
    expect(server.agentRequests('scribe')).toHaveLength(2);
    expect(server.agentRequests('scribe').every((request) => request.agentId !== undefined)).toBe(true);
    // The scribe's system prompt is its definition's prompt; its tools are its own.
    expect(server.agentRequests('scribe')[0]?.body?.tools?.map((tool) => tool.name)).toEqual(['Write']);
    expect(server.mainRequests()).toHaveLength(2);
    expect(resultTexts(messages)).toEqual(['Main thread: first turn over.']);
    expect(server.unmatched).toEqual([]);
  });

  it('runs a subagent in the background by default: the task notification starts a second main turn', async () => {
    const workspace = tempDir('flower-ws-');
    const target = join(workspace, 'notes.txt');
    const server = await startMock(delegatingScript(target, true));

    const { messages, thrown } = await runQuery(server, workspace, { agents: { scribe } });

    expect(thrown).toBeUndefined();
    expect(existsSync(target)).toBe(true);
    expect(server.agentRequests('scribe')).toHaveLength(2);
    // One query(), two results: the first turn's, then that of the turn the task notification
    // started once the subagent completed.
    expect(resultTexts(messages)).toEqual([
      'Main thread: first turn over.',
      'Main thread: saw the scribe finish.',
    ]);
    const notified = server.mainRequests()[2];
    expect(JSON.stringify(lastMessage(notified?.body))).toContain('task-notification');
    expect(server.unmatched).toEqual([]);
  });

  it('kills a background subagent still running at the wait ceiling of a one-shot query', async () => {
    const workspace = tempDir('flower-ws-');
    const server = await startMock({
      main: [
        mock.toolUse('Agent', {
          description: 'take long',
          prompt: 'Take your time.',
          subagent_type: 'scribe',
        }),
        { text: 'Main thread: first turn over.' },
      ],
      agents: { scribe: [mock.text('Too late.', { delayMs: 60_000 })] },
    });

    const { messages, thrown } = await runQuery(server, workspace, {
      agents: { scribe },
      extraEnv: { CLAUDE_CODE_PRINT_BG_WAIT_CEILING_MS: '1500' },
    });

    expect(thrown).toBeUndefined();
    expect(resultTexts(messages)).toEqual(['Main thread: first turn over.']);
    const killed = messages.some(
      (message) =>
        message.type === 'system' &&
        message.subtype === 'task_updated' &&
        (message as { patch?: { status?: string } }).patch?.status === 'killed',
    );
    expect(killed).toBe(true);
    expect(server.agentRequests('scribe')).toHaveLength(1);
  });
});
