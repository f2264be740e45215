import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { SessionStoreEntry } from '@anthropic-ai/claude-agent-sdk';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  bookKilledAttempts,
  clearInFlight,
  holdAcrossMachines,
  IN_FLIGHT_DIRECTORY,
  type InFlightMarker,
  inFlightMarkers,
  KILLED_UNRECORDED,
  killedAttempts,
  markInFlight,
  nextMarker,
  restoreInFlight,
} from '../../../src/runtime/in-flight.js';
import { readManifest } from '../../../src/runtime/manifest.js';
import { subscribeTaskChanges, type TaskFileChange } from '../../../src/runtime/task-changes.js';

let runDir: string;
beforeEach(() => {
  runDir = mkdtempSync(join(tmpdir(), 'flower-in-flight-'));
});
afterEach(() => rmSync(runDir, { recursive: true, force: true }));

/** A pid that is certainly not running: a child that has already exited. */
const deadPid = () => spawnSync(process.execPath, ['-e', '0']).pid as number;

const iso = (seconds: number) => new Date(seconds * 1000).toISOString();
const usage = { input_tokens: 1_000_000, output_tokens: 0 };
const assistant = (uuid: string, at: number, id: string, model = 'claude-sonnet-4-5') => ({
  type: 'assistant',
  uuid,
  timestamp: iso(at),
  message: { id, model, usage },
});
/** An attempt that started at 1000 in a session that had cost 0.25 before; the binary wrote its total. */
const reported: SessionStoreEntry[] = [
  { type: 'user', uuid: 'u0', timestamp: iso(900) },
  assistant('a0', 950, 'msg-old'),
  { type: 'cost-state', totalCostUSD: 0.25 },
  { type: 'user', uuid: 'u1', timestamp: iso(1001) },
  // One API response, two content blocks: one turn.
  assistant('a1', 1002, 'msg-1'),
  assistant('a2', 1002, 'msg-1'),
  assistant('a3', 1005, 'msg-2'),
  { type: 'assistant', uuid: 'e1', timestamp: iso(1006), message: { id: 'x', model: '<synthetic>' } },
  { type: 'cost-state', totalCostUSD: 0.75 },
];
/** The same attempt killed mid-query: the binary writes its total only when a query ends. */
const unreported = reported.slice(0, -1);
const sourceOf = (main: SessionStoreEntry[]) => ({
  transcripts: async (sessionId: string) => ({ sessionId, main, subagents: [] }),
  context: () => 4321,
});
const source = sourceOf(reported);

/** Plants an in-flight marker; a field given as `undefined` is left out (a damaged write). */
function marker(sessionId: string, pid: number, extra: Record<string, unknown> = {}): void {
  mkdirSync(join(runDir, IN_FLIGHT_DIRECTORY), { recursive: true });
  writeFileSync(
    join(runDir, IN_FLIGHT_DIRECTORY, `${sessionId}.json`),
    JSON.stringify({
      sessionId,
      step: 'work',
      run: 'run-killed',
      pid,
      host: hostname(),
      startedAt: 1000,
      baselineUsd: 0.25,
      resumed: true,
      ...extra,
    }),
  );
}

describe('in-flight markers', () => {
  it('are written owner-only for this process and removed when the row is written', () => {
    markInFlight(runDir, {
      sessionId: 's1',
      step: 'work',
      run: 'r',
      startedAt: 1,
      baselineUsd: 0,
      resumed: false,
    });
    expect(readdirSync(join(runDir, IN_FLIGHT_DIRECTORY))).toEqual(['s1.json']);
    expect(statSync(join(runDir, IN_FLIGHT_DIRECTORY, 's1.json')).mode & 0o777).toBe(0o600);
    clearInFlight(runDir, ['s1', 'never-marked']);
    expect(readdirSync(join(runDir, IN_FLIGHT_DIRECTORY))).toEqual([]);
  });
});

