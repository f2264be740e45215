#!/usr/bin/env node
/**
 * Runs the example workflow (my-flow.ts) offline: no credentials, no network. The scripted Messages
 * API of `flower-agent/testing` plays the coordinator and its `coder` worker; everything else is
 * real: `flower run`, the Claude Code binary, the tools, the gate, the files.
 *
 *   node examples/offline.mjs [dir]        (dir: an empty or new directory; default a temporary one)
 *
 * The script makes the coder get it wrong first (it counts lines, not words), so you also see the
 * gate reject the first attempt and the same session fix it. Needs python3 (the gate runs the program).
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { contentText, conversationMessages, mockModelEnv, startMockModel } from 'flower-agent/testing';

const workspace = process.argv[2] ? resolve(process.argv[2]) : mkdtempSync(join(tmpdir(), 'my-flow-'));
mkdirSync(workspace, { recursive: true });
if (readdirSync(workspace).length > 0) {
  console.error(`${workspace} is not empty; give a new or empty directory.`);
  process.exit(2);
}
const program = join(workspace, 'wordcount.py');

const lastUser = (request) => contentText(conversationMessages(request.body).at(-1)?.content ?? '');
/** Whether the coordinator's previous turn was a dispatch (its Agent call just returned). */
const justDispatched = (request) => {
  const previous = conversationMessages(request.body).at(-2);
  return (
    previous?.role === 'assistant' &&
    Array.isArray(previous.content) &&
    previous.content.some((block) => block.type === 'tool_use' && block.name === 'Agent')
  );
};
const dispatch = (prompt) => ({
  toolUses: [{ name: 'Agent', input: { subagent_type: 'coder', description: 'wordcount.py', prompt } }],
});

/** The coordinator: dispatch, wait for the report, fix what the gate rejected, write the usage note. */
function coordinator(request) {
  const said = lastUser(request);
  if (said.includes('usage note'))
    return { text: 'Run: python3 wordcount.py < file.txt\nIt prints the word count.' };
  if (said.includes('Not done yet')) return dispatch(`Fix wordcount.py. ${said}`);
  if (/Conclusion: (written|fixed)/.test(said)) return { text: 'wordcount.py is ready.' };
  // Workers run in the background: the Agent call returns at once and the report arrives later.
  if (justDispatched(request)) return { text: 'Waiting for the coder.' };
  return dispatch('Write wordcount.py: read stdin, print the number of words.');
}

const write = (content) => ({ toolUses: [{ name: 'Write', input: { file_path: program, content } }] });
const model = await startMockModel({
  main: Array.from({ length: 40 }, () => coordinator),
  agents: {
    coder: [
      write('import sys\nprint(len(sys.stdin.read().splitlines()))\n'),
      { text: 'Conclusion: written. Output: wordcount.py' },
      write('import sys\nprint(len(sys.stdin.read().split()))\n'),
      { text: 'Conclusion: fixed. Output: wordcount.py' },
    ],
  },
});

const configDir = mkdtempSync(join(tmpdir(), 'my-flow-claude-'));
const flower = join(
  dirname(fileURLToPath(import.meta.resolve('flower-agent/package.json'))),
  'dist/cli/bin.js',
);
const flow = join(dirname(fileURLToPath(import.meta.url)), 'my-flow.ts');
const env = mockModelEnv(model, {
  configDir,
  maxRetries: 1,
  extra: { FLOWER_NO_PROBE: '1', FLOWER_NO_UPDATE: '1' },
});
const child = spawn(process.execPath, [flower, '-w', workspace, 'run', `${flow}:main`], {
  env,
  stdio: ['ignore', 'inherit', 'inherit'],
});
const code = await new Promise((done) => child.on('close', (status) => done(status ?? 1)));
await model.close();
rmSync(configDir, { recursive: true, force: true });
console.log(`\nThe workspace, with wordcount.py, runs/ and .flower/: ${workspace}`);
process.exit(code);
