/**
 * Issue 10 §1 without mounting anything: a session store that refuses writes on demand, under the
 * real SDK and binary (the disk-full version with a real tmpfs is `transcript-disk-full.test.ts`),
 * and a `sessions.db` with two overwritten pages. Counts are checked against the agent's own
 * transcript in its config directory.
 */
import { randomBytes } from 'node:crypto';
import { closeSync, mkdirSync, openSync, readdirSync, statSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import type { SessionKey, SessionStoreEntry } from '@anthropic-ai/claude-agent-sdk';
import { afterEach, describe, expect, it } from 'vitest';
import type { AgentSpec } from '../../src/runtime/agent-spec.js';
import { buildOptions, startQuery } from '../../src/runtime/options.js';
import { MirrorGuard } from '../../src/store/mirror-guard.js';
import { projectKeyFor } from '../../src/store/session-key.js';
import { SqliteSessionStore } from '../../src/store/sqlite-session-store.js';
import {
  LOCAL_ONLY_TYPES,
  readTranscriptFile,
  recoverSession,
  transcriptFile,
} from '../../src/store/transcript-recovery.js';
import { mock } from '../../src/testing/index.js';
import { type Harness, startHarness } from './runtime-harness.js';

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.cleanup();
  harness = undefined;
});

const spec: AgentSpec = { name: 'work', instructions: '', allowedTools: ['Glob'], permissionMode: 'default' };
const script = [
  mock.toolUse('Glob', { pattern: '*' }),
  mock.toolUse('Glob', { pattern: '**' }),
  mock.toolUse('Glob', { pattern: '*.md' }),
  mock.text('Done.'),
];

/** A real SQLite store that refuses every append while `refusing` is true. */
function refusingStore(file: string) {
  const store = new SqliteSessionStore(file);
  const control = { refusing: false, refused: 0 };
  const append = store.append.bind(store);
  store.append = async (key: SessionKey, entries: SessionStoreEntry[]) => {
    if (control.refusing) {
      control.refused += 1;
      throw new Error('the store is offline (on purpose)');
    }
    return append(key, entries);
  };
  return { store, control };
}

async function runSession(h: Harness, guard: MirrorGuard, onTurn: (turn: number) => void) {
  mkdirSync(h.workspace, { recursive: true });
  let sessionId = '';
  const systemSubtypes: string[] = [];
  let turn = 0;
  for await (const message of startQuery(
    'Look around.',
    buildOptions(spec, { cwd: h.workspace, sessionStore: guard, baseEnv: h.env }),
  )) {
    if (typeof message.session_id === 'string' && message.session_id) sessionId = message.session_id;
    if (message.type === 'system') systemSubtypes.push(message.subtype);
    if (message.type === 'assistant') onTurn(++turn);
  }
  return { sessionId, systemSubtypes };
}

function agentLines(h: Harness, sessionId: string): SessionStoreEntry[] {
  const key = { projectKey: projectKeyFor(h.workspace), sessionId };
  const file = transcriptFile(join(h.env.CLAUDE_CONFIG_DIR!, 'projects'), key);
  return (readTranscriptFile(file) ?? []).filter((entry) => !LOCAL_ONLY_TYPES.has(entry.type));
}

describe('a session store that refuses writes for a while (real SDK and binary)', () => {
  it('loses no entry: the guard holds the refused batches and writes them in order once it accepts writes', async () => {
    harness = await startHarness(script);
    const { store, control } = refusingStore(join(harness.root, 'sessions.db'));
    const guard = new MirrorGuard(store);
    const run = await runSession(harness, guard, (turn) => {
      control.refusing = turn >= 1 && turn < 3;
    });
    expect(control.refused).toBeGreaterThan(0);
    // The guard took the refusals over: the SDK never dropped a batch.
    expect(run.systemSubtypes).not.toContain('mirror_error');
    expect(await guard.flush()).toEqual([]);
    const key = { projectKey: projectKeyFor(harness.workspace), sessionId: run.sessionId };
    expect(store.loadRaw(key)).toEqual(agentLines(harness, run.sessionId));
    store.close();
  });

  it("when it never comes back, a later store is brought up to date from the agent's own transcript", async () => {
    harness = await startHarness(script);
    const { store, control } = refusingStore(join(harness.root, 'sessions.db'));
    const guard = new MirrorGuard(store);
    const run = await runSession(harness, guard, (turn) => {
      control.refusing = turn >= 2;
    });
    expect(guard.pending().length).toBe(1);
    control.refusing = false;
    const key = { projectKey: projectKeyFor(harness.workspace), sessionId: run.sessionId };
    const before = store.loadRaw(key)?.length ?? 0;
    const recovered = await recoverSession(
      { append: (k, entries) => store.append(k, entries), load: async (k) => store.loadRaw(k) },
      join(harness.env.CLAUDE_CONFIG_DIR!, 'projects'),
      key.projectKey,
      run.sessionId,
    );
    const lines = agentLines(harness, run.sessionId);
    expect(recovered.entries).toBe(lines.length - before);
    expect(store.loadRaw(key)?.length).toBe(lines.length);
    store.close();
  });
});

describe('a sessions.db with two overwritten pages (real SDK and binary)', () => {
  it("is set aside once at open, and the step resumes its session, copied back from the agent's transcript", async () => {
    harness = await startHarness([
      mock.toolUse('Glob', { pattern: '*' }),
      mock.text('First run done.'),
      mock.text('Second run done.'),
    ]);
    const first = harness.runtime();
    const done = await first.run(spec, 'Look around.', { continuous: true });
    first.close();
    expect(done.ok).toBe(true);
    const runDir = join(harness.workspace, 'runs');
    const db = join(runDir, 'sessions.db');
    const pages = statSync(db).size / 4096;
    const fd = openSync(db, 'r+');
    for (const page of [2, Math.max(3, Math.floor(pages / 2))])
      writeSync(fd, randomBytes(4096), 0, 4096, page * 4096);
    closeSync(fd);

    const warnings: string[] = [];
    const second = harness.runtime({ onWarning: (line) => warnings.push(line) });
    const resumed = await second.run(spec, 'Look around.', { continuous: true });
    second.close();

    expect(warnings.filter((line) => line.includes('is damaged'))).toHaveLength(1);
    expect(
      readdirSync(runDir).filter((name) => /^sessions\.db\.corrupt-\d{8}-\d{6}$/.test(name)),
    ).toHaveLength(1);
    expect(resumed).toMatchObject({
      ok: true,
      attempts: 1,
      resumed: true,
      sessionId: done.sessionId,
      text: 'Second run done.',
    });
    expect(warnings.some((line) => /copied back from the agents' own transcripts/.test(line))).toBe(true);
    expect(resumed.transcript).toBeUndefined();
  });
});
