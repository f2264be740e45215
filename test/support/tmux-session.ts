/**
 * Commands run in a real terminal emulator, tmux, the way a person sees them: what is on the screen
 * (the pane's text and history, as tmux rendered it, without tmux's own escapes) and every byte the
 * programs wrote to the terminal (`pipe-pane`), to tell what a terminal was asked to do. A private
 * server per session (its own socket, config and environment), so nothing of the host's tmux is
 * touched and the programs see only the environment given.
 *
 * The commands run one after another in one pane; the pane stays after they end (`remain-on-exit`)
 * so it can still be read. The first command waits until the byte pipe is attached, so no byte
 * escapes it. Waiting is asynchronous: a mock model in the test process keeps answering meanwhile.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

const quote = (part: string) => `'${part.replace(/'/g, "'\\''")}'`;

export interface TmuxOptions {
  env: Record<string, string>;
  cwd: string;
  width?: number;
  height?: number;
}

export interface TmuxResult {
  /** The pane's text, history included, as tmux shows it (wrapped lines joined, no escapes). */
  screen: string;
  /** Every byte the commands wrote to the terminal. */
  raw: string;
  /** Exit status of each command, in order. */
  statuses: number[];
  /** The pane's title at the end (a program's OSC 0/2 sequence would have set it). */
  title: string;
  /** What tmux put in its paste buffers (an OSC 52 clipboard write would land there). */
  buffers: string;
}

export class TmuxSession {
  private constructor(
    private readonly dir: string,
    private readonly env: Record<string, string>,
    private readonly count: number,
  ) {}

  private get socket(): string {
    return join(this.dir, 'socket');
  }

  private async tmux(...args: string[]): Promise<string> {
    const { stdout } = await run('tmux', ['-S', this.socket, ...args], { env: this.env });
    return stdout;
  }

  /** Starts `commands` (argv lists) one after another in a fresh `width`×`height` pane. */
  static async start(commands: string[][], options: TmuxOptions): Promise<TmuxSession> {
    const dir = mkdtempSync(join(tmpdir(), 'flower-tmux-'));
    const env = { ...options.env };
    for (const name of ['TMUX', 'TMUX_PANE']) delete env[name];
    const session = new TmuxSession(dir, env, commands.length);
    // set-clipboard on: a program's OSC 52 write becomes a paste buffer the test can read.
    writeFileSync(
      join(dir, 'tmux.conf'),
      'set -g history-limit 100000\nset -g remain-on-exit on\nset -g set-clipboard on\nset -g allow-rename on\n',
    );
    const lines = ['#!/bin/sh', `tmux -S ${quote(session.socket)} wait-for gate`];
    commands.forEach((argv, index) => {
      lines.push(`${argv.map(quote).join(' ')}`, `echo $? > ${quote(join(dir, `status-${index}`))}`);
    });
    writeFileSync(join(dir, 'run.sh'), `${lines.join('\n')}\n`, { mode: 0o700 });
    await session.tmux(
      '-f',
      join(dir, 'tmux.conf'),
      'new-session',
      '-d',
      '-s',
      'main',
      '-x',
      String(options.width ?? 200),
      '-y',
      String(options.height ?? 50),
      '-c',
      options.cwd,
      `sh ${quote(join(dir, 'run.sh'))}`,
    );
    await session.tmux('pipe-pane', '-t', 'main', `cat >> ${quote(join(dir, 'raw'))}`);
    await session.tmux('wait-for', '-S', 'gate');
    return session;
  }

  /** Waits until every command has ended, then reads the screen, the bytes and the statuses. */
  async finished(timeoutMs: number): Promise<TmuxResult> {
    const deadline = Date.now() + timeoutMs;
    while ((await this.tmux('display-message', '-p', '-t', 'main', '#{pane_dead}')).trim() !== '1') {
      if (Date.now() > deadline) {
        const screen = await this.tmux('capture-pane', '-p', '-J', '-S', '-', '-t', 'main');
        throw new Error(`the commands in tmux did not end in time; the screen:\n${screen}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    // The byte pipe drains asynchronously; give it a moment after the pane died.
    await new Promise((resolve) => setTimeout(resolve, 500));
    const statuses = Array.from({ length: this.count }, (_, index) => {
      const file = join(this.dir, `status-${index}`);
      return existsSync(file) ? Number(readFileSync(file, 'utf8').trim()) : Number.NaN;
    });
    const buffers = (await this.tmux('list-buffers', '-F', '#{buffer_sample}').catch(() => '')).trim();
    return {
      screen: await this.tmux('capture-pane', '-p', '-J', '-S', '-', '-E', '-', '-t', 'main'),
      raw: existsSync(join(this.dir, 'raw')) ? readFileSync(join(this.dir, 'raw'), 'utf8') : '',
      statuses,
      title: (await this.tmux('display-message', '-p', '-t', 'main', '#{pane_title}')).trim(),
      buffers,
    };
  }

  async close(): Promise<void> {
    await this.tmux('kill-server').catch(() => undefined);
    rmSync(this.dir, { recursive: true, force: true });
  }
}
