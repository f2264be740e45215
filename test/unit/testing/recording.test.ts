import { describe, expect, it } from 'vitest';
import {
  contentText,
  lastUserText,
  messageText,
  type RecordedRequest,
  systemText,
  toolResults,
} from '../../../src/testing/recording.js';

function recorded(body: RecordedRequest['body']): RecordedRequest {
  return {
    index: 0,
    method: 'POST',
    path: '/v1/messages',
    query: {},
    headers: {},
    rawBody: JSON.stringify(body),
    body,
    agent: { kind: 'main' },
    agentId: undefined,
    unmatched: false,
    outcome: { kind: 'pending' },
    receivedAt: new Date(0),
  };
}

describe('request helpers', () => {
  it('reads the system prompt in either shape', () => {
    expect(systemText({ system: 'plain' })).toBe('plain');
    expect(
      systemText({
        system: [
          { type: 'text', text: 'a' },
          { type: 'text', text: 'b' },
        ],
      }),
    ).toBe('a\nb');
    expect(systemText(undefined)).toBe('');
  });

  it('joins the text blocks of a message', () => {
    expect(messageText({ role: 'user', content: 'hi' })).toBe('hi');
    expect(
      messageText({
        role: 'user',
        content: [
          { type: 'text', text: 'one' },
          { type: 'image', source: {} },
          { type: 'text', text: 'two' },
        ],
      }),
    ).toBe('one\ntwo');
  });

  it('finds the last user message, tool results included', () => {
    const request = recorded({
      messages: [
        { role: 'user', content: 'first' },
        { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'Read', input: {} }] },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 't1', content: [{ type: 'text', text: 'file body' }] },
          ],
        },
      ],
    });
    expect(lastUserText(request)).toBe('file body');
    expect(toolResults(request)).toEqual([{ toolUseId: 't1', text: 'file body', isError: false }]);
  });

  it('reports an errored tool result as such', () => {
    const request = recorded({
      messages: [
        {
          role: 'user',
          content: [{ type: 'tool_result', tool_use_id: 't2', content: 'denied', is_error: true }],
        },
      ],
    });
    expect(toolResults(request)).toEqual([{ toolUseId: 't2', text: 'denied', isError: true }]);
    expect(contentText(undefined)).toBe('');
  });
});
