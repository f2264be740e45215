/**
 * Issue 18, the partition chaos test: two machines (test/support/machines.ts: one workspace path,
 * two disks, two host names, two config dirs, each its own temp directory) contend for one task
 * in PostgreSQL for ten minutes of scripted work, each through a proxy of its own
 * (test/support/fault-proxy.ts), while a seeded chaos driver resets their connections,
 * black-holes their paths for 1 to 120 s and SIGKILLs their flower process groups.
 *
 * The work is one long clarify step (`--clarify-only --timeout 0`): the scripted clarifier asks a
 * question per turn, each reply a few seconds late, for ten minutes, then writes the brief. Its
 * progress is shared by the two mocks, so the script moves on whichever machine runs it. Each
 * machine runs a supervisor, as systemd or cron would: start flower, start it again a moment after
 * it exits (refused, stopped, killed), until a run ends 0 with the brief. Then each machine starts
 * once more without faults, so what any of them left behind (outbox, unsent entries, the agent's
 * own transcripts) is sent.
 *
 * What must hold, read from the mocks' request logs and the database:
 * - at no moment do the two machines make model requests at once (no request of one overlaps a
 *   request of the other), and no request comes from a machine while none of its flowers runs;
 * - every entry of every agent transcript (the JSONL under each machine's CLAUDE_CONFIG_DIR, and
 *   the resume copies the SDK left in its temp directory, read after every run's exit, before the
 *   next start there removes a killed run's copy) is in PostgreSQL at the end: merged, or kept
 *   aside as a fenced-out owner's work; and no outbox is left on either machine;
 * - the lineage names, for its step, the session holding the step's newest work;
 * - the books (manifest rows, applied and kept aside, merged as the pull and the report merge
 *   them) equal what the mocks served, short by at most one reply per kill, and never more; and
 *   `flower report` from a third place (the database alone) says the same total.
 *
 * Its first runs found four ways the books went wrong under partitions (all fixed in 3a15d8c); the
 * second test here is the shortest scripted case of one of them.
 *
 * FLOWER_CHAOS_SEED replays a run's plan (the seed is printed); the timeline printed at the end
 * says what happened when, and FLOWER_CHAOS_DUMP=<file> writes every run's output, every request
 * and every booked row there. FLOWER_CHAOS_MINUTES shortens the work for a quick look while
 * changing the test; the acceptance is the default ten (about 10.5 minutes in all).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { KILLED_UNRECORDED } from '../../src/runtime/in-flight.js';
import type { StoredManifestRow } from '../../src/runtime/manifest.js';
import { defaultResiliencePolicy } from '../../src/runtime/resilience.js';
import { manifestRowsOf, mergeManifest } from '../../src/runtime/shared/merge.js';
import { outboxPath } from '../../src/runtime/shared/outbox.js';
import { fencedManifestRecords } from '../../src/runtime/shared/pull.js';
import type { FencedWork, TaskRecord } from '../../src/store/postgres/task-records.js';
import {
  lastUserText,
  type MockModel,
  type MockResponse,
  type MockUsage,
  type RecordedRequest,
} from '../../src/testing/index.js';
import { Brief } from '../../src/workflow/brief.js';
import { CLARIFY_RESUME } from '../../src/workflow/clarify-step.js';
import { canMakeMachines, type Machine, makeMachines } from '../support/machines.js';
import { processGone } from '../support/processes.js';
import { cleanUp, startMock } from '../support/scratch.js';
import { replyCost, servedCost, servedReplies } from '../support/served-spend.js';
import { flowerBin, mockedEnv, runFlower, tempDir } from './cli-harness.js';
import { HELLO_BRIEF, mainRouter, roleOf, toolResultCount } from './scenario-harness.js';
import {
  agentTranscriptEntries,
  dropSchemas,
  FaultProxy,
  type SharedSchema,
  sharedSchema,
  until,
  viaPort,
} from './shared-store-harness.js';

const WORK_MS = Number(process.env.FLOWER_CHAOS_MINUTES ?? 10) * 60_000;
/** How late each reply is: a turn of the work. */
const TURN_MS = 2500;
const USAGE: MockUsage = { input_tokens: 1_000, output_tokens: 100 };
/**
 * A nine-second lease (renewed every 1.5 s, the agent stopped after 6 s without a renewal, its
 * binary ended 1.5 s later): a takeover waits seconds, not a minute, with margin for a loaded CI
 * machine. A paused holder waits 20 s for the database, then exits.
 */
