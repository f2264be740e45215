/**
 * The outbox (runtime/shared/outbox.ts) on its own: the file the changes a shared task made wait in
 * until PostgreSQL confirms them. Its replay through the pull is in shared-pull.test.ts (real
 * server); here, what a line holds, what reads back, and that it never throws.
 */
import {
  appendFileSync,
  existsSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  appendOutbox,
  clearOutbox,
  OUTBOX_FILE,
  outboxPath,
  readOutbox,
} from '../../../src/runtime/shared/outbox.js';
import type { TaskRecordChange } from '../../../src/store/postgres/task-records.js';

let runDir: string;
beforeEach(() => {
  runDir = mkdtempSync(join(tmpdir(), 'flower-outbox-'));
});
afterEach(() => rmSync(runDir, { recursive: true, force: true }));

const step = (key: string, at: number): TaskRecordChange => ({
  op: 'put',
  kind: 'lineage-step',
  key,
  value: { sessionId: `s-${key}` },
  at,
});

describe('appendOutbox', () => {
  it('writes one line per change set, with the epoch it was made under, in order', () => {
    appendOutbox(runDir, [step('a', 1), step('b', 2)], 7);
    appendOutbox(runDir, [step('c', 3)], 8);
    expect(outboxPath(runDir)).toBe(join(runDir, OUTBOX_FILE));
    const lines = readFileSync(outboxPath(runDir), 'utf8').split('\n');
    expect(lines).toHaveLength(3);
    expect(lines[2]).toBe('');
    expect(JSON.parse(lines[0] ?? '')).toEqual({ epoch: 7, changes: [step('a', 1), step('b', 2)] });
    expect(readOutbox(runDir)).toEqual([
      { epoch: 7, changes: [step('a', 1), step('b', 2)] },
      { epoch: 8, changes: [step('c', 3)] },
    ]);
  });

  it('is private to the user (0600)', () => {
    // (The umask is not set here: StrykerJS runs these tests in worker threads, where it cannot be.)
    appendOutbox(runDir, [step('a', 1)], 1);
    expect(statSync(outboxPath(runDir)).mode & 0o777).toBe(0o600);
  });

  it('writes nothing for an empty change set', () => {
    appendOutbox(runDir, [], 3);
    expect(existsSync(outboxPath(runDir))).toBe(false);
  });

  it('never throws when the file cannot be written', () => {
    expect(() => appendOutbox(join(runDir, 'missing', 'deeper'), [step('a', 1)], 1)).not.toThrow();
  });
});

describe('readOutbox', () => {
  it('reads a missing outbox as empty', () => {
    expect(readOutbox(runDir)).toEqual([]);
    expect(readOutbox(join(runDir, 'not-there'))).toEqual([]);
  });

  it('reads a line from before leases (a bare array) as made under no known epoch', () => {
    writeFileSync(outboxPath(runDir), `${JSON.stringify([step('old', 1)])}\n`);
    appendOutbox(runDir, [step('new', 2)], 4);
    expect(readOutbox(runDir)).toEqual([
      { epoch: undefined, changes: [step('old', 1)] },
      { epoch: 4, changes: [step('new', 2)] },
    ]);
  });

  it('skips a torn last line, blank lines and lines that hold no change set; keeps the rest', () => {
    appendOutbox(runDir, [step('a', 1)], 2);
    appendFileSync(outboxPath(runDir), '\n   \nnull\n{"epoch":3}\n{"epoch":3,"changes":"x"}\n');
    appendFileSync(outboxPath(runDir), `${JSON.stringify({ epoch: 'nine', changes: [step('b', 2)] })}\n`);
    appendFileSync(outboxPath(runDir), '{"epoch":5,"changes":[{"op":"put","kind":"lineage-st');
    expect(readOutbox(runDir)).toEqual([
      { epoch: 2, changes: [step('a', 1)] },
      { epoch: undefined, changes: [step('b', 2)] },
    ]);
  });
});

describe('clearOutbox', () => {
  it('empties the outbox, and an outbox already gone or a run directory that cannot hold one is no error', () => {
    appendOutbox(runDir, [step('a', 1)], 1);
    clearOutbox(runDir);
    expect(existsSync(outboxPath(runDir))).toBe(false);
    expect(readOutbox(runDir)).toEqual([]);
    expect(() => clearOutbox(runDir)).not.toThrow();
    writeFileSync(join(runDir, 'a-file'), '');
    expect(() => clearOutbox(join(runDir, 'a-file'))).not.toThrow();
  });
});
