/**
 * Acceptance 4–6 of the runtime: what is left on disk lets a later process continue.
 * - kill -9 in the middle of a step, run again in the same directory: the step resumes its
 *   recorded session, and every transcript entry written before the kill is still in sessions.db;
 * (SIGTERM and SIGHUP, which leave a killed-by-signal row, are in `manifest-signal.test.ts`.)
 * - two processes writing one run directory at once lose nothing;
 * - corrupt manifest.json / lineage.json: a warning, a fresh file, the corrupt one kept.
 *
 * The processes run the built runtime (`dist/`, made by `npm run build`, which `npm test` runs first).
 */
import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import type { AgentSpec } from '../../src/runtime/agent-spec.js';
import { defaultResiliencePolicy } from '../../src/runtime/resilience.js';
import { lastUserText, mock } from '../../src/testing/index.js';
import { type DriverOutcome, driveStep, type Harness, startHarness } from './runtime-harness.js';

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.cleanup();
  harness = undefined;
});

function entryUuids(runDir: string): string[] {
  const db = new Database(join(runDir, 'sessions.db'), { readonly: true });
  try {
    return (db.prepare('SELECT uid FROM entries WHERE uid IS NOT NULL').all() as Array<{ uid: string }>).map(
      (row) => row.uid,
    );
  } finally {
    db.close();
  }
}

/** The types of the entries a run directory's store holds, in order. */
function storedTypes(runDir: string): string[] {
  const db = new Database(join(runDir, 'sessions.db'), { readonly: true });
  try {
    return (db.prepare('SELECT payload FROM entries ORDER BY rowid').pluck().all() as string[]).map(
      (payload) => (JSON.parse(payload) as { type: string }).type,
    );
  } finally {
    db.close();
  }
}

async function waitFor(condition: () => boolean, timeoutMs: number): Promise<void> {
  for (const deadline = Date.now() + timeoutMs; Date.now() < deadline && !condition(); )
    await new Promise((resolve) => setTimeout(resolve, 50));
}

function readJson(path: string): unknown {
  return JSON.parse(readFileSync(path, 'utf8'));
}

async function drive(
  h: Harness,
  step: string,
  prompt: string,
  onSpawn?: (child: ChildProcess) => void,
): Promise<DriverOutcome> {
  return driveStep(h, step, prompt, onSpawn ? { onSpawn } : {});
}

