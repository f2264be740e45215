import type { SDKMessage } from '@anthropic-ai/claude-agent-sdk';
import { describe, expect, it } from 'vitest';
import {
  contextFromUsage,
  describeEvent,
  isSyntheticApiError,
  messageMetaOf,
  normalize,
} from '../../../src/runtime/events.js';
import { captured } from './events-captured.js';

const message = (value: unknown) => value as SDKMessage;

describe('normalize, on messages captured from the real binary', () => {
  it('turns a thinking block into a main-thread thinking event with the context of its request', () => {
    const [event] = normalize(captured.thinking!);
    expect(event).toMatchObject({ kind: 'thinking', text: 'let me look' });
    expect(event?.payload).toMatchObject({ subagent: false, context: 1500, model: 'claude-opus-5-5' });
  });

  it('turns a tool_use block into a tool_call whose text is the file it works on', () => {
    const [event] = normalize(captured.toolUse!);
    expect(event).toMatchObject({ kind: 'tool_call', tool: 'Read', text: '/etc/hostname' });
    expect(event?.payload).toMatchObject({
      id: 'toolu_mock7f3aed4d00e636cd7e',
      input: { file_path: '/etc/hostname' },
    });
    expect(describeEvent(event!)).toBe('[Read] /etc/hostname');
  });

  it('turns the tool result in a user message into a tool_result, not a prompt', () => {
    const events = normalize(captured.toolResult!);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ kind: 'tool_result', text: '1\tvm\n2\t' });
    expect(events[0]?.payload).toMatchObject({
      toolUseId: 'toolu_mock7f3aed4d00e636cd7e',
      isError: false,
      subagent: false,
    });
  });

  it('turns assistant prose into text', () => {
    expect(normalize(captured.text!)).toMatchObject([
      { kind: 'text', text: 'All done.', payload: { context: 1200 } },
    ]);
  });

  it('turns a result into its cost, turns and outcome', () => {
    expect(normalize(captured.resultOk!)).toMatchObject([
      {
        kind: 'result',
        text: 'success',
        payload: {
          sessionId: 'cc1d4a0c-b494-4514-92a0-3c61d1f3fb08',
          sessionCostUsd: 0.01004,
          costUsd: 0.01004,
          numTurns: 2,
          isError: false,
        },
      },
    ]);
    expect(normalize(captured.resultError!)[0]?.payload).toMatchObject({ isError: true, costUsd: 0 });
  });

  it('makes the synthetic "API Error" message an error event and never text', () => {
    expect(isSyntheticApiError(captured.syntheticError!)).toBe(true);
    const events = normalize(captured.syntheticError!);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ kind: 'error', payload: { synthetic: true } });
    expect(events[0]?.text).toContain('API Error: Connection dropped');
    expect(events.some((event) => event.kind === 'text')).toBe(false);
  });

  it('keeps the binary\'s own "No response requested." filler as text, not an API error (it is <synthetic> too)', () => {
    const filler = {
      ...captured.syntheticError!,
      message: {
        ...(captured.syntheticError as { message: object }).message,
        content: [{ type: 'text', text: 'No response requested.' }],
      },
    } as typeof captured.syntheticError;
    const wire = filler as unknown as Record<string, unknown>;
    delete wire.is_api_error_message;
    delete wire.isApiErrorMessage;
    expect(isSyntheticApiError(filler!)).toBe(false);
    expect(normalize(filler!).some((event) => event.kind === 'error')).toBe(false);
    // Flagged by the binary, the same text is its error turn after all.
    expect(isSyntheticApiError({ ...filler!, is_api_error_message: true } as never)).toBe(true);
  });

  it("reports the binary's own retries as retry events, naming the cause", () => {
    expect(normalize(captured.apiRetry!)).toMatchObject([
      {
        kind: 'retry',
        text: 'API request failed (no connection: refused, reset or timed out); Claude Code retries in 0.6s (1/1)',
        payload: {
          source: 'binary',
          attempt: 1,
          maxRetries: 1,
          delayMs: 567,
          errorStatus: null,
          errorCode: 'unknown',
        },
      },
    ]);
    const refusedKey = { ...captured.apiRetry, error_status: 401, error: 'authentication_failed' };
    expect(normalize(message(refusedKey))[0]?.text).toContain('(HTTP 401 authentication failed)');
  });

  it("keeps the binary's error code of a synthetic error (a missing model has no 404 in its text)", () => {
    const missing = { ...captured.syntheticError, error: 'model_not_found', api_error_status: 404 };
    expect(normalize(message(missing))[0]?.payload).toEqual({
      synthetic: true,
      status: 404,
      errorCode: 'model_not_found',
    });
  });

  it('keeps other system messages as system events named by subtype', () => {
    expect(normalize(captured.init!)).toMatchObject([
      { kind: 'system', text: 'init', payload: { subtype: 'init' } },
    ]);
  });
});

