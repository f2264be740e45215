import { describe, expect, it } from 'vitest';
import { delegationsIn, type IdentifyInput, identifyAgent } from '../../../src/testing/identify.js';

function input(overrides: Partial<IdentifyInput>): IdentifyInput {
  return {
    method: 'POST',
    path: '/v1/messages',
    headers: {},
    body: { tools: [{ name: 'Write' }], messages: [{ role: 'user', content: 'hello' }] },
    agentPrompts: {},
    knownAgents: new Map(),
    delegations: [],
    ...overrides,
  };
}

describe('identifyAgent', () => {
  it('calls a request with tools and no agent header the main thread', () => {
    expect(identifyAgent(input({}))).toEqual({ kind: 'main' });
  });

  it('names a subagent by the Agent call whose prompt is its first user message', () => {
    const identity = identifyAgent(
      input({
        headers: { 'x-claude-code-agent-id': 'a1' },
        body: { tools: [{ name: 'Read' }], messages: [{ role: 'user', content: 'Check the build.' }] },
        delegations: [
          { subagentType: 'writer', prompt: 'Write the docs.' },
          { subagentType: 'checker', prompt: 'Check the build.' },
        ],
      }),
    );
    expect(identity).toEqual({ kind: 'subagent', name: 'checker' });
  });

  it('keeps the name already attributed to an agent id', () => {
    const identity = identifyAgent(
      input({ headers: { 'x-claude-code-agent-id': 'a1' }, knownAgents: new Map([['a1', 'checker']]) }),
    );
    expect(identity).toEqual({ kind: 'subagent', name: 'checker' });
  });

  it('recognises a subagent by the billing marker and its prompt text', () => {
    const identity = identifyAgent(
      input({
        body: {
          system: [
            { type: 'text', text: 'cc_entrypoint=sdk-ts; cc_is_subagent=true;' },
            { type: 'text', text: 'You judge.' },
          ],
          tools: [{ name: 'Read' }],
          messages: [{ role: 'user', content: 'x' }],
        },
        agentPrompts: { judge: 'You judge.' },
      }),
    );
    expect(identity).toEqual({ kind: 'subagent', name: 'judge' });
  });

  it('calls a subagent it cannot name "unknown"', () => {
    expect(identifyAgent(input({ headers: { 'x-claude-code-agent-id': 'zz' } }))).toEqual({
      kind: 'subagent',
      name: 'unknown',
    });
  });

  it('calls a request without tools a side request, and recognises title generation', () => {
    expect(identifyAgent(input({ body: { tools: [], messages: [] } }))).toEqual({
      kind: 'side',
      purpose: 'untooled',
    });
    const title = input({ body: { system: 'You are naming a coding session so…', tools: [], messages: [] } });
    expect(identifyAgent(title)).toEqual({ kind: 'side', purpose: 'title' });
  });

  it('tells token counting and other paths apart', () => {
    expect(identifyAgent(input({ path: '/v1/messages/count_tokens' }))).toEqual({ kind: 'count_tokens' });
    expect(identifyAgent(input({ method: 'HEAD', path: '/api/hello' }))).toEqual({ kind: 'other' });
  });
});

describe('delegationsIn', () => {
  it('takes Agent and Task calls, defaulting the type to general-purpose', () => {
    expect(
      delegationsIn([
        { name: 'Agent', input: { prompt: 'a', subagent_type: 'x' } },
        { name: 'Task', input: { prompt: 'b' } },
        { name: 'Write', input: { file_path: '/f' } },
      ]),
    ).toEqual([
      { subagentType: 'x', prompt: 'a' },
      { subagentType: 'general-purpose', prompt: 'b' },
    ]);
  });
});

describe('compaction requests', () => {
  it('calls a turn that orders a text-only summary a compaction side request, even from a subagent', () => {
    const body = {
      tools: [{ name: 'Write' }],
      messages: [
        { role: 'user', content: 'go' },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 't', content: 'ok' },
            {
              type: 'text',
              text: 'CRITICAL: Respond with TEXT ONLY. Do NOT call any tools.\n\nYour task is…',
            },
          ],
        },
      ],
    };
    expect(identifyAgent(input({ body }))).toEqual({ kind: 'side', purpose: 'compact' });
    expect(identifyAgent(input({ body, headers: { 'x-claude-code-agent-id': 'a1' } }))).toEqual({
      kind: 'side',
      purpose: 'compact',
    });
  });
});
