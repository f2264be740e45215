/**
 * A command line that does not spend money by accident (issue 9, §4), through the built binary:
 * a one-word request that is (nearly) a command name is refused before anything is paid for,
 * `-w`/`-r` without a directory or naming a file, out-of-range numbers and unknown tools are usage
 * errors (exit 2), and `flower go <word>` still sends any word. The mock model counts requests, so
 * "nothing was paid for" is checked, not assumed.
 */
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { knownNames } from '../../src/cli/command-line/mistyped-command.js';
import { buildProgram } from '../../src/cli/main.js';
import { type MockModel, startMockModel } from '../../src/testing/server.js';
import { mockedEnv, runFlower, tempDir } from './cli-harness.js';

const BRIEF =
  '## Goal\nAs asked.\n\n## Acceptance\n- done\n\n## Boundaries\n- none\n\n## Unknowns & assumptions\n- none';

let model: MockModel;
beforeAll(async () => {
  model = await startMockModel({ main: Array.from({ length: 10 }, () => ({ text: BRIEF })) });
});
afterAll(async () => {
  await model.close();
});

/** One slip: the last two letters swapped (`doctor` → `doctro`, `go` → `og`). */
const slip = (word: string) => `${word.slice(0, -2)}${word.at(-1)}${word.at(-2)}`;

function expectUsageError(run: { status: number | null; stderr: string }, message: RegExp | string) {
  expect(run.status).toBe(2);
  if (typeof message === 'string') expect(run.stderr).toContain(message);
  else expect(run.stderr).toMatch(message);
  expect(run.stderr).not.toMatch(/^\s+at /m);
}

describe('a one-word request that is a command name', () => {
  const commands = knownNames(buildProgram())
    .map((name) => name.word)
    .filter((word) => word.length >= 2 && word !== 'version' && word !== 'help');

  it.each(commands.map((word) => [slip(word), word]))(
    'flower %s is refused (exit 2, nothing sent to the model)',
    async (typo) => {
      const before = model.requests.length;
      const run = await runFlower([typo, '--timeout', '0'], { env: mockedEnv(model) });
      expectUsageError(run, new RegExp(`unknown command "${typo}" — did you mean "[a-z-]+"\\?`));
      expect(run.stderr).toContain(`flower go ${typo}`);
      expect(model.requests.length).toBe(before);
    },
  );

  it.each([
    ['doctr', 'doctor'],
    ['version', '--version'],
    ['Setup', 'setup'],
  ])('flower %s suggests %s', async (typed, suggestion) => {
    const run = await runFlower([typed], { env: mockedEnv(model) });
    expectUsageError(run, `unknown command "${typed}" — did you mean "${suggestion}"?`);
  });

  it('flower go <word> still sends the word as the request', async () => {
    const workspace = tempDir('go-word');
    const before = model.requests.length;
    const run = await runFlower(['-w', workspace, 'go', 'doctr', '--clarify-only', '--timeout', '0'], {
      env: mockedEnv(model),
    });
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
    expect(model.requests.length).toBeGreaterThan(before);
    expect(JSON.stringify(model.mainRequests().at(-1)?.body?.messages)).toContain('doctr');
  });
});

