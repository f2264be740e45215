/**
 * Exit codes of the command line (issue 6, acceptance 5; issue 9 §4): argument errors exit 2 with a
 * usage hint, and so does a `run` target that names nothing runnable; every other deliberate exit
 * is 1 with a one-line reason and never a stack trace. None of these reaches a model.
 */
import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { isolatedEnv, runFlower, tempDir } from './cli-harness.js';

/** Credentials that pass the presence check; nothing here gets far enough to use them. */
const withKey = () =>
  isolatedEnv({ ANTHROPIC_API_KEY: 'sk-ant-test-never-used', ANTHROPIC_BASE_URL: 'http://127.0.0.1:9' });

function expectOneLineFailure(
  run: { status: number | null; stderr: string; stdout: string },
  reason: RegExp,
  code = 1,
) {
  expect(run.status).toBe(code);
  const lines = run.stderr.trimEnd().split('\n');
  expect(lines).toHaveLength(1);
  expect(lines[0]).toMatch(/^flower: /);
  expect(lines[0]).toMatch(reason);
  expect(run.stderr + run.stdout).not.toMatch(/^\s+at /m);
}

describe('argument errors exit 2 with usage', () => {
  it.each([
    [['--no-such-flag'], /unknown option '--no-such-flag'/],
    [['do X', '--rounds', 'many'], /'--rounds <n>' argument 'many' is invalid\. expected a whole number/],
    [['do X', '--timeout'], /option '--timeout <seconds>' argument missing/],
    [['run'], /missing required argument 'target'/],
    [['demo', 'a', 'b'], /too many arguments for 'demo'/],
  ])('flower %j', async (args, message) => {
    const run = await runFlower(args);
    expect(run.status).toBe(2);
    expect(run.stderr).toMatch(message);
    expect(run.stderr).toContain('(run "flower --help" for usage)');
    expect(run.stderr).not.toMatch(/^\s+at /m);
  });

  it('explains go and its flags in --help, with the flags accepted either side of the request', async () => {
    const run = await runFlower(['go', '--help']);
    expect(run.status).toBe(0);
    for (const flag of [
      '--asks',
      '--rounds',
      '--no-goal',
      '--judge-can-run',
      '--timeout',
      '--isolate',
      '--window',
      '--no-handoff',
      '--new',
      '--clarify-only',
      '--no-trim',
    ]) {
      expect(run.stdout).toContain(flag);
    }
    expect(run.stdout).toContain('may come before or after the request');
  });
});

describe('deliberate exits are 1 with a one-line reason', () => {
  it('cancels when input ends at the request prompt', async () => {
    expectOneLineFailure(await runFlower([], { env: withKey() }), /^flower: cancelled$/);
  });

  it('refuses an empty request', async () => {
    expectOneLineFailure(
      await runFlower([], { env: withKey(), input: '\n' }),
      /the request is empty.*flower "build me an X"/,
    );
  });

  it('refuses --isolate outside a git repository before asking anything', async () => {
    const workspace = tempDir('not-git');
    expectOneLineFailure(
      await runFlower(['-w', workspace, '--isolate', 'do X'], { env: withKey() }),
      new RegExp(`--isolate needs ${workspace} to be a git repository.*git init`),
    );
  });

  // A target that names nothing runnable is bad usage (2); a target whose code fails to load is not (1).
  it.each([
    ['flows', /"flows" needs the form <file-or-module>:<export>/, 2],
    ['./missing.ts:main', /Cannot find .*missing\.ts \(current directory /, 2],
    ['./flow.mjs:nope', /"\.\/flow\.mjs" has no export "nope" \(it exports: main, notAFlow\)/, 2],
    ['./flow.mjs:notAFlow', /flow\.mjs:notAFlow is a number, not a Workflow/, 2],
    ['no-such-flower-package:main', /Importing "no-such-flower-package" failed: /, 2],
    ['./broken.mjs:main', /Importing "\.\/broken\.mjs" failed: /, 1],
    // A TypeScript syntax error says where it is: file, line and column.
    [
      './broken.ts:main',
      /Importing "\.\/broken\.ts" failed: \/.*\/broken\.ts:2:21 Expression expected\.$/,
      1,
    ],
  ])('flower run %s', async (target, reason, code) => {
    const cwd = tempDir('run-target');
    execFileSync(
      'sh',
      [
        '-c',
        "printf 'export const main = { steps: [], run: async () => ({}) };\\nexport const notAFlow = 42;\\n' > flow.mjs && printf 'export const = ;\\n' > broken.mjs && printf 'const a: number = 1;\\nexport const main = ;\\n' > broken.ts",
      ],
      { cwd },
    );
    expectOneLineFailure(await runFlower(['run', target], { cwd, env: withKey() }), reason, code);
  });

  it('says which credentials are missing and where it looked, without a stack trace', async () => {
    const run = await runFlower(['do X']);
    expect(run.status).toBe(1);
    expect(run.stderr).toMatch(
      /^flower: Missing credentials: flower needs ANTHROPIC_API_KEY or ANTHROPIC_AUTH_TOKEN/,
    );
    expect(run.stderr).toContain('flower setup');
    expect(run.stderr).not.toMatch(/^\s+at /m);
  });
});
