/**
 * `--isolate` with the real binary: in a git repository the workbench moves outside the repo and
 * the coordinator's Agent call for a marked worker is rewritten to run in its own git worktree;
 * on a non-git directory isolation fails before any model call, with directions.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, realpathSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { coordinator, worker } from '../../src/agents/roles.js';
import { IsolationError, Workbench } from '../../src/agents/workbench.js';
import { cleanUp, dispatch, resultFor, runSpec, startMock, tempDir } from './agents-harness.js';

afterEach(cleanUp);

function gitRepository(): string {
  const parent = tempDir('flower-parent-');
  const workspace = join(parent, 'project');
  execFileSync('git', ['init', '-q', workspace]);
  execFileSync(
    'git',
    ['-c', 'user.email=t@example.com', '-c', 'user.name=t', 'commit', '-q', '--allow-empty', '-m', 'first'],
    { cwd: workspace },
  );
  return realpathSync(workspace);
}

describe('isolation (real binary)', () => {
  it('rewrites the Agent call for a marked worker so it runs in its own worktree', async () => {
    const workspace = gitRepository();
    const workbench = Workbench.isolated(workspace);
    expect(workbench.root).toBe(join(dirname(workspace), `.flower-${basename(workspace)}`));
    const isolated: string[] = [];
    const server = await startMock({
      main: [dispatch('builder', 'Say where you are.', 'toolu_dispatch'), { text: 'Done.' }],
      agents: {
        builder: [
          {
            toolUses: [
              { name: 'Bash', id: 'toolu_where', input: { command: 'git rev-parse --show-toplevel' } },
            ],
          },
          { text: 'Conclusion: located.' },
        ],
      },
    });
    const spec = coordinator({
      workers: { builder: worker({ description: 'builds', prompt: 'You build.', isolate: true }) },
      workbench,
      onIsolate: (type) => isolated.push(type),
    });
    expect(spec.addDirs).toEqual([workbench.root]);

    const { thrown } = await runSpec(server, spec, workspace);
    expect(thrown).toBeUndefined();

    expect(isolated).toEqual(['builder']);
    const where = resultFor(server, 'toolu_where') ?? '';
    expect(where).not.toBe(workspace);
    expect(where.startsWith(workspace)).toBe(true);
    expect(where).toContain('worktree');
    // The index the coordinator gets names the external workbench by absolute path.
    expect(JSON.stringify(server.mainRequests()[0]?.body?.messages)).toContain(
      `# Workbench ${workbench.root}/`,
    );
  });

  it('fails before any model call on a directory that is not a git repository', async () => {
    const workspace = tempDir('flower-plain-');
    const server = await startMock([{ text: 'never asked' }]);
    expect(() => Workbench.isolated(workspace)).toThrow(IsolationError);
    expect(() => Workbench.isolated(workspace)).toThrow(
      /needs .* to be a git repository.*git init.*drop --isolate/,
    );
    expect(existsSync(join(dirname(workspace), `.flower-${basename(workspace)}`))).toBe(false);
    expect(server.requests).toHaveLength(0);
  });
});
