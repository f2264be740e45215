import { describe, expect, it } from 'vitest';
import { notFound } from '../../../../src/cli/commands/log-action.js';

const row = (step: string, run: string, startedAt: number) => ({ step, run, startedAt });
const known = [row('clarify', 'r1', 1), row('work', 'r1', 2), row('work', 'r2', 3)];

describe('what flower log says when it has nothing to show', () => {
  it('blames an unknown run, with or without a step', () => {
    for (const step of ['work', 'clarify', undefined])
      expect(notFound(known, step, 'nosuch', '/ws/runs')).toEqual({
        message:
          'No run "nosuch" in /ws/runs; runs here (latest last): r1, r2. Leave out --run to see a step\'s latest run.',
        usage: false,
      });
  });

  it('lists only the latest runs of a long task', () => {
    const many = Array.from({ length: 8 }, (_, index) => row('work', `r${index}`, index));
    expect(notFound(many, 'work', 'nosuch', '/ws/runs')?.message).toContain(
      'runs here (latest last): …, r3, r4, r5, r6, r7.',
    );
  });

  it('asks for the step when it is left out (a usage error), naming the steps in scope', () => {
    expect(notFound(known, undefined, undefined, '/ws/runs')).toEqual({
      message: 'Name the step to show, e.g. flower log clarify (steps here: clarify, work).',
      usage: true,
    });
    expect(notFound(known, undefined, 'r2', '/ws/runs')?.message).toBe(
      'Name the step to show, e.g. flower log work --run r2 (steps in run r2: work).',
    );
  });

  it('blames the step when the run is there but the step is not', () => {
    expect(notFound(known, 'clarify', 'r2', '/ws/runs')?.message).toBe(
      'No step "clarify" in run r2; steps in run r2: work.',
    );
    expect(notFound(known, 'judge', undefined, '/ws/runs', true)?.message).toBe(
      'No step "judge" in /ws/runs (manifest.json is unreadable, so only running steps are known); steps here: clarify, work.',
    );
    expect(notFound(known, 'work', 'r1', '/ws/runs')).toBeUndefined();
  });
});