describe('marker files', () => {
  it('are named after the session, with characters a file name cannot hold replaced', () => {
    markInFlight(runDir, {
      sessionId: 'a/b c',
      step: 'work',
      run: 'r',
      startedAt: 1,
      baselineUsd: 0,
      resumed: false,
    });
    expect(readdirSync(join(runDir, IN_FLIGHT_DIRECTORY))).toEqual(['a_b_c.json']);
  });

  it('a damaged earlier marker does not lend its fields to the next one', () => {
    // The same session, step, run and process, but without a start (a damaged write).
    marker('s1', process.pid, { run: 'r', startedAt: undefined, resumed: undefined, baselineUsd: 9 });
    markInFlight(runDir, {
      sessionId: 's1',
      step: 'work',
      run: 'r',
      startedAt: 100,
      baselineUsd: 0.5,
      resumed: false,
    });
    expect(inFlightMarkers(runDir)).toEqual([expect.objectContaining({ startedAt: 100, baselineUsd: 0.5 })]);
  });

  it('only readable .json markers with a session and a pid count; the rest is skipped', () => {
    marker('good', deadPid());
    const directory = join(runDir, IN_FLIGHT_DIRECTORY);
    const stray = { sessionId: 'stray', pid: deadPid(), host: hostname(), startedAt: 1, baselineUsd: 0 };
    writeFileSync(join(directory, 'stray.json.tmp'), JSON.stringify(stray));
    writeFileSync(join(directory, 'torn.json'), '{"sessionId": "torn", "pid"');
    writeFileSync(
      join(directory, 'no-pid.json'),
      JSON.stringify({ ...stray, sessionId: 'no-pid', pid: 'x' }),
    );
    writeFileSync(join(directory, 'no-session.json'), JSON.stringify({ ...stray, sessionId: 7 }));
    expect(inFlightMarkers(runDir).map((found) => found.sessionId)).toEqual(['good']);
  });
});

describe('a later attempt of the same step (a retry, an interrupt) keeps the first start', () => {
  const first: InFlightMarker = {
    sessionId: 's1',
    step: 'work',
    run: 'r1',
    pid: 10,
    host: 'h',
    startedAt: 100,
    baselineUsd: 0.25,
    resumed: false,
  };
  const later = { ...first, startedAt: 200, baselineUsd: 0.75, resumed: true };

  it('nextMarker keeps start, baseline and resumed for the same session, step, run and process', () => {
    expect(nextMarker(first, later)).toEqual(first);
    expect(nextMarker(undefined, later)).toEqual(later);
    for (const other of [
      { step: 'work#round2' },
      { run: 'r2' },
      { pid: 11 },
      { host: 'h2' },
      { sessionId: 's2' },
    ])
      expect(nextMarker({ ...first, ...other }, later)).toEqual(later);
  });

  it('markInFlight writes it so: a kill after a retry books both attempts', () => {
    const base = { sessionId: 's1', step: 'work', run: 'r', resumed: false };
    markInFlight(runDir, { ...base, startedAt: 100, baselineUsd: 0 });
    markInFlight(runDir, { ...base, startedAt: 200, baselineUsd: 0.5, resumed: true });
    expect(inFlightMarkers(runDir)).toEqual([
      expect.objectContaining({ startedAt: 100, baselineUsd: 0, resumed: false, pid: process.pid }),
    ]);
    markInFlight(runDir, { ...base, step: 'work#round2', startedAt: 300, baselineUsd: 0.5 });
    expect(inFlightMarkers(runDir)).toEqual([
      expect.objectContaining({ step: 'work#round2', startedAt: 300 }),
    ]);
  });
});

describe('killedAttempts', () => {
  it("are the markers of processes that are gone, and not this process's own", () => {
    marker('dead', deadPid());
    marker('mine', process.pid);
    expect(killedAttempts(runDir).map((found) => found.sessionId)).toEqual(['dead']);
  });
});

/** A live process of this host that is not this one: another flower at work here. */
function liveProcess(): number {
  const child = spawn('sleep', ['60'], { stdio: 'ignore' });
  afterEachKill.push(() => child.kill('SIGKILL'));
  return child.pid as number;
}
const afterEachKill: Array<() => void> = [];
afterEach(() => {
  for (const kill of afterEachKill.splice(0)) kill();
});

describe('a marker of a live process on this host is never touched', () => {
  it('is neither killed nor booked nor removed, whoever else wrote it', async () => {
    marker('other-flower', liveProcess());
    marker('dead', deadPid());
    expect(killedAttempts(runDir).map((found) => found.sessionId)).toEqual(['dead']);
    const booked = await bookKilledAttempts(runDir, [], source);
    expect(booked.map((row) => row.session_id)).toEqual(['dead']);
    expect(readdirSync(join(runDir, IN_FLIGHT_DIRECTORY))).toEqual(['other-flower.json']);
  });
});

