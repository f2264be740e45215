/**
 * The delegate guard with the real binary: a scripted coordinator's hands-on calls are denied with
 * directions to dispatch a worker, its glance runs, and a worker's Bash and Write run — with the
 * workbench on and with it off (the wall belongs to the role, not to the workbench); and its Read
 * kept out of credential files (this binary has no Grep tool; the unit tests cover the guard's Grep side).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { delegateDenial } from '../../src/agents/guards/delegate.js';
import { SECRET_FILE_DENIAL } from '../../src/agents/guards/secret-files.js';
import { coordinator, worker } from '../../src/agents/roles.js';
import { Workbench } from '../../src/agents/workbench.js';
import { cleanUp, dispatch, resultFor, runSpec, startMock, tempDir } from './agents-harness.js';

afterEach(cleanUp);

function gitRepository(): string {
  const workspace = tempDir('flower-ws-');
  const git = (...args: string[]) => execFileSync('git', args, { cwd: workspace, stdio: 'ignore' });
  git('init', '-q');
  git(
    '-c',
    'user.email=t@example.com',
    '-c',
    'user.name=t',
    'commit',
    '-q',
    '--allow-empty',
    '-m',
    'first commit',
  );
  return workspace;
}

const bash = (id: string, command: string) => ({ toolUses: [{ name: 'Bash', id, input: { command } }] });

/** One turn calling Bash once per command, with ids `${prefix}0`, `${prefix}1`, … */
const allBash = (commands: readonly string[], prefix: string) => ({
  toolUses: commands.map((command, index) => ({ name: 'Bash', id: `${prefix}${index}`, input: { command } })),
});

describe.each([
  { label: 'workbench on', withWorkbench: true },
  { label: 'workbench off', withWorkbench: false },
])('delegate guard on a scripted coordinator ($label)', ({ withWorkbench }) => {
  it('denies Write, pytest and a chained rm; runs the glance; lets the worker write and run', async () => {
    const workspace = gitRepository();
    mkdirSync(join(workspace, 'x'));
    const server = await startMock({
      main: [
        {
          toolUses: [
            {
              name: 'Write',
              id: 'toolu_write',
              input: { file_path: join(workspace, 'by-coordinator.txt'), content: 'no' },
            },
          ],
        },
        bash('toolu_pytest', 'pytest -q'),
        bash('toolu_rm', 'git status && rm -rf x'),
        bash('toolu_glance', 'git status -s && git log --oneline -5'),
        dispatch('builder', 'Create the two files.', 'toolu_dispatch'),
        { text: 'Dispatched and done.' },
      ],
      agents: {
        builder: [
          bash('toolu_worker_bash', 'echo from-bash > by-worker-bash.txt'),
          {
            toolUses: [
              {
                name: 'Write',
                id: 'toolu_worker_write',
                input: { file_path: join(workspace, 'by-worker-write.txt'), content: 'from-write\n' },
              },
            ],
          },
          { text: 'Conclusion: both files written.' },
        ],
      },
    });
    const spec = coordinator({
      workers: { builder: worker({ description: 'builds things', prompt: 'You build things.' }) },
      ...(withWorkbench ? { workbench: new Workbench(workspace) } : {}),
    });

    const { thrown } = await runSpec(server, spec, workspace);
    expect(thrown).toBeUndefined();

    expect(resultFor(server, 'toolu_write')).toContain(delegateDenial('Write'));
    expect(resultFor(server, 'toolu_pytest')).toContain(delegateDenial('Bash'));
    expect(resultFor(server, 'toolu_rm')).toContain(delegateDenial('Bash'));
    expect(existsSync(join(workspace, 'by-coordinator.txt'))).toBe(false);
    expect(existsSync(join(workspace, 'x'))).toBe(true);

    expect(resultFor(server, 'toolu_glance')).toContain('first commit');

    expect(readFileSync(join(workspace, 'by-worker-bash.txt'), 'utf8')).toBe('from-bash\n');
    expect(readFileSync(join(workspace, 'by-worker-write.txt'), 'utf8')).toBe('from-write\n');
    expect(resultFor(server, 'toolu_worker_bash')).not.toContain('coordinator does not use');
    expect(server.unmatched).toEqual([]);
  });
});

describe('delegate guard against smuggled writes (real binary)', () => {
  it('denies every corpus command that would leave a file behind, and none of them runs', async () => {
    const workspace = gitRepository();
    writeFileSync(join(workspace, 'f'), 'hello\n');
    const commands = [
      "sed -n -e'w pwned1' f",
      'sort --out=pwned2 f',
      `awk '{print > "pwned3"}' f`,
      'ls > pwned4',
      'env X=y touch pwned5',
      "'touch' pwned6",
      'git status\ntouch pwned7',
      'cat <<< x > pwned8',
      "git status && t''ouch pwned9",
      "sed -n '1w pwned10' f",
      'git log --output=pwned11',
      'echo x | tee pwned12',
    ];
    const server = await startMock([allBash(commands, 'toolu_c'), { text: 'Tried.' }]);

    const { thrown } = await runSpec(server, coordinator({ workers: {} }), workspace);
    expect(thrown).toBeUndefined();

    commands.forEach((_, index) => {
      expect(resultFor(server, `toolu_c${index}`)).toContain(delegateDenial('Bash'));
    });
    expect(readdirSync(workspace).filter((name) => name.startsWith('pwned'))).toEqual([]);
  });
});

