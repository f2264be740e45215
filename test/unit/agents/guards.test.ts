import { spawnSync } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import type { HookCallbackMatcher, HookInput, HookJSONOutput } from '@anthropic-ai/claude-agent-sdk';
import { afterEach, describe, expect, it } from 'vitest';
import {
  coordinatorMayRun,
  type DelegateGuardOptions,
  delegateDenial,
  delegateGuard,
} from '../../../src/agents/guards/delegate.js';
import { indexGuard } from '../../../src/agents/guards/index-refresh.js';
import { isolatedAgentInput, isolateGuard } from '../../../src/agents/guards/isolate.js';
import { SECRET_FILE_DENIAL, secretFilesGuard } from '../../../src/agents/guards/secret-files.js';
import {
  readsSpill,
  shrinkOutput,
  spillGuard,
  spillName,
  spillPointer,
  stashInto,
} from '../../../src/agents/guards/spill.js';
import { bannedHandsOnTools, whitelistDenial, whitelistGuard } from '../../../src/agents/guards/whitelist.js';
import { markIsolated, wantsIsolation } from '../../../src/agents/isolation.js';
import { worker } from '../../../src/agents/roles.js';
import { Workbench } from '../../../src/agents/workbench.js';
import { mergeHooks } from '../../../src/runtime/agent-spec.js';
import { type SecretMachine, secretMachine } from '../../support/sandbox-fixtures.js';
import { cleanUp } from '../../support/scratch.js';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});
function tempDir(): string {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), 'flower-guard-')));
  dirs.push(dir);
  return dir;
}

interface Call {
  event?: 'PreToolUse' | 'PostToolUse';
  tool: string;
  input?: Record<string, unknown>;
  response?: unknown;
  agentId?: string;
  cwd?: string;
}

async function run(matcher: HookCallbackMatcher, call: Call): Promise<HookJSONOutput> {
  const input = {
    hook_event_name: call.event ?? 'PreToolUse',
    session_id: 's',
    transcript_path: '/tmp/t.jsonl',
    cwd: call.cwd ?? '/tmp',
    tool_name: call.tool,
    tool_input: call.input ?? {},
    tool_use_id: 'toolu_1',
    ...(call.event === 'PostToolUse' ? { tool_response: call.response } : {}),
    ...(call.agentId ? { agent_id: call.agentId, agent_type: 'builder' } : {}),
  } as HookInput;
  return matcher.hooks[0]!(input, 'toolu_1', { signal: new AbortController().signal });
}

const decision = (output: HookJSONOutput) =>
  (output as { hookSpecificOutput?: { permissionDecision?: string; permissionDecisionReason?: string } })
    .hookSpecificOutput;

describe('whitelist guard', () => {
  it('bans exactly the hands-on tools a role was not given', () => {
    expect(bannedHandsOnTools(['Read', 'Glob'])).toEqual(['Bash', 'Write', 'Edit', 'NotebookEdit']);
    expect(bannedHandsOnTools(['Read', 'Bash'])).toEqual(['Write', 'Edit', 'NotebookEdit']);
    expect(whitelistGuard(['Bash', 'Write', 'Edit', 'NotebookEdit', 'Read'], 'worker')).toBeUndefined();
  });

  it('denies on the main thread with the intentional-restriction text and lets subagents pass', async () => {
    const guard = whitelistGuard(['Read', 'Bash'], 'judge')!;
    expect(guard.matcher).toBe('Write|Edit|NotebookEdit');
    const denied = decision(await run(guard, { tool: 'Write' }));
    expect(denied?.permissionDecision).toBe('deny');
    expect(denied?.permissionDecisionReason).toBe(whitelistDenial('judge', 'Write'));
    expect(denied?.permissionDecisionReason).toContain('This is intentional, not a missing setting');
    expect(await run(guard, { tool: 'Write', agentId: 'a1' })).toEqual({});
    expect(await run(guard, { tool: 'Bash', input: { command: 'ls' } })).toEqual({});
  });
});