describe('Runtime continuity across processes (real SDK and binary against the mock model)', () => {
  it('after kill -9 mid-step, the next process resumes the recorded session with nothing lost', async () => {
    harness = await startHarness([
      mock.toolUse('Read', { file_path: 'plan.md' }),
      mock.text('This reply never arrives.', { delayMs: 60_000 }),
    ]);
    const h = harness;
    const runDir = join(h.workspace, 'runs');
    let killedSession = '';
    let beforeKill: string[] = [];
    const first = await drive(h, 'work', 'Follow plan.md.', (child) => {
      void h.model
        .waitForRequest((request) => request.index >= 0 && h.model.mainRequests().length >= 2, 60_000)
        // The first turn reaches the store a moment later (the SDK mirrors in the background).
        .then(() => waitFor(() => storedTypes(runDir).includes('assistant'), 20_000))
        .then(() => {
          // The step is in the middle of its second turn: its session must already be on record.
          killedSession =
            (readJson(join(runDir, 'lineage.json')) as { steps: Record<string, string> }).steps.work ?? '';
          beforeKill = entryUuids(runDir);
          process.kill(-(child.pid ?? 0), 'SIGKILL');
        });
    });
    expect(first.signal, first.stderr).toBe('SIGKILL');
    expect(killedSession).not.toBe('');
    expect(first.sessions).toContain(killedSession);
    expect(beforeKill.length).toBeGreaterThan(0);
    expect(existsSync(join(runDir, 'manifest.json'))).toBe(false);

    h.model.setScript([mock.text('Resumed and finished.')]);
    const before = h.model.mainRequests().length;
    const second = await drive(h, 'work', 'Follow plan.md.');
    expect(second.code).toBe(0);
    expect(second.result).toMatchObject({
      ok: true,
      resumed: true,
      sessionId: killedSession,
      text: 'Resumed and finished.',
    });

    const resumedRequest = h.model.mainRequests()[before]!;
    expect(lastUserText(resumedRequest)).toContain(defaultResiliencePolicy.resumePrompt);
    expect(JSON.stringify(resumedRequest.body?.messages)).toContain('plan.md');

    const after = new Set(entryUuids(runDir));
    expect(beforeKill.filter((uuid) => !after.has(uuid))).toEqual([]);
    // The killed attempt's books are completed from the store (issue 10 §2): before, its cost and
    // turns were simply missing, because SIGKILL runs no rescue.
    const rows = readJson(join(runDir, 'manifest.json')) as Array<Record<string, unknown>>;
    expect(rows).toHaveLength(2);
    const [booked, resumed] = rows;
    expect(booked).toMatchObject({
      step: 'work',
      ok: false,
      error: 'killed-unrecorded',
      session_id: killedSession,
      num_turns: 1,
    });
    expect(booked?.cost_usd).toBeGreaterThan(0);
    expect(booked?.run).not.toBe(resumed?.run);
    expect(resumed).toMatchObject({ step: 'work', ok: true, resumed: true, session_id: killedSession });
    // The binary writes its own cost total only when a query ends, so the killed query is priced
    // from the tokens of its responses.
    expect(booked?.errors).toEqual([expect.stringMatching(/cost from the tokens of its responses/)]);
    expect(existsSync(join(runDir, 'in-flight'))).toBe(true);
    expect(readdirSync(join(runDir, 'in-flight'))).toEqual([]);
  });

  it('two processes writing one run directory at once keep all manifest rows and lineage steps', async () => {
    harness = await startHarness({ main: [], fallback: mock.text('Done.') });
    const [alpha, beta] = await Promise.all([
      drive(harness, 'alpha', 'First task.'),
      drive(harness, 'beta', 'Second task.'),
    ]);
    expect(alpha.result).toMatchObject({ ok: true });
    expect(beta.result).toMatchObject({ ok: true });
    const runDir = join(harness.workspace, 'runs');
    const rows = readJson(join(runDir, 'manifest.json')) as Array<Record<string, unknown>>;
    expect(rows.map((row) => row.step).sort()).toEqual(['alpha', 'beta']);
    expect(new Set(rows.map((row) => row.run)).size).toBe(2);
    const lineage = readJson(join(runDir, 'lineage.json')) as { steps: Record<string, string> };
    expect(lineage.steps).toEqual({ alpha: alpha.result?.sessionId, beta: beta.result?.sessionId });
  });

  it('sets a corrupt manifest and lineage aside with a warning and starts them afresh', async () => {
    harness = await startHarness([mock.text('Done.')]);
    const runDir = join(harness.workspace, 'runs');
    mkdirSync(runDir, { recursive: true });
    writeFileSync(join(runDir, 'manifest.json'), '[{"step": "half-writ');
    writeFileSync(join(runDir, 'lineage.json'), 'not json at all');
    const warnings: string[] = [];
    const runtime = harness.runtime({ onWarning: (line) => warnings.push(line) });
    const spec: AgentSpec = {
      name: 'work',
      instructions: '',
      allowedTools: ['Read'],
      permissionMode: 'default',
    };
    const result = await runtime.run(spec, 'Do it.', { continuous: true });

    expect(result.ok).toBe(true);
    expect(warnings.length).toBeGreaterThanOrEqual(2);
    expect(warnings.join('\n')).toMatch(/manifest\.json/);
    expect(warnings.join('\n')).toMatch(/lineage\.json/);
    expect(readJson(join(runDir, 'manifest.json'))).toMatchObject([{ step: 'work', ok: true }]);
    expect(readJson(join(runDir, 'lineage.json'))).toMatchObject({ steps: { work: result.sessionId } });
    const kept = readdirSync(runDir).filter((name) => name.includes('.corrupt-'));
    expect(kept.some((name) => name.startsWith('manifest.json'))).toBe(true);
    expect(kept.some((name) => name.startsWith('lineage.json'))).toBe(true);
    const keptManifest = kept.find((name) => name.startsWith('manifest.json'))!;
    expect(readFileSync(join(runDir, keptManifest), 'utf8')).toBe('[{"step": "half-writ');
  });
});
