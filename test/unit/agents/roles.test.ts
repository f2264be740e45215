import { execFileSync } from 'node:child_process';
import { mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { HookEvent } from '@anthropic-ai/claude-agent-sdk';
import { afterEach, describe, expect, it } from 'vitest';
import { HumanChannel } from '../../../src/agents/human/channel.js';
import { clarifier, coordinator, judge, oracle, worker } from '../../../src/agents/roles.js';
import {
  CLARIFIER_RULES,
  COORDINATOR_RULES,
  JUDGE_CAN_RUN,
  JUDGE_RULES,
  ORACLE_RULES,
  WORKER_RULES,
} from '../../../src/agents/rules.js';
import { Workbench } from '../../../src/agents/workbench.js';
import { type AgentSpec, mergeHooks } from '../../../src/runtime/agent-spec.js';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});
function tempDir(): string {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), 'flower-roles-')));
  dirs.push(dir);
  return dir;
}

/** The matchers a session of `spec` gets for `event`: its hooks, then those made with its sandbox (none here). */
const matchers = (spec: AgentSpec, event: HookEvent) =>
  (mergeHooks(spec.hooks, spec.sandboxHooks?.(undefined))[event] ?? []).map((matcher) => matcher.matcher);

describe('coordinator', () => {
  it('decides and dispatches: Agent, TodoWrite, Read, glance Bash, human tools, workers’ web tools', () => {
    const channel = new HumanChannel();
    const spec = coordinator({
      instructions: 'Port the parser.',
      channel,
      workers: {
        researcher: worker({ description: 'looks things up', prompt: 'p', tools: ['Read', 'WebFetch'] }),
      },
    });
    expect(spec.name).toBe('coordinator');
    expect(spec.allowedTools).toEqual([
      'Agent',
      'TodoWrite',
      'Read',
      'Bash',
      'mcp__human__inbox',
      'mcp__human__ask',
      'WebFetch',
    ]);
    expect(spec.permissionMode).toBe('acceptEdits');
    expect(spec.instructions).toBe(`${COORDINATOR_RULES}\nPort the parser.`);
    expect(Object.keys(spec.agents ?? {})).toEqual(['researcher']);
    expect(Object.keys(spec.mcpServers ?? {})).toEqual(['human']);
    // The delegate wall, never the whitelist one; no workbench hooks without a workbench.
    expect(matchers(spec, 'PreToolUse')).toEqual([
      'Read|Grep',
      'ScheduleWakeup|CronCreate|RemoteTrigger',
      'Agent|Task',
      'Bash|Write|Edit|NotebookEdit',
    ]);
    expect(spec.hooks?.PostToolUse).toBeUndefined();
    expect(spec.sessionPreamble).toBeUndefined();
  });

  it('drops Read and glance Bash on request, but pre-approves Bash its workers need', () => {
    const readers = { r: worker({ description: 'd', prompt: 'p', tools: ['Read'] }) };
    expect(coordinator({ workers: readers, canRead: false, glance: false }).allowedTools).toEqual([
      'Agent',
      'TodoWrite',
    ]);
    const builders = { b: worker({ description: 'd', prompt: 'p' }) };
    expect(coordinator({ workers: builders, glance: false }).allowedTools).toEqual([
      'Agent',
      'TodoWrite',
      'Read',
      'Bash',
      'WebFetch',
      'WebSearch',
    ]);
  });

  it('gets the workbench index up front, workbench hooks, and the isolate guard when a worker is marked', () => {
    const workspace = tempDir();
    execFileSync('git', ['init', '-q', workspace]);
    const workbench = Workbench.isolated(workspace);
    const spec = coordinator({
      workers: { b: worker({ description: 'd', prompt: 'p', isolate: true }) },
      workbench,
    });
    expect(matchers(spec, 'PreToolUse')).toEqual([
      'Read|Grep',
      'ScheduleWakeup|CronCreate|RemoteTrigger',
      'Agent|Task',
      'Agent',
      'Bash|Write|Edit|NotebookEdit',
    ]);
    expect(matchers(spec, 'PostToolUse')).toEqual([
      'Write|Edit|NotebookEdit',
      'Bash|Read|Grep|Glob|WebFetch|WebSearch',
    ]);
    expect(spec.addDirs).toEqual([workbench.root]);
    expect(spec.sessionPreamble?.()).toContain(`# Workbench ${workbench.root}/`);
  });

  it('can switch spilling off', () => {
    const spec = coordinator({ workers: {}, workbench: new Workbench(tempDir()), spill: { threshold: 0 } });
    expect(matchers(spec, 'PostToolUse')).toEqual(['Write|Edit|NotebookEdit']);
  });
});