describe("another host's marker", () => {
  it('is booked like a local one only while this process holds the task across machines', async () => {
    marker('far', deadPid(), { host: 'build-7.example' });
    expect(killedAttempts(runDir)).toEqual([]);
    // Held under the run directory's resolved path, however the caller spelled it.
    const release = holdAcrossMachines(`${runDir}/./`);
    try {
      const booked = await bookKilledAttempts(`${runDir}/`, [], source);
      expect(booked.map((row) => [row.session_id, row.run, row.error])).toEqual([
        ['far', 'run-killed', KILLED_UNRECORDED],
      ]);
      expect(readdirSync(join(runDir, IN_FLIGHT_DIRECTORY))).toEqual([]);
    } finally {
      release();
    }
    // Released: the next marker of another host is not judged again.
    marker('far-later', deadPid(), { host: 'build-7.example' });
    expect(killedAttempts(runDir)).toEqual([]);
    expect(await bookKilledAttempts(runDir, [], source)).toEqual([]);
    expect(readdirSync(join(runDir, IN_FLIGHT_DIRECTORY))).toEqual(['far-later.json']);
  });
});

describe('in-flight markers never throw', () => {
  it('a marker that cannot be removed is left without a throw, and the others are still removed', () => {
    marker('s2', process.pid);
    // Something that is not a file where s1's marker should be: rmSync cannot take it.
    mkdirSync(join(runDir, IN_FLIGHT_DIRECTORY, 's1.json', 'inside'), { recursive: true });
    expect(() => clearInFlight(runDir, ['s1', 's2'])).not.toThrow();
    expect(readdirSync(join(runDir, IN_FLIGHT_DIRECTORY))).toEqual(['s1.json']);
    const notADirectory = join(runDir, 'file');
    writeFileSync(notADirectory, '');
    expect(() => clearInFlight(notADirectory, ['s1'])).not.toThrow();
  });

  it("another process's marker that cannot be restored is skipped without a throw", () => {
    const notADirectory = join(runDir, 'file');
    writeFileSync(notADirectory, '');
    const far: InFlightMarker = {
      sessionId: 's1',
      step: 'work',
      run: 'r',
      pid: 1,
      host: 'build-7.example',
      startedAt: 1,
      baselineUsd: 0,
      resumed: false,
    };
    expect(() => restoreInFlight(join(notADirectory, 'runs'), far)).not.toThrow();
    // A run directory the pull has not made yet: made, owner-only.
    const fresh = join(runDir, 'pulled', 'runs');
    restoreInFlight(fresh, far);
    expect(inFlightMarkers(fresh)).toEqual([far]);
    expect(statSync(join(fresh, IN_FLIGHT_DIRECTORY, 's1.json')).mode & 0o777).toBe(0o600);
    expect(statSync(join(fresh, IN_FLIGHT_DIRECTORY)).mode & 0o777).toBe(0o700);
  });

  it('a marker that cannot be written is skipped without a throw', () => {
    const notADirectory = join(runDir, 'file');
    writeFileSync(notADirectory, '');
    expect(() =>
      markInFlight(join(notADirectory, 'runs'), {
        sessionId: 's1',
        step: 'work',
        run: 'r',
        startedAt: 1,
        baselineUsd: 0,
        resumed: false,
      }),
    ).not.toThrow();
  });
});

