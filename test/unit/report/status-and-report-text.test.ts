/**
 * What `flower status` and the text report say (issue 21, polish): the next step after an achieved
 * task and after `once`, long outcomes wrapped within the width, the request as typed before there
 * is a brief, a flower at work on its first step, the process behind a running step, a resumed
 * step, the run and task of each row under --all, and a killed attempt in plain words.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Workbench } from '../../../src/agents/workbench.js';
import { ONCE_STEP as ONCE_OWNER } from '../../../src/cli/commands/once-action.js';
import { displayWidth, wrap } from '../../../src/cli/terminal/terminal-text.js';
import { buildReport, type ReportInput, runningSteps } from '../../../src/report/report.js';
import { reportLines } from '../../../src/report/report-text.js';
import type { InFlightAttempt } from '../../../src/report/run-data.js';
import {
  BEQUEST_STEP,
  NoTaskError,
  ONCE_STEP,
  requestIn,
  statusLines,
  taskStatus,
} from '../../../src/report/status.js';
import { KILLED_DETAIL, stepRecords } from '../../../src/report/steps.js';
import type { StoredManifestRow } from '../../../src/runtime/manifest.js';
import type { Entry } from '../../../src/store/transcript.js';
import { BEQUEST_STEP as BEQUEST_OWNER } from '../../../src/workflow/bequest-turn.js';
import { manifestRow, books as reportBooks, T0 } from '../../support/report-books.js';

const row = manifestRow;

// A run directory that is nowhere: no task lock, no in-flight marker is found by accident.
function books(rows: StoredManifestRow[], extra: Parameters<typeof reportBooks>[1] = {}) {
  return reportBooks(rows, {
    location: { workspace: '/ws', runDir: '/ws/runs-that-do-not-exist' },
    ...extra,
  });
}

const layout = (width: number) => ({ width, wrap });
const oneSpaced = (text: string) => text.replace(/\s+/g, ' ');
const clock = (epoch: number) => {
  const at = new Date(epoch * 1000);
  return `${String(at.getHours()).padStart(2, '0')}:${String(at.getMinutes()).padStart(2, '0')}`;
};

describe('status: what to type next', () => {
  it('after an achieved verdict and its bequest, a new task (it said "continue where it stopped")', () => {
    const status = taskStatus(
      books([
        row({ step: 'work' }),
        row({ step: 'work:verdict#1', verdict: 'achieved', reason: 'It works.', round: 1, rounds: 3 }),
        row({ step: BEQUEST_STEP }),
      ]),
    );
    expect(status.next).toBe(
      '`flower report` for the details; `flower --new "<request>"` starts a new task here',
    );
  });

  it('after more work following an achieved verdict, to continue', () => {
    const status = taskStatus(
      books([
        row({ step: 'work:verdict#1', verdict: 'achieved', reason: 'It works.' }),
        row({ step: 'clarify' }),
      ]),
    );
    expect(status.next).not.toContain('--new');
  });

  it('after `once`, the command that continues its session (it said "continue clarifying")', () => {
    const done = taskStatus(books([row({ step: ONCE_STEP, session_id: 's-1' })]));
    expect(done.next).toBe(
      '`flower once --resume s-1 "<what next>"` to continue it; `flower log ad-hoc` shows what it did',
    );
    const failed = taskStatus(books([row({ step: ONCE_STEP, session_id: 's-2', ok: false, error: 'boom' })]));
    expect(failed.next).toContain('`flower once --resume s-2 "<what next>"` to try again');
  });

  it('uses the step names their owners write', () => {
    expect(ONCE_STEP).toBe(ONCE_OWNER);
    expect(BEQUEST_STEP).toBe(BEQUEST_OWNER);
  });
});

describe('status: lines within the width', () => {
  const reason =
    'The script prints hello world, but the acceptance asks for a README that says how to run it and for an exit code of 0 when python3 is missing, and neither is there yet.';
  const status = taskStatus(
    books([
      row({ step: 'work', rejected: reason, missing: ['a README that says how to run it', 'exit code 0'] }),
      row({
        step: 'work:verdict#1',
        verdict: 'not yet',
        reason,
        round: 1,
        rounds: 3,
        not_passed: ['a README that says how to run it', 'exit code 0'],
      }),
    ]),
  );

  for (const width of [100, 60]) {
    it(`wraps a 200-character verdict and rejection under their column at ${width} columns`, () => {
      const lines = statusLines(status, T0 + 200, layout(width));
      const wide = lines.filter((line) => displayWidth(line) > width);
      expect(wide).toEqual([]);
      const text = oneSpaced(lines.join('\n'));
      expect(text).toContain(`rejected: ${oneSpaced(reason)} (missing: a README`);
      expect(text).toContain(`Last verdict: not yet after 1/3 rounds: ${reason.replace(/\.$/, '')}`);
      // Continuation lines of a step row start under its state column, not at the margin.
      const rowAt = lines.findIndex((line) => /^ {2}work {2}/.test(line));
      expect(lines[rowAt + 1]).toMatch(/^ {2}\s{4,}\S/);
    });
  }

  it('leaves the lines whole without a layout (the library caller lays them out)', () => {
    const lines = statusLines(status, T0 + 200);
    expect(lines.some((line) => line.length > 160)).toBe(true);
  });
});

describe('status: the request and the flower at work before anything is recorded', () => {
  it('shows a flower holding the task as a task at work, not "No task" (its first step has no row yet)', () => {
    expect(() => taskStatus(books([]))).toThrow(NoTaskError);
    const holder = { pid: 4242, host: 'here', since: T0, alive: true };
    const status = taskStatus(books([], { holder }), 'write hello.py');
    const lines = statusLines(status, T0 + 30);
    expect(lines[0]).toBe('Task: write hello.py');
    expect(lines).toContain(`Now: a flower is working on this task: running · pid 4242 since ${clock(T0)}`);
    expect(lines.at(-1)).toBe(
      'Next: a flower is working on this task: `flower report` shows it so far; `flower status` again to follow it',
    );
  });

  it('reads the request from the first message, without the workbench index before it', () => {
    const user = (content: unknown, extra: Partial<Entry> = {}) =>
      ({ type: 'user', message: { role: 'user', content }, ...extra }) as unknown as Entry;
    const preamble = [
      '# Workbench /ws/.flower/',
      '',
      'What already exists here — use it before writing anything new:',
      '(empty so far)',
      '',
      'Conventions:',
      '1. A script you will run more than once goes in `/ws/.flower/scripts/`.',
      '2. Output longer than 2000 characters goes in `/ws/.flower/artifacts/`.',
      '3. Each key decision goes in its own file under `/ws/.flower/notes/`.',
    ].join('\n');
    expect(requestIn([user(`${preamble}\n\nwrite hello.py\nin python`)])).toBe('write hello.py');
    expect(requestIn([user('caveat', { isMeta: true }), user([{ type: 'text', text: 'say hi' }])])).toBe(
      'say hi',
    );
    expect(requestIn([user(`${preamble.split('\n').slice(0, 3).join('\n')}`)])).toBeNull();
    expect(requestIn([])).toBeNull();
  });

  it('knows the index the workbench really writes, with files listed in it', () => {
    const workspace = mkdtempSync(join(tmpdir(), 'flower-request-'));
    try {
      const workbench = new Workbench(workspace);
      workbench.promptBlock();
      writeFileSync(join(workbench.scripts, 'build.sh'), '# desc: builds it\n');
      const first = `${workbench.promptBlock()}\n\nmake the build green`;
      expect(first).toContain('build.sh');
      const user = { type: 'user', message: { role: 'user', content: first } } as unknown as Entry;
      expect(requestIn([user])).toBe('make the build green');
    } finally {
      rmSync(workspace, { recursive: true, force: true });
    }
  });

  it('says the typed request when there is no brief, and the brief’s goal when there is one', () => {
    const status = taskStatus(books([row({ step: ONCE_STEP, session_id: 's' })]), 'say hi');
    expect(status.task).toBe('say hi');
  });
});

describe('a running step names its process', () => {
  const marker = (fields: Partial<InFlightAttempt>): InFlightAttempt => ({
    sessionId: 'w',
    step: 'work',
    pid: 4242,
    host: 'here',
    since: T0 + 200,
    alive: true,
    ...fields,
  });

  it('from its in-flight marker: pid and start; a gone process stopped; another host is named', () => {
    const records = stepRecords([row({ step: 'clarify', session_id: 'c' })]);
    const sessions = new Map([['w', { projectKey: '-ws', sessionId: 'w', mtime: (T0 + 250) * 1000 }]]);
    const [live] = runningSteps(records, {}, sessions, [marker({})]);
    expect(live).toMatchObject({ step: 'work', startedAt: T0 + 200, outcome: 'running' });
    expect(live?.detail).toBe(`running · pid 4242 since ${clock(T0 + 200)}`);
    const [gone] = runningSteps(records, {}, sessions, [marker({ alive: false })]);
    expect(gone?.detail).toMatch(/^stopped before it recorded a result: pid 4242 since \d\d:\d\d is gone/);
    const [there] = runningSteps(records, {}, sessions, [marker({ alive: null, host: 'box-2' })]);
    expect(there?.detail).toMatch(/^running on host box-2 · pid 4242 since/);
    // Before the session's first write, the marker alone says the step runs.
    const [early] = runningSteps([], {}, new Map(), [marker({})]);
    expect(early?.step).toBe('work');
  });

  it('in status and the report: the holder, the turns and the time so far (it said 0 turns, 0:00)', () => {
    const data = books([row({ step: 'clarify', session_id: 'c' })], {
      inFlight: [marker({})],
      store: { state: 'ok', sessions: new Map() },
    });
    const lines = statusLines(taskStatus(data), T0 + 300);
    expect(lines).toContain(`  clarify  ok`);
    expect(lines).toContain(`  work     running · pid 4242 since ${clock(T0 + 200)}`);

    const session = {
      sessionId: 'w',
      main: [
        {
          type: 'assistant',
          uuid: 'a1',
          timestamp: new Date((T0 + 210) * 1000).toISOString(),
          message: {
            id: 'm1',
            role: 'assistant',
            model: 'claude-opus-5-5',
            content: [{ type: 'text', text: 'Looking.' }],
            usage: {
              input_tokens: 10,
              output_tokens: 5,
              cache_read_input_tokens: 0,
              cache_creation_input_tokens: 0,
            },
          },
        },
      ] as unknown as Entry[],
      subagents: [],
    };
    const report = buildReport(
      { data: data as ReportInput['data'], transcripts: new Map([['w', session]]) },
      { now: T0 + 335 },
    );
    const work = report.steps.find((step) => step.step === 'work');
    expect(work).toMatchObject({ outcome: 'running', num_turns: 1, duration_s: 135 });
    const text = reportLines(report).join('\n');
    expect(text).toMatch(
      /^ {2}work\s+running · pid 4242 since \d\d:\d\d\s+-\s+1\s+1\s+no\s+0\s+2:15 so far$/m,
    );
  });
});

describe('the report’s step table', () => {
  it('says resumed for a step that continued an earlier row’s session (it said no)', () => {
    const records = stepRecords([
      row({ step: 'work', session_id: 's1' }),
      row({ step: 'work:verdict#1', session_id: 'j1' }),
      row({ step: 'work#round2', session_id: 's1' }),
      row({ step: 'ad-hoc', session_id: 'o1', retired: [] }),
      row({ step: 'ad-hoc', session_id: 'o1', started_at: T0 + 500 }),
    ]);
    expect(records.map((record) => record.resumed)).toEqual([false, false, true, false, true]);
  });

  it('calls a killed attempt what it was, and keeps the manifest’s value in the row', () => {
    const [killed] = stepRecords([
      row({ step: 'work', ok: false, error: 'killed-unrecorded', errors: ['the process was killed …'] }),
    ]);
    expect(killed?.detail).toBe(KILLED_DETAIL);
    expect(killed?.error).toBe('killed-unrecorded');
    const report = buildReport({
      data: books([row({ step: 'work', ok: false, error: 'killed-unrecorded' })]) as ReportInput['data'],
      transcripts: new Map(),
    });
    const text = reportLines(report).join('\n');
    expect(text).toContain('failed: killed before it recorded a result');
    expect(text).not.toContain('killed-unrecorded');
  });

  it('under --all, says the run of each row (one column only for the last run)', () => {
    const data = books([
      row({ step: 'work', run: 'run-a' }),
      row({ step: 'work', run: 'run-b', started_at: T0 + 1000, ended_at: T0 + 1100 }),
    ]) as ReportInput['data'];
    const all = reportLines(buildReport({ data, transcripts: new Map() }, { all: true }));
    const header = all.find((line) => line.includes('outcome'));
    expect(header).toMatch(/^ {2}run\s+step\s+outcome/);
    expect(all).toContainEqual(expect.stringMatching(/^ {2}run-a\s+work\s+ok/));
    expect(all).toContainEqual(expect.stringMatching(/^ {2}run-b\s+work\s+ok/));
    const last = reportLines(buildReport({ data, transcripts: new Map() }));
    expect(last.find((line) => line.includes('outcome'))).toMatch(/^ {2}step\s+outcome/);
  });
});
