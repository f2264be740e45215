/**
 * Issue 10 §1 on a real full disk: `runs/` on a tmpfs mounted with `size=`, filled while the agent
 * works. Observed before: 20 of 43 transcript entries never reached sessions.db, and the run still
 * said "finished", exit 0. Every count here is checked against the agent's own transcript (the
 * JSONL files in its config directory, which sits on another file system).
 *
 * Needs root and permission to mount (CI runs as root); where mounting is refused the same
 * promises are checked with a store that fails on demand (`mirror-guard-sdk.test.ts`).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import type { AgentSpec } from '../../src/runtime/agent-spec.js';
import {
  LOCAL_ONLY_TYPES,
  readTranscriptFile,
  SIDECAR_TYPE,
  sessionFiles,
} from '../../src/store/transcript-recovery.js';
import { mock, type RecordedRequest } from '../../src/testing/index.js';
import { cleanUp, startMock, tempDir } from '../support/scratch.js';
import { canMountSmallDisk, type SmallDisk, smallDisk } from '../support/small-disk.js';
import { mockedEnv, runFlower } from './cli-harness.js';
import { type Harness, startHarness } from './runtime-harness.js';

const DISK_BYTES = 8 * 1024 * 1024;

let harness: Harness | undefined;
let disk: SmallDisk | undefined;
afterEach(async () => {
  await harness?.cleanup();
  harness = undefined;
  await cleanUp();
  disk?.release();
  disk = undefined;
});

/**
 * Stored entries per key (`<project>/<session>[/<subpath>]`) of a sessions.db, without the
 * subagents' metadata snapshots (the SDK mirrors their `.meta.json` sidecars; the JSONL has no line
 * for them).
 */
function storedCounts(file: string): Map<string, number> {
  const db = new Database(file, { readonly: true });
  try {
    const rows = db
      .prepare(
        `SELECT store_key, count(*) AS n FROM entries WHERE json_extract(payload, '$.type') != '${SIDECAR_TYPE}' GROUP BY store_key`,
      )
      .all() as Array<{
      store_key: string;
      n: number;
    }>;
    return new Map(rows.map((row) => [row.store_key, row.n]));
  } finally {
    db.close();
  }
}

/** Mirrorable lines per key of one session, from the agent's own transcript files. */
function agentCounts(configDir: string, projectKey: string, sessionId: string): Map<string, number> {
  const counts = new Map<string, number>();
  for (const { key, file } of sessionFiles(join(configDir, 'projects'), projectKey, sessionId)) {
    const lines = (readTranscriptFile(file) ?? []).filter((entry) => !LOCAL_ONLY_TYPES.has(entry.type));
    counts.set([key.projectKey, key.sessionId, key.subpath].filter(Boolean).join('/'), lines.length);
  }
  return counts;
}

const reader: AgentSpec = {
  name: 'work',
  instructions: '',
  allowedTools: ['Read', 'Glob', 'Agent'],
  permissionMode: 'default',
  agents: { finder: { description: 'Finds files.', prompt: 'You find files.', tools: ['Glob'] } },
};

