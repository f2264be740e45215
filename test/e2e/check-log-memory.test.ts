/**
 * A check that prints 100 MB costs flower neither 100 MB of disk nor 100 MB of memory: in a fresh
 * Node process running the built runner (dist/), the log is capped and the process's peak resident
 * size grows by far less than the output. Measured here: about +38 MiB, the same for 400 MB (the
 * stream's garbage before the collector runs); a runner that kept the output grew by +106 MiB.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const RUNNER = new URL('../../dist/checks/runner.js', import.meta.url).href;
const MiB = 1024 * 1024;

/** Runs one small check (to load everything), then the 100 MB one, and reports the peak RSS before and after. */
const SCRIPT = `
import { statSync } from 'node:fs';
import { runCheck } from ${JSON.stringify(RUNNER)};
const [cwd] = process.argv.slice(1);
const spec = (command) => ({ description: 'd', command });
await runCheck('warm', spec('yes warm | head -c 1048576'), { cwd, outputPath: cwd + '/warm.log' });
const before = process.resourceUsage().maxRSS * 1024;
const run = await runCheck('big', spec('yes "a line of output" | head -c 104857600'), { cwd, outputPath: cwd + '/big.log' });
const after = process.resourceUsage().maxRSS * 1024;
console.log(JSON.stringify({ growth: after - before, printed: run.outputBytes, cut: run.cutBytes, log: statSync(run.outputPath).size }));
`;

describe('a check printing 100 MB (built runner, fresh process)', () => {
  it('leaves a capped log and grows the peak RSS by far less than the output', () => {
    const cwd = mkdtempSync(join(tmpdir(), 'flower-check-memory-'));
    const out = execFileSync(process.execPath, ['--input-type=module', '-e', SCRIPT, cwd], {
      encoding: 'utf8',
      timeout: 60_000,
    });
    const { growth, printed, cut, log } = JSON.parse(out) as {
      growth: number;
      printed: number;
      cut: number;
      log: number;
    };
    expect(printed).toBe(100 * MiB);
    expect(log).toBeLessThan(130 * 1024 + 1024);
    expect(cut).toBeGreaterThan(printed - 130 * 1024);
    expect(growth).toBeLessThan(64 * MiB);
  });
});
