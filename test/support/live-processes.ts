/**
 * Real processes in known states, for the liveness checks' tests (Linux): one that sleeps, one that
 * has exited and been reaped, and a zombie (exited, never reaped). Tests call `endSpawned` after
 * each test so nothing outlives it.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';

const children: ChildProcess[] = [];

/** Ends every process started here that still runs (its zombie goes with it: init reaps it). */
export function endSpawned(): void {
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
}

/** The state letter from /proc/<pid>/status: a second source, written by the kernel apart from stat. */
export function statusState(pid: number): string | undefined {
  try {
    return /^State:\s+(\S)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  } catch {
    return undefined;
  }
}

function hasChildren(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim() !== '';
  } catch {
    return false;
  }
}

/**
 * Starts a shell that stays alive, and waits until it sleeps (waiting for its `sleep`), so its
 * state holds still while a test reads it. `setup` runs in it first. Returns the shell's pid.
 */
export async function liveShell(setup = ''): Promise<number> {
  // The trailing `:` keeps the shell itself alive (no exec into sleep), so the pid stays the shell.
  const child = spawn('sh', ['-c', `${setup}\nsleep 60\n:`], { stdio: 'ignore' });
  children.push(child);
  const pid = child.pid!;
  for (let tries = 0; tries < 500; tries += 1) {
    if (statusState(pid) === 'S' && hasChildren(pid)) return pid;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`the shell ${pid} did not settle into sleeping`);
}

/** A pid whose process has exited and been reaped. */
export async function goneProcess(): Promise<number> {
  const child = spawn('true');
  await new Promise((resolve) => child.on('close', resolve));
  return child.pid!;
}

/**
 * A zombie: a shell starts a short `sleep` in the background and then execs into a long one, which
 * never waits for children, so the short one, once it exits, stays unreaped. (It must outlive the
 * exec: a child that exits before it may be reaped by the shell.) Returns the zombie's pid.
 */
export async function zombie(): Promise<number> {
  const child = spawn('sh', ['-c', 'sleep 0.2 & echo $!; exec sleep 60'], {
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  children.push(child);
  const pid = await new Promise<number>((resolve) =>
    child.stdout!.once('data', (chunk: Buffer) => resolve(Number(chunk.toString().trim()))),
  );
  for (let tries = 0; tries < 500; tries += 1) {
    if (statusState(pid) === 'Z') return pid;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`${pid} did not become a zombie`);
}

/** CPU time a process has used, in clock ticks: fields 14 and 15 of its stat (counted from the last `)`). */
export function cpuTicks(pid: number): { user: number; system: number } {
  const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = text
    .slice(text.lastIndexOf(')') + 1)
    .trim()
    .split(/\s+/);
  return { user: Number(fields[14 - 3]), system: Number(fields[15 - 3]) };
}

/**
 * A process that keeps running on the CPU, in user space and in the kernel (a shell loop that opens
 * /dev/null over and over), so the parts of its stat that move while a process runs do move.
 * Returns its pid once it runs the shell.
 */
export async function busyProcess(): Promise<number> {
  const child = spawn('sh', ['-c', 'while :; do : </dev/null; done'], { stdio: 'ignore' });
  children.push(child);
  const pid = child.pid!;
  for (let tries = 0; tries < 500; tries += 1) {
    if (readText(`/proc/${pid}/comm`)?.trim() === 'sh') return pid;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`${pid} did not start its shell`);
}

function readText(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}
