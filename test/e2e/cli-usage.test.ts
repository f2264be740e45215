/**
 * A command line that does not spend money by accident (issue 9, §4), through the built binary:
 * a one-word request that is (nearly) a command name is refused before anything is paid for,
 * `-w`/`-r` without a directory or naming a file, out-of-range numbers and unknown tools are usage
 * errors (exit 2), and `flower go <word>` still sends any word. The mock model counts requests, so
 * "nothing was paid for" is checked, not assumed.
 */
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
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

describe('values out of range are usage errors', () => {
  it.each([
    [
      ['--rounds', '0', 'do X'],
      /'--rounds <n>' argument '0' is invalid\. it must be at least 1, e\.g\. --rounds 3/,
    ],
    [['do X', '--window', '-5'], /'--window <tokens>' argument '-5' is invalid\. it must be at least 1/],
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
