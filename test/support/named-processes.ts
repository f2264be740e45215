/**
 * Processes found by a token in their command line, for tests of walled commands: inside a PID
 * namespace `$!` is the namespace's number, which means nothing (or another process) on the host,
 * so a walled test names its processes (`exec -a <token> sleep 300`) and looks for the name instead.
 */
import { readdirSync, readFileSync } from 'node:fs';

/** Every live process on the machine whose command line holds `token` (zombies left out). */
export function processesNamed(token: string): number[] {
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (!readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes(token)) continue;
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      if (stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z') found.push(Number(entry));
    } catch {
      // Gone while we looked.
    }
  }
  return found;
}

/** Resolves true once no process named `token` is left, false when some still run after `withinMs`. */
export async function namedProcessesGone(token: string, withinMs = 5000): Promise<boolean> {
  for (const deadline = Date.now() + withinMs; Date.now() < deadline; ) {
    if (processesNamed(token).length === 0) return true;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return processesNamed(token).length === 0;
}
