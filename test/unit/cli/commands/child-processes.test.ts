import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { childPids, endChildren, parentPidOf } from '../../../../src/cli/commands/child-processes.js';

describe('parentPidOf', () => {
  it('reads the parent pid after the command name, whatever the name holds', () => {
    expect(parentPidOf('4242 (node) S 4200 4242 4200 0 -1 4194560')).toBe(4200);
    expect(parentPidOf('77 (my (odd) proc) R 1 77 77')).toBe(1);
  });

  it('counts a process that has ended (zombie) as gone, and ignores what is not a stat line', () => {
    expect(parentPidOf('4242 (claude) Z 4200 4242')).toBeUndefined();
    expect(parentPidOf('garbage')).toBeUndefined();
  });
});

describe.runIf(process.platform === 'linux')('endChildren', () => {
  it('ends this process’s children and returns once they are gone', async () => {
    const child = spawn('sleep', ['30'], { stdio: 'ignore' });
    const exited = new Promise((resolve) => child.on('exit', (_code, signal) => resolve(signal)));
    await new Promise((resolve) => child.on('spawn', resolve));
    expect(childPids()).toContain(child.pid);
    await endChildren({ graceMs: 5000, pollMs: 20 });
    expect(await exited).toBe('SIGTERM');
    expect(childPids()).not.toContain(child.pid);
  });
});
