/**
 * Issue 18 §6: a process killed with SIGKILL while `work` dispatches its first worker, and then a
 * damaged `runs/lineage.json` (half-written, random bytes, `null`, a directory). The killed step has
 * no manifest row yet (the next start books it), so a rebuild from the manifest alone forgot it and
 * `work` started a new session, losing its context (observed 4 of 4). The rebuild now takes the
 * step that was in flight from its in-flight marker, and `work` continues its own session.
 *
 * Real processes (the built package), SIGKILL of the process group, the real binary; only the
 * model is scripted.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { readManifest } from '../../src/runtime/manifest.js';
import { lastMessage, lastUserText, type RecordedRequest } from '../../src/testing/index.js';
import { ACHIEVED, BEQUEST_REPLY, mainRouter, roleOf } from './scenario-harness.js';
import { type StarterHarness, startStarterHarness, storedText } from './starter-process-harness.js';

let harness: StarterHarness | undefined;
afterEach(async () => {
  await harness?.cleanup();
  harness = undefined;
});

const DISPATCH = 'Write hello.py that prints hello world.';

const damage: Record<string, (file: string) => void> = {
  'half-written': (file) => writeFileSync(file, readFileSync(file, 'utf8').slice(0, 25)),
  'random bytes': (file) => writeFileSync(file, randomBytes(300)),
  null: (file) => writeFileSync(file, 'null'),
  'a directory': (file) => {
    rmSync(file);
    mkdirSync(file);
  },
};

/** The coordinator dispatches a coder; the coder's very first request never gets an answer in time. */
function script() {
  let coderRequests = 0;
  return {
    main: mainRouter({
      coordinator: (request: RecordedRequest) => {
        const last = JSON.stringify(lastMessage(request.body) ?? '');
        if (last.includes('task-notification')) return { text: 'hello.py is written.' };
        if (last.includes('tool_result')) return { text: 'Dispatched the coder.' };
        return {
          toolUses: [
            {
              name: 'Agent',
              input: { subagent_type: 'coder', description: 'write hello.py', prompt: DISPATCH },
            },
          ],
        };
      },
      verdict: () => ({ text: ACHIEVED }),
      bequest: () => ({ text: BEQUEST_REPLY }),
    }),
    agents: {
      coder: Array.from({ length: 20 }, () => () => {
        coderRequests += 1;
        return coderRequests === 1
          ? { text: 'This reply never arrives.', delayMs: 120_000 }
          : { text: '## Done\nhello.py written.\n## Files\nhello.py\n## Open\nnone\n## Notes\nnone' };
      }),
    },
  };
}

describe('SIGKILL at dispatch, then a damaged lineage.json (real processes, binary and SDK)', () => {
  it.each(Object.keys(damage))(
    '%s: the rebuilt lineage keeps the killed step, and work continues its own session',
    async (kind) => {
      const h = await startStarterHarness(script);
      harness = h;
      // Killed while the worker it dispatched waits for its first reply, once the dispatch is on
      // record (the binary writes its transcript lazily: an earlier kill loses the turn itself).
      await h.killWhen(async () => {
        await h.mock.waitForRequest(() => h.mock.agentRequests('coder').length >= 1, 120_000);
        await storedText(h.runDir, DISPATCH);
      });
      const lineagePath = join(h.runDir, 'lineage.json');
      const killed = (JSON.parse(readFileSync(lineagePath, 'utf8')) as { steps: Record<string, string> })
        .steps.work;
      expect(killed).toBeTruthy();
      // Nothing wrote a row for the killed step: only its in-flight marker names it.
      expect(readManifest(h.runDir)).toEqual([]);
      damage[kind]!(lineagePath);

      const before = h.mock.mainRequests().length;
      const output = await h.start().exited;
      expect(output).toContain('done {"failedAt":null}');
      const warnings = output
        .split('\n')
        .filter((line) => line.startsWith('warning '))
        .map((line) => line.slice('warning '.length));
      expect(warnings.find((line) => line.startsWith('Rebuilt '))).toMatch(
        new RegExp(
          `^Rebuilt ${lineagePath} from the manifest and the session store: work continues session ${killed} ` +
            '\\(the session it was running when its process ended, last active \\d\\d:\\d\\d:\\d\\d\\)\\.$',
        ),
      );

      // The first work request of the second run continues the killed session with its context.
      const resumed = h.mock
        .mainRequests()
        .slice(before)
        .find((request) => roleOf(request) === 'coordinator')!;
      expect(resumed.headers['x-claude-code-session-id']).toBe(killed);
      // The wake prompt of a continuing step, not the first prompt of a new one.
      expect(lastUserText(resumed)).toContain('Carry on from where you stopped last time.');
      expect(lastUserText(resumed)).not.toContain('Do this, as the brief below says');
      expect(JSON.stringify(resumed.body?.messages)).toContain(DISPATCH);

      expect(statSync(lineagePath).isFile()).toBe(true);
      expect(JSON.parse(readFileSync(lineagePath, 'utf8')).steps.work).toBe(killed);
      const rows = readManifest(h.runDir);
      expect(rows.map((row) => [row.step, row.session_id === killed, row.error])).toEqual([
        ['work', true, 'killed-unrecorded'],
        ['work', true, null],
        ['work:verdict#1', false, null],
        ['bequest', false, null],
      ]);
      expect(rows[1]?.ok).toBe(true);
    },
    240_000,
  );
});