describe.runIf(canMountSmallDisk())('a disk that fills up mid-run (tmpfs with size=)', () => {
  it('keeps the refused entries, writes them once the disk has room, and says so once', async () => {
    disk = smallDisk(DISK_BYTES);
    const full = disk!;
    const fillThen = (reply: ReturnType<typeof mock.text>) => (_request: RecordedRequest) => {
      full.fill();
      return reply;
    };
    harness = await startHarness({
      main: [
        mock.toolUse('Agent', {
          subagent_type: 'finder',
          description: 'find',
          prompt: 'Find the markdown files.',
          run_in_background: false,
        }),
        fillThen(mock.toolUse('Read', { file_path: 'README.md' })),
        mock.text('Done.'),
      ],
      agents: { finder: [mock.toolUse('Glob', { pattern: '*.md' }), mock.text('None found.')] },
    });
    const warnings: string[] = [];
    const runDir = join(full.path, 'runs');
    const runtime = harness.runtime({
      runDir,
      onWarning: (line) => {
        warnings.push(line);
        // The store has refused entries: now the disk gets room again, in the middle of the step.
        if (line.includes('did not take the transcript')) full.free();
      },
    });
    const result = await runtime.run(reader, 'Look for the docs.', { continuous: true });
    runtime.close();

    expect(result.ok).toBe(true);
    expect(warnings.filter((line) => line.includes('did not take the transcript'))).toHaveLength(1);
    expect(result.transcript).toMatchObject({ state: 'recovered', sessions: [result.sessionId] });
    expect(runtime.transcriptProblem()).toBeUndefined();
    const [row] = JSON.parse(readFileSync(join(runDir, 'manifest.json'), 'utf8'));
    expect(row.transcript).toMatchObject({ state: 'recovered' });

    const agent = agentCounts(harness.env.CLAUDE_CONFIG_DIR!, runtime.projectKey, result.sessionId!);
    expect(agent.size).toBe(2); // the main transcript and the finder's
    expect(storedCounts(join(runDir, 'sessions.db'))).toEqual(agent);
  });

  it("reports the agent's own transcript losing lines (session_writes_lost) as lost, once, and fails the run", async () => {
    disk = smallDisk(DISK_BYTES);
    const full = disk!;
    harness = await startHarness(
      [
        mock.toolUse('Read', { file_path: 'README.md' }),
        (_request: RecordedRequest) => {
          full.fill();
          return mock.toolUse('Glob', { pattern: '*' });
        },
        mock.text('Done.'),
      ],
      { CLAUDE_CONFIG_DIR: join(full.path, 'claude') },
    );
    const warnings: string[] = [];
    const runtime = harness.runtime({ onWarning: (line) => warnings.push(line) });
    const result = await runtime.run(reader, 'Look for the docs.', { continuous: true });
    runtime.close();

    const lost = `Claude Code could not save part of the transcript of session ${result.sessionId} (ENOSPC: the disk is full); resuming it may miss part of the conversation.`;
    expect(warnings).toEqual([lost]);
    expect(result.transcript).toEqual({
      state: 'lost',
      sessions: [result.sessionId],
      entries: 0,
      detail: lost,
    });
    expect(runtime.transcriptProblem()).toBe(`${lost} Free some space before the next run.`);
  });

  it('ends `flower once` with exit 1 and one line when the disk stays full; the next start copies the rest in', async () => {
    disk = smallDisk(DISK_BYTES);
    const full = disk!;
    const model = await startMock([
      mock.toolUse('Read', { file_path: 'README.md' }),
      (_request: RecordedRequest) => {
        full.fill();
        return mock.toolUse('Glob', { pattern: '*' });
      },
      mock.text('Done.'),
    ]);
    const configDir = tempDir('flower-disk-claude-');
    const env = mockedEnv(model, { CLAUDE_CONFIG_DIR: configDir });
    const workspace = join(full.path, 'ws');
    const first = await runFlower(['once', '-w', workspace, 'Read the readme.'], { env });

    expect(first.status).toBe(1);
    const lastLine = first.stderr.trim().split('\n').at(-1) ?? '';
    expect(lastLine).toMatch(
      /^flower: \d+ transcript entries \(session [0-9a-f-]+\) are not in the session store/,
    );
    expect(first.stderr.match(/did not take the transcript/g)).toHaveLength(1);

    full.free();
    model.setScript([mock.text('Second run.')]);
    const second = await runFlower(['once', '-w', workspace, 'Say something.'], { env });
    expect(second.status).toBe(0);
    expect(second.stderr).toMatch(/copied back from the agents' own transcripts/);

    const sessionId = /session ([0-9a-f-]{36})/.exec(lastLine)?.[1] ?? '';
    const projectKey = [...storedCounts(join(workspace, 'runs', 'sessions.db')).keys()][0]!.split('/')[0]!;
    const agent = agentCounts(configDir, projectKey, sessionId);
    const stored = storedCounts(join(workspace, 'runs', 'sessions.db'));
    expect(agent.size).toBe(1);
    for (const [key, count] of agent) expect(stored.get(key)).toBe(count);
  });
});