describe('secret-files guard', () => {
  const guard = secretFilesGuard();
  const denied = async (call: Call) => decision(await run(guard, call))?.permissionDecision === 'deny';

  it('refuses Read of flower, Claude Code and project credential files, however the path is spelled', async () => {
    for (const file_path of [
      '/root/.config/flower/.env',
      '/home/u/.claude/.credentials.json',
      '.env',
      'app/../.env.local',
      '/proc/self/environ',
    ])
      expect(await denied({ tool: 'Read', input: { file_path } }), file_path).toBe(true);
    const output = await run(guard, { tool: 'Read', input: { file_path: '.env' } });
    expect(decision(output)?.permissionDecisionReason).toBe(SECRET_FILE_DENIAL);
  });

  it('follows a symbolic link planted in the workspace to the file it opens', async () => {
    const dir = tempDir();
    mkdirSync(join(dir, 'home', '.config', 'flower'), { recursive: true });
    writeFileSync(join(dir, 'home', '.config', 'flower', '.env'), 'ANTHROPIC_API_KEY=sk-ant-x\n');
    symlinkSync(join(dir, 'home', '.config', 'flower', '.env'), join(dir, 'notes.txt'));
    expect(await denied({ tool: 'Read', input: { file_path: 'notes.txt' }, cwd: dir })).toBe(true);
    writeFileSync(join(dir, 'plain.txt'), 'hello');
    expect(await denied({ tool: 'Read', input: { file_path: 'plain.txt' }, cwd: dir })).toBe(false);
  });

  it('refuses Grep in a credential file or with a glob that could match one', async () => {
    expect(await denied({ tool: 'Grep', input: { pattern: 'KEY', path: '/root/.config/flower' } })).toBe(
      true,
    );
    expect(await denied({ tool: 'Grep', input: { pattern: 'KEY', glob: '.env*' } })).toBe(true);
    expect(await denied({ tool: 'Grep', input: { pattern: 'TODO', path: 'src', glob: '*.ts' } })).toBe(false);
  });

  it('lets ordinary files through, and leaves subagents alone', async () => {
    expect(await denied({ tool: 'Read', input: { file_path: '/tmp/project/README.md' } })).toBe(false);
    expect(await denied({ tool: 'Read', input: { file_path: '.env' }, agentId: 'a1' })).toBe(false);
  });
});

describe('delegate guard', () => {
  const guard = delegateGuard({ allowGlance: true, artifactsPath: '/wb/artifacts' });

  it('denies writes and non-glance Bash on the main thread with dispatch directions', async () => {
    for (const tool of ['Write', 'Edit', 'NotebookEdit']) {
      expect(decision(await run(guard, { tool }))?.permissionDecisionReason).toBe(
        delegateDenial(tool, '/wb/artifacts'),
      );
    }
    const bash = decision(await run(guard, { tool: 'Bash', input: { command: 'npm test' } }));
    expect(bash?.permissionDecision).toBe('deny');
    expect(bash?.permissionDecisionReason).toContain('Dispatch a worker with the Agent tool');
    expect(bash?.permissionDecisionReason).toContain('/wb/artifacts/');
  });

  it('allows glances, lets every subagent call through, and ignores read tools', async () => {
    expect(await run(guard, { tool: 'Bash', input: { command: 'git status -s' } })).toEqual({});
    expect(await run(guard, { tool: 'Bash', input: { command: 'rm -rf x' }, agentId: 'a1' })).toEqual({});
    expect(await run(guard, { tool: 'Write', agentId: 'a1' })).toEqual({});
    expect(await run(guard, { tool: 'Read' })).toEqual({});
  });

  it('denies even glances when glancing is off', async () => {
    const strict = delegateGuard();
    expect(decision(await run(strict, { tool: 'Bash', input: { command: 'ls' } }))?.permissionDecision).toBe(
      'deny',
    );
    expect(delegateDenial('Bash')).toContain('.flower/artifacts/');
  });

  it('tells the coordinator to ask its worker for only the paths and its conclusion', () => {
    expect(delegateDenial('Write')).toMatch(/reply with only the paths and its conclusion\.$/);
  });

  it('never lets a write tool pass as a glance, whatever its input carries', async () => {
    const output = await run(guard, {
      tool: 'Write',
      input: { file_path: 'x', content: 'y', command: 'ls' },
    });
    expect(decision(output)?.permissionDecision).toBe('deny');
    for (const tool of ['Write', 'Edit', 'NotebookEdit'])
      expect(
        coordinatorMayRun(tool, { command: 'ls' }, true, () => true),
        tool,
      ).toBe(false);
  });

  it('denies a Bash call whose command is not text, whatever the predicate lets through', async () => {
    for (const command of [['ls'], 42, undefined])
      expect(
        coordinatorMayRun('Bash', { command }, true, () => true),
        String(command),
      ).toBe(false);
    expect(decision(await run(guard, { tool: 'Bash', input: { command: ['ls'] } }))?.permissionDecision).toBe(
      'deny',
    );
  });
});

