import { describe, expect, it } from 'vitest';
import {
  addedToBriefLine,
  isAchieved,
  lastTimeLines,
  localTime,
  taskLine,
} from '../../../../src/cli/interaction/task-notice.js';
import type { WakeState } from '../../../../src/workflow/starter.js';

const state = (fields: Partial<WakeState> = {}): WakeState => ({
  waking: true,
  brief: '',
  goal: '',
  items: 2,
  hostChecks: 0,
  pendingRemark: '',
  checks: 2,
  woke: 1,
  steps: {},
  goalStatement: 'hello.py exists and prints hello world.\nMore detail.',
  spend: { stepsUsd: 0.42, asidesUsd: 0, totalUsd: 0.42, archivedUsd: 0, runs: 1, lastActivity: 0 },
  ...fields,
});

describe('what flower says about the task already in a directory', () => {
  it('names the task by the first line of its goal', () => {
    expect(taskLine(state())).toBe('hello.py exists and prints hello world.');
    expect(taskLine(state({ goalStatement: 'x'.repeat(200) }))).toHaveLength(80);
    expect(taskLine(state({ goalStatement: '' }))).toBe('its brief is in .flower/notes/brief.md');
    expect(addedToBriefLine(state())).toBe(
      'this directory has a task (hello.py exists and prints hello world.); your words were added to its brief — use --new for a separate task',
    );
  });

  it('says what happened last time: the ruling, its round, when, and what the task spent', () => {
    const at = new Date(2025, 0, 2, 14, 5).getTime() / 1000;
    const lines = lastTimeLines(
      state({
        lastRuling: {
          verdict: 'achieved',
          reason: 'ok',
          notPassed: [],
          round: 1,
          rounds: 3,
          at,
          costUsd: 0.1,
          checks: [],
        },
      }),
    );
    expect(lines).toEqual([
      'last time: the judge ruled achieved (round 1/3) at 2025-01-02 14:05 · spent $0.42 in 1 run',
      '  goal: hello.py exists and prints hello world.',
    ]);
    expect(localTime(at)).toBe('2025-01-02 14:05');
    expect(lastTimeLines(state())).toEqual([]);
    expect(isAchieved(state())).toBe(false);
  });
});