describe('worker', () => {
  it('appends the reporting rules, inherits the model and gets the full kit by default', () => {
    const definition = worker({ description: 'builds', prompt: 'You build.', maxTurns: 50 });
    expect(definition.prompt).toBe(`You build.\n\n${WORKER_RULES}`);
    expect(definition.model).toBe('inherit');
    expect(definition.tools).toEqual([
      'Read',
      'Write',
      'Edit',
      'Bash',
      'Glob',
      'Grep',
      'WebFetch',
      'WebSearch',
    ]);
    expect(definition.maxTurns).toBe(50);
    expect(worker({ description: 'd', prompt: 'raw', discipline: false }).prompt).toBe('raw');
  });

  it('asks for four sections in at most 30 lines and long material in artifacts/', () => {
    for (const section of ['Conclusion', 'Evidence', 'Output', 'Unverified'])
      expect(WORKER_RULES).toContain(section);
    expect(WORKER_RULES).toContain('at most 30 lines');
    expect(WORKER_RULES).toContain('artifacts/');
  });
});

describe('clarifier', () => {
  it('only asks and reads, in default permission mode, without a turn cap, walled', () => {
    const channel = new HumanChannel();
    const spec = clarifier({ channel });
    expect(spec.name).toBe('clarify');
    expect(spec.allowedTools).toEqual(['mcp__human__ask', 'Read', 'Glob', 'Grep', 'WebFetch', 'WebSearch']);
    expect(spec.permissionMode).toBe('default');
    expect(spec.maxTurns).toBeUndefined();
    expect(spec.sandboxRole).toBe('read-only');
    expect(matchers(spec, 'PreToolUse')).toEqual([
      'Bash|Write|Edit|NotebookEdit',
      'Read|Grep',
      'ScheduleWakeup|CronCreate|RemoteTrigger',
      'Agent|Task',
    ]);
    expect(clarifier({ channel, canRead: false }).allowedTools).toEqual(['mcp__human__ask']);
    for (const section of ['## Goal', '## Acceptance', '## Boundaries', '## Unknowns & assumptions']) {
      expect(CLARIFIER_RULES).toContain(section);
    }
  });
});

describe('judge', () => {
  it('reads and rules; with can-run it may use Bash but still not write', () => {
    const channel = new HumanChannel();
    const plain = judge({ channel });
    expect(plain.allowedTools).toEqual(['mcp__human__ask', 'Read', 'Glob', 'Grep']);
    expect(matchers(plain, 'PreToolUse')).toEqual([
      'Bash|Write|Edit|NotebookEdit',
      'Read|Grep',
      'ScheduleWakeup|CronCreate|RemoteTrigger',
      'Agent|Task',
    ]);
    const runner = judge({ channel, canRun: true });
    expect(runner.allowedTools).toContain('Bash');
    expect(matchers(runner, 'PreToolUse')).toEqual([
      'Write|Edit|NotebookEdit',
      'Read|Grep',
      'ScheduleWakeup|CronCreate|RemoteTrigger',
      'Agent|Task',
    ]);
    expect(runner.instructions).toContain(JUDGE_CAN_RUN);
    expect(runner.permissionMode).toBe('default');
    expect(JUDGE_RULES).toContain('achieved / not yet / cannot verify here');
    expect(JUDGE_RULES).toContain('Judge the artifact');
  });
});

describe('oracle', () => {
  it('is read-only and braked at 12 turns and $0.50, with the workbench index', () => {
    const workbench = new Workbench(tempDir());
    const spec = oracle({ workbench });
    expect(spec.name).toBe('aside');
    expect(spec.allowedTools).toEqual(['Read', 'Glob', 'Grep']);
    expect(spec.maxTurns).toBe(12);
    expect(spec.maxBudgetUsd).toBe(0.5);
    expect(spec.mcpServers).toBeUndefined();
    expect(spec.instructions.startsWith(ORACLE_RULES)).toBe(true);
    expect(spec.sessionPreamble?.()).toContain('# Workbench .flower/');
    expect(oracle({ maxTurns: 3 }).maxTurns).toBe(3);
  });
});