describe('delegate guard: the glance wall (sandbox on)', () => {
  let machine: SecretMachine | undefined;
  afterEach(async () => {
    await machine?.close();
    machine = undefined;
    await cleanUp();
  });

  async function walledGuard(options: DelegateGuardOptions = {}): Promise<HookCallbackMatcher> {
    machine = await secretMachine();
    const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: machine.home };
    return delegateGuard({ allowGlance: true, sandbox: machine.sandbox(env), ...options });
  }

  interface Glanced {
    updatedInput: Record<string, unknown>;
    /** What the call's replacement command prints and exits with, run as the Bash tool would. */
    stdout: string;
    status: number | null;
    /** The file the replacement command prints. */
    outputPath: string;
  }

  async function glance(guard: HookCallbackMatcher, call: Omit<Call, 'tool'>): Promise<Glanced> {
    const output = decision(await run(guard, { tool: 'Bash', cwd: machine?.workspace, ...call })) as {
      permissionDecision?: string;
      updatedInput?: Record<string, unknown>;
    };
    expect(output?.permissionDecision).toBe('allow');
    const updatedInput = output.updatedInput ?? {};
    const command = String(updatedInput.command);
    const outputPath = /^cat -- '([^']*)'; exit \d+$/.exec(command)?.[1] ?? '';
    const replay = spawnSync('bash', ['-c', command], { encoding: 'utf8' });
    return { updatedInput, stdout: replay.stdout, status: replay.status, outputPath };
  }

  it('runs an allowed glance itself and hands the call a command that replays its output and exit code, in the foreground, the rest of the input kept', async () => {
    const guard = await walledGuard();
    const result = await glance(guard, {
      input: { command: 'ls; ls no-such-file', description: 'look', run_in_background: true },
    });
    expect(result.stdout).toContain('README.md');
    expect(result.stdout).toContain('no-such-file');
    expect(result.status).toBe(2);
    expect(result.updatedInput).toMatchObject({ description: 'look', run_in_background: false });
  });

  it("runs the glance in the call's directory, or in flower's own when the hook input names none", async () => {
    const guard = await walledGuard();
    const { workspace } = machine as SecretMachine;
    expect((await glance(guard, { input: { command: 'pwd' }, cwd: workspace })).stdout).toBe(
      `${workspace}\n`,
    );
    expect((await glance(guard, { input: { command: 'pwd' }, cwd: '' })).stdout).toBe(`${process.cwd()}\n`);
  });

  it('ends a glance at the time limit its call asks for', async () => {
    const guard = await walledGuard({ mayGlance: () => true });
    const started = Date.now();
    const result = await glance(guard, { input: { command: 'sleep 30', timeout: 300 } });
    expect(result.status).toBe(124);
    expect(result.stdout).toContain('the command was ended after');
    expect(Date.now() - started).toBeLessThan(20_000);
  });

  it("gives a glance the Bash tool's default time when its call asks for none, zero or less, or not as a number", async () => {
    const guard = await walledGuard();
    for (const timeout of [undefined, 0, -5, '5', true]) {
      const result = await glance(guard, {
        input: { command: 'echo ok', ...(timeout === undefined ? {} : { timeout }) },
      });
      expect(result.status, String(timeout)).toBe(0);
      expect(result.stdout, String(timeout)).toBe('ok\n');
    }
  });

  it('gives the hook time for the longest glance the Bash tool allows (10 minutes) and a little more; without a sandbox it runs nothing and keeps the default', async () => {
    const guard = await walledGuard();
    expect(guard.timeout).toBeGreaterThan(600);
    expect(guard.timeout).toBeLessThanOrEqual(660);
    expect(delegateGuard({ allowGlance: true }).timeout).toBeUndefined();
  });

  it('lets any other tool the coordinator may use through untouched', async () => {
    const guard = await walledGuard();
    expect(await run(guard, { tool: 'Read', input: { file_path: 'README.md' } })).toEqual({});
  });

  it("keeps a guard's glance outputs in one private directory under the system's temporary directory, removed when flower exits", async () => {
    const guard = await walledGuard();
    const before = process.listeners('exit');
    const first = await glance(guard, { input: { command: 'echo one' } });
    const second = await glance(guard, { input: { command: 'echo two' } });
    const directory = dirname(first.outputPath);
    expect(dirname(second.outputPath)).toBe(directory);
    expect(dirname(directory)).toBe(tmpdir());
    expect(basename(directory)).toMatch(/^flower-glance-/);
    expect(statSync(directory).mode & 0o777).toBe(0o700);
    const added = process.listeners('exit').filter((listener) => !before.includes(listener));
    expect(added).toHaveLength(1);
    const onExit = added[0] as () => void;
    try {
      onExit();
      expect(existsSync(directory)).toBe(false);
      // Already gone (a temp cleaner, say): flower still exits quietly.
      expect(() => onExit()).not.toThrow();
    } finally {
      process.removeListener('exit', onExit);
    }
  });

  it('keeps the last 32 outputs and removes older ones, even when one is gone already', async () => {
    const guard = await walledGuard();
    const paths: string[] = [];
    for (let index = 1; index <= 33; index += 1) {
      const result = await glance(guard, { input: { command: `echo ${index}` } });
      expect(result.stdout).toBe(`${index}\n`);
      paths.push(result.outputPath);
    }
    expect(existsSync(paths[0] as string)).toBe(false);
    for (const path of paths.slice(1)) expect(existsSync(path), path).toBe(true);
    rmSync(paths[1] as string);
    const next = await glance(guard, { input: { command: 'echo 34' } });
    expect(next.stdout).toBe('34\n');
  });
});

