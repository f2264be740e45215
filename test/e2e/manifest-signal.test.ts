/**
 * SIGTERM and SIGHUP in the middle of a step, through `Runtime` itself (issue 10 §6: the earlier
 * test wired the rescue by hand in a helper, so breaking the runtime's own wiring failed nothing):
 * the finished step keeps its row, the step in flight gets a `killed-by-signal` row with its
 * session, and the process still dies of the signal.
 */

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { mock } from '../../src/testing/index.js';
import { distRoot, type Harness, runNode, startHarness } from './runtime-harness.js';

/** Two steps through the built runtime: the first finishes, the second waits on a slow reply. */
const twoSteps = `
const [workspace] = process.argv.slice(1);
const { Runtime } = await import(${JSON.stringify(join(distRoot, 'runtime', 'runtime.js'))});
const runtime = new Runtime({ workspace, resilience: false });
const spec = (name) => ({ name, instructions: '', allowedTools: ['Read'], permissionMode: 'default' });
await runtime.run(spec('clarify'), 'First step.');
await runtime.run(spec('work'), 'Second step.', { onSession: (id) => console.log('session ' + id) });
console.log('not reached');
`;

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.cleanup();
  harness = undefined;
});

describe('a flower process told to stop in the middle of a step (real SDK and binary)', () => {
  it.each(['SIGTERM', 'SIGHUP'] as const)(
    'on %s leaves a killed-by-signal row and still dies of the signal',
    async (signal) => {
      harness = await startHarness([mock.text('First step done.'), mock.text('never', { delayMs: 60_000 })]);
      const h = harness;
      let session = '';
      const outcome = await runNode(['--input-type=module', '-e', twoSteps, h.workspace], h.env, {
        onSpawn: (child) => {
          child.stdout?.on('data', (chunk: Buffer) => {
            const found = /session (\S+)/.exec(chunk.toString());
            if (found && session === '') {
              session = found[1]!;
              void h.model
                .waitForRequest(() => h.model.mainRequests().length >= 2, 30_000)
                .then(() => child.kill(signal));
            }
          });
        },
      });

      expect(outcome.signal).toBe(signal);
      expect(outcome.code).toBeNull();
      expect(outcome.stdout).not.toContain('not reached');
      const rows = JSON.parse(readFileSync(join(h.workspace, 'runs', 'manifest.json'), 'utf8'));
      expect(rows).toHaveLength(2);
      expect(rows[0]).toMatchObject({ step: 'clarify', ok: true, error: null });
      expect(rows[0].cost_usd).toBeGreaterThan(0);
      expect(rows[1]).toMatchObject({
        step: 'work',
        ok: false,
        error: 'killed-by-signal',
        session_id: session,
      });
      expect(rows[1].run).toBe(rows[0].run);
      expect(rows[1].ended_at).toBeGreaterThan(0);
      expect(rows[1].duration_s).toBeGreaterThanOrEqual(0);
    },
  );
});
