/**
 * The file locks' liveness check on real processes: the stat parser against /proc data of
 * processes spawned here (one with `)` and spaces in its command name), and the judgement of a
 * recorded holder — live, exited, a zombie, a reused pid, a lock from before a reboot, another host.
 * Linux only: elsewhere there is no /proc to read, and the checks are skipped by design.
 */
import { execFileSync } from 'node:child_process';
import fs, { readFileSync } from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import { hostname } from 'node:os';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  currentBootId,
  holderIsGone,
  type LocalProcesses,
  localProcesses,
  ownIdentity,
  parseProcStat,
  processIsAlive,
  readProcStat,
} from '../../../src/runtime/process-liveness.js';
import { endSpawned, goneProcess, liveShell, statusState, zombie } from '../../support/live-processes.js';

const onLinux = process.platform === 'linux';
const TICKS_PER_SECOND = onLinux ? Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) : 100;

afterEach(endSpawned);

/** Seconds since boot, from /proc/uptime: the clock field 22 counts in (as ticks). */
function uptimeSeconds(): number {
  return Number(readFileSync('/proc/uptime', 'utf8').split(' ')[0]);
}

describe.runIf(onLinux)('parseProcStat on real /proc data', () => {
  it('reads field 22 as the start time: it falls between the uptimes around the spawn', async () => {
    const before = uptimeSeconds();
    const pid = await liveShell();
    const after = uptimeSeconds();
    const stat = parseProcStat(readFileSync(`/proc/${pid}/stat`, 'utf8'));
    expect(stat).toBeDefined();
    const startedAt = Number(stat!.startTime) / TICKS_PER_SECOND;
    // /proc/uptime has two decimals, the tick count 1/CLK_TCK: allow one hundredth either side.
    expect(startedAt).toBeGreaterThanOrEqual(before - 0.01);
    expect(startedAt).toBeLessThanOrEqual(after + 0.01);
    expect(stat!.state).toBe(statusState(pid)); // 'S': the shell waits for its sleep
  });

  it('counts fields from the last ")", so a command name with ")" and spaces shifts nothing', async () => {
    const plain = await liveShell();
    // A process may rename itself (prctl / comm): here to something that looks like stat fields.
    const odd = await liveShell("printf '%s' 'x) R 1 2 (y' > /proc/$$/comm");
    const text = readFileSync(`/proc/${odd}/stat`, 'utf8');
    expect(text).toContain('(x) R 1 2 (y)');
    const oddStat = parseProcStat(text)!;
    const plainStat = parseProcStat(readFileSync(`/proc/${plain}/stat`, 'utf8'))!;
    // Counted from the first ")", the state would be the "R" inside the name.
    expect(oddStat.state).toBe(statusState(odd));
    expect(oddStat.state).toBe('S');
    // Started right after the plain shell: within a second of it, not some other field's value.
    const apart = (Number(oddStat.startTime) - Number(plainStat.startTime)) / TICKS_PER_SECOND;
    expect(apart).toBeGreaterThanOrEqual(0);
    expect(apart).toBeLessThan(1);
  });

  it('tells processes started at different times apart, in the order they started', async () => {
    const first = await liveShell();
    await new Promise((resolve) => setTimeout(resolve, 300));
    const second = await liveShell();
    const ticks = (pid: number) => Number(readProcStat(pid)!.startTime);
    expect(ticks(second) - ticks(first)).toBeGreaterThanOrEqual(0.25 * TICKS_PER_SECOND);
    // Stable: reading it again (the process has run meanwhile) gives the same value.
    const again = ticks(first);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(ticks(first)).toBe(again);
  });

  it('reads a zombie as state Z', async () => {
    expect(readProcStat(await zombie())?.state).toBe('Z');
  });

  it('rejects what is not a stat line, and a missing process', async () => {
    expect(parseProcStat('')).toBeUndefined();
    expect(parseProcStat('12 (sh) S 1 2')).toBeUndefined(); // cut short: no field 22
    expect(parseProcStat('no parentheses here at all')).toBeUndefined();
    expect(readProcStat(await goneProcess())).toBeUndefined();
  });
});

describe.runIf(onLinux)('processIsAlive', () => {
  it('is true for a running process and false for one that exited', async () => {
    expect(processIsAlive(await liveShell())).toBe(true);
    expect(processIsAlive(await goneProcess())).toBe(false);
  });

  it('is false for a zombie: it has its pid still, but has exited and holds nothing', async () => {
    const pid = await zombie();
    expect(() => process.kill(pid, 0)).not.toThrow(); // a signal still reaches the pid
    expect(processIsAlive(pid)).toBe(false);
  });

  it('is false for pids that cannot be processes', () => {
    expect(processIsAlive(0)).toBe(false); // kill(0, 0) would signal our own process group
    expect(processIsAlive(-1)).toBe(false);
    expect(processIsAlive(Number.NaN)).toBe(false);
  });
});