describe('normalize, on shapes the capture does not cover', () => {
  const assistant = (content: unknown[], extra: Record<string, unknown> = {}) =>
    message({
      type: 'assistant',
      message: {
        model: 'm',
        content,
        usage: { input_tokens: 10, cache_read_input_tokens: 20, cache_creation_input_tokens: 30 },
      },
      parent_tool_use_id: null,
      session_id: 's',
      ...extra,
    });

  it('marks subagent messages and names their parent tool call', () => {
    const [event] = normalize(
      assistant([{ type: 'text', text: 'worker prose' }], { parent_tool_use_id: 'toolu_1' }),
    );
    expect(event?.payload).toMatchObject({ subagent: true, parentToolUseId: 'toolu_1', context: 60 });
  });

  it('turns an Agent call into a dispatch naming the subagent and its task', () => {
    const [event] = normalize(
      assistant([
        {
          type: 'tool_use',
          id: 't',
          name: 'Agent',
          input: { subagent_type: 'coder', description: 'write hello.py' },
        },
      ]),
    );
    expect(event).toMatchObject({
      kind: 'dispatch',
      tool: 'Agent',
      payload: { subagentType: 'coder', description: 'write hello.py' },
    });
  });

  it('turns several blocks into several events, in order, each with the message facts', () => {
    const events = normalize(
      assistant([
        { type: 'thinking', thinking: 'hmm' },
        { type: 'text', text: 'ok' },
        { type: 'tool_use', id: 't', name: 'Bash', input: { command: 'ls -la' } },
        { type: 'image', source: {} },
      ]),
    );
    expect(events.map((event) => event.kind)).toEqual(['thinking', 'text', 'tool_call']);
    expect(events.every((event) => messageMetaOf(event)?.context === 60)).toBe(true);
  });

  it('treats a synthetic model name as an API error even without the flag', () => {
    const synthetic = message({
      type: 'assistant',
      message: { model: '<synthetic>', content: [{ type: 'text', text: 'API Error: 529 overloaded' }] },
      parent_tool_use_id: null,
      api_error_status: 529,
    });
    expect(normalize(synthetic)).toMatchObject([
      { kind: 'error', text: 'API Error: 529 overloaded', payload: { synthetic: true, status: 529 } },
    ]);
  });

  it('turns a user prompt into a prompt event and a string prompt likewise', () => {
    expect(
      normalize(
        message({ type: 'user', message: { role: 'user', content: 'do it' }, parent_tool_use_id: null }),
      ),
    ).toMatchObject([{ kind: 'prompt', text: 'do it', payload: { subagent: false } }]);
  });

  it('keeps the error flag of a failed tool result and cuts its text to 500 characters', () => {
    const [event] = normalize(
      message({
        type: 'user',
        message: {
          role: 'user',
          content: [
            {
              type: 'tool_result',
              tool_use_id: 't',
              is_error: true,
              content: [{ type: 'text', text: 'x'.repeat(900) }],
            },
          ],
        },
        parent_tool_use_id: null,
      }),
    );
    expect(event).toMatchObject({ kind: 'tool_result', payload: { isError: true } });
    expect(event?.text).toHaveLength(500);
  });

  it('turns compaction boundaries into reset events with their sizes', () => {
    const [event] = normalize(
      message({
        type: 'system',
        subtype: 'compact_boundary',
        compact_metadata: { trigger: 'auto', pre_tokens: 167000, post_tokens: 9000 },
      }),
    );
    expect(event).toMatchObject({
      kind: 'reset',
      payload: { trigger: 'auto', preTokens: 167000, postTokens: 9000, micro: false },
    });
    expect(event?.text).toBe('compaction (auto) 167000 → 9000 tokens');
    expect(normalize(message({ type: 'system', subtype: 'microcompact_boundary' }))[0]).toMatchObject({
      kind: 'reset',
      payload: { micro: true, trigger: '?' },
    });
    expect(normalize(message({ type: 'conversation_reset', session_id: 's' }))[0]?.kind).toBe('reset');
  });

  it('turns task notices into task events; only a finished task carries text', () => {
    expect(
      normalize(message({ type: 'system', subtype: 'task_started', task_id: 'a1', description: 'build' })),
    ).toMatchObject([
      { kind: 'task', text: '', payload: { phase: 'started', taskId: 'a1', description: 'build' } },
    ]);
    expect(
      normalize(
        message({
          type: 'system',
          subtype: 'task_notification',
          task_id: 'a1',
          status: 'completed',
          summary: 'built it',
        }),
      ),
    ).toMatchObject([
      { kind: 'task', text: 'built it', payload: { phase: 'notification', status: 'completed' } },
    ]);
  });

  it('marks unrecognised messages as unknown', () => {
    expect(normalize(message({ type: 'rate_limit_event' }))).toMatchObject([
      { kind: 'unknown', text: 'rate_limit_event' },
    ]);
  });
});

