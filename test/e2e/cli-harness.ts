/**
 * Running the built `flower` binary from the CLI end-to-end tests: a child environment that sees
 * no host credentials or settings, and an async spawn (the mock model lives in the test process,
 * so the test must keep its event loop free while the child runs).
 */
import { type ChildProcess, type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { closeSync, mkdtempSync, openSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { mockModelEnv } from '../../src/testing/env.js';

export const repoRoot = join(import.meta.dirname, '..', '..');
export const flowerBin = join(repoRoot, 'dist', 'cli', 'bin.js');

export function tempDir(prefix: string): string {
  return mkdtempSync(join(tmpdir(), `flower-${prefix}-`));
}

/**
 * The child's environment: no ANTHROPIC_/CLAUDE_ variables from the host, a fresh HOME (so no
 * user .env or Claude Code settings are found), no update notice, no probe; plus `extra`.
 */
export function isolatedEnv(extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (value === undefined || name.startsWith('ANTHROPIC_') || name.startsWith('CLAUDE_')) continue;
    env[name] = value;
  }
  const home = tempDir('home');
  return {
    ...env,
    HOME: home,
    XDG_CONFIG_HOME: join(home, '.config'),
    FLOWER_NO_UPDATE: '1',
    FLOWER_NO_PROBE: '1',
    ...extra,
  };
}

/** isolatedEnv pointed at a mock model, with a fresh CLAUDE_CONFIG_DIR and few binary retries. */
export function mockedEnv(
  model: { url: string },
  extra: Record<string, string> = {},
): Record<string, string> {
  const base = isolatedEnv();
  return mockModelEnv(model, { configDir: tempDir('claude'), maxRetries: 1, base, extra });
}

export interface FlowerRun {
  status: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

export interface FlowerRunOptions {
  cwd?: string;
  env?: Record<string, string>;
  /** Written to stdin, which is then closed; default: stdin closed at once. */
  input?: string;
  /**
   * Leave stdin open after `input` (a pipe nobody writes to, as under CI or `nohup`): the child
   * never sees the end of its input. It is closed once the child exits.
   */
  keepStdinOpen?: boolean;
  /**
   * Standard input is not a pipe (`input` is ignored): `devnull` is /dev/null, as `</dev/null`, cron
   * and systemd give it; `unreadable` is /dev/null opened write-only, as `nohup` gives it when
   * started from a terminal (every read fails with EBADF).
   */
  stdin?: 'devnull' | 'unreadable';
  timeoutMs?: number;
  /** Gets the child right after it started (its pid, or to signal it). */
  onSpawn?: (child: ChildProcess) => void;
  /** Runs the command through another (another "machine", test/support/machines.ts). */
  wrap?: (argv: readonly string[]) => [file: string, args: string[]];
}

/** Run `flower <args>` to completion without blocking the test's event loop. */
export function runFlower(args: string[], options: FlowerRunOptions = {}): Promise<FlowerRun> {
  return runNodeScript(flowerBin, args, options);
}

/** Run a Node script (the binary, an example) to completion without blocking the event loop. */
export function runNodeScript(
  script: string,
  args: string[],
  options: FlowerRunOptions = {},
): Promise<FlowerRun> {
  return new Promise((resolve, reject) => {
    const argv = [process.execPath, script, ...args];
    const [file, fileArgs] = options.wrap ? options.wrap(argv) : [process.execPath, argv.slice(1)];
    // 'ignore' is what Node gives for /dev/null: the child's fd 0 is opened on it, read-only.
    const unreadable = options.stdin === 'unreadable' ? openSync('/dev/null', 'w') : undefined;
    const stdin = unreadable ?? (options.stdin === 'devnull' ? 'ignore' : 'pipe');
    const child = spawn(file, fileArgs, {
      cwd: options.cwd ?? tempDir('cwd'),
      env: options.env ?? isolatedEnv(),
      stdio: [stdin, 'pipe', 'pipe'],
    });
    if (unreadable !== undefined) closeSync(unreadable); // the child has its own copy
    let stdout = '';
    let stderr = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      stdout += chunk.toString('utf8');
    });
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString('utf8');
    });
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(
        new Error(
          `${script} ${args.join(' ')} did not finish in time.\nstdout:\n${stdout}\nstderr:\n${stderr}`,
        ),
      );
    }, options.timeoutMs ?? 110_000);
    child.on('error', reject);
    child.on('close', (status, signal) => {
      clearTimeout(timer);
      resolve({ status, signal, stdout, stderr });
    });
    // Off a pipe (`options.stdin`) there is nothing to write to or close.
    const pipe = child.stdin;
    if (pipe && options.keepStdinOpen) {
      pipe.write(options.input ?? '');
      child.on('exit', () => pipe.end());
    } else pipe?.end(options.input ?? '');
    options.onSpawn?.(child);
  });
}

const stripAnsi = (text: string) => text.replace(/\x1b\[[0-9;?]*[A-Za-z]/g, '').replace(/\r/g, '\n');

/**
 * `flower` in a real pseudo-terminal (util-linux `script` provides it), driven like a person at a
 * keyboard: wait for text on the screen, type keys. The test keeps its event loop free meanwhile, so
 * a mock model in the test process keeps answering.
 */
export class PtySession {
  private written = '';
  private readonly exit: Promise<number | null>;

  constructor(private readonly child: ChildProcessWithoutNullStreams) {
    // Decoded as a stream, so a character split across two reads arrives whole.
    child.stdout.setEncoding('utf8').on('data', (text: string) => {
      this.written += text;
    });
    child.stderr.setEncoding('utf8').on('data', (text: string) => {
      this.written += text;
    });
    this.exit = new Promise((resolve) => child.on('close', (code) => resolve(code)));
  }

  /** Starts `flower <args>` on a fresh pty. */
  static flower(args: string[], env: Record<string, string>): PtySession {
    const command = [process.execPath, flowerBin, ...args]
      .map((part) => `'${part.replace(/'/g, "'\\''")}'`)
      .join(' ');
    return new PtySession(spawn('script', ['-qfec', command, '/dev/null'], { env, stdio: 'pipe' }));
  }

  /** Everything written to the terminal so far, escape sequences included. */
  get raw(): string {
    return this.written;
  }

  /** What is on screen so far, colours and cursor movements removed. */
  get screen(): string {
    return stripAnsi(this.written);
  }

  /** Waits until `text` appears on screen after position `from`; returns where it ended. */
  async waitFor(text: string, from = 0, timeoutMs = 60_000): Promise<number> {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      const at = this.screen.indexOf(text, from);
      if (at >= 0) return at + text.length;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    throw new Error(`timed out waiting for ${JSON.stringify(text)}; screen so far:\n${this.screen}`);
  }

  type(keys: string): void {
    this.child.stdin.write(keys);
  }

  /**
   * Answers the four questions of the setup dialog (a token, a gateway URL, Enter for the model and
   * the window), starting from screen position `from`; returns where the last question ended.
   */
  async answerSetup(token: string, gateway: string, from = 0): Promise<number> {
    let at = from;
    for (const [question, keys] of [
      ['1. Your API key', token],
      ['2. Gateway URL', gateway],
      ['3. Model name', ''],
      ['4. Context window', ''],
    ] as const) {
      at = await this.waitFor(question, at);
      this.type(`${keys}\r`);
    }
    return at;
  }

  exited(): Promise<number | null> {
    return this.exit;
  }
}
