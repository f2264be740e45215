/**
 * A small workflow written against flower's public API. Run it in an empty directory with
 *
 *   flower run ./examples/my-flow.ts:main            (or: flower -w /some/dir run …)
 *
 * or watch it offline, against the scripted model of `flower-agent/testing`, with
 *
 *   node examples/offline.mjs
 *
 * Two steps, each one agent session:
 * 1. `write` — a coordinator has a worker write `wordcount.py`. Whether the step passed is not the
 *    model's call: the gate runs the program on a known input and compares the count. A rejected
 *    attempt continues the same session (`write#round2`) and is told exactly what was wrong.
 * 2. `usage` — continues a fork of the `write` session (it remembers what was built and how it
 *    was checked) and writes a three-line usage note, which is handed on through `ctx.outputs`.
 *
 * `main` is a factory: `flower run` calls it with the workspace and run directory it resolved from
 * `-w`/`-r`, so the workbench (`.flower/`) and `runs/` end up side by side in that workspace. Run it
 * again in the same directory and each step continues its earlier session (lineage).
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { coordinator, type Step, Workbench, Workflow, type WorkflowLocation, worker } from 'flower-agent';

const SAMPLE = 'the quick brown fox\njumps over\nthe lazy dog\n';
const SAMPLE_WORDS = 9;

/** Runs wordcount.py on the sample; undefined when it prints the right count, else what went wrong. */
export function checkWordcount(workspace: string): string | undefined {
  const run = spawnSync('python3', [join(workspace, 'wordcount.py')], {
    input: SAMPLE,
    encoding: 'utf8',
    timeout: 20_000,
  });
  if (run.error) return `wordcount.py could not be run: ${run.error.message}`;
  if (run.status !== 0) return `wordcount.py exited with ${run.status}: ${run.stderr.trim().slice(0, 300)}`;
  const printed = run.stdout.trim();
  return printed === String(SAMPLE_WORDS)
    ? undefined
    : `for a ${SAMPLE_WORDS}-word input wordcount.py printed "${printed.slice(0, 100)}"`;
}

export function main({ workspace }: WorkflowLocation): Workflow {
  const workbench = new Workbench(workspace).ensure();
  const lead = coordinator({
    workers: {
      coder: worker({
        description: 'Writes and runs small programs. Give it anything hands-on.',
        prompt: 'You write small, dependable command-line programs and run them before you report.',
      }),
    },
    workbench,
  });

  const write: Step = {
    name: 'write',
    spec: lead,
    prompt:
      'Have a worker write wordcount.py in the workspace: it reads text from stdin and prints the ' +
      'number of whitespace-separated words, nothing else. The worker must run it once on a sample.',
    retries: 2,
    gate: () => checkWordcount(workspace) === undefined,
    onReject: () => `Not done yet: ${checkWordcount(workspace)}. Have the worker fix it and run it again.`,
  };

  const usage: Step = {
    name: 'usage',
    spec: lead,
    resumeFrom: 'write',
    fork: true,
    prompt: 'In at most three lines, write a usage note for wordcount.py: how to run it and what it prints.',
    reduce: (result) => result.text.trim(),
  };

  return new Workflow([write, usage], { name: 'my-flow', workbench });
}
