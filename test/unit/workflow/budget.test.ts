import { describe, expect, it } from 'vitest';
import { budgetedRunner, isBudgetStop, raisedBudget, TaskBudget } from '../../../src/workflow/budget.js';
import { StepAbort } from '../../../src/workflow/step.js';
import { FakeRunner, fakeSpec } from './fake-runner.js';

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

  it('suggests twice the budget, written plainly', () => {
    expect(raisedBudget(5)).toBe('10');
    expect(raisedBudget(0.25)).toBe('0.50');
    expect(raisedBudget(1.5)).toBe('3');
  });
});
