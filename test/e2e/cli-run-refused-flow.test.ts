/**
 * `flower run` of a workflow whose step list cannot run (issue 21, polish): two steps with one name,
 * or a `resumeFrom` naming no step, stop with one line naming the step, exit 1, before the model is
 * asked anything (the steps before the bad one used to run, and be paid for, first).
 */
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type MockModel, startMockModel } from '../../src/testing/server.js';
import { mockedEnv, repoRoot, runFlower, tempDir } from './cli-harness.js';

/** `<dir>/flow.ts` exporting `main`, a factory building a Workflow of `steps` (a TS array literal). */
function writeFlow(dir: string, steps: string): string {
  const workflowModule = join(repoRoot, 'src', 'workflow', 'workflow.js');
  writeFileSync(
    join(dir, 'flow.ts'),
    [
      `import { Workflow } from ${JSON.stringify(workflowModule)};`,
      "const spec = { name: 'agent', instructions: '', allowedTools: ['Read'], permissionMode: 'default' as const };",
      "const step = (name: string, extra = {}) => ({ name, spec, prompt: 'Say hello.', ...extra });",
      `export function main() { return new Workflow(${steps}, { name: 'mine' }); }`,
    ].join('\n'),
  );
  return `${join(dir, 'flow.ts')}:main`;
}

describe('flower run refuses a step list that cannot run, before anything is paid for', () => {
  let model: MockModel;
  beforeAll(async () => {
    model = await startMockModel({ main: Array.from({ length: 10 }, () => ({ text: 'Hello.' })) });
  });
  afterAll(async () => {
    await model.close();
  });

  it.each([
    [
      'a resumeFrom naming no step',
      "[step('write'), step('usage', { resumeFrom: 'wirte' })]",
      'Step "usage" resumes from "wirte", but there is no step "wirte" (the steps are: "write", "usage")',
    ],
    ['two steps with one name', "[step('write'), step('write')]", 'Two steps are named "write"'],
  ])(
    '%s: one line, exit 1, no request, no run recorded',
    async (_what, steps, said) => {
      const workspace = tempDir('refused-ws');
      const before = model.requests.length;
      const run = await runFlower(['-w', workspace, 'run', writeFlow(tempDir('refused-flow'), steps)], {
        env: mockedEnv(model),
      });
      expect(run.stderr).toContain('failed while building the workflow: Workflow "mine" cannot run: ');
      expect(run.stderr).toContain(said);
      expect(run.stderr.trim().split('\n')).toHaveLength(1);
      expect(run.status).toBe(1);
      expect(model.requests.length).toBe(before);
      expect(existsSync(join(workspace, 'runs', 'manifest.json'))).toBe(false);
    },
    60_000,
  );
});
