/**
 * A reader that goes away early (`flower … | head`) ends flower quietly, never with a stack trace,
 * and a step in flight is booked the way a closed terminal books it (`closed-output.ts`).
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { mock } from '../../src/testing/index.js';
import { distRoot, type Harness, startHarness } from './runtime-harness.js';

const bin = join(distRoot, 'cli', 'bin.js');

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.cleanup();
  harness = undefined;
});

interface ClosedRun {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Runs flower and closes its standard output as soon as `closeAfter` has been printed ('' = at once). */
function runAndCloseOutput(
  args: string[],
  env: NodeJS.ProcessEnv,
  closeAfter: string,
  cwd?: string,
): Promise<ClosedRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [bin, ...args], { env, cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    const close = () => child.stdout.destroy();
    if (closeAfter === '') close();
    else
      child.stdout.on('data', (chunk) => {
        stdout += chunk;
        if (stdout.includes(closeAfter)) close();
      });
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
    });
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
}

describe('a closed standard output', () => {
  it('ends a command quietly: no stack trace, exit 0', async () => {
    const run = await runAndCloseOutput(['--help'], { ...process.env, FLOWER_NO_UPDATE: '1' }, '');
    expect(run.stderr).not.toMatch(/EPIPE|at .*\.js:\d+/);
    expect(run.code).toBe(0);
  });

  it('during a step books the step as killed, like a closed terminal (SIGHUP)', async () => {
    harness = await startHarness([
      mock.toolUse('Glob', { pattern: '**/*.md' }),
      // Long enough for the reader to go away between the two turns.
      { ...mock.text('No markdown files here.'), delayMs: 1_500 },
    ]);
    const run = await runAndCloseOutput(
      ['once', 'Find the docs.', '-w', 'ws'],
      harness.env,
      '* Glob',
      harness.root,
    );
    expect(run.stderr).not.toMatch(/EPIPE|at .*\.js:\d+/);
    expect(run.signal).toBe('SIGHUP');
    const rows = JSON.parse(readFileSync(join(harness.workspace, 'runs', 'manifest.json'), 'utf8')) as Array<
      Record<string, unknown>
    >;
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ step: 'ad-hoc', ok: false, error: 'killed-by-signal' });
  });
});