describe.runIf(onLinux)('holderIsGone', () => {
  const identityOf = (pid: number) => ({
    pid,
    host: hostname(),
    bootId: currentBootId(),
    processStart: readProcStat(pid)!.startTime,
  });

  it('keeps a live holder recorded with its own identity, and one recorded before start times were', async () => {
    const pid = await liveShell();
    expect(holderIsGone(identityOf(pid))).toBe(false);
    expect(holderIsGone({ pid, host: hostname() })).toBe(false);
  });

  it('gives up a holder that exited, and one that is a zombie', async () => {
    expect(holderIsGone({ pid: await goneProcess(), host: hostname() })).toBe(true);
    expect(holderIsGone({ pid: await zombie(), host: hostname() })).toBe(true);
  });

  it('gives up a reused pid: the process with it now started at another time', async () => {
    const earlier = await liveShell();
    await new Promise((resolve) => setTimeout(resolve, 100));
    const pid = await liveShell();
    // The lock names `pid`, but the process that took it started when `earlier` did.
    const recorded = { ...identityOf(pid), processStart: identityOf(earlier).processStart };
    expect(recorded.processStart).not.toBe(identityOf(pid).processStart);
    expect(holderIsGone(recorded)).toBe(true);
  });

  it('gives up a holder from before a reboot, whatever runs under its pid now', async () => {
    const pid = await liveShell();
    expect(holderIsGone({ ...identityOf(pid), bootId: 'an-earlier-boot' })).toBe(true);
  });

  it('never judges another host: its pid means nothing here, dead or alive', async () => {
    expect(holderIsGone({ pid: await goneProcess(), host: `not-${hostname()}` })).toBe(false);
  });

  it('judges through the facts it is given: unreadable ones never make a holder dead', async () => {
    const pid = await liveShell();
    const real = localProcesses();
    const blind = { ...real, bootId: undefined, stat: () => undefined };
    // No boot id and no stat here: only existence is known, and the holder exists.
    expect(holderIsGone({ ...identityOf(pid), bootId: 'an-earlier-boot', processStart: '1' }, blind)).toBe(
      false,
    );
  });
});

describe.runIf(onLinux)('ownIdentity', () => {
  it('records this process, this host, this boot, and the start time holderIsGone compares', () => {
    const own = ownIdentity();
    expect(own).toEqual({
      pid: process.pid,
      host: hostname(),
      bootId: readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim(),
      processStart: readProcStat(process.pid)!.startTime,
    });
    expect(holderIsGone(own)).toBe(false);
  });
});

/** A stat line as /proc writes it: pid, (comm), then fields 3 to 52, with `state` and field 22 set. */
function statLine(state: string, startTime: string, comm = 'sh'): string {
  const fields = Array.from({ length: 50 }, (_, index) => String(index + 3));
  fields[0] = state;
  fields[22 - 3] = startTime;
  return `4242 (${comm}) ${fields.join(' ')}\n`;
}

describe('parseProcStat on lines that are not stat lines', () => {
  it('reads a well-formed line, and rejects a state or a start time of another shape', () => {
    expect(parseProcStat(statLine('S', '12345'))).toEqual({ state: 'S', startTime: '12345' });
    for (const state of ['SS', '5', 'S1', '1S', '-'])
      expect(parseProcStat(statLine(state, '12345')), state).toBeUndefined();
    for (const start of ['12a', 'a12', '-1', '1.5', 'x'])
      expect(parseProcStat(statLine('S', start)), start).toBeUndefined();
  });

  it('rejects a line without the parenthesised command name, whatever follows it', () => {
    expect(parseProcStat(statLine('S', '12345').replace('(', ''))).toBeUndefined();
    expect(parseProcStat(statLine('S', '12345').replace(')', ''))).toBeUndefined();
    // Fields that would parse, but no ")" closing a command name before them.
    expect(parseProcStat(`${statLine('S', '12345').split(') ')[1]?.trim()} (`)).toBeUndefined();
  });
});

describe('the judgement on the facts it is given', () => {
  const at = (state: string, startTime = '100'): LocalProcesses => ({
    host: 'here',
    bootId: 'boot',
    exists: () => true,
    stat: () => ({ state, startTime }),
  });

  it('takes a process in state X (dead, being reaped) for exited, like a zombie', () => {
    expect(processIsAlive(4242, at('X'))).toBe(false);
    expect(processIsAlive(4242, at('Z'))).toBe(false);
    expect(processIsAlive(4242, at('S'))).toBe(true);
    expect(holderIsGone({ pid: 4242, host: 'here', processStart: '100' }, at('X'))).toBe(true);
  });

  it('counts a process of another user as alive: the signal is refused, but it reaches a process', () => {
    // What kill(pid, 0) answers for someone else's process (EPERM), which a root test cannot see.
    const kill = vi.spyOn(process, 'kill').mockImplementation(() => {
      throw Object.assign(new Error('kill EPERM'), { code: 'EPERM' });
    });
    try {
      expect(localProcesses().exists(4242)).toBe(true);
    } finally {
      kill.mockRestore();
    }
  });
});

describe('a machine without /proc (another system, a container without it)', () => {
  /** Runs `body` while every read under /proc fails, as it does where there is no /proc. */
  function withoutProc(body: () => void): void {
    const real = fs.readFileSync;
    fs.readFileSync = ((path: fs.PathOrFileDescriptor, ...rest: unknown[]) => {
      if (String(path).startsWith('/proc/'))
        throw Object.assign(new Error(`ENOENT: ${String(path)}`), { code: 'ENOENT' });
      return (real as (...args: unknown[]) => unknown)(path, ...rest);
    }) as typeof fs.readFileSync;
    syncBuiltinESMExports();
    try {
      body();
    } finally {
      fs.readFileSync = real;
      syncBuiltinESMExports();
    }
  }

  it('knows no boot id and no start time, records none, and judges no holder dead for want of them', () => {
    withoutProc(() => {
      expect(currentBootId()).toBeUndefined();
      expect(readProcStat(process.pid)).toBeUndefined();
      expect(ownIdentity()).toEqual({ pid: process.pid, host: hostname() });
      // This process, recorded on a machine that had /proc: the facts that cannot be read are skipped.
      const recorded = { pid: process.pid, host: hostname(), bootId: 'a-boot', processStart: '1' };
      expect(holderIsGone(recorded)).toBe(false);
    });
  });
});
