import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { saveManifestRows } from '../../../src/runtime/manifest.js';
import { finishStepResult, newStepResult, type StepResult } from '../../../src/runtime/step-result.js';
import { ASIDE_RUN_DIR } from '../../../src/runtime/task-spend.js';
import { budgetedRunner, isBudgetStop, raisedBudget, TaskBudget } from '../../../src/workflow/budget.js';
import { StepAbort } from '../../../src/workflow/step.js';
import { FakeRunner, fakeSpec } from './fake-runner.js';

function spent(step: string, run: string, costUsd: number): StepResult {
  const result = newStepResult(step, run, 100);
  result.costUsd = costUsd;
  finishStepResult(result, 110);
  return result;
}

describe('the task budget', () => {
  it('gives each step what is left as its maxBudgetUsd, keeping a smaller cap of its own', async () => {
    let spent = 1.25;
    const inner = new FakeRunner();
    const runner = budgetedRunner(inner, new TaskBudget(5, () => spent));
    await runner.run(fakeSpec('work'), 'go');
    expect(inner.calls[0]?.spec.maxBudgetUsd).toBe(3.75);
    spent = 4.9;
    await runner.run({ ...fakeSpec('aside'), maxBudgetUsd: 0.05 }, 'go');
    expect(inner.calls[1]?.spec.maxBudgetUsd).toBe(0.05);
  });

  it('starts no step once it is spent, and says how to continue', async () => {
    const inner = new FakeRunner();
    const runner = budgetedRunner(inner, new TaskBudget(5, () => 4.98 + 0.03));
    const refused = runner.run(fakeSpec('work'), 'go');
    await expect(refused).rejects.toThrow(StepAbort);
    await expect(refused).rejects.toThrow('budget spent: $5.01 of $5.00; run with --budget 10 to continue');
    expect(inner.calls).toHaveLength(0);
  });

  it('turns the binary\'s "Reached maximum budget" into the budget line, keeping its words', async () => {
    let spent = 4;
    const inner = new FakeRunner(() => {
      spent = 5.2;
      return { ok: false, error: 'Error: Claude Code returned an error result: Reached maximum budget ($1)' };
    });
    const runner = budgetedRunner(inner, new TaskBudget(5, () => spent));
    const result = await runner.run(fakeSpec('work'), 'go');
    expect(result.error).toBe('budget spent: $5.20 of $5.00; run with --budget 10 to continue');
    expect(result.errors).toEqual([
      'Error: Claude Code returned an error result: Reached maximum budget ($1)',
    ]);
    expect(isBudgetStop(result)).toBe(true);
  });

  it('leaves a step that hit a smaller cap of its own alone while the task still has money', async () => {
    const inner = new FakeRunner(() => ({ ok: false, error: 'Reached maximum budget ($0.5)' }));
    const runner = budgetedRunner(inner, new TaskBudget(5, () => 1));
    const result = await runner.run({ ...fakeSpec('aside'), maxBudgetUsd: 0.5 }, 'go');
    expect(result.error).toBe('Reached maximum budget ($0.5)');
    expect(isBudgetStop(result)).toBe(false);
  });

  it('a budget spent to the cent is spent: no step starts with nothing left', async () => {
    const inner = new FakeRunner();
    const runner = budgetedRunner(inner, new TaskBudget(5, () => 5));
    await expect(runner.run(fakeSpec('work'), 'go')).rejects.toThrow(StepAbort);
    expect(inner.calls).toHaveLength(0);
  });

  it("a role's own cap larger than what is left gets what is left", async () => {
    const inner = new FakeRunner();
    const runner = budgetedRunner(inner, new TaskBudget(5, () => 4));
    await runner.run({ ...fakeSpec('work'), maxBudgetUsd: 10 }, 'go');
    expect(inner.calls[0]?.spec.maxBudgetUsd).toBe(1);
  });

  it("finds the binary's words among the attempt's errors too, and rewrites the step's row with the line", async () => {
    let spent = 4;
    const inner = new FakeRunner(() => {
      spent = 5.1;
      return {
        ok: false,
        error: 'Error: Claude Code process exited with code 1',
        errors: ['Reached maximum budget ($1)'],
      };
    });
    const rewritten: Array<string | null | undefined> = [];
    const books = Object.assign(inner, {
      annotate: (result: StepResult) => {
        rewritten.push(result.error);
      },
    });
    const result = await budgetedRunner(books, new TaskBudget(5, () => spent)).run(fakeSpec('work'), 'go');
    expect(isBudgetStop(result)).toBe(true);
    expect(rewritten).toEqual(['budget spent: $5.10 of $5.00; run with --budget 10 to continue']);
  });

  it('a step that succeeded stays a success, even when it spent the last of the budget', async () => {
    let spent = 4;
    const last = new FakeRunner(() => {
      spent = 5.5;
      return { ok: true, errors: ['Reached maximum budget ($1)'] };
    });
    const done = await budgetedRunner(last, new TaskBudget(5, () => spent)).run(fakeSpec('work'), 'go');
    expect(done.ok).toBe(true);
    expect(isBudgetStop(done)).toBe(false);
  });

  it('is only the budget line that makes a budget stop', () => {
    expect(isBudgetStop({ error: 'the budget of tokens ran out' } as never)).toBe(false);
    expect(
      isBudgetStop({ error: 'budget spent: $1.00 of $1.00; run with --budget 2 to continue' } as never),
    ).toBe(true);
  });

  it('the task spend for a run directory counts the side questions', () => {
    const runDir = mkdtempSync(join(tmpdir(), 'flower-budget-'));
    try {
      saveManifestRows(runDir, 'run-a', [spent('work', 'run-a', 4)]);
      saveManifestRows(join(runDir, ASIDE_RUN_DIR), 'aside-1', [spent('aside', 'aside-1', 0.75)]);
      const budget = TaskBudget.forRunDir(5, runDir);
      expect(budget.spent()).toBe(4.75);
      expect(budget.remaining()).toBeCloseTo(0.25, 9);
    } finally {
      rmSync(runDir, { recursive: true, force: true });
    }
  });

  it('suggests twice the budget, written plainly', () => {
    expect(raisedBudget(5)).toBe('10');
    expect(raisedBudget(0.25)).toBe('0.50');
    expect(raisedBudget(1.5)).toBe('3');
  });
});
