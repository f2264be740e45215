import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { finished, startWriter } from '../support/manifest-writer-harness.js';

let root: string;
beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'flower-signal-'));
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

describe('a process killed in the middle of a step', () => {
  it.each(['SIGTERM', 'SIGHUP'] as const)(
    'leaves a killed-by-signal row on %s and still dies of the signal',
    async (signal) => {
      const runDir = join(root, 'runs');
      const runId = '20261130-010000-abcdef';
      const child = startWriter(['in-flight', runDir, runId]);
      const outcome = finished(child);
      const [firstOutput] = (await once(child.stdout!, 'data')) as [Buffer];
      expect(firstOutput.toString()).toBe('ready\n');

      child.kill(signal);
      const { code, signal: endedBy, stderr } = await outcome;

      expect(stderr).toBe('');
      expect(code).toBeNull();
      expect(endedBy).toBe(signal);
      const rows = JSON.parse(readFileSync(join(runDir, 'manifest.json'), 'utf8'));
      expect(rows).toHaveLength(2);
      expect(rows[0]).toMatchObject({ step: 'clarify', ok: true, error: null, run: runId });
      expect(rows[1]).toMatchObject({
        step: 'work',
        ok: false,
        error: 'killed-by-signal',
        session_id: 'session-in-flight',
        cost_usd: 0.5,
        run: runId,
      });
      expect(rows[1].ended_at).toBeGreaterThan(0);
      expect(rows[1].duration_s).toBeGreaterThanOrEqual(0);
    },
  );
});
