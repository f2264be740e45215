import { describe, expect, it } from 'vitest';
import { firstPromptText, plainStepOf, rebuildLineage } from '../../../src/runtime/lineage-rebuild.js';

const at = (hours: number, minutes: number) => new Date(2026, 0, 2, hours, minutes, 0).getTime();

describe('plainStepOf', () => {
  it('maps attempts to their step and leaves judge rounds out', () => {
    expect(plainStepOf('work')).toBe('work');
    expect(plainStepOf('work#retry2')).toBe('work');
    expect(plainStepOf('work#round3')).toBe('work');
    expect(plainStepOf('work:verdict#1')).toBeUndefined();
    expect(plainStepOf('')).toBeUndefined();
  });
});

describe('rebuildLineage', () => {
  const sessions = [
    { sessionId: 'clarify-1', mtime: at(9, 0) },
    { sessionId: 'work-1', mtime: at(9, 30) },
    { sessionId: 'work-2', mtime: at(10, 0) },
    { sessionId: 'judge-1', mtime: at(10, 5) },
  ];
  const rows = [
    { step: 'clarify', session_id: 'clarify-1', started_at: 100 },
    { step: 'work', session_id: 'work-1', started_at: 200 },
    { step: 'work#round2', session_id: 'work-2', started_at: 300 },
    { step: 'work:verdict#1', session_id: 'judge-1', started_at: 400 },
  ];

  it("takes each step's newest manifest row whose session the store has, and says why", () => {
    const choices = rebuildLineage(rows, sessions, () => undefined);
    expect(choices.map(({ step, sessionId }) => [step, sessionId])).toEqual([
      ['clarify', 'clarify-1'],
      ['work', 'work-2'],
    ]);
    expect(choices[1]?.reason).toBe('the session of its newest manifest row, last active 10:00:00');
  });

  it('skips a row whose session the store no longer has', () => {
    const choices = rebuildLineage(
      rows,
      sessions.filter((s) => s.sessionId !== 'work-2'),
      () => undefined,
    );
    expect(choices.find((choice) => choice.step === 'work')?.sessionId).toBe('work-1');
  });

  it("prefers a newer session without a row (a killed process) that starts like the step's own", () => {
    const withOrphan = [
      ...sessions,
      { sessionId: 'killed', mtime: at(11, 0) },
      { sessionId: 'stranger', mtime: at(12, 0) },
    ];
    const prompts: Record<string, string> = {
      'work-2': 'Do the work.',
      killed: 'Do the work.',
      stranger: 'Something else.',
      'clarify-1': 'Clarify.',
    };
    const choices = rebuildLineage(rows, withOrphan, (id) => prompts[id]);
    const work = choices.find((choice) => choice.step === 'work');
    expect(work?.sessionId).toBe('killed');
    expect(work?.reason).toMatch(
      /^the newest session that starts like its manifest session, last active 11:00:00 \(it has no manifest row/,
    );
    expect(choices.find((choice) => choice.step === 'clarify')?.sessionId).toBe('clarify-1');
  });

  it('a session a row names as retired (an earlier generation) is never taken for a killed process', () => {
    const handedOff = [
      { step: 'work', session_id: 'work-3', started_at: 500, retired: ['work-old'] },
      { step: 'clarify', session_id: 'clarify-1', started_at: 100 },
    ];
    const stored = [
      { sessionId: 'clarify-1', mtime: at(9, 0) },
      { sessionId: 'work-3', mtime: at(10, 0) },
      // Written to after the handoff (a late mirror write), so it looks newer.
      { sessionId: 'work-old', mtime: at(10, 30) },
    ];
    const choices = rebuildLineage(handedOff, stored, () => 'Do the work.');
    expect(choices.find((choice) => choice.step === 'work')?.sessionId).toBe('work-3');
  });

  it('an orphan older than the chosen session does not replace it: the newer one of the two wins', () => {
    const withOlder = [...sessions, { sessionId: 'early', mtime: at(9, 45) }];
    const choices = rebuildLineage(rows, withOlder, (id) =>
      id === 'clarify-1' ? 'Clarify.' : 'Do the work.',
    );
    expect(choices.find((choice) => choice.step === 'work')?.sessionId).toBe('work-2');
  });

  it('of several orphans that start like the step, the newest wins', () => {
    const withTwo = [
      ...sessions,
      { sessionId: 'killed-first', mtime: at(11, 0) },
      { sessionId: 'killed-last', mtime: at(12, 0) },
    ];
    const choices = rebuildLineage(rows, withTwo, (id) => (id === 'clarify-1' ? 'Clarify.' : 'Do the work.'));
    expect(choices.find((choice) => choice.step === 'work')?.sessionId).toBe('killed-last');
  });

  it('finds nothing without rows', () => {
    expect(rebuildLineage([], sessions, () => 'x')).toEqual([]);
  });
});

describe('rebuildLineage with in-flight markers (issue 18 §6: a step killed before its row)', () => {
  const stored = [
    { sessionId: 'clarify-1', mtime: at(9, 0) },
    { sessionId: 'work-1', mtime: at(9, 30) },
    { sessionId: 'work-killed', mtime: at(10, 0) },
    { sessionId: 'judge-killed', mtime: at(10, 5) },
  ];
  const rows = [
    { step: 'clarify', session_id: 'clarify-1', started_at: 100 },
    { step: 'work', session_id: 'work-1', started_at: 200 },
  ];

  it('a step with no row at all continues the session its marker names, and says so', () => {
    const choices = rebuildLineage([], stored, () => undefined, [
      { step: 'work', sessionId: 'work-killed', startedAt: 300 },
    ]);
    expect(choices).toEqual([
      {
        step: 'work',
        sessionId: 'work-killed',
        reason: 'the session it was running when its process ended, last active 10:00:00',
      },
    ]);
  });

  it("a marker newer than the step's newest row wins; an older one does not", () => {
    const killedLater = rebuildLineage(rows, stored, () => undefined, [
      { step: 'work#round2', sessionId: 'work-killed', startedAt: 300 },
    ]);
    expect(killedLater.map(({ step, sessionId }) => [step, sessionId])).toEqual([
      ['clarify', 'clarify-1'],
      ['work', 'work-killed'],
    ]);
    const stale = rebuildLineage(rows, stored, () => undefined, [
      { step: 'work', sessionId: 'work-killed', startedAt: 150 },
    ]);
    expect(stale.find((choice) => choice.step === 'work')).toMatchObject({
      sessionId: 'work-1',
      reason: expect.stringMatching(/^the session of its newest manifest row/),
    });
  });

  it("skips a marker whose session the store lacks, and never takes a judge's marker for a step", () => {
    const choices = rebuildLineage(rows, stored, () => undefined, [
      { step: 'work', sessionId: 'not-stored', startedAt: 300 },
      { step: 'work:verdict#1', sessionId: 'judge-killed', startedAt: 400 },
    ]);
    expect(choices.map(({ step, sessionId }) => [step, sessionId])).toEqual([
      ['clarify', 'clarify-1'],
      ['work', 'work-1'],
    ]);
  });

  it("a marker's session is accounted for: it is not taken as an unrecorded restart of another step", () => {
    // Same first prompt as work-1 and newer: without the marker it would count as a later start of
    // `work`; the marker says it is the killed attempt of `clarify`.
    const noJudge = stored.filter((session) => session.sessionId !== 'judge-killed');
    const choices = rebuildLineage(rows, noJudge, () => 'Same prompt.', [
      { step: 'clarify', sessionId: 'work-killed', startedAt: 300 },
    ]);
    expect(choices.map(({ step, sessionId }) => [step, sessionId])).toEqual([
      ['clarify', 'work-killed'],
      ['work', 'work-1'],
    ]);
  });
});

describe('firstPromptText', () => {
  it('reads the first real user prompt, string or text blocks', () => {
    expect(
      firstPromptText([
        { type: 'queue-operation' },
        { type: 'user', isMeta: true, message: { content: 'caveat' } },
        {
          type: 'user',
          message: {
            role: 'user',
            content: [{ type: 'text', text: 'Do' }, { type: 'image' }, { type: 'text', text: 'it.' }],
          },
        },
      ]),
    ).toBe('Do\nit.');
    expect(firstPromptText([{ type: 'user', message: { content: 'Plain.' } }])).toBe('Plain.');
    // A user entry without text (only an image, or a tool result) is not the prompt.
    expect(
      firstPromptText([
        { type: 'user', message: { content: [{ type: 'image' }] } },
        { type: 'user', message: { content: [{ type: 'text', text: 'Then this.' }] } },
      ]),
    ).toBe('Then this.');
    expect(firstPromptText([{ type: 'assistant' }])).toBeUndefined();
  });
});