const LEASE = { FLOWER_LEASE_SECONDS: '9', FLOWER_LEASE_WAIT_SECONDS: '20' };
const ARGS = ['--clarify-only', '--timeout', '0', 'write hello.py'];
/** Chaos starts once the work runs, and ends this long before the script writes the brief. */
const CHAOS_FROM_MS = 20_000;
const CHAOS_QUIET_MS = 25_000;
/** Past this, the supervisors give up (the test then fails on the missing brief). */
const SUPERVISE_MS = WORK_MS + 150_000;
/** Two events this process hears within this long of each other may have happened in either order. */
const SAME_MOMENT_MS = 1000;
const BUSY = /another flower \(pid \d+, on host [^,]+, since [^)]+\) is working on this task/;

const proxies: FaultProxy[] = [];
const children = new Set<ChildProcess>();
afterEach(async () => {
  for (const child of children) killQuietly(child);
  children.clear();
  for (const proxy of proxies.splice(0)) await proxy.close();
  await dropSchemas();
  await cleanUp();
});

function killQuietly(child: ChildProcess): void {
  try {
    process.kill(-(child.pid as number), 'SIGKILL');
  } catch {
    // Gone already.
  }
}

/** mulberry32: a small seeded generator, so a plan can be replayed from its seed. */
function seeded(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

type ChaosKind = 'reset' | 'black-hole' | 'kill';
interface PlannedFault {
  /** Milliseconds after the work started. */
  at: number;
  kind: ChaosKind;
  /** A black hole's length. */
  ms: number;
  /** Chooses the machine when the fault fires (below 0.7: the one holding the task). */
  pick: number;
}

/**
 * The chaos plan: a fixed mix (so every seed covers short and long black-holes and several kills),
 * shuffled and spread over the chaos window at seeded moments.
 */
function chaosPlan(random: () => number, workMs: number): PlannedFault[] {
  const between = (low: number, high: number) => low + (high - low) * random();
  const holes = [
    [1, 3],
    [1, 3],
    [4, 10],
    [4, 10],
    [10, 40],
    [10, 40],
    [40, 120],
    [60, 120],
  ].map(([low, high]) => ({
    kind: 'black-hole' as const,
    ms: Math.round(between(low ?? 1, high ?? 1) * 1000),
  }));
  const faults: Array<{ kind: ChaosKind; ms: number }> = [
    ...Array.from({ length: 8 }, () => ({ kind: 'reset' as const, ms: 0 })),
    ...Array.from({ length: 8 }, () => ({ kind: 'kill' as const, ms: 0 })),
    ...holes,
  ];
  for (let i = faults.length - 1; i > 0; i -= 1) {
    const j = Math.floor(random() * (i + 1));
    [faults[i], faults[j]] = [faults[j] as (typeof faults)[0], faults[i] as (typeof faults)[0]];
  }
  const end = workMs - CHAOS_QUIET_MS;
  const slot = (end - CHAOS_FROM_MS) / faults.length;
  return faults.map((fault, index) => ({
    ...fault,
    at: Math.round(CHAOS_FROM_MS + slot * index + slot * 0.8 * random()),
    pick: random(),
  }));
}

interface Run {
  machine: number;
  /** This run's number on its machine. */
  number: number;
  pid: number;
  startedAt: number;
  endedAt?: number;
  status?: number | null;
  killed: boolean;
  stdout: string;
  stderr: string;
  exited: Promise<Run>;
}

/** How a run ended, in a word, for the timeline. */
function outcomeOf(run: Run): string {
  const text = run.stderr;
  if (run.killed) return 'killed';
  if (run.status === 0) return 'exit 0';
  if (BUSY.test(text)) return 'busy';
  if (/took this task over/.test(text)) return 'exit 1: taken over';
  if (/did not answer for \d+ s, so this process stopped/.test(text)) return 'exit 1: gave up waiting';
  const line = text.trim().split('\n').at(-1) ?? '';
  return `exit ${run.status}: ${line.slice(0, 160)}`;
}

describe.runIf(canMakeMachines)(
  'partition chaos: two machines, one task, resets, black-holes and kills',
  () => {
    it('never two machines at the model at once; every transcript entry in PostgreSQL; the lineage on the newest work; books equal what was served', async () => {
      const seed = Number(process.env.FLOWER_CHAOS_SEED ?? Math.floor(Math.random() * 2 ** 31));
      console.log(`partition chaos seed ${seed} (replay with FLOWER_CHAOS_SEED=${seed})`);
      const random = seeded(seed);
      const plan = chaosPlan(random, WORK_MS);

      const schema = await sharedSchema('chaos');
      const { workspace, machines } = makeMachines(['machine-a', 'machine-b']);
      const names = ['A', 'B'];
      const t0 = Date.now();
      const timeline: string[] = [];
      const at = (ms = Date.now()) => `+${((ms - t0) / 1000).toFixed(1).padStart(6)}s`;
      const note = (text: string) => timeline.push(`${at()} ${text}`);

      // The script, shared by both mocks: questions until the work has run its time, then the brief.
      const script = { startedAt: undefined as number | undefined, asked: 0, briefs: 0 };
      const clarifier = (): MockResponse => {
        script.startedAt ??= Date.now();
        if (Date.now() - script.startedAt >= WORK_MS) {
          script.briefs += 1;
          return { text: HELLO_BRIEF, usage: USAGE, delayMs: TURN_MS };
        }
        script.asked += 1;
        const question = `Question ${script.asked}: which detail of hello.py should I pin down next?`;
        return {
          toolUses: [{ name: 'mcp__human__ask', input: { question } }],
          usage: USAGE,
          delayMs: TURN_MS,
        };
      };
      const models: MockModel[] = [];
      const envs: Array<Record<string, string>> = [];
      for (const machine of machines) {
        const model = await startMock({ main: mainRouter({ clarifier }, 1000) });
        const proxy = await FaultProxy.start(schema.url);
        proxies.push(proxy);
        models.push(model);
        // A temp directory per machine, as real machines have: the SDK's resume copies live there.
        const tmp = join(machine.home, 'tmp');
        mkdirSync(tmp, { recursive: true });
        envs.push(
          machine.env(model, { ...LEASE, TMPDIR: tmp, FLOWER_STORE_URL: viaPort(schema.url, proxy.port) }),
        );
      }
      const args = ['-w', workspace, ...ARGS];

      const runs: Run[] = [];
      const current: Array<Run | undefined> = [undefined, undefined];
      const start = (index: number): Run => {
        const machine = machines[index] as Machine;
        const [file, fileArgs] = machine.wrap([process.execPath, flowerBin, ...args]);
        // Its own process group: a kill takes the agent binary along, as a crash of the machine would.
        const child = spawn(file, fileArgs, {
          env: envs[index],
          cwd: machine.home,
          detached: true,
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        children.add(child);
        const run = {
          machine: index,
          number: runs.filter((each) => each.machine === index).length + 1,
          pid: child.pid as number,
          startedAt: Date.now(),
          killed: false,
          stdout: '',
          stderr: '',
        } as Run;
        child.stdout?.on('data', (chunk: Buffer) => {
          run.stdout += chunk.toString('utf8');
        });
        child.stderr?.on('data', (chunk: Buffer) => {
          run.stderr += chunk.toString('utf8');
        });
        run.exited = new Promise<Run>((resolve) => {
          child.on('close', (status) => {
            run.endedAt = Date.now();
            run.status = status;
            children.delete(child);
            resolve(run);
          });
        });
        runs.push(run);
        return run;
      };
      const label = (run: Run) => `${names[run.machine]}#${run.number} (pid ${run.pid})`;
      const briefOn = (index: number) =>
        Brief.load(join((machines[index] as Machine).disk, '.flower', 'notes', 'brief.md'))?.complete ===
        true;

      /**
       * Every entry the agent transcripts on a machine hold now (the JSONL under its config dir,
       * and the resume copies the SDK left in its temp directory), remembered by session and uuid.
       * Read after every exit but a refusal, before the next start there: the next start reads a
       * killed run's resume copy and removes it, so the end would no longer see what it held.
       */
      const agentEntries = new Map<string, string>();
      const readAgentTranscripts = (index: number) => {
        const machine = machines[index] as Machine;
        const tmp = join(machine.home, 'tmp');
        const copies = readdirSync(tmp)
          .filter((name) => name.startsWith('claude-resume-'))
          .map((name) => join(tmp, name));
        for (const directory of [machine.configDir, ...copies]) {
          for (const entry of agentTranscriptEntries(directory)) {
            if (typeof entry.uuid !== 'string' || typeof entry.sessionId !== 'string') continue;
            const key = `${entry.sessionId}/${entry.uuid}`;
            if (!agentEntries.has(key))
              agentEntries.set(key, `${names[index]} ${directory}: ${entry.type} ${key}`);
          }
        }
      };

      // The supervisors: start again after every exit, until a run ends 0 with the brief.
      const state = { done: false, finishedBy: '', busy: [0, 0] };
      const supervise = async (index: number) => {
        while (!state.done && Date.now() - t0 < SUPERVISE_MS) {
          const run = start(index);
          current[index] = run;
          await run.exited;
          current[index] = undefined;
          const outcome = outcomeOf(run);
          if (outcome !== 'busy') readAgentTranscripts(index);
          if (outcome === 'busy') state.busy[index] = (state.busy[index] ?? 0) + 1;
          else
            note(
              `${label(run)} ${outcome} after ${((Date.now() - run.startedAt) / 1000).toFixed(1)} s${run.status === 0 ? ` (brief on its disk: ${briefOn(index)})` : ''}`,
            );
          if (run.status === 0 && briefOn(index)) {
            if (!state.done) state.finishedBy = names[index] as string;
            state.done = true;
            break;
          }
          await new Promise((resolve) => setTimeout(resolve, outcome === 'busy' ? 1500 : 1000));
        }
      };

      /** The machine whose lease is current, else the one that asked the model last. */
      const holder = async (): Promise<number> => {
        const rows = await schema
          .query<{ host: string }>(
            'SELECT host FROM task_leases WHERE NOT released AND expires_at > clock_timestamp()',
          )
          .catch(() => []);
        const host = rows[0]?.host;
        if (host !== undefined) return machines.findIndex((machine) => machine.name === host);
        const last = models.map((model) => model.messageRequests().at(-1)?.receivedAt.getTime() ?? 0);
        return (last[1] ?? 0) > (last[0] ?? 0) ? 1 : 0;
      };
      const kills: string[] = [];
      const counts = { reset: 0, 'black-hole': 0, kill: 0, skipped: 0 };
      const chaos = async () => {
        // The plan's clock starts with the work (the first clarifier request).
        while (script.startedAt === undefined && !state.done) await new Promise((r) => setTimeout(r, 100));
        const workStart = script.startedAt ?? Date.now();
        note('the work starts (first clarifier request)');
        for (const fault of plan) {
          const wait = workStart + fault.at - Date.now();
          if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
          if (state.done) return;
          const held = await holder();
          let target = fault.pick < 0.7 ? held : 1 - held;
          if (fault.kind === 'reset') {
            (proxies[target] as FaultProxy).reset();
            counts.reset += 1;
            note(`chaos: reset ${names[target]}'s connections`);
          } else if (fault.kind === 'black-hole') {
            if ((proxies[target] as FaultProxy).blackHoling) target = 1 - target;
            if ((proxies[target] as FaultProxy).blackHoling) {
              counts.skipped += 1;
              note('chaos: black-hole skipped (both paths are black already)');
              continue;
            }
            // Every black hole ends before the quiet time at the end of the work.
            const ms = Math.max(1000, Math.min(fault.ms, workStart + WORK_MS - CHAOS_QUIET_MS - Date.now()));
            (proxies[target] as FaultProxy).blackHole(ms);
            counts['black-hole'] += 1;
            note(`chaos: black-hole ${names[target]}'s path for ${(ms / 1000).toFixed(1)} s`);
          } else {
            const run = current[target];
            if (run === undefined) {
              counts.skipped += 1;
              note(`chaos: kill skipped (${names[target]} runs no flower right now)`);
              continue;
            }
            run.killed = true;
            try {
              process.kill(-run.pid, 'SIGKILL');
            } catch {
              // It ended on its own just now.
            }
            await processGone(run.pid);
            counts.kill += 1;
            kills.push(label(run));
            note(`chaos: SIGKILL ${label(run)}'s process group`);
          }
        }
      };

      await Promise.all([supervise(0), supervise(1), chaos()]);
      const workMs = Date.now() - (script.startedAt ?? t0);
      note(`supervisors done: ${state.done ? `the brief came on ${state.finishedBy}` : 'time is up'}`);

      // Leftovers: one clean start on each machine, no faults, one after the other. A lease the
      // other machine's last process could not give back (it gave up while cut off) runs out first.
      for (const proxy of proxies) proxy.restore();
      const clean: Run[] = [];
      for (const index of [0, 1]) {
        let run = await start(index).exited;
        for (let tries = 0; outcomeOf(run) === 'busy' && tries < 20; tries += 1) {
          await new Promise((resolve) => setTimeout(resolve, 1500));
          run = await start(index).exited;
        }
        clean.push(run);
        readAgentTranscripts(index);
        note(`${label(run)} clean start: ${outcomeOf(run)}`);
      }

      // ---- Evidence ----
      const requests = models.map((model) => model.messageRequests());
      const epochs = await schema.query<{ epoch: string; host: string; pid: number; taken_at: Date }>(
        'SELECT epoch::text AS epoch, host, pid, taken_at FROM task_lease_epochs ORDER BY task_lease_epochs.epoch',
      );
      let takeovers = 0;
      for (let i = 1; i < epochs.length; i += 1) if (epochs[i]?.host !== epochs[i - 1]?.host) takeovers += 1;
      const fencedEntries = await schema.query<{ n: string }>(
        'SELECT count(*)::text AS n FROM fenced_entries',
      );
      const fencedWrites = await schema.query<{ n: string }>('SELECT count(*)::text AS n FROM fenced_writes');

      // The books: every manifest row in the database, applied or kept aside (the pull and the report
      // count both: a fenced-out owner's spend is spend).
      const books = await booksOf(schema);
      const served = requests.map((list) => servedReplies(list, () => TURN_MS));
      const servedUsd = served.reduce((sum, list) => sum + servedCost(list, USAGE), 0);
      const perReply = served.flat().reduce((most, request) => Math.max(most, replyCost(request, USAGE)), 0);
      const report = await runFlower(['-w', workspace, 'report', '--json', '--all'], {
        env: (machines[0] as Machine).env(models[0] as MockModel, { FLOWER_STORE_URL: schema.url }),
      });
      const reportTotal: unknown =
        report.status === 0 ? JSON.parse(report.stdout).totals?.cost_usd : report.stderr;

      /** How often the runs said something (the lease's stops and their outcomes). */
      const count = (pattern: RegExp) =>
        runs.reduce(
          (sum, run) => sum + ((run.stdout + run.stderr).match(new RegExp(pattern.source, 'g'))?.length ?? 0),
          0,
        );
      const summary = [
        `partition chaos seed ${seed}: ${((Date.now() - t0) / 1000).toFixed(0)} s in all, ${(workMs / 1000).toFixed(0)} s of work, ${script.asked} questions, ${script.briefs} brief repl${script.briefs === 1 ? 'y' : 'ies'}`,
        `chaos: ${counts.reset} resets, ${counts['black-hole']} black-holes, ${counts.kill} kills (${kills.join(', ')}), ${counts.skipped} skipped`,
        `runs: A ${runs.filter((run) => run.machine === 0).length} (${state.busy[0]} refused busy), B ${runs.filter((run) => run.machine === 1).length} (${state.busy[1]} refused busy); ${epochs.length} lease epochs, ${takeovers} takeovers between machines`,
        `model requests: A ${requests[0]?.length}, B ${requests[1]?.length}; served ${served.flat().length} replies ($${servedUsd.toFixed(4)}); books ${books.rows.length} rows ($${books.usd.toFixed(4)}; ${books.killed} killed-unrecorded, ${books.fencedRows} kept aside; every stored row $${books.rawUsd.toFixed(4)}); flower report: ${reportTotal}`,
        `kept aside: ${fencedEntries[0]?.n} transcript entries, ${fencedWrites[0]?.n} record changes; agents stopped for the lease ${count(/the agent is stopped before the lease can run out/)} times, continued ${count(/The task store answers again: continuing/)}, ${count(/took this task over/)} holders learnt they were taken over, ${count(/so this process stopped; everything stays in/)} gave up waiting`,
      ];
      console.log([...summary, 'timeline:', ...timeline].join('\n'));
      // Everything the runs printed, and the request logs, for a closer look at a failure.
      const dump = process.env.FLOWER_CHAOS_DUMP;
      if (dump !== undefined)
        writeFileSync(
          dump,
          JSON.stringify(
            {
              seed,
              t0,
              runs: runs.map(({ exited: _, ...run }) => ({
                ...run,
                at: at(run.startedAt),
                to: at(run.endedAt),
              })),
              requests: requests.map((list) =>
                list.map((request) => ({
                  index: request.index,
                  from: at(request.receivedAt.getTime()),
                  to: at(request.endedAt?.getTime()),
                  outcome: request.outcome.kind,
                  session: request.headers['x-claude-code-session-id'],
                })),
              ),
              epochs,
              books: books.rows,
            },
            null,
            1,
          ),
        );

      // The task got done, and the leftovers' starts ended cleanly.
      expect(state.done, 'a run ended 0 with the brief').toBe(true);
      expect(workMs).toBeGreaterThanOrEqual(WORK_MS);
      for (const run of clean) expect(run.status, `${label(run)}: ${run.stderr}`).toBe(0);
      for (const run of runs) expect(run.stderr, label(run)).not.toMatch(/\n\s+at /);

      // 1. At no moment two machines at the model; no request while the machine runs no flower.
      for (const list of requests) for (const request of list) expect(request.endedAt).toBeDefined();
      const overlaps: string[] = [];
      for (const a of requests[0] ?? [])
        for (const b of requests[1] ?? [])
          if (a.receivedAt < (b.endedAt as Date) && b.receivedAt < (a.endedAt as Date))
            overlaps.push(
              `A #${a.index} [${at(a.receivedAt.getTime())}, ${at(a.endedAt?.getTime())}] and B #${b.index} [${at(b.receivedAt.getTime())}, ${at(b.endedAt?.getTime())}]`,
            );
      expect(overlaps).toEqual([]);
      const orphans: string[] = [];
      requests.forEach((list, index) => {
        for (const request of list) {
          const from = request.receivedAt.getTime();
          const to = request.endedAt?.getTime() ?? Infinity;
          // A request of a killed process ends with it; this process may hear of the two in either order.
          const owner = runs.find(
            (run) =>
              run.machine === index &&
              run.startedAt <= from &&
              to <= (run.endedAt ?? Infinity) + SAME_MOMENT_MS,
          );
          if (owner === undefined) orphans.push(`${names[index]} #${request.index} [${at(from)}, ${at(to)}]`);
        }
      });
      expect(orphans).toEqual([]);

      // 2. Every entry of every agent transcript is in PostgreSQL (merged, or kept aside).
      const stored = new Set(
        (
          await schema.query<{ session_id: string; uuid: string }>(
            `SELECT t.session_id, e.uuid FROM session_entries e JOIN session_transcripts t ON t.id = e.transcript_id
            WHERE e.uuid IS NOT NULL
           UNION SELECT session_id, uuid FROM fenced_entries WHERE uuid IS NOT NULL`,
          )
        ).map((row) => `${row.session_id}/${row.uuid}`),
      );
      const missing = [...agentEntries].flatMap(([key, where]) => (stored.has(key) ? [] : [where]));
      console.log(`agent transcript entries checked: ${agentEntries.size}`);
      expect(agentEntries.size).toBeGreaterThan(0);
      expect(missing).toEqual([]);
      // And nothing is left waiting to be sent.
      for (const machine of machines) expect(existsSync(outboxPath(join(machine.disk, 'runs')))).toBe(false);

      // 3. The lineage names the session holding the step's newest work.
      const lineage = await schema.query<{ key: string; value: string }>(
        "SELECT key, value FROM task_records WHERE kind = 'lineage-step'",
      );
      expect(lineage.map((row) => row.key)).toEqual(['clarify']);
      const newest = await schema.query<{ session_id: string; newest: string }>(
        `SELECT t.session_id, max(e.entry::jsonb->>'timestamp') AS newest
         FROM session_entries e JOIN session_transcripts t ON t.id = e.transcript_id
        WHERE t.subpath = '' GROUP BY t.session_id ORDER BY newest DESC`,
      );
      expect(JSON.parse(lineage[0]?.value ?? '{}').sessionId, JSON.stringify(newest)).toBe(
        newest[0]?.session_id,
      );

      // 4. The books equal what the mocks served, short by at most one reply per kill; `flower
      // report` (from the database alone) says the same.
      expect(typeof reportTotal, String(reportTotal)).toBe('number');
      expect(reportTotal as number).toBeCloseTo(books.usd, 4);
      expect(books.usd).toBeLessThanOrEqual(servedUsd + 1e-6);
      expect(servedUsd - books.usd).toBeLessThanOrEqual(counts.kill * perReply + 1e-6);
    }, 780_000);
  },
);

describe('the books of a step the lease stopped (what the chaos test found, in one scripted outage)', () => {
  it('the row of a holder that gave up waiting holds the replies of the query the stop cut short', async () => {
    // Three questions, each answered at once; the fourth reply never comes: the path to the
    // database goes black, the agent is stopped and the process gives up waiting. One query ran
    // those four turns and never reported a result, so the row booked $0 for them; the next start
    // sends that row and writes the brief.
    const schema = await sharedSchema('chaos_stop');
    const proxy = await FaultProxy.start(schema.url);
    proxies.push(proxy);
    const resumed = [defaultResiliencePolicy.resumePrompt, CLARIFY_RESUME];
    const model = await startMock({
      main: mainRouter({
        clarifier: (request) => {
          const last = lastUserText(request);
          if (resumed.some((prompt) => last.includes(prompt))) return { text: HELLO_BRIEF, usage: USAGE };
          const asked = toolResultCount(request);
          if (asked >= 3) return { text: 'never delivered', usage: USAGE, delayMs: 60_000 };
          const question = `Question ${asked + 1}: which greeting should hello.py print?`;
          return { toolUses: [{ name: 'mcp__human__ask', input: { question } }], usage: USAGE };
        },
      }),
    });
    const clarifierRequests = () => model.mainRequests().filter((request) => roleOf(request) === 'clarifier');
    const configDir = tempDir('chaos-stop-claude');
    const env = (waitSeconds: string) =>
      mockedEnv(model, {
        ...LEASE,
        CLAUDE_CONFIG_DIR: configDir,
        FLOWER_LEASE_WAIT_SECONDS: waitSeconds,
        FLOWER_STORE_URL: viaPort(schema.url, proxy.port),
      });
    const args = ['-w', tempDir('chaos-stop'), ...ARGS];
    const first = runFlower(args, { env: env('2'), timeoutMs: 150_000 });
    await until(() => clarifierRequests().length >= 4, 'the fourth clarifier turn', 90_000);
    proxy.blackHole();
    const cut = clarifierRequests()[3] as RecordedRequest;
    const gaveUp = await first;
    expect(gaveUp.status, gaveUp.stderr).toBe(1);
    expect(gaveUp.stderr).toMatch(/did not answer for 2 s, so this process stopped; everything stays in/);
    proxy.restore();
    const again = await runFlower(args, { env: env('60') });
    expect(again.status, again.stderr).toBe(0);

    const served = servedReplies(model.messageRequests(), (request) => (request === cut ? 60_000 : 0));
    expect(served).toHaveLength(4);
    const books = await booksOf(schema);
    expect(books.rows).toHaveLength(2);
    expect(books.usd).toBeCloseTo(servedCost(served, USAGE), 6);
  }, 180_000);
});

/**
 * The books as every reader adds them up (`total`, `flower status`, `flower report`, the budget):
 * the manifest rows in the database, applied (task_records) and kept aside as a fenced-out owner's
 * (fenced_writes), through the one merge the pull and the report use (runtime/shared/merge.ts).
 * `rawUsd` adds up every row as stored, for the summary.
 */
async function booksOf(schema: SharedSchema): Promise<{
  rows: StoredManifestRow[];
  usd: number;
  rawUsd: number;
  killed: number;
  fencedRows: number;
}> {
  const records = (
    await schema.query<{ kind: TaskRecord['kind']; key: string; value: string; at: string; seq: string }>(
      "SELECT kind, key, value, at::text, seq::text FROM task_records WHERE kind IN ('manifest-run', 'manifest-added')",
    )
  ).map((row) => ({
    kind: row.kind,
    key: row.key,
    value: JSON.parse(row.value),
    at: Number(row.at),
    seq: Number(row.seq),
  }));
  const fenced: FencedWork = {
    changes: (
      await schema.query<{ epoch: string; kept_at: Date; change: string }>(
        'SELECT epoch::text, kept_at, change FROM fenced_writes ORDER BY id',
      )
    ).map((row) => ({ epoch: Number(row.epoch), keptAt: row.kept_at, change: JSON.parse(row.change) })),
    entries: [],
  };
  const all = [...records, ...fencedManifestRecords(fenced)];
  const stored = manifestRowsOf(all);
  const rows = mergeManifest(all, []).rows;
  const usd = (list: readonly StoredManifestRow[]) =>
    list.reduce((sum, row) => sum + (typeof row.cost_usd === 'number' ? row.cost_usd : 0), 0);
  return {
    rows,
    usd: usd(rows),
    rawUsd: usd(stored),
    killed: rows.filter((row) => row.error === KILLED_UNRECORDED).length,
    fencedRows: rows.filter((row) => row.fenced_out === true).length,
  };
}
