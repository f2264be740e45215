/**
 * Issue 14, resume on another machine: a `flower go` whose task state is in PostgreSQL is killed
 * with SIGKILL in the middle of a step; its run directory is deleted; a second process with a
 * fresh CLAUDE_CONFIG_DIR (nothing of the first machine left but the workspace path and the
 * database) continues the same session — the model's request for the resumed step carries the
 * earlier history — and the database's manifest holds the spend of both processes, the killed
 * one booked from its in-flight marker; `flower report` on a third machine (no runs/, fresh
 * config, another directory) shows both.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { KILLED_UNRECORDED } from '../../src/runtime/in-flight.js';
import { lastUserText, type RecordedRequest } from '../../src/testing/index.js';
import { CLARIFY_RESUME } from '../../src/workflow/clarify-step.js';
import { cleanUp, startMock } from '../support/scratch.js';
import { flowerBin, mockedEnv, runFlower, tempDir } from './cli-harness.js';
import { HELLO_BRIEF, mainRouter, roleOf, toolResultCount } from './scenario-harness.js';
import { dropSchemas, sharedSchema, until } from './shared-store-harness.js';

let child: ChildProcess | undefined;
afterEach(async () => {
  if (child?.pid && child.exitCode === null) {
    try {
      process.kill(-child.pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
  child = undefined;
  await dropSchemas();
  await cleanUp();
});

const QUESTION = 'Which greeting should hello.py print, exactly?';
const REQUEST = 'write hello.py';

/** The whole history a request carries (text, tool calls and their results), as text. */
function historyText(request: RecordedRequest): string {
  return JSON.stringify(request.body?.messages ?? []);
}

describe('a task in PostgreSQL continues on another machine', () => {
  it('after SIGKILL mid-step, with no runs/ and a fresh CLAUDE_CONFIG_DIR, in the same session, both spends booked', async () => {
    const schema = await sharedSchema('resume');
    const model = await startMock({
      main: mainRouter({
        clarifier: (request) => {
          if (lastUserText(request).includes(CLARIFY_RESUME)) return { text: HELLO_BRIEF };
          // First turn: ask (unattended, so nobody answers); second turn: hang until killed.
          return toolResultCount(request) === 0
            ? { toolUses: [{ name: 'mcp__human__ask', input: { question: QUESTION } }] }
            : { text: 'never delivered', delayMs: 120_000 };
        },
      }),
    });
    const workspace = tempDir('store-resume');
    const firstEnv = mockedEnv(model, { FLOWER_STORE_URL: schema.url });
    const args = ['-w', workspace, '--clarify-only', '--timeout', '0', REQUEST];

    // Machine A: its own process group, so SIGKILL takes the agent binary along, as a crash would.
    child = spawn(process.execPath, [flowerBin, ...args], {
      env: firstEnv,
      cwd: workspace,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.stderr?.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    await until(
      () => model.mainRequests().filter((request) => roleOf(request) === 'clarifier').length >= 2,
      `the second clarifier turn (output so far: ${output})`,
    );
    // The marker and the session have reached the database (write-behind) before the kill.
    await until(
      async () =>
        (await schema.query("SELECT 1 FROM task_records WHERE kind = 'in-flight'")).length === 1 &&
        // The question's result itself, not just some entries: under load it trails the request.
        (await schema.query("SELECT 1 FROM session_entries WHERE entry LIKE '%No one answered.%'")).length >=
          1,
      'the in-flight marker and the answered question in PostgreSQL',
    );
    const killed = child;
    await new Promise<void>((resolve) => {
      killed.on('exit', () => resolve());
      process.kill(-(killed.pid as number), 'SIGKILL');
    });
    const [{ key: killedSession }] = (await schema.query<{ key: string }>(
      "SELECT key FROM task_records WHERE kind = 'in-flight'",
    )) as [{ key: string }];

    // Machine B: nothing of A's but the database (and the workspace path).
    rmSync(join(workspace, 'runs'), { recursive: true, force: true });
    const before = model.mainRequests().length;
    const second = await runFlower(args, {
      env: mockedEnv(model, { FLOWER_STORE_URL: schema.url }),
      cwd: workspace,
    });
    expect(second.status, second.stderr).toBe(0);

    const resumed = model
      .mainRequests()
      .slice(before)
      .filter((request) => roleOf(request) === 'clarifier');
    expect(resumed).toHaveLength(1);
    const history = historyText(resumed[0] as RecordedRequest);
    expect(history).toContain(REQUEST);
    expect(history).toContain(QUESTION);
    expect(history).toContain('No one answered.');
    expect(lastUserText(resumed[0] as RecordedRequest)).toContain(CLARIFY_RESUME);
    expect(existsSync(join(workspace, 'runs', 'sessions.db'))).toBe(true);

    // Both processes' books are in the database: B's own row, and A's attempt booked by B.
    const rows = (
      await schema.query<{ kind: string; value: string }>(
        "SELECT kind, value FROM task_records WHERE kind IN ('manifest-run', 'manifest-added') ORDER BY seq",
      )
    ).flatMap((record) => {
      const value = JSON.parse(record.value);
      return record.kind === 'manifest-run' ? value : [value];
    }) as Array<{
      run: string;
      step: string;
      session_id: string;
      error: string | null;
      ok: boolean;
      cost_usd: number;
    }>;
    const booked = rows.filter((row) => row.error === KILLED_UNRECORDED);
    const own = rows.filter((row) => row.step === 'clarify' && row.ok);
    expect(booked).toHaveLength(1);
    expect(own).toHaveLength(1);
    expect(booked[0]?.session_id).toBe(killedSession);
    expect(own[0]?.session_id).toBe(killedSession);
    expect(booked[0]?.run).not.toBe(own[0]?.run);
    for (const row of [...booked, ...own]) expect(row.cost_usd).toBeGreaterThan(0);
    // The marker is gone (booked), and lineage names the session.
    expect(await schema.query("SELECT 1 FROM task_records WHERE kind = 'in-flight'")).toHaveLength(0);
    const lineage = await schema.query<{ value: string }>(
      "SELECT value FROM task_records WHERE kind = 'lineage-step' AND key = 'clarify'",
    );
    expect(JSON.parse(lineage[0]?.value ?? '{}').sessionId).toBe(killedSession);

    // A third machine: no runs/, a fresh config directory, another working directory; the report
    // read from the database shows both processes' spend.
    rmSync(join(workspace, 'runs'), { recursive: true, force: true });
    const third = await runFlower(['-w', workspace, 'report', '--json', '--all'], {
      env: mockedEnv(model, { FLOWER_STORE_URL: schema.url }),
      cwd: tempDir('store-resume-third'),
    });
    expect(third.status, third.stderr).toBe(0);
    const report = JSON.parse(third.stdout) as {
      steps: Array<{ run: string; cost_usd: number }>;
      totals: { cost_usd: number; runs: number };
    };
    expect(new Set(report.steps.map((step) => step.run))).toEqual(new Set([booked[0]?.run, own[0]?.run]));
    const spent = [...booked, ...own].reduce((sum, row) => sum + row.cost_usd, 0);
    expect(report.totals.cost_usd).toBeCloseTo(spent, 4);
    expect(existsSync(join(workspace, 'runs'))).toBe(false);
  }, 180_000);
});
