import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { IsolationError } from '../../../src/agents/workbench.js';
import { Lineage } from '../../../src/runtime/lineage.js';
import { Brief } from '../../../src/workflow/brief.js';
import { Goal } from '../../../src/workflow/goal.js';
import {
  StarterError,
  starterFlow,
  starterPaths,
  startOver,
  WAKE_LABEL,
  wakeState,
} from '../../../src/workflow/starter.js';
import { FakeRunner, type Reply } from './fake-runner.js';

const BRIEF =
  '## Goal\nhello.py\n## Acceptance\nprints hello\n## Boundaries\nnone\n## Unknowns & assumptions\nnone';
const GOAL = '## Statement\nhello.py prints hello\n## Checklist\n- prints hello\n- exit 0';

const BEQUEST =
  '## What this is\nhello.py, a greeting.\n## The workbench and how to read it\n.flower/notes first.';

function workspace(): string {
  const ws = join(mkdtempSync(join(tmpdir(), 'flower-starter-')), 'proj');
  mkdirSync(ws, { recursive: true });
  return ws;
}

/** A runner for the starter flow, answering each role by its step label. */
function starterRunner(ws: string, verdicts: string[] = ['achieved']) {
  let judged = 0;
  return new FakeRunner(
    (call): Reply => {
      const label = call.options.stepName ?? '';
      if (label === 'clarify') return { text: BRIEF };
      if (label === 'set-goal') return { text: GOAL };
      if (label.startsWith('work:verdict#')) return { text: verdicts[judged++] ?? 'achieved' };
      if (label === 'bequest') return { text: BEQUEST };
      return { text: 'done, see hello.py' };
    },
    ws,
    join(ws, 'runs'),
  );
}

describe('starterPaths and wakeState', () => {
  it('puts the workbench under the workspace and the notes inside it', () => {
    const ws = workspace();
    const paths = starterPaths({ workspace: ws });
    expect(paths.workbench.root).toBe(join(ws, '.flower'));
    expect(paths.brief).toBe(join(ws, '.flower', 'notes', 'brief.md'));
    expect(paths.goal).toBe(join(ws, '.flower', 'notes', 'goal.md'));
    expect(paths.log).toBe(join(ws, '.flower', 'notes', 'qa-log.md'));
    expect(paths.runDir).toBe(join(ws, 'runs'));
  });

  it('refuses isolation outside a git repository, and puts the workbench beside the repo inside one', () => {
    const ws = workspace();
    expect(() => starterPaths({ workspace: ws, isolate: true })).toThrow(IsolationError);
    execFileSync('git', ['init', '-q', ws]);
    expect(starterPaths({ workspace: ws, isolate: true }).workbench.root).toBe(
      join(ws, '..', '.flower-proj'),
    );
  });

  it('reports a fresh workspace without writing anything', () => {
    const ws = workspace();
    expect(wakeState({ workspace: ws })).toMatchObject({ waking: false, checks: 0, woke: 0, steps: {} });
    expect(readdirSync(ws)).toEqual([]);
  });
});

