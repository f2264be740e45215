/** The last line of go/run: this run with its asides, and the whole task (every run and aside). */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { totalLine } from '../../../src/report/total-line.js';

let dir: string | undefined;
afterEach(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});

describe('totalLine', () => {
  it('adds the asides asked during this run to its total and shows the whole task beside it', () => {
    dir = mkdtempSync(join(tmpdir(), 'flower-total-'));
    mkdirSync(join(dir, 'aside'));
    const row = (run: string, cost: number, started: number) => ({
      step: 'x',
      run,
      cost_usd: cost,
      started_at: started,
      ended_at: started + 1,
    });
    writeFileSync(
      join(dir, 'manifest.json'),
      JSON.stringify([row('earlier', 1, 100), row('now', 0.5, 1000)]),
    );
    writeFileSync(
      join(dir, 'aside', 'manifest.json'),
      JSON.stringify([row('a1', 0.02, 200), row('a2', 0.01, 1001)]),
    );
    expect(totalLine(dir, 0.5, 1000)).toBe(
      'total $0.5100 this run (asides $0.0100) · $1.5300 for the whole task',
    );
  });

  it('still gives this run’s figure when the books cannot be read', () => {
    dir = mkdtempSync(join(tmpdir(), 'flower-total-'));
    writeFileSync(join(dir, 'manifest.json'), '{ not json');
    expect(totalLine(dir, 0.25, 0)).toBe('total $0.2500 this run · $0.0000 for the whole task');
  });
});
