/**
 * A spill directory the file system will not write to, in a process of its own so the failure is
 * the kernel's, not a stand-in: read-only (a directory without write permission, as an
 * unprivileged user when the tests run as root, since root ignores permissions) and full (a file
 * size limit, `ulimit -f`, which refuses a write part-way as a full disk does — EFBIG instead of
 * ENOSPC, the same path). Either way appends and resumes go on, every large result stays
 * untrimmed, one warning says what happened, and no half-written file is left behind.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { cleanUp, tempDir } from '../support/scratch.js';
import { distRoot, repoRoot } from './runtime-harness.js';

afterEach(cleanUp);

const child = join(repoRoot, 'test', 'support', 'spill-writer-child.mjs');
const NOBODY = 65534;

interface ChildReport {
  warnings: string[];
  report: { trimmed: number; spillFailures: number };
  untrimmed: boolean;
  files: string[] | string;
}

function run(command: string, args: string[], options: { uid?: number; gid?: number } = {}): ChildReport {
  if (!existsSync(join(distRoot, 'store', 'rewriting-store.js')))
    throw new Error('dist/ is missing: run `npm run build` before the e2e tests (`npm test` does).');
  const outcome = spawnSync(command, args, { cwd: repoRoot, encoding: 'utf8', timeout: 60_000, ...options });
  expect(outcome.status, outcome.stderr).toBe(0);
  return JSON.parse(outcome.stdout.trim().split('\n').at(-1) as string) as ChildReport;
}

function expectUntrimmedWithOneWarning(outcome: ChildReport, code: string): void {
  expect(outcome.untrimmed).toBe(true);
  expect(outcome.report).toMatchObject({ trimmed: 0, spillFailures: 3 });
  expect(outcome.warnings).toHaveLength(1);
  expect(outcome.warnings[0]).toMatch(
    new RegExp(
      `^Could not write spill files in .*/\\.flower/spill \\(${code}\\): large tool results stay untrimmed`,
    ),
  );
  expect(outcome.files).toEqual([]);
}

describe('a spill directory that cannot be written (real file system, separate process)', () => {
  it('read-only: results stay untrimmed, one warning, no file written', () => {
    const workspace = tempDir('flower-spill-ro-');
    const spill = join(workspace, '.flower', 'spill');
    mkdirSync(spill, { recursive: true });
    chmodSync(workspace, 0o755);
    chmodSync(join(workspace, '.flower'), 0o755);
    chmodSync(spill, 0o555);
    const asRoot = process.getuid?.() === 0;
    const outcome = run(process.execPath, [child, workspace], asRoot ? { uid: NOBODY, gid: NOBODY } : {});
    expectUntrimmedWithOneWarning(outcome, 'EACCES');
  });

  it('full: writes refused part-way leave no partial file behind', () => {
    const workspace = tempDir('flower-spill-full-');
    // One block: every spill file (4000 characters) is cut off after its first kilobyte.
    const outcome = run('bash', [
      '-c',
      'ulimit -f 1 && exec "$@"',
      'bash',
      process.execPath,
      child,
      workspace,
    ]);
    expectUntrimmedWithOneWarning(outcome, 'EFBIG');
  });
});