describe('-w and -r', () => {
  it.each([[['-w']], [['-r']], [['-w', '--new', 'do X']], [['do X', '-r', '-v']]])(
    'flower %j: the directory is missing (exit 2), and no directory named like a flag is made',
    async (args) => {
      const cwd = tempDir('no-dir');
      const run = await runFlower(args, { cwd, env: mockedEnv(model) });
      expectUsageError(
        run,
        /option '-[wr], --(workspace|run-dir) <dir>' argument (missing|'-.*' is invalid)/,
      );
      expect(readdirSync(cwd)).toEqual([]);
    },
  );

  it('says so when -w names a file, or a path under a file', async () => {
    const cwd = tempDir('file-ws');
    writeFileSync(join(cwd, 'notes.txt'), 'not a directory');
    const env = mockedEnv(model);
    expectUsageError(
      await runFlower(['-w', 'notes.txt', 'do X'], { cwd, env }),
      `-w notes.txt: ${join(cwd, 'notes.txt')} is a file. Give a directory`,
    );
    expectUsageError(
      await runFlower(['-w', 'notes.txt/sub', 'once', 'hi'], { cwd, env }),
      `${join(cwd, 'notes.txt')} is a file, so ${join(cwd, 'notes.txt', 'sub')} cannot be created`,
    );
    mkdirSync(join(cwd, 'ws'));
    writeFileSync(join(cwd, 'ws', 'runs'), '');
    expectUsageError(
      await runFlower(['-w', 'ws', 'once', 'hi'], { cwd, env }),
      `-r runs: ${join(cwd, 'ws', 'runs')} is a file`,
    );
  });
});

/**
 * A workspace this user cannot write, as the kernel says it: root passes every permission check, so
 * under root the command runs as nobody (a root-owned 0755 directory is then unwritable to it); any
 * other user gets the directory made read-only.
 */
function unwritableForFlower(): { parent: string; wrap?: (argv: readonly string[]) => [string, string[]] } {
  const parent = tempDir('unwritable');
  chmodSync(parent, 0o755); // nobody may look in, not write
  if (process.getuid?.() !== 0) {
    chmodSync(parent, 0o555);
    return { parent };
  }
  return {
    parent,
    wrap: (argv) => ['setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', ...argv]],
  };
}

describe('a workspace flower cannot write (issue 21, polish)', () => {
  it('names the directory and what to do instead of a raw EACCES, and creates nothing', async () => {
    const { parent, wrap } = unwritableForFlower();
    const env = mockedEnv(model);
    const cwd = tempDir('unwritable-cwd');
    chmodSync(cwd, 0o755);
    const before = model.requests.length;
    const cases: Array<[string[], string]> = [
      [
        ['-w', parent, '--timeout', '0', 'do X'],
        `flower: cannot write in the workspace ${parent}: permission denied. Run flower in a directory you can write, or give one with -w DIR (it is created if missing).`,
      ],
      [
        ['-w', parent, 'once', 'hi'],
        `flower: cannot create the run directory ${join(parent, 'runs')}: permission denied in ${parent}. Give one you can write with -r DIR, or run flower in a directory you can write.`,
      ],
      [
        ['-w', join(parent, 'new', 'ws'), 'once', 'hi'],
        `flower: cannot create the workspace ${join(parent, 'new', 'ws')}: permission denied in ${parent}.`,
      ],
    ];
    for (const [args, message] of cases) {
      const run = await runFlower(args, { cwd, env, ...(wrap ? { wrap } : {}), timeoutMs: 30_000 });
      expect(run.stderr, args.join(' ')).toContain(message);
      expect(run.status).toBe(2);
      expect(run.stderr).not.toContain('EACCES');
    }
    expect(readdirSync(parent)).toEqual([]);
    expect(model.requests.length).toBe(before);
  });

  it.each([[['--timeout', '0', 'do X']], [['once', 'hi']], [['run', './flow.js:main']], [['gc']]])(
    '-w /proc/nonexist %j stops at once with one line (it used to hang)',
    async (args) => {
      const started = Date.now();
      const run = await runFlower(['-w', '/proc/nonexist', ...args], {
        env: mockedEnv(model),
        timeoutMs: 20_000,
      });
      expectUsageError(
        run,
        'flower: cannot create the workspace /proc/nonexist: /proc takes no new directories. Run flower in a directory you can write',
      );
      expect(Date.now() - started).toBeLessThan(15_000);
    },
  );

  it('flower demo in a directory under /proc stops at once too', async () => {
    const run = await runFlower(['demo', '/proc/nonexist/demo'], { timeoutMs: 20_000 });
    expectUsageError(
      run,
      'flower: cannot create the workspace /proc/nonexist/demo: /proc takes no new directories. Give the demo a directory you can write, or none for a temporary one.',
    );
  });
});

