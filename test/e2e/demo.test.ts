/**
 * `flower demo`: the starter flow end to end against the built-in scripted model and the real
 * Claude Code binary, with no credentials and no network (issue 6, acceptance 3).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DEMO_GREETING, DEMO_OPTIONS } from '../../src/cli/commands/demo-script.js';
import { isolatedEnv, runFlower, tempDir } from './cli-harness.js';

describe('flower demo', () => {
  it('clarifies, sets a goal, has a worker write and run a program, and the judge rules achieved', async () => {
    const workspace = join(tempDir('demo'), 'here');
    // No credentials anywhere: the demo must not need them.
    const run = await runFlower(['demo', workspace], { env: isolatedEnv(), timeoutMs: 170_000 });
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);

    // The question was asked and answered by number, then the flow went through all three steps.
    expect(run.stdout).toContain('? Which language should the program be written in?');
    expect(run.stdout).toContain(`+ ${DEMO_OPTIONS[0]}`);
    for (const step of ['clarify', 'set-goal', 'work'])
      expect(run.stdout).toMatch(new RegExp(`== ${step} =+ \\d/3`));
    expect(run.stdout).toContain('> dispatch coder');
    expect(run.stdout).toContain("The judge's verdict: achieved.");
    expect(run.stdout).not.toContain('had no script for');

    // It says where everything is, and everything is there.
    const runDir = join(workspace, 'runs');
    const notes = join(workspace, '.flower', 'notes');
    expect(run.stdout).toContain(`${runDir}/`);
    expect(run.stdout).toContain(`${join(workspace, '.flower')}/`);
    expect(run.stdout).toMatch(
      new RegExp(`total \\$\\d+\\.\\d{4} · manifest ${join(runDir, 'manifest.json')}`),
    );

    const manifest = JSON.parse(readFileSync(join(runDir, 'manifest.json'), 'utf8')) as Array<{
      step: string;
      ok: boolean;
    }>;
    expect(manifest.map((row) => row.step)).toEqual(['clarify', 'set-goal', 'work', 'work:verdict#1']);
    expect(manifest.every((row) => row.ok)).toBe(true);
    expect(existsSync(join(runDir, 'sessions.db'))).toBe(true);
    expect(readFileSync(join(notes, 'brief.md'), 'utf8')).toContain('hello.js');
    expect(readFileSync(join(notes, 'goal.md'), 'utf8')).toContain('node hello.js');
    expect(readFileSync(join(notes, 'qa-log.md'), 'utf8')).toContain(DEMO_OPTIONS[0]);

    // The worker really wrote and ran the program.
    expect(execFileSync(process.execPath, [join(workspace, 'hello.js')], { encoding: 'utf8' }).trim()).toBe(
      DEMO_GREETING,
    );
  }, 180_000);

  it('refuses a directory that already has files in it, before starting anything', async () => {
    const workspace = tempDir('demo-busy');
    writeFileSync(join(workspace, 'precious.txt'), 'keep me');
    const run = await runFlower(['demo', workspace]);
    expect(run.status).toBe(1);
    expect(run.stderr.trim()).toBe(
      `flower: ${workspace} is not empty; the demo needs a fresh directory. Give a new path, or none for a temporary one.`,
    );
    expect(existsSync(join(workspace, 'runs'))).toBe(false);
  });
});
