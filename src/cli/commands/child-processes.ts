/**
 * Ending this process's own children and waiting until they are gone, for a command that must
 * clean up after them: the demo removes its temporary Claude configuration, and the Claude Code
 * binary it started writes its transcript there while it shuts down. Removing the directory before
 * the binary has exited only lets the binary create it again (observed: a SIGINT left the
 * directory behind with a fresh `projects/…/<session>.jsonl` in it).
 *
 * Invariants:
 * - Only direct children of this process are signalled, found by their parent pid in `/proc`;
 *   nothing is ever sent to a process group, so a test runner or shell above us is never touched.
 * - Waiting is bounded: after `graceMs` whatever is left gets SIGKILL, and the wait ends.
 * - Where `/proc` does not exist (macOS) no child is found and nothing is waited for.
 */
import { readdirSync, readFileSync } from 'node:fs';

export interface EndChildrenPolicy {
  /** How long the children get to exit after SIGTERM before they are killed. */
  readonly graceMs: number;
  /** How often the wait looks again. */
  readonly pollMs: number;
}

/** The Claude Code binary was measured to exit within about a second of SIGTERM. */
export const defaultEndChildrenPolicy: EndChildrenPolicy = { graceMs: 5000, pollMs: 50 };

/**
 * The parent pid in a `/proc/<pid>/stat` line, or undefined when the line is not one or the process
 * has already ended (a zombie waiting to be reaped counts as gone).
 */
export function parentPidOf(stat: string): number | undefined {
  // `pid (comm) state ppid …`; comm may itself hold spaces and parentheses, so split after the last `)`.
  const close = stat.lastIndexOf(')');
  if (close < 0) return undefined;
  const [state, ppid] = stat
    .slice(close + 1)
    .trim()
    .split(/\s+/);
  if (state === 'Z' || state === 'X' || ppid === undefined || !/^\d+$/.test(ppid)) return undefined;
  return Number(ppid);
}

/** The pids whose parent is `parent` (none where there is no `/proc`). */
export function childPids(parent: number = process.pid): number[] {
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return [];
  }
  const children: number[] = [];
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (parentPidOf(readFileSync(`/proc/${entry}/stat`, 'utf8')) === parent) children.push(Number(entry));
    } catch {
      // The process ended while we looked.
    }
  }
  return children;
}

function signal(pid: number, name: NodeJS.Signals): void {
  try {
    process.kill(pid, name);
  } catch {
    // Already gone.
  }
}

/** SIGTERM to every child of this process, then wait until they have exited (SIGKILL after the grace). */
export async function endChildren(policy: EndChildrenPolicy = defaultEndChildrenPolicy): Promise<void> {
  const pending = new Set(childPids());
  for (const pid of pending) signal(pid, 'SIGTERM');
  const deadline = Date.now() + policy.graceMs;
  while (pending.size > 0) {
    const alive = new Set(childPids());
    for (const pid of pending) if (!alive.has(pid)) pending.delete(pid);
    if (pending.size === 0) return;
    if (Date.now() >= deadline) {
      for (const pid of pending) signal(pid, 'SIGKILL');
      return;
    }
    await new Promise((resolve) => setTimeout(resolve, policy.pollMs));
  }
}