describe('starterFlow', () => {
  it('needs a request when there is nothing to wake up to', () => {
    expect(() => starterFlow({ workspace: workspace() })).toThrow(StarterError);
    expect(() => starterFlow({ workspace: workspace(), request: '   ' })).toThrow(/one sentence/);
  });

  it('builds clarify → set-goal → work, or fewer steps with clarifyOnly / goal: false', () => {
    const ws = workspace();
    expect(starterFlow({ workspace: ws, request: 'x' }).steps.map((step) => step.name)).toEqual([
      'clarify',
      'set-goal',
      'work',
    ]);
    expect(starterFlow({ workspace: ws, request: 'x', clarifyOnly: true }).steps.map((s) => s.name)).toEqual([
      'clarify',
    ]);
    const unguarded = starterFlow({ workspace: ws, request: 'x', goal: false });
    expect(unguarded.steps.map((s) => s.name)).toEqual(['clarify', 'work']);
    expect(unguarded.steps[1]?.gate).toBeUndefined();
    expect(starterFlow({ workspace: ws, request: 'x', rounds: 5 }).steps[2]?.retries).toBe(4);
  });

  it('runs the whole flow: brief and goal frozen, work judged achieved, lineage without the judge', async () => {
    const ws = workspace();
    const flow = starterFlow({ workspace: ws, request: 'write hello.py' });
    const runner = starterRunner(ws);
    const ctx = await flow.run(runner);
    expect(runner.labels()).toEqual(['clarify', 'set-goal', 'work', 'work:verdict#1', 'bequest']);
    expect(ctx.failedAt).toBeUndefined();
    // The task ended: a read-only turn left its bequest for the next tool, in both files.
    expect(runner.calls[4]?.spec.allowedTools).not.toContain('Write');
    expect(runner.calls[4]?.prompt).toContain('flower: the judge ruled the goal achieved.');
    const claude = readFileSync(join(ws, 'CLAUDE.md'), 'utf8');
    expect(claude).toContain('hello.py, a greeting.');
    expect(claude).not.toContain('[degraded');
    expect(readFileSync(join(ws, 'AGENTS.md'), 'utf8')).toBe(claude);
    expect(flow.workbench?.root).toBe(join(ws, '.flower'));
    expect(Brief.load(join(ws, '.flower/notes/brief.md'))?.complete).toBe(true);
    expect(Goal.load(join(ws, '.flower/notes/goal.md'))?.checks).toEqual(['prints hello', 'exit 0']);
    const work = runner.calls[2]!;
    expect(work.spec.name).toBe('coordinator');
    expect(work.prompt).toContain('## Goal\nhello.py');
    expect(work.prompt).toContain('- prints hello');
    expect(Lineage.open(join(ws, 'runs'), ws).steps).toEqual({ clarify: 's1', 'set-goal': 's2', work: 's3' });
    expect(wakeState({ workspace: ws })).toMatchObject({ waking: true, checks: 2, woke: 1 });
  });

  it('on a wake without a remark: nothing re-asked or re-derived, the work session continues', async () => {
    const ws = workspace();
    const runner = starterRunner(ws);
    await starterFlow({ workspace: ws, request: 'write hello.py' }).run(runner);
    const before = readFileSync(join(ws, '.flower/notes/brief.md'), 'utf8');
    const ctx = await starterFlow({ workspace: ws }).run(runner);
    expect(runner.labels().slice(5)).toEqual(['work', 'work:verdict#1', 'bequest']);
    expect(runner.calls[5]?.options.resume).toBe('s3');
    expect(runner.calls[5]?.prompt).toMatch(/^Carry on from where you stopped/);
    expect(readFileSync(join(ws, '.flower/notes/brief.md'), 'utf8')).toBe(before);
    expect(ctx.woke).toBe(2);
  });

  it('on a wake with a remark: it lands in the brief, the goal is derived again, and it is the work prompt', async () => {
    const ws = workspace();
    const runner = starterRunner(ws);
    await starterFlow({ workspace: ws, request: 'write hello.py' }).run(runner);
    const ctx = await starterFlow({ workspace: ws, request: 'also support --name' }).run(runner);
    const brief = readFileSync(join(ws, '.flower/notes/brief.md'), 'utf8');
    expect(brief).toMatch(new RegExp(`## ${WAKE_LABEL} \\(\\d\\d:\\d\\d:\\d\\d\\)\\nalso support --name`));
    expect(runner.labels().slice(5)).toEqual(['set-goal', 'work', 'work:verdict#1', 'bequest']);
    expect(runner.calls[5]?.prompt).toContain('also support --name');
    const work = runner.calls[6]!;
    expect(work.options.resume).toBe('s3');
    expect(work.prompt).toMatch(/^also support --name/);
    expect(work.prompt).toContain('this version is the one that counts');
    expect(ctx.woke).toBe(2);
    // The same remark again is not appended twice and does not re-derive the goal.
    await starterFlow({ workspace: ws, request: 'also support --name' }).run(runner);
    expect(
      readFileSync(join(ws, '.flower/notes/brief.md'), 'utf8').split('also support --name'),
    ).toHaveLength(2);
    expect(runner.labels().slice(9)).toEqual(['work', 'work:verdict#1', 'bequest']);
  });

  it('starts over: brief, goal and lineage move to notes/archive/<timestamp>/, the session store stays', async () => {
    const ws = workspace();
    const runner = starterRunner(ws);
    await starterFlow({ workspace: ws, request: 'write hello.py' }).run(runner);
    writeFileSync(join(ws, 'runs', 'sessions.db'), 'transcripts');
    const flow = starterFlow({ workspace: ws, request: 'something else', startOver: true });
    const archive = join(ws, '.flower/notes/archive');
    const [stamp] = readdirSync(archive);
    expect(stamp).toMatch(/^\d{8}-\d{6}$/);
    expect(readdirSync(join(archive, stamp!)).sort()).toEqual(['brief.md', 'goal.md', 'lineage.json']);
    expect(existsSync(join(ws, '.flower/notes/brief.md'))).toBe(false);
    expect(readFileSync(join(ws, 'runs', 'sessions.db'), 'utf8')).toBe('transcripts');
    expect(wakeState({ workspace: ws })).toMatchObject({ waking: false, woke: 0, steps: {} });
    const ctx = await flow.run(runner);
    expect(ctx.woke).toBe(1);
    expect(runner.calls[5]?.prompt).toBe('something else');
    expect(runner.calls[5]?.options.resume).toBeUndefined();
  });

  it('words added with clarifyOnly wait for the next run: it derives the goal again and works on them, once (issue 21)', async () => {
    const ws = workspace();
    const runner = starterRunner(ws);
    await starterFlow({ workspace: ws, request: 'write hello.py' }).run(runner);
    await starterFlow({ workspace: ws, request: 'also print the date', clarifyOnly: true }).run(runner);
    expect(runner.labels().slice(5)).toEqual([]);
    expect(wakeState({ workspace: ws }).pendingRemark).toBe('also print the date');
    // The next run, with no words of its own, goes on with them.
    await starterFlow({ workspace: ws }).run(runner);
    expect(runner.labels().slice(5)).toEqual(['set-goal', 'work', 'work:verdict#1', 'bequest']);
    expect(runner.calls[6]?.prompt).toMatch(/^also print the date/);
    expect(wakeState({ workspace: ws }).pendingRemark).toBe('');
    // Worked on: the run after that carries on without them.
    await starterFlow({ workspace: ws }).run(runner);
    expect(runner.calls[9]?.prompt).toMatch(/^Carry on from where you stopped/);
  });

  it('starting over archives words still waiting from clarifyOnly with the brief they belong to', async () => {
    const ws = workspace();
    const runner = starterRunner(ws);
    await starterFlow({ workspace: ws, request: 'write hello.py' }).run(runner);
    await starterFlow({ workspace: ws, request: 'also print the date', clarifyOnly: true }).run(runner);
    const archived = startOver({ workspace: ws })!;
    expect(readdirSync(archived).sort()).toEqual([
      'brief.md',
      'goal.md',
      'lineage.json',
      'pending-remark.md',
    ]);
    expect(wakeState({ workspace: ws }).pendingRemark).toBe('');
  });

  it('starting over with nothing to archive does nothing', () => {
    expect(startOver({ workspace: workspace() })).toBeUndefined();
  });
});
