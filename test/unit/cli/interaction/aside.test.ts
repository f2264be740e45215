import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Workbench } from '../../../../src/agents/workbench.js';
import { type AsideOptions, answerAside, asidePrompt } from '../../../../src/cli/interaction/aside.js';
import { TaskBudget } from '../../../../src/workflow/budget.js';

const plain = { magenta: (text: string) => text, dim: (text: string) => text, red: (text: string) => text };

describe('asidePrompt', () => {
  it('holds the question, the recent events in order, and where the workbench is', () => {
    const workbench = new Workbench('/proj');
    const prompt = asidePrompt(
      'where are we',
      ['[step·main] work', '[tool_call/Bash·subagent] npm test'],
      workbench,
    );
    expect(prompt).toContain('Question: where are we');
    expect(prompt).toContain('[step·main] work\n[tool_call/Bash·subagent] npm test');
    expect(prompt).toContain('/proj/.flower');
  });

  it('says so when there is nothing to show yet and no workbench', () => {
    const prompt = asidePrompt('anything?', [], undefined);
    expect(prompt).toContain('(none yet)');
    expect(prompt).toContain('This run has no workbench.');
  });
});

/** Asks one side question in a fresh workspace and returns what was printed. */
async function ask(options: Partial<AsideOptions>): Promise<string[]> {
  const workspace = mkdtempSync(join(tmpdir(), 'flower-aside-'));
  const printed: string[] = [];
  await answerAside('where are we', {
    workspace,
    runDir: join(workspace, 'runs'),
    workbench: undefined,
    env: { PATH: process.env.PATH ?? '' },
    recent: () => [],
    print: (lines) => printed.push(...lines),
    width: () => 80,
    paint: plain,
    ...options,
  });
  return printed;
}

describe('answerAside', () => {
  it('prints a failure as one line and never throws', async () => {
    const printed = await ask({});
    expect(printed).toHaveLength(1);
    expect(printed[0]).toMatch(/^# aside failed: Missing credentials/);
  });

  it('is not asked once the task budget is spent, and says so with the budget line', async () => {
    const printed = await ask({
      // Credentials that would let it start: only the budget may stop it.
      env: {
        PATH: process.env.PATH ?? '',
        ANTHROPIC_API_KEY: 'sk-ant-test',
        ANTHROPIC_BASE_URL: 'http://127.0.0.1:9',
      },
      budget: new TaskBudget(1, () => 1.25),
    });
    expect(printed).toEqual([
      '# aside failed: budget spent: $1.25 of $1.00; run with --budget 2 to continue',
    ]);
  });
});