describe('flower log --run names the run that is not there (issue 21, polish)', () => {
  it('blames the run, not the step, and lists the runs and steps there are', async () => {
    const workspace = tempDir('log-run');
    const env = mockedEnv(model);
    const go = await runFlower(
      ['-w', workspace, 'go', 'write hello.txt', '--clarify-only', '--timeout', '0'],
      {
        env,
      },
    );
    expect(go.status, go.stderr).toBe(0);
    const [row] = JSON.parse(readFileSync(join(workspace, 'runs', 'manifest.json'), 'utf8')) as Array<{
      run: string;
    }>;
    const runId = row!.run;

    const unknownRun = await runFlower(['-w', workspace, 'log', 'clarify', '--run', 'nosuch'], { env });
    expect(unknownRun.status).toBe(1);
    expect(unknownRun.stderr.trim()).toBe(
      `flower: No run "nosuch" in ${join(workspace, 'runs')}; runs here (latest last): ${runId}. Leave out --run to see a step's latest run.`,
    );
    // Without a step: the run is still what is wrong.
    const noStep = await runFlower(['-w', workspace, 'log', '--run', 'nosuch'], { env });
    expect(noStep.status).toBe(1);
    expect(noStep.stderr).toContain('flower: No run "nosuch"');

    const missingStep = await runFlower(['-w', workspace, 'log', 'work', '--run', runId], { env });
    expect(missingStep.status).toBe(1);
    expect(missingStep.stderr.trim()).toBe(
      `flower: No step "work" in run ${runId}; steps in run ${runId}: clarify.`,
    );

    const stepLeftOut = await runFlower(['-w', workspace, 'log'], { env });
    expectUsageError(
      stepLeftOut,
      'flower: Name the step to show, e.g. flower log clarify (steps here: clarify).',
    );

    const shown = await runFlower(['-w', workspace, 'log', 'clarify', '--run', runId], { env });
    expect(shown.status, shown.stderr).toBe(0);
    expect(shown.stdout).toContain('# clarify');
  });
});

describe('values out of range are usage errors', () => {
  it.each([
    [
      ['--rounds', '0', 'do X'],
      /'--rounds <n>' argument '0' is invalid\. it must be at least 1, e\.g\. --rounds 3/,
    ],
    [['do X', '--window', '-5'], /'--window <tokens>' argument '-5' is invalid\. it must be at least 1/],
    // A negative wait used to be taken as "never wait", and one past a timer's reach fired at once.
    ...['-5', 'NaN', '3000000'].map((seconds): [string[], RegExp] => [
      ['--timeout', seconds, 'do X'],
      new RegExp(
        `'--timeout <seconds>' argument '${seconds}' is invalid\\. give the seconds a question waits for an answer, from 0 \\(never wait\\) to 2147483`,
      ),
    ]),
    [['once', '-t', 'Read,Reed', 'hi'], /-t: unknown tool "Reed" — did you mean "Read"\?/],
    [
      ['once', '-t', 'read', 'hi'],
      /-t: unknown tool "read" — did you mean "Read"\? Tool names are case-sensitive/,
    ],
  ])('flower %j exits 2 before anything runs', async (args, message) => {
    const before = model.requests.length;
    const workspace = tempDir('range');
    expectUsageError(await runFlower(['-w', workspace, ...args], { env: mockedEnv(model) }), message);
    expect(model.requests.length).toBe(before);
    expect(existsSync(join(workspace, 'runs'))).toBe(false);
  });

  it('takes MCP tools and permission rules in once -t', async () => {
    const run = await runFlower(['once', '-t', 'Read,Bash(git status:*),mcp__human__ask', ''], {
      env: mockedEnv(model),
    });
    // Past the tool check: the empty prompt is what stops it.
    expect(run.status).toBe(1);
    expect(run.stderr).toContain('give the agent something to do');
  });
});
