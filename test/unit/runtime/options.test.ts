import type { SessionStore } from '@anthropic-ai/claude-agent-sdk';
import { describe, expect, it } from 'vitest';
import type { AgentSpec } from '../../../src/runtime/agent-spec.js';
import {
  BACKGROUND_TASK_WAIT_MS,
  buildOptions,
  childEnvironment,
  pluginDirectory,
} from '../../../src/runtime/options.js';
import { defaultSandboxPolicy, REGISTRY_DOMAINS } from '../../../src/runtime/sandbox/policy.js';

const backgroundWait = { CLAUDE_CODE_PRINT_BG_WAIT_CEILING_MS: String(BACKGROUND_TASK_WAIT_MS) };

const spec: AgentSpec = {
  name: 'worker',
  instructions: 'Follow the house rules.',
  allowedTools: ['Read', 'Glob'],
  permissionMode: 'default',
};
const store = { append: async () => {}, load: async () => null } as SessionStore;

describe('buildOptions', () => {
  it('is portable by default: no host or project settings are read', () => {
    expect(buildOptions(spec, { cwd: '/w' }).settingSources).toEqual([]);
    expect(buildOptions(spec, { cwd: '/w', portable: false }).settingSources).toEqual(['project']);
  });

  it('appends the instructions to the claude_code preset instead of replacing it', () => {
    expect(buildOptions(spec, { cwd: '/w' }).systemPrompt).toEqual({
      type: 'preset',
      preset: 'claude_code',
      append: 'Follow the house rules.',
    });
  });

  it('loads the shipped plugin directory unless told not to', () => {
    expect(buildOptions(spec, { cwd: '/w' }).plugins).toEqual([{ type: 'local', path: pluginDirectory }]);
    expect(buildOptions(spec, { cwd: '/w', usePlugin: false }).plugins).toBeUndefined();
  });

  it('copies tools, mode, budget, turns, model and effort, leaving unset ones out', () => {
    const options = buildOptions(
      { ...spec, disallowedTools: ['WebFetch'], maxBudgetUsd: 2, maxTurns: 9, model: 'opus', effort: 'high' },
      { cwd: '/w' },
    );
    expect(options).toMatchObject({
      allowedTools: ['Read', 'Glob'],
      disallowedTools: ['WebFetch'],
      permissionMode: 'default',
      maxBudgetUsd: 2,
      maxTurns: 9,
      model: 'opus',
      effort: 'high',
      cwd: '/w',
    });
    const bare = buildOptions(spec, { cwd: '/w' });
    for (const key of [
      'disallowedTools',
      'maxBudgetUsd',
      'maxTurns',
      'model',
      'effort',
      'agents',
      'mcpServers',
      'hooks',
    ])
      expect(bare).not.toHaveProperty(key);
  });

  it('passes resume with fork and resume-at, and drops both without resume', () => {
    expect(buildOptions(spec, { cwd: '/w', resume: 's1', fork: true, resumeAt: 'u9' })).toMatchObject({
      resume: 's1',
      forkSession: true,
      resumeSessionAt: 'u9',
    });
    const without = buildOptions(spec, { cwd: '/w', fork: true, resumeAt: 'u9' });
    expect(without).not.toHaveProperty('resume');
    expect(without).not.toHaveProperty('forkSession');
    expect(without).not.toHaveProperty('resumeSessionAt');
  });

  it('mirrors transcripts into the session store with eager flushing', () => {
    expect(buildOptions(spec, { cwd: '/w', sessionStore: store })).toMatchObject({
      sessionStore: store,
      sessionStoreFlush: 'eager',
    });
  });

  it('passes agents, MCP servers and hooks; setup hooks replace the spec ones', () => {
    const hook = { hooks: [async () => ({})] };
    const options = buildOptions(
      {
        ...spec,
        agents: { coder: { description: 'codes', prompt: 'code' } },
        mcpServers: { human: { type: 'stdio', command: 'x' } },
        hooks: { PreToolUse: [hook] },
      },
      { cwd: '/w' },
    );
    expect(options.agents).toHaveProperty('coder');
    expect(options.mcpServers).toHaveProperty('human');
    expect(options.hooks?.PreToolUse).toEqual([hook]);
    const replaced = buildOptions(
      { ...spec, hooks: { PreToolUse: [hook] } },
      { cwd: '/w', hooks: { PostToolUse: [hook] } },
    );
    expect(replaced.hooks).toEqual({ PostToolUse: [hook] });
  });

  it("joins the spec's and the setup's extra directories without duplicates", () => {
    expect(
      buildOptions({ ...spec, addDirs: ['/a', '/b'] }, { cwd: '/w', addDirs: ['/b', '/c'] })
        .additionalDirectories,
    ).toEqual(['/a', '/b', '/c']);
  });

  it("uses the spec's own working directory when it names one", () => {
    expect(buildOptions({ ...spec, cwd: '/elsewhere' }, { cwd: '/w' }).cwd).toBe('/elsewhere');
  });
});

