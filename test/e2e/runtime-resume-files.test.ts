/**
 * A resume of a session with a subagent, through the Runtime, with the real SDK and binary
 * against the mock model: flower writes the resume's transcript files itself (runtime/
 * resume-files.ts) instead of the SDK serialising them from the store. Proven against the SDK's
 * own path on a copy of the same store: the model is sent the same rewritten history, the
 * subagent's transcript and sidecar are in the SDK's resume copy when the binary asks the model,
 * and what the resumed session adds reaches the store.
 */
import { execFileSync } from 'node:child_process';
import { copyFileSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { query, type SessionStoreEntry } from '@anthropic-ai/claude-agent-sdk';
import { afterEach, describe, expect, it } from 'vitest';
import type { AgentSpec } from '../../src/runtime/agent-spec.js';
import { RESUME_PLACEHOLDER } from '../../src/runtime/resume-files.js';
import type { RewriteOptions } from '../../src/store/rewrite.js';
import { RewritingSessionStore } from '../../src/store/rewriting-store.js';
import { SqliteSessionStore } from '../../src/store/sqlite-session-store.js';
import { SIDECAR_TYPE } from '../../src/store/transcript-recovery.js';
import { conversationMessages, mock, mockModelEnv, type RecordedRequest } from '../../src/testing/index.js';
import { tempDir } from '../support/scratch.js';
import { type Harness, startHarness } from './runtime-harness.js';

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.cleanup();
  harness = undefined;
});

const BIG = Array.from({ length: 200 }, (_, line) => `line ${line}: ${'data '.repeat(8)}`).join('\n');
const rewrite: RewriteOptions = { ephemeral: { keepRecent: 1 }, trim: { enabled: true, keepRecent: 0 } };

const spec: AgentSpec = {
  name: 'work',
  instructions: '',
  allowedTools: ['Bash', 'Agent'],
  permissionMode: 'acceptEdits',
  agents: { scout: { description: 'Looks around', prompt: 'You are a scout.', tools: ['Bash'] } },
};

/** The files of `sessionId` in the SDK's resume copies under the OS temp directory, by path below the session. */
function resumeCopyFiles(sessionId: string): Map<string, string> {
  const files = new Map<string, string>();
  for (const copy of readdirSync(tmpdir()).filter((name) => name.startsWith('claude-resume-'))) {
    const projects = join(tmpdir(), copy, 'projects');
    for (const project of safeList(projects)) {
      const main = join(projects, project, `${sessionId}.jsonl`);
      const text = safeRead(main);
      if (text === undefined) continue;
      files.set('main', text);
      const subagents = join(projects, project, sessionId, 'subagents');
      for (const name of safeList(subagents)) files.set(name, safeRead(join(subagents, name)) ?? '');
    }
  }
  return files;
}

function safeList(directory: string): string[] {
  try {
    return readdirSync(directory);
  } catch {
    return [];
  }
}

function safeRead(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
}

async function until(condition: () => boolean): Promise<void> {
  for (const deadline = Date.now() + 15_000; Date.now() < deadline && !condition(); )
    await new Promise((resolve) => setTimeout(resolve, 50));
}

const linesOf = (text: string): SessionStoreEntry[] =>
  text
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as SessionStoreEntry);