describe('spill guard', () => {
  it('names spill files by the first 16 hex digits of the sha256 of the UTF-8 text', () => {
    expect(spillName('hello')).toBe('2cf24dba5fb0a30e.txt');
  });

  it('points at the file and keeps the first characters, newlines flattened', () => {
    const pointer = spillPointer('a\nb'.repeat(10), '.flower/spill/x.txt', 4);
    expect(pointer).toBe(
      '[tool result archived: 30 chars. Full text at .flower/spill/x.txt; Read it when needed, Grep it to search]\n' +
        'First 4 characters: a ba',
    );
    expect(spillPointer('😀'.repeat(3), 'p', 2)).toContain('archived: 3 chars');
  });

  it('replaces long strings at the top level and nested in objects, never arrays', () => {
    const stash = (text: string) => `<${text.length}>`;
    const long = 'x'.repeat(10);
    expect(shrinkOutput(long, 10, stash)).toBe('<10>');
    expect(shrinkOutput('x'.repeat(9), 10, stash)).toBeUndefined();
    expect(shrinkOutput({ stdout: long, stderr: '', file: { content: long, path: 'p' } }, 10, stash)).toEqual(
      {
        stdout: '<10>',
        stderr: '',
        file: { content: '<10>', path: 'p' },
      },
    );
    expect(shrinkOutput([{ type: 'text', text: long }], 10, stash)).toBeUndefined();
    expect(shrinkOutput({ a: 1 }, 10, stash)).toBeUndefined();
  });

  it('counts characters as code points', () => {
    const stash = () => 'spilled';
    expect(shrinkOutput('😀'.repeat(5), 6, stash)).toBeUndefined();
    expect(shrinkOutput('😀'.repeat(6), 6, stash)).toBe('spilled');
  });

  it('writes a spill file once and never rewrites it', () => {
    const dir = tempDir();
    const stash = stashInto(join(dir, 'spill'), 400);
    stash('same text');
    const file = join(dir, 'spill', spillName('same text'));
    writeFileSync(file, 'edited by hand');
    stash('same text');
    expect(readFileSync(file, 'utf8')).toBe('edited by hand');
  });

  it('recognises a read of the spill directory', () => {
    expect(readsSpill({ file_path: '/w/.flower/spill/abc.txt' }, ['/w/.flower/spill'])).toBe(true);
    expect(readsSpill({ pattern: 'x', path: '.flower/spill' }, ['.flower/spill'])).toBe(true);
    expect(readsSpill({ file_path: '/w/src/a.ts' }, ['/w/.flower/spill'])).toBe(false);
  });

  it('spills a bulky tool result into the workbench and passes a read of a spill file', async () => {
    const workspace = tempDir();
    const workbench = new Workbench(workspace);
    const guard = spillGuard(workbench);
    const text = 'y'.repeat(4000);
    const output = await run(guard, {
      event: 'PostToolUse',
      tool: 'Grep',
      input: { pattern: 'y' },
      response: { content: text, numFiles: 1 },
      agentId: 'a1',
    });
    const replaced = (output as { hookSpecificOutput: { updatedToolOutput: { content: string } } })
      .hookSpecificOutput.updatedToolOutput;
    expect(replaced.content).toContain(`Full text at ${join(workbench.spill, spillName(text))};`);
    expect(readFileSync(join(workbench.spill, spillName(text)), 'utf8')).toBe(text);

    const reread = await run(guard, {
      event: 'PostToolUse',
      tool: 'Read',
      input: { file_path: join(workbench.spill, spillName(text)) },
      response: { type: 'text', file: { content: text } },
    });
    expect(reread).toEqual({});
    const external = spillGuard(new Workbench(workspace, { home: join(workspace, '..', 'elsewhere') }));
    const trimmed = await run(external, {
      event: 'PostToolUse',
      tool: 'Read',
      input: { file_path: join(workspace, '.flower', 'spill', 'abc.txt') },
      response: { type: 'text', file: { content: text } },
    });
    expect(trimmed).toEqual({});
    expect(
      await run(guard, {
        event: 'PostToolUse',
        tool: 'Bash',
        input: { command: 'ls' },
        response: { stdout: 'ok' },
      }),
    ).toEqual({});
  });
});

