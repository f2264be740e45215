/**
 * Drives a command through a real pseudo-terminal, the way a person at a keyboard would: wait for a
 * piece of output, type an answer, repeat. python3's `pty` module provides the terminal (Node has
 * no pty of its own), so the program under test sees `isTTY` on stdin and stdout.
 */
import { spawnSync } from 'node:child_process';

/** Runs argv in a pty; for each [expected, keys] waits until `expected` appears, then types `keys`. */
const PTY_DRIVER = `
import json, os, pty, select, sys, time
config = json.loads(sys.argv[1])
pid, fd = pty.fork()
if pid == 0:
    os.chdir(config['cwd'])
    os.execve(config['argv'][0], config['argv'], config['env'])
output = b''
mark = 0
def read_more(deadline):
    global output
    remaining = deadline - time.time()
    if remaining <= 0:
        return False
    ready, _, _ = select.select([fd], [], [], remaining)
    if not ready:
        return False
    try:
        data = os.read(fd, 4096)
    except OSError:
        data = b''
    if not data:
        return False
    output += data
    return True
error = None
for expected, keys in config['steps']:
    deadline = time.time() + config['timeout']
    needle = expected.encode()
    while output.find(needle, mark) < 0:
        if not read_more(deadline):
            error = 'did not see %r' % expected
            break
    if error:
        break
    mark = output.find(needle, mark) + len(needle)
    time.sleep(0.05)
    os.write(fd, keys.encode())
deadline = time.time() + config['timeout']
while read_more(deadline):
    pass
if error:
    os.kill(pid, 9)
_, status = os.waitpid(pid, 0)
code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else -1
print(json.dumps({'output': output.decode('utf-8', 'replace'), 'status': code, 'error': error}))
`;

export interface PtyRun {
  /** Everything the program wrote to the terminal (escape sequences included). */
  output: string;
  /** Exit code; -1 when it did not exit normally. */
  status: number;
  /** Set when an expected piece of output never appeared (the program was then killed). */
  error: string | null;
}

export interface PtySession {
  argv: string[];
  cwd: string;
  env: Record<string, string>;
  /** [text to wait for, keys to type]; "\r" is Enter, "\u0003" Ctrl-C, "\u0004" Ctrl-D. */
  steps: Array<[string, string]>;
  /** Seconds to wait for each expected text, and for the program to finish. */
  timeoutSeconds?: number;
}

export function runInPty(session: PtySession): PtyRun {
  const config = {
    argv: session.argv,
    cwd: session.cwd,
    env: session.env,
    steps: session.steps,
    timeout: session.timeoutSeconds ?? 20,
  };
  const result = spawnSync('python3', ['-c', PTY_DRIVER, JSON.stringify(config)], {
    encoding: 'utf8',
    timeout: 90_000,
  });
  if (result.status !== 0) throw new Error(`pty driver failed: ${result.stderr}`);
  return JSON.parse(result.stdout) as PtyRun;
}
