/**
 * The `go` path from the command line against the mock model: default-command insertion with go
 * flags before or after the request, `-r` relative to the workspace, the request read from piped
 * input (with `/new`), the non-terminal warning, unattended questions when stdin is not a terminal,
 * and the final cost/manifest line.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ASK_TOOL } from '../../src/agents/tools.js';
import { type MockModel, startMockModel } from '../../src/testing/server.js';
import { mockedEnv, runFlower, tempDir } from './cli-harness.js';
import { echoBrief } from './scenario-harness.js';

let model: MockModel;
beforeAll(async () => {
  model = await startMockModel({ main: Array.from({ length: 20 }, () => echoBrief) });
});
afterAll(async () => {
  await model.close();
});

describe('flower [go] from the command line', () => {
  it('takes go flags before the request and keeps -r inside the workspace', async () => {
    const workspace = tempDir('go-before');
    const run = await runFlower(
      ['-w', workspace, '--clarify-only', '--timeout', '0', '-r', 'state', 'count the words'],
      {
        env: mockedEnv(model),
      },
    );
    expect(run.stderr).toBe('');
    expect(run.status).toBe(0);
    // --timeout 0 never waits for anyone, so there is nothing to warn about on a pipe.
    expect(run.stdout).not.toContain('standard input is not a terminal');
    expect(readFileSync(join(workspace, '.flower', 'notes', 'brief.md'), 'utf8')).toContain(
      'count the words',
    );
    // -r is relative to the workspace (not to the shell's directory), so runs/ and .flower/ stay together.
    const manifest = join(workspace, 'state', 'manifest.json');
    expect(existsSync(manifest)).toBe(true);
    expect(run.stdout).toMatch(
      new RegExp(
        `total \\$\\d+\\.\\d{4} this run · \\$\\d+\\.\\d{4} for the whole task · manifest ${manifest}\\n`,
      ),
    );
    // Only the brief was written: the run ends saying where it is and what to run next (issue 21).
    expect(run.stdout.trimEnd().split('\n').slice(-2)).toEqual([
      `brief: ${join(workspace, '.flower', 'notes', 'brief.md')}`,
      `next: read it (edit it where it is wrong), then run flower in ${workspace} to set the goal and start the work`,
    ]);
  });

  it('takes go flags after the request, and words without quotes', async () => {
    const workspace = tempDir('go-after');
    const run = await runFlower(
      ['count', 'the', 'lines', '--clarify-only', '-w', workspace, '--timeout', '0'],
      {
        env: mockedEnv(model),
      },
    );
    expect(run.status).toBe(0);
    expect(readFileSync(join(workspace, '.flower', 'notes', 'brief.md'), 'utf8')).toContain(
      'count the lines',
    );
  });

  it('reads the request from piped input, and warns that nobody can answer questions', async () => {
    const workspace = tempDir('go-piped');
    const run = await runFlower(['-w', workspace, '--clarify-only', '--timeout', '5'], {
      env: mockedEnv(model),
      input: 'sort the list\n',
    });
    expect(run.status).toBe(0);
    expect(run.stdout).toContain(
      '! standard input is not a terminal, so nobody can answer questions; add --timeout 0',
    );
    // No header off a terminal: the first line is simply the request.
    expect(run.stdout).not.toContain('What should flower do?');
    expect(readFileSync(join(workspace, '.flower', 'notes', 'brief.md'), 'utf8')).toContain('sort the list');
  });

  it('with stdin not a terminal and no --timeout, does not wait for answers nobody can give, and says so', async () => {
    const asking = await startMockModel({
      main: [
        { toolUses: [{ name: ASK_TOOL, input: { question: 'Which language?', options: ['Python', 'Go'] } }] },
        (request) => echoBrief(request),
      ],
    });
    try {
      const workspace = tempDir('go-unattended');
      // A pipe that stays open and silent, as under CI or nohup: the end of input never comes.
      const run = await runFlower(['-w', workspace, '--clarify-only', 'pick a language'], {
        env: mockedEnv(asking),
        keepStdinOpen: true,
        timeoutMs: 90_000,
      });
      expect(run.stderr).toBe('');
      expect(run.status).toBe(0);
      expect(run.stdout).toContain(
        '- standard input is not a terminal: questions are not waited for (as with --timeout 0)',
      );
      expect(run.stdout.match(/standard input is not a terminal/g)).toHaveLength(1);
      // The agent was told at once that nobody answers, and decided itself.
      const answer = JSON.stringify(asking.mainRequests()[1]?.body?.messages);
      expect(answer).toContain('No one answered. Decide yourself');
    } finally {
      await asking.close();
    }
  });

  it('starts over on /new: the old brief is archived and the next line is the new request', async () => {
    const workspace = tempDir('go-new');
    const notes = join(workspace, '.flower', 'notes');
    mkdirSync(notes, { recursive: true });
    const oldBrief =
      '## Goal\nold task\n\n## Acceptance\n- old\n\n## Boundaries\n- old\n\n## Unknowns & assumptions\n- old\n';
    writeFileSync(join(notes, 'brief.md'), oldBrief);
    const run = await runFlower(['-w', workspace, '--clarify-only', '--timeout', '0'], {
      env: mockedEnv(model),
      input: '/new\nrename the files\n',
    });
    expect(run.status).toBe(0);
    expect(readFileSync(join(notes, 'brief.md'), 'utf8')).toContain('rename the files');
    const archived = readdirSync(join(notes, 'archive'));
    expect(archived).toHaveLength(1);
    expect(readFileSync(join(notes, 'archive', archived[0]!, 'brief.md'), 'utf8')).toBe(oldBrief);
    // It says where the old task went (issue 21).
    expect(run.stdout).toContain(
      `- the previous task is archived in ${join(notes, 'archive', archived[0]!)} (`,
    );
  });

  it('wakes up in a directory with a brief: banner, Enter continues, and nothing is asked again', async () => {
    const workspace = tempDir('go-wake');
    const first = await runFlower(['-w', workspace, '--clarify-only', '--timeout', '0', 'list the files'], {
      env: mockedEnv(model),
    });
    expect(first.status).toBe(0);
    const requestsBefore = model.mainRequests().length;
    const second = await runFlower(['-w', workspace, '--clarify-only'], {
      env: mockedEnv(model),
      input: '\n',
    });
    expect(second.stderr).toBe('');
    expect(second.status).toBe(0);
    expect(second.stdout).toMatch(/<- continuing in .*flower-go-wake-\w+ {2}brief confirmed · wake 2/);
    // The brief is complete, so clarify-only has nothing left to do: no model call at all.
    expect(model.mainRequests().length).toBe(requestsBefore);
  });
});
