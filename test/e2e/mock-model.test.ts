/**
 * Proof that the mock model drives the real stack: the SDK's query() runs the real Claude Code
 * binary against it, the scripted text comes back as the result, and a scripted Write call
 * creates the file on disk.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { query, type SDKMessage } from '@anthropic-ai/claude-agent-sdk';
import { afterEach, describe, expect, it } from 'vitest';
import { type MockModel, mockModelEnv, startMockModel } from '../../src/testing/index.js';

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

async function runQuery(mock: MockModel, workspace: string, prompt: string): Promise<SDKMessage[]> {
  const messages: SDKMessage[] = [];
  const run = query({
    prompt,
    options: {
      cwd: workspace,
      env: mockModelEnv(mock, { configDir: tempDir('flower-config-') }),
      permissionMode: 'acceptEdits',
      allowedTools: ['Write'],
      settingSources: [],
    },
  });
  for await (const message of run) messages.push(message);
  return messages;
}

describe('mock model with the real Claude Code binary', () => {
  it('returns the scripted text and performs a scripted Write', async () => {
    const workspace = tempDir('flower-ws-');
    const target = join(workspace, 'hello.txt');
    const mock = await startMockModel({
      main: [
        { toolUses: [{ name: 'Write', input: { file_path: target, content: 'written by the script\n' } }] },
        { text: 'Wrote hello.txt as asked.', usage: { input_tokens: 1234, output_tokens: 9 } },
      ],
    });
    cleanups.push(() => mock.close());

    const messages = await runQuery(mock, workspace, 'Please write hello.txt');

    const result = messages.find((message) => message.type === 'result');
    expect(result?.subtype).toBe('success');
    expect(result?.type === 'result' && result.subtype === 'success' ? result.result : '').toBe(
      'Wrote hello.txt as asked.',
    );
    expect(readFileSync(target, 'utf8')).toBe('written by the script\n');
    expect(mock.mainRequests()).toHaveLength(2);
    expect(mock.unmatched).toEqual([]);
    // The second request carries the Write call's result back to the model.
    const second = mock.mainRequests()[1];
    expect(JSON.stringify(second?.body?.messages)).toContain('tool_result');
  });
});
