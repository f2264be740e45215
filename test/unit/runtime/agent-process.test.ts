/**
 * The agent's spawn outside the SDK's: what it promises besides the watchdog's kill (that one is
 * end to end, test/e2e/agent-process.test.ts). Real processes: node stands in for the binary.
 */
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { spawnAgentProcess } from '../../../src/runtime/agent-process.js';
import { descendants } from '../../support/process-tree.js';

function cmdline(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
  } catch {
    return '';
  }
}

const watchdogs = () =>
  descendants(process.pid).filter((pid) => cmdline(pid).includes('flower-agent-watchdog'));

function agent(script: string, env: Record<string, string | undefined> = { PATH: process.env.PATH }) {
  return { command: process.execPath, args: ['-e', script], env, signal: new AbortController().signal };
}

describe('spawnAgentProcess', () => {
  it('refuses an environment the kernel would refuse, naming the variable, before starting anything', () => {
    const before = descendants(process.pid).length;
    expect(() => spawnAgentProcess(agent('0', { HUGE_NOTES: 'x'.repeat(200_000) }))).toThrow(
      /HUGE_NOTES .*E2BIG/,
    );
    expect(descendants(process.pid)).toHaveLength(before);
  });

  it("always reads the agent's stderr and hands it to onStderr", async () => {
    const seen: string[] = [];
    const child = spawnAgentProcess(agent('process.stderr.write("the reason\\n")'), {
      onStderr: (text) => seen.push(text),
    });
    await once(child as unknown as NodeJS.EventEmitter, 'exit');
    await sleep(50);
    expect(seen.join('')).toBe('the reason\n');
  });

  it.runIf(process.platform === 'linux')(
    'the agent runs in a process group of its own, and its watchdog leaves when it exits',
    async () => {
      const child = spawnAgentProcess(agent('setTimeout(() => {}, 500)'));
      const pid = (child as unknown as { pid: number }).pid;
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const pgrp = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]);
      expect(pgrp).toBe(pid);
      expect(watchdogs().length).toBeGreaterThan(0);
      await once(child as unknown as NodeJS.EventEmitter, 'exit');
      for (let tries = 0; tries < 50 && watchdogs().length > 0; tries += 1) await sleep(50);
      expect(watchdogs()).toEqual([]);
    },
  );
});