describe('bookKilledAttempts', () => {
  it("books a dead process's attempt from the transcript: the ledger's cost and turns since it started", async () => {
    marker('s1', deadPid());
    const warnings: string[] = [];
    const rows = await bookKilledAttempts(runDir, [], source, { onVerbose: (line) => warnings.push(line) });
    expect(rows).toHaveLength(1);
    expect(readManifest(runDir)).toEqual(rows);
    expect(rows[0]).toMatchObject({
      step: 'work',
      session_id: 's1',
      ok: false,
      error: KILLED_UNRECORDED,
      // Two responses of 1M input tokens at $3 per million (Sonnet 4.5): the ledger's figure, not
      // the growth of the cost-state (0.5), which is the SDK's word on other figures.
      cost_usd: 6,
      num_turns: 2,
      started_at: 1000,
      ended_at: 1006,
      duration_s: 6,
      context: 4321,
      resumed: true,
      run: 'run-killed',
    });
    expect(warnings).toEqual([
      'A step of an earlier run ended without a manifest row (the process was killed): booked work with $6.0000 from the stored transcript.',
    ]);
    expect(rows[0]?.errors[0]).toMatch(/cost from the tokens of its responses, as the ledger prices them$/);
    expect(rows[0]?.main).toMatchObject({ turns: 2, model: 'claude-sonnet-4-5', cost_usd: 6 });
    expect(readdirSync(join(runDir, IN_FLIGHT_DIRECTORY))).toEqual([]);
  });

  it('prices the tokens of the responses since the start when the binary had not reported a total', async () => {
    marker('s1', deadPid());
    const [row] = await bookKilledAttempts(runDir, [], sourceOf(unreported));
    // Two responses of 1M input tokens at $3 per million (Sonnet 4.5).
    expect(row).toMatchObject({ cost_usd: 6, num_turns: 2 });
    expect(row?.errors[0]).toMatch(/cost from the tokens of its responses/);
  });

  it("takes the SDK's cost-state over the baseline only for a model the price table lacks", async () => {
    const unpriced = reported.map((entry) =>
      entry.type === 'assistant' && (entry.message as { model?: string }).model !== '<synthetic>'
        ? { ...entry, message: { ...(entry.message as object), model: 'gateway-alias' } }
        : entry,
    );
    marker('s1', deadPid());
    const [row] = await bookKilledAttempts(runDir, [], sourceOf(unpriced));
    expect(row).toMatchObject({ cost_usd: 0.5, num_turns: 2 });
    expect(row?.errors[0]).toMatch(/cost from the SDK's last cost-state \(a model the price table lacks\)$/);
    marker('s2', deadPid());
    const [unknown] = await bookKilledAttempts(runDir, [], sourceOf(unpriced.slice(0, -1)));
    expect(unknown).toMatchObject({ cost_usd: 0 });
    expect(unknown?.errors[0]).toMatch(/cost unknown \(a model the price table lacks\)$/);
  });

  it('counts the workers of the attempt too: a killed step is booked at its whole ledger', async () => {
    marker('s1', deadPid());
    const worker = [{ type: 'user', uuid: 'w0', timestamp: iso(1003) }, assistant('w1', 1004, 'msg-w')];
    const [row] = await bookKilledAttempts(runDir, [], {
      transcripts: async (sessionId) => ({
        sessionId,
        main: unreported,
        subagents: [{ subpath: 'subagents/agent-w', agentId: 'w', entries: worker }],
      }),
      context: () => 0,
    });
    expect(row?.workers).toEqual([expect.objectContaining({ agent_id: 'w', turns: 1, cost_usd: 3 })]);
    expect(row?.cost_usd).toBe(9);
  });

  it('leaves the marker of a live process alone', async () => {
    markInFlight(runDir, {
      sessionId: 's1',
      step: 'work',
      run: 'r',
      startedAt: 1000,
      baselineUsd: 0,
      resumed: false,
    });
    expect(await bookKilledAttempts(runDir, [], source)).toEqual([]);
    expect(readdirSync(join(runDir, IN_FLIGHT_DIRECTORY))).toEqual(['s1.json']);
  });

  it('adds no second row when a row that ended after the attempt started already holds it', async () => {
    marker('s1', deadPid());
    const rows = [{ step: 'work', session_id: 's1', started_at: 10, ended_at: 1100, run: 'run-killed' }];
    expect(await bookKilledAttempts(runDir, rows, source)).toEqual([]);
    expect(readdirSync(join(runDir, IN_FLIGHT_DIRECTORY))).toEqual([]);
  });

  it("a row of another session that ended later (the judge's) does not hide the killed attempt", async () => {
    // Issue 22: only a row of the marker's own session says its attempt was already booked.
    marker('s1', deadPid());
    const rows = [
      { step: 'work:verdict#1', session_id: 'judge', started_at: 1001, ended_at: 1100, run: 'run-killed' },
      { step: 'work', session_id: 's0', started_at: 900, ended_at: 1200, run: 'run-killed' },
    ];
    const booked = await bookKilledAttempts(runDir, rows, source);
    expect(booked.map((row) => [row.session_id, row.error])).toEqual([['s1', KILLED_UNRECORDED]]);
    expect(readManifest(runDir).map((row) => row.session_id)).toEqual(['s1']);
  });

  it('a row of another run of the same session that ended later does not hide the killed attempt', async () => {
    // Two machines continue one session: the holder that was cut off ended its step (and wrote its
    // row) after the next holder had started the attempt that was then killed.
    marker('s1', deadPid());
    const rows = [{ step: 'work', session_id: 's1', started_at: 900, ended_at: 1100, run: 'run-cut-off' }];
    const booked = await bookKilledAttempts(runDir, rows, source);
    expect(booked.map((row) => [row.session_id, row.run, row.error])).toEqual([
      ['s1', 'run-killed', KILLED_UNRECORDED],
    ]);
  });

  it("never judges another host's marker: its pid means nothing here", async () => {
    marker('s1', deadPid(), { host: 'build-7.example' });
    expect(await bookKilledAttempts(runDir, [], source)).toEqual([]);
    expect(readdirSync(join(runDir, IN_FLIGHT_DIRECTORY))).toEqual(['s1.json']);
  });

  it('books the attempt when the only row of its session ended before the attempt started', async () => {
    marker('s1', deadPid());
    // An earlier step of the same (resumed) session; the killed attempt came after it.
    const rows = [{ step: 'work', session_id: 's1', started_at: 10, ended_at: 900, run: 'run-before' }];
    const booked = await bookKilledAttempts(runDir, rows, source);
    expect(booked.map((row) => row.session_id)).toEqual(['s1']);
  });

  it("books the attempt when its own run's row of the session ended before it started (an earlier round)", async () => {
    marker('s1', deadPid());
    const rows = [{ step: 'work', session_id: 's1', started_at: 10, ended_at: 999, run: 'run-killed' }];
    const booked = await bookKilledAttempts(runDir, rows, source);
    expect(booked.map((row) => [row.session_id, row.run])).toEqual([['s1', 'run-killed']]);
  });

  it('keeps the marker when the row cannot be written, so the next start books it', async () => {
    // Another live process holds the manifest's lock for longer than this booking waits.
    writeFileSync(
      join(runDir, 'manifest.json.lock'),
      JSON.stringify({ pid: process.ppid, host: hostname(), createdAt: Date.now(), token: 't' }),
    );
    marker('s1', deadPid());
    const warnings: string[] = [];
    const options = { onWarning: (line: string) => warnings.push(line), lock: { waitTimeoutMs: 100 } };
    expect(await bookKilledAttempts(runDir, [], source, options)).toEqual([]);
    expect(readdirSync(join(runDir, IN_FLIGHT_DIRECTORY))).toEqual(['s1.json']);
    expect(warnings.join('\n')).toContain('manifest.json');
  });

  it('touches nothing when no attempt was killed', async () => {
    const verbose: string[] = [];
    expect(await bookKilledAttempts(runDir, [], source, { onVerbose: (line) => verbose.push(line) })).toEqual(
      [],
    );
    expect(readdirSync(runDir)).toEqual([]);
    expect(verbose).toEqual([]);
  });

  it('books every killed attempt, says how many, and books one whose transcript is gone at zero', async () => {
    marker('s1', deadPid());
    marker('gone', deadPid(), { step: 'check' });
    const verbose: string[] = [];
    const booked = await bookKilledAttempts(
      runDir,
      [],
      {
        transcripts: async (sessionId) =>
          sessionId === 'gone' ? undefined : { sessionId, main: reported, subagents: [] },
        context: () => 0,
      },
      { onVerbose: (line) => verbose.push(line) },
    );
    expect(booked.map((row) => [row.session_id, row.cost_usd, row.num_turns])).toEqual(
      expect.arrayContaining([
        ['s1', 6, 2],
        ['gone', 0, 0],
      ]),
    );
    expect(booked.find((row) => row.session_id === 'gone')).toMatchObject({
      error: 'killed-unrecorded',
      text: '',
      retired: [],
      started_at: 1000,
      ended_at: 1000,
      workers: [],
    });
    expect(booked[0]?.errors[0]).toMatch(
      /^the process was killed before it could write this row \(SIGKILL or a crash\); the next start booked it from the stored transcript; /,
    );
    expect(verbose).toEqual([
      expect.stringMatching(/^2 steps of an earlier run ended without a manifest row/),
    ]);
  });

  it('keeps the other rows of the manifest', async () => {
    writeFileSync(
      join(runDir, 'manifest.json'),
      JSON.stringify([{ step: 'clarify', run: 'run-killed', custom: 1 }]),
    );
    marker('s1', deadPid());
    await bookKilledAttempts(runDir, [], source);
    expect(readManifest(runDir).map((row) => row.step)).toEqual(['clarify', 'work']);
  });
});

describe('in-flight changes are told to the listeners of the run directory', () => {
  it('a marker written, markers cleared, and nothing when nothing was cleared', () => {
    const changes: TaskFileChange[] = [];
    const stop = subscribeTaskChanges(runDir, (change) => changes.push(change));
    try {
      markInFlight(runDir, {
        sessionId: 's1',
        step: 'work',
        run: 'r',
        startedAt: 1,
        baselineUsd: 0,
        resumed: false,
      });
      clearInFlight(runDir, []);
      clearInFlight(runDir, ['s1']);
    } finally {
      stop();
    }
    expect(changes).toEqual([
      {
        kind: 'in-flight',
        marker: expect.objectContaining({ sessionId: 's1', pid: process.pid, host: hostname() }),
      },
      { kind: 'in-flight-cleared', sessionIds: ['s1'] },
    ]);
  });

  it('booking when nothing was killed tells nothing', async () => {
    const changes: TaskFileChange[] = [];
    const stop = subscribeTaskChanges(runDir, (change) => changes.push(change));
    try {
      marker('mine', process.pid);
      expect(await bookKilledAttempts(runDir, [], source)).toEqual([]);
    } finally {
      stop();
    }
    expect(changes).toEqual([]);
  });
});

describe('the edges of booking', () => {
  it('a damaged earlier marker without a baseline does not lend its start either', () => {
    marker('s1', process.pid, { run: 'r', startedAt: 5, resumed: undefined, baselineUsd: undefined });
    markInFlight(runDir, {
      sessionId: 's1',
      step: 'work',
      run: 'r',
      startedAt: 100,
      baselineUsd: 0.5,
      resumed: false,
    });
    expect(inFlightMarkers(runDir)).toEqual([expect.objectContaining({ startedAt: 100, baselineUsd: 0.5 })]);
  });

  it('the row of the attempt itself, ended the instant it started, holds it', async () => {
    marker('s1', deadPid());
    const rows = [{ step: 'work', session_id: 's1', started_at: 1000, ended_at: 1000, run: 'run-killed' }];
    expect(await bookKilledAttempts(runDir, rows, source)).toEqual([]);
  });

  it('a row whose end is not a number says nothing about the attempt', async () => {
    marker('s1', deadPid());
    const rows = [{ step: 'work', session_id: 's1', started_at: 1000, ended_at: '1100', run: 'run-killed' }];
    const booked = await bookKilledAttempts(runDir, rows as never, source);
    expect(booked.map((row) => row.session_id)).toEqual(['s1']);
  });

  it('says every step it booked, by name', async () => {
    marker('s1', deadPid());
    marker('s2', deadPid(), { step: 'check' });
    const verbose: string[] = [];
    await bookKilledAttempts(runDir, [], source, { onVerbose: (line) => verbose.push(line) });
    expect(verbose).toEqual([expect.stringMatching(/ booked (work, check|check, work) with \$/)]);
  });

  /** A session on a model the price table lacks, so the SDK's cost-state is the figure. */
  const unpricedAt = (at: number, uuid: string) => assistant(uuid, at, `msg-${uuid}`, 'gateway-alias');

  it("takes the cost-state from the attempt's first entry on, one stamped at the very start included", async () => {
    marker('s1', deadPid());
    const main = [
      { type: 'cost-state', totalCostUSD: 0.25 },
      unpricedAt(1000, 'a1'),
      { type: 'cost-state', totalCostUSD: 0.75 },
    ] as SessionStoreEntry[];
    const [row] = await bookKilledAttempts(runDir, [], sourceOf(main));
    expect(row?.cost_usd).toBe(0.5);
  });

  it('a session whose every entry came after the start counts all of them', async () => {
    marker('s1', deadPid());
    const main = [unpricedAt(1001, 'a1'), { type: 'cost-state', totalCostUSD: 0.75 }] as SessionStoreEntry[];
    const [row] = await bookKilledAttempts(runDir, [], sourceOf(main));
    expect(row?.cost_usd).toBe(0.5);
  });

  it('a cost-state written before the attempt started is not its cost', async () => {
    // Only a worker answered in the attempt: the main thread's last cost-state is older than it.
    marker('s1', deadPid());
    const main = [
      { type: 'user', uuid: 'u0', timestamp: iso(900) },
      { type: 'cost-state', totalCostUSD: 0.75 },
    ] as SessionStoreEntry[];
    const [row] = await bookKilledAttempts(runDir, [], {
      transcripts: async (sessionId) => ({
        sessionId,
        main,
        subagents: [{ subpath: 'subagents/agent-w', agentId: 'w', entries: [unpricedAt(1004, 'w1')] }],
      }),
      context: () => 0,
    });
    expect(row?.cost_usd).toBe(0);
    expect(row?.errors[0]).toMatch(/cost unknown/);
  });
});