describe('index guard', () => {
  it('refreshes INDEX.md after a write inside the workbench only', async () => {
    const workspace = tempDir();
    const workbench = new Workbench(workspace).ensure();
    const guard = indexGuard(workbench);
    await run(guard, {
      event: 'PostToolUse',
      tool: 'Write',
      input: { file_path: join(workspace, 'src.ts') },
    });
    expect(existsSync(workbench.indexPath)).toBe(false);
    writeFileSync(join(workbench.scripts, 'go.sh'), '# desc: go\n');
    const output = await run(guard, {
      event: 'PostToolUse',
      tool: 'Write',
      input: { file_path: '.flower/scripts/go.sh' },
      cwd: workspace,
    });
    expect(output).toEqual({});
    expect(readFileSync(workbench.indexPath, 'utf8')).toContain('`.flower/scripts/go.sh` — go');
  });
});

describe('isolation', () => {
  it('marks a definition without adding fields; a copy loses the mark', () => {
    const marked = worker({ description: 'd', prompt: 'p', isolate: true });
    expect(wantsIsolation(marked)).toBe(true);
    expect(Object.keys(marked)).not.toContain('isolate');
    expect(wantsIsolation({ ...marked })).toBe(false);
    expect(wantsIsolation(markIsolated(marked, false))).toBe(false);
    expect(wantsIsolation(undefined)).toBe(false);
  });

  it('rewrites only Agent calls for marked workers that set neither cwd nor isolation', async () => {
    const agents = {
      builder: worker({ description: 'd', prompt: 'p', isolate: true }),
      reader: worker({ description: 'd', prompt: 'p' }),
    };
    const base = { subagent_type: 'builder', description: 'build', prompt: 'go' };
    expect(isolatedAgentInput(base, agents)).toEqual({ ...base, isolation: 'worktree' });
    expect(isolatedAgentInput({ ...base, cwd: '/elsewhere' }, agents)).toBeUndefined();
    expect(isolatedAgentInput({ ...base, isolation: 'remote' }, agents)).toBeUndefined();
    expect(isolatedAgentInput({ ...base, subagent_type: 'reader' }, agents)).toBeUndefined();
    expect(isolatedAgentInput({ ...base, subagent_type: 'toString' }, agents)).toBeUndefined();

    const told: string[] = [];
    const guard = isolateGuard(agents, (type, description) => told.push(`${type}:${description}`));
    const output = decision(await run(guard, { tool: 'Agent', input: base })) as {
      permissionDecision?: string;
      updatedInput?: Record<string, unknown>;
    };
    expect(output.permissionDecision).toBe('allow');
    expect(output.updatedInput).toEqual({ ...base, isolation: 'worktree' });
    expect(told).toEqual(['builder:build']);
  });
});

describe('mergeHooks', () => {
  it('concatenates matchers per event in order and skips empty tables', () => {
    const a: HookCallbackMatcher = { matcher: 'A', hooks: [] };
    const b: HookCallbackMatcher = { matcher: 'B', hooks: [] };
    expect(
      mergeHooks({ PreToolUse: [a] }, undefined, { PreToolUse: [b], PostToolUse: [] }, { PostToolUse: [a] }),
    ).toEqual({ PreToolUse: [a, b], PostToolUse: [a] });
  });
});
