/**
 * `flower run <file-or-module>:<export>` against the mock model (issue 6, acceptance 4): a workflow
 * written in TypeScript runs on Node 20 (compiled on the fly, sibling `.js` imports resolved to their
 * `.ts` sources), with the same terminal output as `go`.
 * Malformed targets are covered in cli-exit-codes.test.ts.
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { COORDINATOR_RULES } from '../../src/agents/rules.js';
import { contentText, lastMessage, type RecordedRequest, systemText } from '../../src/testing/recording.js';
import type { MockReply } from '../../src/testing/script.js';
import { type MockModel, startMockModel } from '../../src/testing/server.js';
import { mockedEnv, repoRoot, runFlower, tempDir } from './cli-harness.js';

const GREETING = 'Hello from a TypeScript workflow.';
const USAGE_NOTE = 'Run: python3 wordcount.py < file.txt; it prints the number of words.';

function lastUser(request: RecordedRequest): string {
  return contentText(lastMessage(request.body)?.content ?? '');
}

/**
 * One responder for both workflows below: the plain `hello` agent greets; the example's coordinator
 * dispatches its coder (write step) and writes a usage note (usage step).
 */
function respond(request: RecordedRequest): MockReply {
  const system = systemText(request.body);
  if (!system.includes(COORDINATOR_RULES.split('\n')[0]!)) return { text: GREETING };
  const conversation = (request.body?.messages ?? [])
    .map((message) => contentText(message.content))
    .join('\n');
  if (lastUser(request).includes('usage note')) return { text: USAGE_NOTE };
  if (conversation.includes('Conclusion: wordcount.py works'))
    return { text: 'wordcount.py is written and checked.' };
  const dispatched = (request.body?.messages ?? []).some(
    (message) =>
      message.role === 'assistant' &&
      Array.isArray(message.content) &&
      message.content.some((block) => block.type === 'tool_use' && block.name === 'Agent'),
  );
  if (dispatched) return { text: 'Waiting for the coder.' };
  return {
    toolUses: [
      {
        name: 'Agent',
        input: {
          subagent_type: 'coder',
          description: 'write wordcount.py',
          prompt: 'Write wordcount.py and run it once.',
        },
      },
    ],
  };
}

/** `<dir>/flow.ts` exporting `flow`: a Workflow of `steps` (a TS array literal) on one read-only agent, `spec`. */
function writeFlow(dir: string, steps: string): void {
  const workflowModule = join(repoRoot, 'src', 'workflow', 'workflow.js');
  writeFileSync(
    join(dir, 'flow.ts'),
    [
      `import { Workflow } from ${JSON.stringify(workflowModule)};`,
      "const spec = { name: 'agent', instructions: '', allowedTools: ['Read'], permissionMode: 'default' as const };",
      `export const flow = new Workflow(${steps});`,
    ].join('\n'),
  );
}

let model: MockModel;
let workspace: string;
beforeAll(async () => {
  workspace = tempDir('run');
  const program = join(workspace, 'wordcount.py');
  model = await startMockModel({
    main: Array.from({ length: 30 }, () => respond),
    agents: {
      coder: [
        {
          toolUses: [
            {
              name: 'Write',
              input: { file_path: program, content: 'import sys\nprint(len(sys.stdin.read().split()))\n' },
            },
          ],
        },
        { toolUses: [{ name: 'Bash', input: { command: `echo one two three | python3 ${program}` } }] },
        { text: 'Conclusion: wordcount.py works (printed 3 for three words).\nOutput: wordcount.py' },
      ],
    },
  });
});
afterAll(async () => {
  await model.close();
});

