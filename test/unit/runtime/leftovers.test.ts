/**
 * What a runtime settles before its first step, through the real run directory, manifest and
 * SQLite store (issue 22: a later row of another session hid a SIGKILLed attempt, and killed
 * sessions were not compared with the agent's own transcripts at start; neither was caught).
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { SessionStoreEntry } from '@anthropic-ai/claude-agent-sdk';
import { afterEach, describe, expect, it } from 'vitest';
import { IN_FLIGHT_DIRECTORY, KILLED_UNRECORDED } from '../../../src/runtime/in-flight.js';
import { settleLeftovers } from '../../../src/runtime/leftovers.js';
import { Lineage } from '../../../src/runtime/lineage.js';
import { readManifest, saveManifestRows } from '../../../src/runtime/manifest.js';
import { newStepResult } from '../../../src/runtime/step-result.js';
import { agentProjectsRoot, TranscriptSafety } from '../../../src/runtime/transcript-safety.js';
import { projectKeyFor } from '../../../src/store/session-key.js';
import { appendTranscriptFile, transcriptFile } from '../../../src/store/transcript-recovery.js';
import { sqliteStoresPerTest } from '../../support/sqlite-stores.js';

const openStore = sqliteStoresPerTest('flower-leftovers-');
const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

/** A pid that is certainly not running: a child that has already exited. */
const deadPid = () => spawnSync(process.execPath, ['-e', '0']).pid as number;
const iso = (seconds: number) => new Date(seconds * 1000).toISOString();
const assistant = (uuid: string, at: number, id: string): SessionStoreEntry => ({
  type: 'assistant',
  uuid,
  timestamp: iso(at),
  message: { id, model: 'claude-sonnet-4-5', usage: { input_tokens: 1_000_000, output_tokens: 0 } },
});

describe('settleLeftovers books a SIGKILLed attempt', () => {
  it("at its whole cost: the judge's later row does not hide it, and replies the store missed are compared in first", async () => {
    const workspace = mkdtempSync(join(tmpdir(), 'flower-leftovers-ws-'));
    cleanups.push(() => rmSync(workspace, { recursive: true, force: true }));
    const runDir = join(workspace, 'runs');
    mkdirSync(runDir);
    const env = { CLAUDE_CONFIG_DIR: join(workspace, 'claude') };
    const projectKey = projectKeyFor(workspace);
    const store = openStore();
    const key = { projectKey, sessionId: 'killed' };

    // The killed attempt started at 1000; the SDK had mirrored its first reply, not its second.
    const transcript = [
      { type: 'user', uuid: 'u1', timestamp: iso(1001) },
      assistant('a1', 1002, 'msg-1'),
      assistant('a2', 1005, 'msg-2'),
    ];
    await store.append(key, transcript.slice(0, 2));
    appendTranscriptFile(agentProjectsRoot(env), key, transcript);
    // The agent wrote its file before the store stamped its last append: only the kill says look.
    utimesSync(transcriptFile(agentProjectsRoot(env), key), 1_000, 1_000);
    mkdirSync(join(runDir, IN_FLIGHT_DIRECTORY));
    writeFileSync(
      join(runDir, IN_FLIGHT_DIRECTORY, 'killed.json'),
      JSON.stringify({
        sessionId: 'killed',
        step: 'work',
        run: 'run-killed',
        pid: deadPid(),
        host: hostname(),
        startedAt: 1000,
        baselineUsd: 0,
        resumed: false,
      }),
    );
    // The judge of the same run wrote its row after the killed attempt had started.
    const judge = { ...newStepResult('work:verdict#1', 'run-killed', 1001), sessionId: 'judge', ok: true };
    judge.endedAt = 1100;
    saveManifestRows(runDir, 'run-killed', [judge]);

    const warnings: string[] = [];
    const onWarning = (line: string) => warnings.push(line);
    await settleLeftovers({
      runDir,
      projectKey,
      store,
      lineage: Lineage.open(runDir, workspace),
      transcripts: new TranscriptSafety({
        backend: store,
        target: store,
        runDir,
        projectKey,
        env,
        onWarning,
      }),
      onWarning,
    });

    expect((store.loadRaw(key) ?? []).map((entry) => entry.uuid)).toEqual(['u1', 'a1', 'a2']);
    const rows = readManifest(runDir);
    expect(rows.map((row) => [row.step, row.session_id, row.error ?? null])).toEqual([
      ['work:verdict#1', 'judge', null],
      ['work', 'killed', KILLED_UNRECORDED],
    ]);
    // Two responses of 1M input tokens at $3 per million (Sonnet 4.5).
    expect(rows[1]).toMatchObject({ cost_usd: 6, num_turns: 2, run: 'run-killed', started_at: 1000 });
    expect(warnings).toEqual([
      "The session store was missing 1 transcript entry of 1 session; they were copied back from the agents' own transcripts.",
    ]);
  });
});
