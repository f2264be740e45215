/**
 * Issue 19's walls, with the real binary and its sandbox: what the coordinator's own commands and
 * its workers' commands can and cannot do, whatever the glance predicate lets through.
 *
 * The coordinator is built with the predicate forced to allow everything (`mayGlance`), so every
 * refusal below comes from the operating system: flower's read-only bubblewrap for the
 * coordinator's commands, Claude Code's sandbox (the worker policy) for the workers'. Each attempt
 * is scripted to leave a trace (a key in its output, a file on disk, a connection on the listener)
 * if the wall did not hold.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { coordinator, worker } from '../../src/agents/roles.js';
import { Workbench } from '../../src/agents/workbench.js';
import { PLANTED_KEY, type SecretMachine, secretMachine } from '../support/sandbox-fixtures.js';
import { cleanUp, dispatch, resultFor, runSpec, startMock } from './agents-harness.js';

let machine: SecretMachine | undefined;
afterEach(async () => {
  await machine?.close();
  machine = undefined;
  await cleanUp();
});

const bash = (id: string, command: string) => ({ name: 'Bash', id, input: { command, description: id } });

describe('the walls hold by construction (real binary, sandbox on)', () => {
  it("the coordinator's commands cannot read credential stores, write anywhere or reach the network, even when the predicate allows them", async () => {
    machine = await secretMachine();
    const { home, workspace, outside, port } = machine;
    const empty = join(outside, 'empty');
    mkdirSync(empty);
    const attempts: Record<string, string> = {
      diff: `git diff --no-index ${home}/.config ${empty}`,
      cat: 'cat ~/.config/flower/.env',
      grep: 'grep -r ANTHROPIC ~/.config ~/.ssh ~/.bash_history .env',
      store: 'cat runs/sessions.db',
      write: 'echo changed > README.md; echo new > new-file.txt',
      elsewhere: `echo x > ${outside}/x.txt`,
      connect: `exec 3<>/dev/tcp/127.0.0.1/${port} && cat <&3`,
      environment: 'printenv ANTHROPIC_API_KEY; echo "printenv said $?"',
      look: 'ls; echo listed',
    };
    const server = await startMock({
      main: [
        { toolUses: Object.entries(attempts).map(([id, command]) => bash(`toolu_${id}`, command)) },
        { text: 'Done.' },
      ],
    });
    const spec = coordinator({
      workers: { coder: worker({ description: 'codes', prompt: 'Code.' }) },
      mayGlance: () => true,
    });
    const outcome = await runSpec(server, spec, workspace, 'Look around.', {
      extraEnv: { HOME: home },
      sandbox: machine.sandbox,
    });
    expect(outcome.thrown).toBeUndefined();
    const result = (id: string) => resultFor(server, `toolu_${id}`) ?? '(no result)';
    for (const id of Object.keys(attempts)) expect(result(id), id).not.toContain(PLANTED_KEY);
    for (const id of ['cat', 'grep', 'store']) expect(result(id), id).toContain('Permission denied');
    expect(result('diff')).toMatch(/Permission denied|Could not open directory/);
    for (const id of ['write', 'elsewhere']) expect(result(id), id).toContain('Read-only file system');
    expect(result('connect')).toMatch(/Connection refused|Network is unreachable/);
    expect(result('environment')).toContain('printenv said 1');
    expect(result('environment')).not.toContain('test-key');
    // The wall does not blind it: a plain look still works and shows the workspace.
    expect(result('look')).toContain('README.md');
    expect(result('look')).toContain('listed');
    expect(readFileSync(join(workspace, 'README.md'), 'utf8')).toBe('# a project\n');
    expect(existsSync(join(workspace, 'new-file.txt'))).toBe(false);
    expect(existsSync(join(outside, 'x.txt'))).toBe(false);
    expect(machine.connections()).toBe(0);
  });

  it('a worker writes in its workspace, not outside it; it cannot read the credential stores, and the key is not in its environment', async () => {
    machine = await secretMachine();
    const { home, workspace, outside } = machine;
    const attempts: Record<string, string> = {
      write: 'echo built > built.txt && echo wrote-in-workspace',
      elsewhere: `echo x > ${outside}/x.txt`,
      cat: 'cat ~/.config/flower/.env ~/.ssh/id_ed25519',
      store: 'cat runs/sessions.db .env',
      environment: 'printenv ANTHROPIC_API_KEY; echo "printenv said $?"',
    };
    const server = await startMock({
      main: [dispatch('coder', 'Build it.', 'toolu_dispatch'), { text: 'Done.' }],
      agents: {
        coder: [
          { toolUses: Object.entries(attempts).map(([id, command]) => bash(`toolu_${id}`, command)) },
          {
            toolUses: [
              {
                name: 'Read',
                id: 'toolu_read',
                input: { file_path: join(home, '.config', 'flower', '.env') },
              },
              {
                name: 'Read',
                id: 'toolu_read_store',
                input: { file_path: join(workspace, 'runs', 'sessions.db') },
              },
              { name: 'Read', id: 'toolu_read_ok', input: { file_path: join(workspace, 'README.md') } },
            ],
          },
          { text: 'Conclusion: tried.' },
        ],
      },
    });
    const spec = coordinator({ workers: { coder: worker({ description: 'codes', prompt: 'Code.' }) } });
    const outcome = await runSpec(server, spec, workspace, 'Build.', {
      extraEnv: { HOME: home },
      sandbox: machine.sandbox,
    });
    expect(outcome.thrown).toBeUndefined();
    const result = (id: string) => resultFor(server, `toolu_${id}`) ?? '(no result)';
    for (const id of Object.keys(attempts)) expect(result(id), id).not.toContain(PLANTED_KEY);
    expect(result('write')).toContain('wrote-in-workspace');
    expect(readFileSync(join(workspace, 'built.txt'), 'utf8')).toBe('built\n');
    expect(result('elsewhere')).toContain('Read-only file system');
    expect(existsSync(join(outside, 'x.txt'))).toBe(false);
    for (const id of ['cat', 'store'])
      expect(result(id), id).toMatch(/No such file or directory|Permission denied/);
    expect(result('environment')).toContain('printenv said 1');
    expect(result('environment')).not.toContain('test-key');
    // Its file tools too: the stores are denied by rule, the project is not.
    for (const id of ['read', 'read_store']) {
      expect(result(id), id).not.toContain(PLANTED_KEY);
      expect(result(id), id).toMatch(/denied|not allowed|permission/i);
    }
    expect(result('read_ok')).toContain('# a project');
  });

  it('an isolated worker writes in its worktree and in the workbench outside the repository, nowhere else', async () => {
    const secrets = await secretMachine();
    machine = secrets;
    const { home, workspace, outside } = secrets;
    execFileSync('git', ['init', '-q', workspace]);
    execFileSync(
      'git',
      ['-c', 'user.email=t@example.com', '-c', 'user.name=t', 'commit', '-q', '--allow-empty', '-m', 'first'],
      {
        cwd: workspace,
      },
    );
    const workbench = Workbench.isolated(workspace);
    const artifact = join(workbench.artifacts, 'note.txt');
    const attempts: Record<string, string> = {
      worktree: 'echo built > built.txt && git rev-parse --show-toplevel',
      workbench: `echo noted > ${artifact} && echo wrote-artifact`,
      elsewhere: `echo x > ${outside}/x.txt`,
    };
    const server = await startMock({
      main: [dispatch('builder', 'Build it.', 'toolu_dispatch'), { text: 'Done.' }],
      agents: {
        builder: [
          { toolUses: Object.entries(attempts).map(([id, command]) => bash(`toolu_${id}`, command)) },
          { text: 'Conclusion: built.' },
        ],
      },
    });
    const spec = coordinator({
      workers: { builder: worker({ description: 'builds', prompt: 'Build.', isolate: true }) },
      workbench,
    });
    const outcome = await runSpec(server, spec, workspace, 'Build.', {
      extraEnv: { HOME: home },
      sandbox: (env) => secrets.sandbox(env, { extraDirs: spec.addDirs ?? [] }),
    });
    expect(outcome.thrown).toBeUndefined();
    const result = (id: string) => resultFor(server, `toolu_${id}`) ?? '(no result)';
    const worktree = result('worktree').trim().split('\n').at(-1) ?? '';
    expect(worktree.startsWith(workspace) && worktree !== workspace, result('worktree')).toBe(true);
    expect(readFileSync(join(worktree, 'built.txt'), 'utf8')).toBe('built\n');
    expect(existsSync(join(workspace, 'built.txt'))).toBe(false);
    expect(result('workbench')).toContain('wrote-artifact');
    expect(readFileSync(artifact, 'utf8')).toBe('noted\n');
    expect(result('elsewhere')).toContain('Read-only file system');
    expect(existsSync(join(outside, 'x.txt'))).toBe(false);
  });
});