describe('childEnvironment', () => {
  it("lets background workers run past the binary's 10-minute wait, unless the caller sets the ceiling", () => {
    expect(childEnvironment(spec, {}).CLAUDE_CODE_PRINT_BG_WAIT_CEILING_MS).toBe('86400000');
    expect(
      childEnvironment(spec, { CLAUDE_CODE_PRINT_BG_WAIT_CEILING_MS: '5000' })
        .CLAUDE_CODE_PRINT_BG_WAIT_CEILING_MS,
    ).toBe('5000');
  });

  it('starts from the base environment, then the spec, then what compaction writes', () => {
    const env = childEnvironment(
      {
        ...spec,
        env: { FOO: 'spec', DISABLE_AUTO_COMPACT: '0' },
        compact: { mode: 'no-summary', window: 300_000 },
      },
      { PATH: '/bin', FOO: 'base', EMPTY: undefined },
    );
    expect(env).toEqual({
      ...backgroundWait,
      PATH: '/bin',
      FOO: 'spec',
      DISABLE_AUTO_COMPACT: '1',
      CLAUDE_CODE_AUTO_COMPACT_WINDOW: '300000',
    });
  });

  it('turns every compaction off in mode off and writes nothing in mode auto', () => {
    expect(childEnvironment({ ...spec, compact: { mode: 'off' } }, {})).toEqual({
      ...backgroundWait,
      DISABLE_COMPACT: '1',
    });
    expect(childEnvironment({ ...spec, compact: { mode: 'auto' } }, {})).toEqual(backgroundWait);
  });

  it('is part of the options, because the SDK replaces the child environment wholesale', () => {
    expect(
      buildOptions({ ...spec, compact: { mode: 'no-summary' } }, { cwd: '/w', baseEnv: { HOME: '/h' } }).env,
    ).toEqual({
      ...backgroundWait,
      HOME: '/h',
      DISABLE_AUTO_COMPACT: '1',
    });
  });
});

describe('the session sandbox in the options', () => {
  const places = { reachable: ['/ws'], caches: [], hidden: ['/home/u/.ssh'] };
  const made: unknown[] = [];
  const walled: AgentSpec = {
    ...spec,
    sandboxRole: 'read-only',
    sandboxHooks: (sandbox) => {
      made.push(sandbox);
      return { PreToolUse: [{ matcher: 'Bash', hooks: [] }] };
    },
  };

  it("an enabled policy gives the role's sandbox, file-tool rules for the same stores, and the sandbox to the role's hooks", () => {
    made.length = 0;
    const sandbox = { policy: defaultSandboxPolicy, places, env: { PATH: '/bin' } };
    const options = buildOptions(walled, { cwd: '/ws', usePlugin: false, sandbox });
    expect(options.sandbox?.filesystem?.denyWrite).toEqual(['/ws']);
    expect(options.settings).toEqual({
      permissions: {
        deny: [
          'Read(//home/u/.ssh)',
          'Read(//home/u/.ssh/**)',
          'Edit(//home/u/.ssh)',
          'Edit(//home/u/.ssh/**)',
        ],
      },
    });
    expect(made).toEqual([sandbox]);
    expect(options.hooks?.PreToolUse?.map((matcher) => matcher.matcher)).toContain('Bash');
  });

  it("a role that names no sandbox gets the worker's: it writes what it reaches and the caches, and reaches the registries", () => {
    const sandbox = {
      policy: defaultSandboxPolicy,
      places: { ...places, caches: ['/home/u/.npm'] },
      env: {},
    };
    const options = buildOptions(spec, { cwd: '/ws', usePlugin: false, sandbox });
    expect(options.sandbox?.filesystem?.allowWrite).toEqual(['/ws', '/home/u/.npm']);
    expect(options.sandbox?.filesystem?.denyWrite).toBeUndefined();
    expect(options.sandbox?.network?.allowedDomains).toEqual([...REGISTRY_DOMAINS]);
  });

  it('without one (or with --no-sandbox) nothing is sandboxed, and the role still gets its hooks, made without', () => {
    for (const sandbox of [
      undefined,
      { policy: { ...defaultSandboxPolicy, enabled: false }, places, env: {} },
    ]) {
      made.length = 0;
      const options = buildOptions(walled, { cwd: '/ws', usePlugin: false, ...(sandbox ? { sandbox } : {}) });
      expect(options.sandbox).toBeUndefined();
      expect(options.settings).toBeUndefined();
      expect(made).toEqual([undefined]);
      expect(options.hooks?.PreToolUse?.map((matcher) => matcher.matcher)).toContain('Bash');
    }
  });
});
