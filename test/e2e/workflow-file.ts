/**
 * A one-step workflow file for `flower run` in end-to-end tests: `<dir>/<file>` exporting `flow`,
 * a Workflow whose one step (`step`, given `prompt`) runs a read-only agent.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot } from './cli-harness.js';

/** Writes the file and returns the `flower run` target (`<path>:flow`). */
export function writeOneStepFlow(dir: string, file: string, step: string, prompt: string): string {
  const workflowModule = join(repoRoot, 'src', 'workflow', 'workflow.js');
  writeFileSync(
    join(dir, file),
    [
      `import { Workflow } from ${JSON.stringify(workflowModule)};`,
      "const spec = { name: 'agent', instructions: '', allowedTools: ['Read'], permissionMode: 'default' as const };",
      `export const flow = new Workflow([{ name: ${JSON.stringify(step)}, spec, prompt: ${JSON.stringify(prompt)} }]);`,
    ].join('\n'),
  );
  return join(dir, `${file}:flow`);
}
