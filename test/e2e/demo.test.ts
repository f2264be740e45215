/**
 * `flower demo`: the starter flow end to end against the built-in scripted model and the real
 * Claude Code binary, with no credentials and no network (issue 6, acceptance 3); who speaks and
 * that the money is simulated are on screen, and a demo stopped half-way cleans up (issue 9).
 */
import { type ChildProcessWithoutNullStreams, execFileSync, spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readBlock } from '../../src/bequest/managed-block.js';
import { DEMO_CHECK, DEMO_GREETING, DEMO_OPTIONS } from '../../src/cli/commands/demo-script.js';
import { descendants, isRunning, killAll } from '../support/process-tree.js';
import { flowerBin, isolatedEnv, PtySession, runFlower, tempDir } from './cli-harness.js';
import { expectReadableRun } from './report-harness.js';

/** Starts `flower demo <workspace>` and SIGKILLs it once `marker` is on its screen; resolves with the output. */
function killDemoAt(workspace: string, marker: string): Promise<{ stdout: string; leftovers: number[] }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [flowerBin, 'demo', workspace], {
      env: isolatedEnv(),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let leftovers: number[] = [];
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`"${marker}" never appeared:\n${stdout}`));
    }, 150_000);
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString('utf8');
      if (stdout.includes(marker) && leftovers.length === 0) {
        leftovers = descendants(child.pid!);
        child.kill('SIGKILL');
      }
    });
    child.on('close', () => {
      clearTimeout(timer);
      resolve({ stdout, leftovers });
    });
  });
}

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
    for (const step of ['clarify', 'set-goal', 'work · round 1/3'])
      expect(run.stdout).toMatch(new RegExp(`== ${step} =+ \\d/3`));
    expect(run.stdout).toContain('> dispatch coder');
    expect(run.stdout).toContain("The judge's verdict: achieved.");
    // Who speaks is on screen: the roles before their prose, the worker on its lines.
    expect(run.stdout).toMatch(/^ {2}clarifier: /m);
    expect(run.stdout).toMatch(/^ {2}judge: /m);
    expect(run.stdout).toMatch(/^ {2}coordinator: /m);
    expect(run.stdout).toMatch(/^ {2}\| coder \* Write /m);
    // No dollar figure pretends to be real money.
    expect(run.stdout).toMatch(/\+ done \d+ turns? · \$\d+\.\d{4} \(simulated\)/);
    expect(run.stdout).not.toMatch(/\$\d+\.\d+(?!\d)(?! \(simulated)/);
    expect(run.stdout).not.toContain('had no script for');
    // flower ran the goal's check on the host and showed it passing before the judge looked.
    const check = run.stdout.search(/\+ check passed · exit 0 in [\d.]+ s · node hello\.js/);
    expect(check).toBeGreaterThan(0);
    expect(check).toBeLessThan(run.stdout.indexOf('Checking the artifact itself.'));

    // The closing turn speaks as the bequest, and an achieved ruling shows no empty "Not passed" (issue 21).
    expect(run.stdout).toMatch(/^ {2}bequest: ## What this is$/m);
    expect(run.stdout).not.toMatch(/^ {2}aside:/m);
    expect(run.stdout).not.toContain('## Not passed');
    // The worker's conclusion fits on two rows: wrapped, not cut.
    expect(run.stdout).not.toMatch(/# Conclusion: .*\.\.\.$/m);

    // It says where everything is, and everything is there.
    const runDir = join(workspace, 'runs');
    expect(run.stdout).toContain(`  ${join(workspace, 'CLAUDE.md')}, ${join(workspace, 'AGENTS.md')}\n`);
    // Its last hint leads somewhere: both commands it names show this run (waking it would do nothing).
    expect(run.stdout).not.toContain('to wake the same task up again');
    const hint =
      /See what each step did and cost: flower (report -w \S+); a step's messages: flower (log work -w \S+)$/m.exec(
        run.stdout,
      );
    expect(hint?.[1]).toBe(`report -w ${workspace}`);
    for (const command of [hint![1]!, hint![2]!]) {
      const shown = await runFlower(command.split(' '), { env: isolatedEnv() });
      expect(shown.status, shown.stderr).toBe(0);
      expect(shown.stdout).toContain('work');
    }
    const notes = join(workspace, '.flower', 'notes');
    expect(run.stdout).toContain(`${runDir}/`);
    expect(run.stdout).toContain(`${join(workspace, '.flower')}/`);
    expect(run.stdout).toMatch(
      new RegExp(
        `total \\$\\d+\\.\\d{4} \\(simulated\\) this run · \\$\\d+\\.\\d{4} \\(simulated\\) for the whole task · manifest ${join(runDir, 'manifest.json')}`,
      ),
    );

    const manifest = JSON.parse(readFileSync(join(runDir, 'manifest.json'), 'utf8')) as Array<{
      step: string;
      ok: boolean;
      verdict?: string;
      checks?: Array<{ command: string; exit_code: number; passed: boolean }>;
    }>;
    expect(manifest.map((row) => row.step)).toEqual([
      'clarify',
      'set-goal',
      'work',
      'work:verdict#1',
      'bequest',
    ]);
    expect(manifest.every((row) => row.ok)).toBe(true);
    expect(manifest[3]).toMatchObject({
      verdict: 'achieved',
      checks: [{ command: DEMO_CHECK, exit_code: 0, passed: true }],
    });
    // The task's bequest for the next tool, in both files.
    const bequest = readBlock(readFileSync(join(workspace, 'CLAUDE.md'), 'utf8'));
    expect(bequest).toContain('A one-file Node.js program, hello.js');
    expect(bequest).toContain(`- passed: \`${DEMO_CHECK}\` (exit 0)`);
    expect(readBlock(readFileSync(join(workspace, 'AGENTS.md'), 'utf8'))).toBe(bequest);
    expect(existsSync(join(runDir, 'sessions.db'))).toBe(true);
    expect(readFileSync(join(notes, 'brief.md'), 'utf8')).toContain('hello.js');
    expect(readFileSync(join(notes, 'goal.md'), 'utf8')).toContain('node hello.js');
    expect(readFileSync(join(notes, 'qa-log.md'), 'utf8')).toContain(DEMO_OPTIONS[0]);

    // What the demo left can be looked at with status, report and log (issue 12).
    await expectReadableRun(workspace);

    // The worker really wrote and ran the program.
    expect(execFileSync(process.execPath, [join(workspace, 'hello.js')], { encoding: 'utf8' }).trim()).toBe(
      DEMO_GREETING,
    );
  }, 180_000);

  it('continues a demo that was killed, against the built-in mock, and says so (issue 10 §5)', async () => {
    const workspace = join(tempDir('demo-killed'), 'here');
    // Killed while the coder works in the background: the resumed coordinator must notice it is gone.
    const killed = await killDemoAt(workspace, 'The coder is on it');
    expect(killed.stdout).toContain('> dispatch coder');
    expect(killed.stdout).not.toContain('Conclusion: hello.js is written');
    // The agent processes go with the demo (issue 10 §2); give them their moment, then make sure.
    for (let tries = 0; tries < 100 && killed.leftovers.some(isRunning); tries += 1)
      await new Promise((r) => setTimeout(r, 100));
    killAll(killed.leftovers);
    const workSession = JSON.parse(readFileSync(join(workspace, 'runs', 'lineage.json'), 'utf8')).steps.work;
    expect(workSession).toEqual(expect.any(String));

    const run = await runFlower(['demo', workspace], { env: isolatedEnv(), timeoutMs: 170_000 });
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
    expect(run.stdout).toContain('continuing it where it stopped');
    // The brief and goal were already there: no question again; the work step resumed its session.
    expect(run.stdout).not.toContain('? Which language');
    expect(run.stdout).toContain('<- resumed the last session');
    expect(run.stdout).toContain('> dispatch coder');
    expect(run.stdout).toContain("The judge's verdict: achieved.");
    expect(run.stdout).not.toContain('had no script for');
    const rows = JSON.parse(readFileSync(join(workspace, 'runs', 'manifest.json'), 'utf8')) as Array<{
      step: string;
      ok: boolean;
      session_id: string;
      error: string | null;
    }>;
    expect(rows.find((row) => row.step === 'work' && row.ok)?.session_id).toBe(workSession);
    // The coordinator saw that its coder was lost with the killed process and asked again.
    expect(run.stdout).toContain('Picking this up again: the coder never reported back');
    // And the killed attempt's books were completed from the store.
    expect(rows.find((row) => row.step === 'work' && !row.ok)).toMatchObject({
      error: 'killed-unrecorded',
      session_id: workSession,
    });
    expect(execFileSync(process.execPath, [join(workspace, 'hello.js')], { encoding: 'utf8' }).trim()).toBe(
      DEMO_GREETING,
    );

    // A finished demo is not run again by accident.
    const again = await runFlower(['demo', workspace], { env: isolatedEnv() });
    expect(again.status).toBe(1);
    expect(again.stderr.trim()).toBe(
      `flower: The demo in ${workspace} already finished; look at what it left there, or give a new path (or none) to watch it again.`,
    );
  }, 330_000);

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