describe('delegate guard against the glance campaign (real binary)', () => {
  it('denies brace, $"…", `uniq -`, glued-suffix, option and secret bypasses, and none of them runs', async () => {
    const workspace = gitRepository();
    const planted = 'sk-ant-planted-0123456789abcdef';
    for (const name of ['data.txt', 'data2.txt', 'data3.txt', 'a.txt'])
      writeFileSync(join(workspace, name), 'keep me\n');
    writeFileSync(join(workspace, '.env'), `ANTHROPIC_API_KEY=${planted}\n`);
    // Each of these ran through the earlier pattern-based predicate (see test/support/glance-campaign.ts).
    const commands = [
      'find . -name data.txt -{print,delete}',
      'find . -maxdepth 0 {-exec,touch,pwned-brace,\\;}',
      'find . -name data2.txt $"-delete"',
      'find . -maxdepth 0 {-exec,id,\\;}',
      'echo pwned | uniq - data3.txt',
      "echo hi >&2'pwned-dup'",
      'sort -{u,o} pwned-sort a.txt',
      'cat .env',
      'printenv FLOWER_PLANTED_SECRET',
      'ps axe',
    ];
    const server = await startMock([allBash(commands, 'toolu_g'), { text: 'Tried.' }]);

    const { thrown } = await runSpec(server, coordinator({ workers: {} }), workspace, undefined, {
      extraEnv: { FLOWER_PLANTED_SECRET: planted },
    });
    expect(thrown).toBeUndefined();

    commands.forEach((_, index) => {
      const result = resultFor(server, `toolu_g${index}`) ?? '';
      expect(result).toContain(delegateDenial('Bash'));
      expect(result).not.toContain(planted);
      expect(result).not.toMatch(/uid=\d+/);
    });
    for (const name of ['data.txt', 'data2.txt', 'data3.txt']) {
      expect(readFileSync(join(workspace, name), 'utf8')).toBe('keep me\n');
    }
    expect(readdirSync(workspace).filter((name) => name.includes('pwned'))).toEqual([]);
  });
});

describe('delegate guard and the deferred Monitor tool (real binary)', () => {
  it("walls Monitor's command like Bash: the binary runs Bash-matcher hooks for it", async () => {
    const workspace = gitRepository();
    const server = await startMock([
      { toolUses: [{ name: 'ToolSearch', id: 'toolu_search', input: { query: 'select:Monitor' } }] },
      {
        toolUses: [
          {
            name: 'Monitor',
            id: 'toolu_monitor',
            input: { description: 'watch', timeout_ms: 5000, command: 'touch pwned-monitor; echo done' },
          },
        ],
      },
      { text: 'Tried.' },
    ]);

    const { thrown } = await runSpec(server, coordinator({ workers: {} }), workspace);
    expect(thrown).toBeUndefined();

    expect(resultFor(server, 'toolu_monitor')).toContain(delegateDenial('Bash'));
    expect(existsSync(join(workspace, 'pwned-monitor'))).toBe(false);
  });
});

describe('secret-files guard on a scripted coordinator (real binary)', () => {
  it("keeps the coordinator's Read out of credential files, a planted link included", async () => {
    const workspace = gitRepository();
    const planted = 'sk-ant-planted-read-0123456789abcdef';
    writeFileSync(join(workspace, '.env'), `ANTHROPIC_API_KEY=${planted}\n`);
    symlinkSync(join(workspace, '.env'), join(workspace, 'notes.txt'));
    writeFileSync(join(workspace, 'README.md'), 'hello readers\n');
    const read = (id: string, file_path: string) => ({ name: 'Read', id, input: { file_path } });
    const server = await startMock([
      {
        toolUses: [
          read('toolu_env', join(workspace, '.env')),
          read('toolu_link', 'notes.txt'),
          read('toolu_readme', join(workspace, 'README.md')),
        ],
      },
      { text: 'Tried.' },
    ]);

    const { thrown } = await runSpec(server, coordinator({ workers: {} }), workspace);
    expect(thrown).toBeUndefined();

    for (const id of ['toolu_env', 'toolu_link']) {
      expect(resultFor(server, id)).toContain(SECRET_FILE_DENIAL);
    }
    expect(resultFor(server, 'toolu_readme')).toContain('hello readers');
    expect(JSON.stringify(server.mainRequests().map((request) => request.body))).not.toContain(planted);
  });
});
