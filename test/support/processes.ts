/**
 * Whether a process is gone, for tests that end process groups. A killed process whose parent died
 * first is a zombie until the machine's init reaps it (in containers that can take a while), and a
 * zombie still answers `kill(pid, 0)`: it counts as gone.
 */
import { readFileSync } from 'node:fs';

function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    // /proc/<pid>/stat: "pid (name) S ..."; the state follows the last ")".
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return true;
  }
}

/** Resolves true once `pid` has ended (or is a zombie), false when it still runs after `withinMs`. */
export async function processGone(pid: number, withinMs = 5000): Promise<boolean> {
  for (const deadline = Date.now() + withinMs; Date.now() < deadline; ) {
    if (!running(pid)) return true;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return !running(pid);
}
