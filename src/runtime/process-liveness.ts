/**
 * Is the process that wrote a lock still the one running? The file locks (the task lock,
 * `task-lock.ts`, and the short JSON-file locks, `locked-json-file.ts`) record who took them; a
 * later process must tell a live holder, which it must respect, from a dead one, whose lock it
 * takes over. Judging wrongly either way is costly: a live holder judged dead means two writers on
 * one task; a dead holder judged alive blocks the task until someone deletes the file by hand.
 *
 * Red lines:
 * - A holder on another host is never judged: its pid means nothing here.
 * - Dead, on this host, when any of these is certain: the machine booted since the lock was taken
 *   (Linux boot id differs); no process has the pid; the process with the pid has exited and only
 *   waits to be reaped (a zombie, state `Z`/`X`: it holds nothing and does no more work, and a
 *   parent that never reaps — a container's pid 1 — keeps it for ever); or the pid now belongs to a
 *   process started at another time (pid reuse).
 * - A fact that cannot be read (no boot id recorded, an old lock without a start time, no /proc)
 *   never makes a holder dead: that check is skipped.
 * - The start time is field 22 of `/proc/<pid>/stat` (clock ticks since boot). Field 2, the command
 *   name, is in parentheses and may itself contain spaces and `)`, so fields are counted from the
 *   last `)`. The parsing is the pure `parseProcStat`, tested on real /proc data.
 */
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';

/** What `/proc/<pid>/stat` says about a process that the lock checks need. */
export interface ProcStat {
  /** Field 3: `R` running, `S` sleeping, `Z` zombie, … */
  readonly state: string;
  /** Field 22: when the process started, in clock ticks since boot (a decimal string, kept exact). */
  readonly startTime: string;
}

// Stryker disable next-line Regex: the kernel separates the fields by single spaces
const FIELD_SEPARATOR = /\s+/;

/** Parses the text of `/proc/<pid>/stat`; undefined when it is not a stat line. */
export function parseProcStat(text: string): ProcStat | undefined {
  const close = text.lastIndexOf(')');
  // Stryker disable next-line EqualityOperator: a stat line starts with the pid, so neither parenthesis is ever at index 0
  if (close < 0 || text.indexOf('(') < 0) return undefined;
  // After "<pid> (<comm>) " come fields 3, 4, …: field N is at index N - 3.
  const fields = text
    .slice(close + 1)
    .trim()
    .split(FIELD_SEPARATOR);
  // split yields at least one field (an empty one for a line that ends at the ")": rejected below).
  const state = fields[0] as string;
  const startTime = fields[22 - 3];
  if (!/^[A-Za-z]$/.test(state)) return undefined;
  // Stryker disable next-line ConditionalExpression: without it the next check rejects undefined all the same (as "undefined")
  if (startTime === undefined) return undefined;
  if (!/^\d+$/.test(startTime)) return undefined;
  return { state, startTime };
}

function readText(path: string): string | undefined {
  let text: string | undefined;
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    // no such process, or no /proc: no text
  }
  return text;
}

/** The process's stat, or undefined when there is no such process (or no /proc). */
export function readProcStat(pid: number): ProcStat | undefined {
  // Stryker disable next-line ConditionalExpression,LogicalOperator,EqualityOperator: /proc has no entry for a pid that is not a positive integer, so the read finds nothing either
  if (!Number.isSafeInteger(pid) || pid <= 0) return undefined;
  const text = readText(`/proc/${pid}/stat`);
  return text === undefined ? undefined : parseProcStat(text);
}

/** This boot of the machine (Linux); undefined elsewhere. */
export function currentBootId(): string | undefined {
  return readText('/proc/sys/kernel/random/boot_id')?.trim() || undefined;
}

/** Exited, waiting only to be reaped by its parent. */
function exited(stat: ProcStat): boolean {
  return stat.state === 'Z' || stat.state === 'X';
}

/** Whether a process with this pid exists according to `kill(pid, 0)` (someone else's counts). */
function signalReaches(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: the process exists but belongs to someone else.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** What this machine knows about its processes; a parameter so the judgement can be tested. */
export interface LocalProcesses {
  readonly host: string;
  readonly bootId: string | undefined;
  /** `kill(pid, 0)` reaches a process (a zombie counts: it still has its pid). */
  exists(pid: number): boolean;
  /** Its stat, undefined when unreadable. */
  stat(pid: number): ProcStat | undefined;
}

/** The real machine. */
export function localProcesses(): LocalProcesses {
  return { host: hostname(), bootId: currentBootId(), exists: signalReaches, stat: readProcStat };
}

/** Whether a process with this pid runs on this host: exists, and has not exited (not a zombie). */
export function processIsAlive(pid: number, here: LocalProcesses = localProcesses()): boolean {
  if (!Number.isSafeInteger(pid) || pid <= 0) return false;
  if (!here.exists(pid)) return false;
  const stat = here.stat(pid);
  return stat === undefined || !exited(stat);
}

/** Who holds a lock, as recorded in it. */
export interface RecordedHolder {
  readonly pid: number;
  readonly host: string;
  /** The boot id when it took the lock, if known. */
  readonly bootId?: string | undefined;
  /** Its start time (`ProcStat.startTime`) when it took the lock, if known. */
  readonly processStart?: string | undefined;
}

/** What a holder records about itself: this host, this boot, this process's start time. */
export function ownIdentity(here: LocalProcesses = localProcesses()): RecordedHolder {
  // An unknown fact is an absent field: written as JSON (the lock files) it is left out.
  return {
    pid: process.pid,
    host: here.host,
    bootId: here.bootId,
    processStart: here.stat(process.pid)?.startTime,
  };
}

/** Whether the recorded holder is certainly gone (see the red lines above). */
export function holderIsGone(holder: RecordedHolder, here: LocalProcesses = localProcesses()): boolean {
  if (holder.host !== here.host) return false;
  if (holder.bootId !== undefined && here.bootId !== undefined && holder.bootId !== here.bootId) return true;
  if (!processIsAlive(holder.pid, here)) return true;
  if (holder.processStart === undefined) return false;
  const started = here.stat(holder.pid)?.startTime;
  return started !== undefined && started !== holder.processStart;
}