/**
 * `flower demo <dir>` with its own temporary directory, so the test can see what the demo leaves
 * in it; resolves once the agent binary is at work (its first question is on screen), which is when
 * a stop used to leave the configuration behind: the binary rewrote it while shutting down.
 */
async function demoUnderWay(): Promise<{
  child: ChildProcessWithoutNullStreams;
  workspace: string;
  tmp: string;
}> {
  const tmp = tempDir('demo-tmp');
  const workspace = join(tempDir('demo-stop'), 'here');
  const child = spawn(process.execPath, [flowerBin, 'demo', workspace], {
    env: isolatedEnv({ TMPDIR: tmp }),
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stdout = '';
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the demo did not start:\n${stdout}`)), 60_000);
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString('utf8');
      if (stdout.includes('? Which language')) {
        clearTimeout(timer);
        resolve();
      }
    });
  });
  return { child, workspace, tmp };
}

function ended(child: ChildProcessWithoutNullStreams): Promise<{ code: number | null; stderr: string }> {
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString('utf8');
  });
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stderr })));
}

const claudeConfigs = (tmp: string) =>
  readdirSync(tmp).filter((name) => name.startsWith('flower-demo-claude-'));

describe('flower demo stopped half-way', () => {
  it('on Ctrl-C (SIGINT): removes its Claude configuration, says where the partial workspace is, exits 130', async () => {
    const { child, workspace, tmp } = await demoUnderWay();
    expect(claudeConfigs(tmp)).toHaveLength(1);
    const end = ended(child);
    child.kill('SIGINT');
    const { code, stderr } = await end;
    expect(code).toBe(130);
    expect(stderr).toContain(`flower demo: interrupted (Ctrl-C). The partial workspace is at ${workspace}`);
    expect(stderr).not.toMatch(/^\s+at /m);
    expect(claudeConfigs(tmp)).toEqual([]);
    expect(existsSync(join(workspace, 'runs'))).toBe(true);
  }, 90_000);

  it('on Ctrl-C at a terminal: one line says so, not the step it stopped and "did not finish" too (issue 21, polish)', async () => {
    const workspace = join(tempDir('demo-ctrl-c'), 'here');
    const pty = PtySession.flower(['demo', workspace], isolatedEnv());
    // Mid-step: the agent binary is running, and it gets the terminal's SIGINT too.
    const at = await pty.waitFor('== set-goal', 0, 120_000);
    pty.type('\x03');
    expect(await pty.exited()).toBe(130);
    const after = pty.screen.slice(at);
    const flowerLines = after.split('\n').filter((line) => /^flower/.test(line.trim()));
    expect(flowerLines, after).toEqual([
      `flower demo: interrupted (Ctrl-C). The partial workspace is at ${workspace} (runs/ and .flower/ hold what was done so far); the temporary Claude configuration was removed.`,
    ]);
    expect(after).not.toContain('did not finish');
    expect(after).not.toContain('stopped at step');
  }, 180_000);

  it('when its output pipe closes (EPIPE): cleans up the same way, without a stack trace', async () => {
    const { child, workspace, tmp } = await demoUnderWay();
    const end = ended(child);
    // The reader goes away, as `flower demo | head -3` does: the demo's next write fails with EPIPE.
    child.stdout.destroy();
    const { code, stderr } = await end;
    expect(code).toBe(1);
    expect(stderr).toContain(`flower demo: its output was closed. The partial workspace is at ${workspace}`);
    expect(stderr).not.toMatch(/^\s+at /m);
    expect(claudeConfigs(tmp)).toEqual([]);
  }, 90_000);
});
