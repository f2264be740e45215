/**
 * Issue 20, observation 5: a check's log under `.flower/artifacts/checks/<round>/` kept the
 * workspace's umask and whatever the check printed, secrets and escape sequences included. Here a
 * check prints every hostile payload (test/support/hostile-payloads.ts) under umask 022, on the host
 * (`--no-sandbox`) and inside the wall when bubblewrap works here: the log is 0600 in a 0700 round
 * directory (an older run's 0755 one is tightened), holds no secret in clear and no raw control, and
 * the tail the judge reads is masked and inert too.
 */
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type CheckWall, runChecks } from '../../../src/checks/runner.js';
import { sandboxAvailability } from '../../../src/runtime/sandbox/availability.js';
import { sandboxPlaces } from '../../../src/runtime/sandbox/places.js';
import { defaultSandboxPolicy } from '../../../src/runtime/sandbox/policy.js';
import { describeRun } from '../../../src/workflow/evidence.js';
import { HOSTILE_ESCAPES, HOSTILE_SECRETS, RAW_CONTROL, secretCore } from '../../support/hostile-payloads.js';

const modeOf = (path: string) => statSync(path).mode & 0o777;

/** What the check prints: every secret and every escape payload, one per line, then a last line. */
const PRINTED = [
  ...Object.entries(HOSTILE_SECRETS).map(([name, secret]) => `${name}: ${secret}`),
  ...Object.entries(HOSTILE_ESCAPES).map(([name, payload]) => `${name}: ${payload} after`),
  'the last line',
].join('\n');

/** A workspace whose `payload.txt` holds the hostile output, and an older run's readable round directory. */
function workspace() {
  const root = mkdtempSync(join(tmpdir(), 'flower-check-shown-'));
  const cwd = join(root, 'ws');
  mkdirSync(cwd);
  mkdirSync(join(root, 'home'));
  writeFileSync(join(cwd, 'payload.txt'), `${PRINTED}\n`);
  const checks = join(cwd, '.flower', 'artifacts', 'checks');
  const round = join(checks, '1');
  mkdirSync(round, { recursive: true });
  chmodSync(round, 0o755);
  writeFileSync(join(round, 'item-1.log'), 'an older log\n', { mode: 0o644 });
  return { cwd, round, env: { PATH: process.env.PATH, HOME: join(root, 'home') } };
}

let umask: number;
beforeEach(() => {
  umask = process.umask(0o022);
});
afterEach(() => {
  process.umask(umask);
});

async function expectShown(wall?: (cwd: string, env: Record<string, string | undefined>) => CheckWall) {
  const { cwd, round, env } = workspace();
  const runs = await runChecks(['prints what it read — check: `cat payload.txt; exit 1`'], {
    cwd,
    dir: round,
    env,
    ...(wall ? { wall: wall(cwd, env) } : {}),
  });
  expect(runs).toHaveLength(1);
  const run = runs[0]!;
  expect(run.problem).toBeUndefined();
  expect(run).toMatchObject({ passed: false, exitCode: 1, outputPath: join(round, 'item-1.log') });
  // Private whatever the umask, and the older run's 0755 directory tightened.
  expect(modeOf(round)).toBe(0o700);
  expect(modeOf(run.outputPath)).toBe(0o600);
  // The file people read: masked, inert, and still saying what was there.
  const log = readFileSync(run.outputPath, 'utf8');
  for (const secret of Object.values(HOSTILE_SECRETS)) expect(log).not.toContain(secretCore(secret));
  expect(log).not.toMatch(RAW_CONTROL);
  expect(log).toContain('title: \u241b]0;PWNED-TITLE\u2407 after');
  expect(log).toContain('the last line');
  // What the judge and the worker read: masked too, escape sequences removed.
  for (const text of [run.tail, describeRun(run, 0)]) {
    for (const secret of Object.values(HOSTILE_SECRETS)) expect(text).not.toContain(secretCore(secret));
    expect(text).not.toMatch(RAW_CONTROL);
  }
  expect(run.tail).toContain('title:  after');
  expect(run.tail.endsWith('the last line')).toBe(true);
}

describe('a check that prints secrets and escape sequences, under umask 022', () => {
  it('on the host (--no-sandbox): a 0600 log in a tightened 0700 directory, masked and inert', async () => {
    await expectShown();
  });

  it.runIf(sandboxAvailability().available)(
    'inside the wall: a 0600 log in a tightened 0700 directory, masked and inert',
    async () => {
      await expectShown((cwd, env) => ({
        policy: defaultSandboxPolicy,
        places: sandboxPlaces({ env, workspace: cwd, runDir: join(cwd, 'runs') }),
      }));
    },
  );
});