describe('flower run', () => {
  it('runs a TypeScript workflow file, including its sibling .ts modules imported as .js', async () => {
    const dir = tempDir('ts-flow');
    const workflowModule = join(repoRoot, 'src', 'workflow', 'workflow.js');
    writeFileSync(
      join(dir, 'prompts.ts'),
      'export const greetingPrompt: string = "Say hello.";\nexport interface Unused { a: number }\n',
    );
    writeFileSync(
      join(dir, 'flow.ts'),
      [
        `import { Workflow } from ${JSON.stringify(workflowModule)};`,
        `import type { AgentSpec } from ${JSON.stringify(join(repoRoot, 'src', 'runtime', 'agent-spec.js'))};`,
        "import { greetingPrompt } from './prompts.js';",
        'type Named = { name: string };',
        "const spec: AgentSpec & Named = { name: 'hello', instructions: '', allowedTools: ['Read'], permissionMode: 'default' };",
        'export function build(): Workflow {',
        "  return new Workflow([{ name: 'hello', spec, prompt: greetingPrompt }], { name: 'typed' });",
        '}',
      ].join('\n'),
    );
    const run = await runFlower(['-w', workspace, 'run', join(dir, 'flow.ts:build')], {
      cwd: dir,
      env: mockedEnv(model),
    });
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
    expect(run.stdout).toMatch(/== hello =+ 1\/1/);
    expect(run.stdout).toContain(GREETING);
    expect(run.stdout).toMatch(/total \$\d+\.\d{4} this run · \$\d+\.\d{4} for the whole task · manifest /);
  });

  it('with -W gives a workflow without a workbench one, and its steps spill large results into it', async () => {
    const dir = tempDir('wb-flow');
    const big = join(dir, 'big.log');
    writeFileSync(big, `${'a line of a long build log\n'.repeat(400)}`);
    const spillModel = await startMockModel({
      main: [{ toolUses: [{ name: 'Read', input: { file_path: big } }] }, { text: 'Read the log.' }],
    });
    try {
      writeFlow(dir, "[{ name: 'reader', spec, prompt: 'Read big.log.' }]");
      const run = await runFlower(['-w', dir, '-W', 'run', join(dir, 'flow.ts:flow')], {
        cwd: dir,
        env: mockedEnv(spillModel),
      });
      expect(run.stderr).toBe('');
      expect(run.status).toBe(0);
      const spillDir = join(dir, 'runs', 'workbench', 'spill');
      const files = readdirSync(spillDir);
      expect(files).toHaveLength(1);
      expect(readFileSync(join(spillDir, files[0]!), 'utf8')).toContain('a line of a long build log');
      const afterRead = JSON.stringify(spillModel.mainRequests()[1]?.body?.messages);
      expect(afterRead).toContain('[tool result archived:');
      expect(afterRead).toContain(join(spillDir, files[0]!));
    } finally {
      await spillModel.close();
    }
  });

  it('--budget caps the whole run: the step that reaches it stops, the next one never starts', async () => {
    const dir = tempDir('budget-flow');
    const priced = await startMockModel({
      main: Array.from({ length: 4 }, () => ({
        text: 'a turn',
        usage: { input_tokens: 100_000, output_tokens: 10 },
      })),
    });
    try {
      writeFlow(
        dir,
        "[{ name: 'first', spec, prompt: 'Talk.' }, { name: 'second', spec, prompt: 'Talk again.' }]",
      );
      const run = await runFlower(['-w', dir, 'run', join(dir, 'flow.ts:flow'), '--budget', '0.3'], {
        cwd: dir,
        env: mockedEnv(priced),
      });
      expect(run.status).toBe(1);
      expect(run.stderr).toMatch(
        /^flower: budget spent: \$0\.\d\d of \$0\.30; run with --budget 0\.60 to continue\n$/,
      );
      expect(priced.mainRequests()).toHaveLength(1);
      const manifest = JSON.parse(readFileSync(join(dir, 'runs', 'manifest.json'), 'utf8')) as Array<{
        step: string;
      }>;
      expect(manifest.map((row) => row.step)).toEqual(['first']);
    } finally {
      await priced.close();
    }
  });

  it('runs ./examples/my-flow.ts:main with -w: its factory gets the workspace, so .flower/ and runs/ sit together', async () => {
    const elsewhere = tempDir('run-cwd');
    const run = await runFlower(['-w', workspace, 'run', join(repoRoot, 'examples', 'my-flow.ts:main')], {
      cwd: elsewhere,
      env: mockedEnv(model),
      timeoutMs: 150_000,
    });
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
    expect(existsSync(join(workspace, '.flower', 'notes'))).toBe(true);
    expect(existsSync(join(workspace, 'runs', 'manifest.json'))).toBe(true);
    expect(readdirSync(elsewhere)).toEqual([]);
    // The screen says who speaks: the coordinator's prose, the coder's tool calls.
    expect(run.stdout).toMatch(/^ {2}coordinator: /m);
    expect(run.stdout).toMatch(/^ {2}\| coder \* Write /m);
    expect(run.stdout).toMatch(/== write =+ 1\/2/);
    expect(run.stdout).toMatch(/== usage =+ 2\/2/);
    // Wrapped under the speaker's label: compare the text with its line breaks undone.
    expect(run.stdout.replace(/\n {2,}/g, ' ')).toContain(`coordinator: ${USAGE_NOTE}`);
    expect(existsSync(join(workspace, 'wordcount.py'))).toBe(true);
    // The shipped example is written as a user's file: against the package, not this checkout's src/.
    expect(readFileSync(join(repoRoot, 'examples', 'my-flow.ts'), 'utf8')).not.toMatch(/from '\.\.\/src/);
    const manifest = JSON.parse(readFileSync(join(workspace, 'runs', 'manifest.json'), 'utf8')) as Array<{
      step: string;
      ok: boolean;
    }>;
    expect(
      manifest.filter((row) => row.step === 'write' || row.step === 'usage').every((row) => row.ok),
    ).toBe(true);
  }, 160_000);
});
