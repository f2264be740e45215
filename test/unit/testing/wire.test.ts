import { describe, expect, it } from 'vitest';
import { buildMessage, errorBody, errorTypeFor, streamEvents } from '../../../src/testing/wire.js';

describe('buildMessage', () => {
  it('expands the shorthands as thinking, text, then tool calls, and infers the stop reason', () => {
    const message = buildMessage(
      { thinking: 'hmm', text: 'hello', toolUses: [{ name: 'Write', input: { file_path: '/x' } }] },
      { model: 'claude-test' },
      '{}',
    );
    expect(message.content.map((block) => block.type)).toEqual(['thinking', 'text', 'tool_use']);
    expect(message.stop_reason).toBe('tool_use');
    expect(message.model).toBe('claude-test');
    const toolUse = message.content[2];
    expect(toolUse?.type === 'tool_use' && toolUse.id).toMatch(/^toolu_/);
  });

  it('ends a reply without tool calls with end_turn, unless the script says otherwise', () => {
    expect(buildMessage({ text: 'hi' }, undefined, '').stop_reason).toBe('end_turn');
    expect(buildMessage({ text: 'hi', stopReason: 'max_tokens' }, undefined, '').stop_reason).toBe(
      'max_tokens',
    );
  });

  it('reports the scripted usage and estimates what the script leaves out', () => {
    const scripted = buildMessage(
      {
        text: 'x',
        usage: {
          input_tokens: 10,
          cache_read_input_tokens: 20,
          cache_creation_input_tokens: 30,
          output_tokens: 40,
        },
      },
      undefined,
      '',
    );
    expect(scripted.usage).toEqual({
      input_tokens: 10,
      cache_read_input_tokens: 20,
      cache_creation_input_tokens: 30,
      output_tokens: 40,
    });
    const estimated = buildMessage({ text: 'x' }, undefined, 'a'.repeat(400));
    expect(estimated.usage.input_tokens).toBe(100);
    expect(estimated.usage.cache_read_input_tokens).toBe(0);
    expect(estimated.usage.output_tokens).toBeGreaterThan(0);
  });
});

describe('streamEvents', () => {
  it('follows the API order: start, blocks with a ping after the first start, delta, stop', () => {
    const message = buildMessage(
      { text: 'a'.repeat(60), toolUses: [{ name: 'Read', input: { path: 'p' } }] },
      undefined,
      '',
    );
    const names = streamEvents(message).map((event) => event.event);
    expect(names[0]).toBe('message_start');
    expect(names[1]).toBe('content_block_start');
    expect(names[2]).toBe('ping');
    expect(names.slice(-2)).toEqual(['message_delta', 'message_stop']);
    expect(names.filter((name) => name === 'content_block_start')).toHaveLength(2);
    expect(names.filter((name) => name === 'content_block_stop')).toHaveLength(2);
  });

  it('splits text into several deltas that add up to the text', () => {
    const text = 'The quick brown fox jumps over the lazy dog, twice over and again.';
    const events = streamEvents(buildMessage({ text }, undefined, ''));
    const deltas = events.filter((event) => event.event === 'content_block_delta');
    expect(deltas.length).toBeGreaterThan(1);
    expect(deltas.map((event) => (event.data.delta as { text: string }).text).join('')).toBe(text);
  });

  it('streams tool input as input_json_delta pieces that parse back to the input', () => {
    const input = { file_path: '/tmp/some/long/path/file.txt', content: 'line one\nline two\n' };
    const events = streamEvents(buildMessage({ toolUses: [{ name: 'Write', input }] }, undefined, ''));
    const start = events.find((event) => event.event === 'content_block_start');
    expect(start?.data.content_block).toMatchObject({ type: 'tool_use', name: 'Write', input: {} });
    const json = events
      .filter((event) => event.event === 'content_block_delta')
      .map((event) => (event.data.delta as { type: string; partial_json: string }).partial_json)
      .join('');
    expect(JSON.parse(json)).toEqual(input);
  });

  it('ends a thinking block with a signature_delta', () => {
    const events = streamEvents(buildMessage({ thinking: 'pondering', text: 'done' }, undefined, ''));
    const thinkingDeltas = events
      .filter((event) => event.event === 'content_block_delta' && event.data.index === 0)
      .map((event) => (event.data.delta as { type: string }).type);
    expect(thinkingDeltas.at(-1)).toBe('signature_delta');
    expect(thinkingDeltas.slice(0, -1).every((type) => type === 'thinking_delta')).toBe(true);
  });

  it('reports the input side in message_start and the full usage with the stop reason in message_delta', () => {
    const usage = {
      input_tokens: 5,
      cache_read_input_tokens: 6,
      cache_creation_input_tokens: 7,
      output_tokens: 8,
    };
    const events = streamEvents(buildMessage({ text: 'x', usage }, undefined, ''));
    const start = events[0]?.data.message as { usage: Record<string, number>; stop_reason: unknown };
    expect(start.usage).toMatchObject({
      input_tokens: 5,
      cache_read_input_tokens: 6,
      cache_creation_input_tokens: 7,
    });
    expect(start.stop_reason).toBeNull();
    const delta = events.find((event) => event.event === 'message_delta');
    expect(delta?.data).toMatchObject({ delta: { stop_reason: 'end_turn', stop_sequence: null }, usage });
  });
});

describe('error bodies', () => {
  it.each([
    [400, 'invalid_request_error'],
    [401, 'authentication_error'],
    [404, 'not_found_error'],
    [429, 'rate_limit_error'],
    [500, 'api_error'],
    [503, 'api_error'],
    [529, 'overloaded_error'],
  ])('uses the API error type for HTTP %i', (status, type) => {
    expect(errorTypeFor(status)).toBe(type);
    expect(errorBody(status)).toMatchObject({ type: 'error', error: { type } });
  });
});