describe('a resume with a subagent, its transcript files written by flower', () => {
  it('sends the model the history the SDK path sent, puts the subagent in place, and mirrors what follows', async () => {
    /** What the binary had on disk when it first asked the model after each resume. */
    const seen: Array<Map<string, string>> = [];
    let sessionId = '';
    const look = (reply: string) => (_request: RecordedRequest) => {
      seen.push(resumeCopyFiles(sessionId));
      return mock.text(reply);
    };
    harness = await startHarness({
      main: [
        mock.toolUse('Bash', { command: 'git status' }),
        mock.toolUse('Bash', { command: 'cat big.txt' }),
        mock.toolUse('Agent', {
          description: 'Look around',
          prompt: 'Report what the workspace holds.',
          subagent_type: 'scout',
          run_in_background: false,
        }),
        mock.toolUse('Bash', { command: 'git status' }),
        mock.text('Looked around.'),
        look('Picked up through the SDK.'),
        look('Picked up through flower.'),
      ],
      agents: {
        scout: [mock.toolUse('Bash', { command: 'cat big.txt' }), mock.text('The scout saw big.txt.')],
      },
    });
    const { workspace } = harness;
    const runtime = harness.runtime({ store: rewrite });
    execFileSync('git', ['init', '-q'], { cwd: workspace });
    writeFileSync(join(workspace, 'big.txt'), `${BIG}\n`);
    const first = await runtime.run(spec, 'Look around.');
    expect(first.ok, first.error ?? '').toBe(true);
    sessionId = first.sessionId as string;
    const key = { projectKey: runtime.projectKey, sessionId };
    const [subpath] = await runtime.store.listSubkeys(key);
    expect(subpath).toMatch(/^subagents\/agent-/);
    const storedSubagent = runtime.store.loadRaw({ ...key, subpath: subpath as string }) ?? [];
    expect(JSON.stringify(storedSubagent)).toContain('line 199: data');
    const storedMain = runtime.store.loadRaw(key) ?? [];

    // The SDK's own path, on a copy of the store as it is now: what it sends is the reference.
    // (Closed first: the runtime's store then has every row in its main file, none in its WAL.)
    runtime.close();
    const copy = join(tempDir('flower-copy-'), 'sessions.db');
    copyFileSync(runtime.store.path, copy);
    const copied = new SqliteSessionStore(copy);
    const layer = new RewritingSessionStore(copied, { workspace, ...rewrite });
    const expectedSubagent = (await layer.load({ ...key, subpath: subpath as string })) ?? [];
    for await (const _message of query({
      prompt: 'Carry on.',
      options: {
        cwd: workspace,
        env: mockModelEnv(harness.model, { configDir: tempDir('flower-config-'), maxRetries: 0 }),
        allowedTools: ['Bash', 'Agent'],
        settingSources: [],
        sessionStore: layer,
        resume: sessionId,
      },
    })) {
      // drained
    }
    await layer.close();
    const viaSdk = harness.model.mainRequests().at(-1);
    // The SDK removes its copy once the binary has exited; flower's resume must make its own.
    await until(() => resumeCopyFiles(sessionId).size === 0);

    // A later process resumes the session, as `flower once --resume` does.
    const later = harness.runtime({ store: rewrite });
    const resumed = await later.run(spec, 'Carry on.', { resume: sessionId });
    expect(resumed.ok, resumed.error ?? '').toBe(true);
    expect(resumed.sessionId).toBe(sessionId);
    const viaFlower = harness.model.mainRequests().at(-1);
    expect(harness.model.unmatched).toEqual([]);

    // The same rewritten history: expired glance, trimmed result, the subagent's answer.
    // (The system messages differ: the runtime adds its sandbox and plugin, the bare query not.)
    const sent = conversationMessages(viaFlower?.body);
    expect(sent).toEqual(conversationMessages(viaSdk?.body));
    const text = JSON.stringify(sent);
    expect(text).toContain('result of `git status` expired');
    expect(text).toMatch(/\[tool result archived: \d+ chars\./);
    expect(text).not.toContain('line 199: data');
    expect(text).toContain('The scout saw big.txt.');
    expect(text).toContain('Carry on.');
    expect(text).not.toContain(RESUME_PLACEHOLDER.type);

    // The subagent's transcript and sidecar were in the binary's resume copy, as the SDK wrote them.
    const [sdkCopy, flowerCopy] = seen;
    const agentFile = `${(subpath as string).split('/')[1]}.jsonl`;
    const metaFile = agentFile.replace(/\.jsonl$/, '.meta.json');
    expect(flowerCopy?.get(agentFile), JSON.stringify([...(flowerCopy?.keys() ?? [])])).toBeDefined();
    expect(linesOf(flowerCopy?.get(agentFile) ?? '')).toEqual(
      expectedSubagent.filter((entry) => entry.type !== SIDECAR_TYPE),
    );
    expect(linesOf(flowerCopy?.get(agentFile) ?? '')).toEqual(linesOf(sdkCopy?.get(agentFile) ?? ''));
    expect(JSON.parse(flowerCopy?.get(metaFile) ?? 'null')).toEqual(
      JSON.parse(sdkCopy?.get(metaFile) ?? '""'),
    );
    expect(flowerCopy?.get(metaFile)).toBeDefined();
    // The main transcript file started with the history as rewritten, never the placeholder.
    const flowerMain = linesOf(flowerCopy?.get('main') ?? '');
    const sdkMain = linesOf(sdkCopy?.get('main') ?? '');
    expect(flowerMain.slice(0, storedMain.length - 1).map((entry) => entry.uuid ?? entry.type)).toEqual(
      sdkMain.slice(0, storedMain.length - 1).map((entry) => entry.uuid ?? entry.type),
    );
    expect(flowerMain.some((entry) => entry.type === RESUME_PLACEHOLDER.type)).toBe(false);

    // What the resumed session added reached the store, and the stored history is untouched.
    const after = later.store.loadRaw(key) ?? [];
    expect(after.slice(0, storedMain.length)).toEqual(storedMain);
    const added = JSON.stringify(after.slice(storedMain.length));
    expect(added).toContain('Carry on.');
    expect(added).toContain('Picked up through flower.');
    expect(after.some((entry) => entry.type === RESUME_PLACEHOLDER.type)).toBe(false);
    expect(later.store.loadRaw({ ...key, subpath: subpath as string })).toEqual(storedSubagent);
    // The SDK did not load the history through the runtime's store: flower's copy was the one used.
    expect(later.resumeStore.lastLoadReport(key)).toBeUndefined();
    // The load report of flower's own load is the step's.
    const report = resumed.rewrites?.at(-1);
    expect(report).toMatchObject({ session_id: sessionId });
    expect(report?.expired).toBeGreaterThan(0);
    expect(report?.trimmed).toBeGreaterThan(0);
    // And flower's copy goes the same way as the SDK's.
    await until(() => resumeCopyFiles(sessionId).size === 0);
    expect(resumeCopyFiles(sessionId).size).toBe(0);
  }, 120_000);
});