describe('contextFromUsage', () => {
  it('adds input, cache-read and cache-creation tokens; missing fields count as zero', () => {
    expect(contextFromUsage({ input_tokens: 5, cache_read_input_tokens: 7 })).toBe(12);
    expect(contextFromUsage(undefined)).toBeUndefined();
  });
});

describe('describeEvent: what a person following a run from library code reads (issue 21)', () => {
  /** A background worker's launch as the binary (SDK 0.3.332) returns it: notes for the model only. */
  const launch = message({
    type: 'user',
    parent_tool_use_id: null,
    message: {
      role: 'user',
      content: [
        {
          type: 'tool_result',
          tool_use_id: 'toolu_launch',
          content: [
            {
              type: 'text',
              text:
                'Async agent launched successfully. (This tool result is internal metadata — never quote or paste ' +
                'any part of it, including the agentId below, into a user-facing reply.)\n' +
                "agentId: a97abed8eef8e2f33 (internal ID - do not mention to user. Use SendMessage with to: 'a97abed8eef8e2f33')",
            },
          ],
        },
      ],
    },
  });
  const lines = (messages: SDKMessage[]) =>
    messages.flatMap((each) => normalize(each)).map((event) => describeEvent(event));

  it('says nothing for the binary bookkeeping: init, a task notice, a successful tool output, the launch metadata', () => {
    const taskStarted = message({ type: 'system', subtype: 'task_started', task_id: 't1', tool_use_id: 'x' });
    const changed = message({ type: 'system', subtype: 'background_tasks_changed', tasks: [] });
    expect(lines([captured.init!, taskStarted, changed, captured.toolResult!, launch])).toEqual([
      '',
      '',
      '',
      '',
      '',
    ]);
  });

  it('never prints the internal metadata, an agent id or an event kind for a whole exchange', () => {
    const printed = lines([
      captured.init!,
      captured.thinking!,
      captured.toolUse!,
      captured.toolResult!,
      launch,
      captured.text!,
      captured.resultOk!,
    ])
      .filter((line) => line !== '')
      .join('\n');
    expect(printed).toBe(
      ['let me look', '[Read] /etc/hostname', 'All done.', 'done · 2 turns · $0.0100'].join('\n'),
    );
    expect(printed).not.toMatch(/internal|agentId|<\w+>|^init$|^success$/m);
  });

  it('shows how a run failed, a failed tool, flower warnings and the step header', () => {
    expect(lines([captured.resultError!])).toEqual(['failed · 1 turn · $0.0000']);
    const failedTool = normalize(
      message({
        type: 'user',
        message: {
          role: 'user',
          content: [{ type: 'tool_result', tool_use_id: 't', is_error: true, content: 'No such file' }],
        },
      }),
    );
    expect(failedTool.map(describeEvent)).toEqual(['[failed] No such file']);
    expect(
      describeEvent({
        kind: 'system',
        text: 'gate rejected write (attempt 1/3): Not done yet',
        payload: { subtype: 'gate_rejected', data: {}, warning: true },
      }),
    ).toBe('gate rejected write (attempt 1/3): Not done yet');
    expect(
      describeEvent({
        kind: 'step',
        text: 'work',
        payload: { name: 'work', index: 2, total: 3, resumed: true, woke: 2, round: 1, rounds: 3 },
      }),
    ).toBe('== work · round 1/3 (step 2/3, resumed)');
  });

  it("leaves a worker's prose to its task summary", () => {
    const worker = message({
      type: 'assistant',
      parent_tool_use_id: 'toolu_dispatch',
      message: { role: 'assistant', model: 'm', content: [{ type: 'text', text: 'Conclusion: written.' }] },
    });
    const summary = message({
      type: 'system',
      subtype: 'task_notification',
      task_id: 't1',
      summary: 'Conclusion: written.',
    });
    expect(lines([worker, summary])).toEqual(['', 'Conclusion: written.']);
  });
});
