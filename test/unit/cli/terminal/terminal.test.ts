import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import { Terminal } from '../../../../src/cli/terminal/terminal.js';

class FakeInput extends EventEmitter {
  rawModes: boolean[] = [];
  paused = true;
  constructor(readonly isTTY: boolean) {
    super();
  }
  setRawMode(mode: boolean) {
    this.rawModes.push(mode);
  }
  resume() {
    this.paused = false;
  }
  pause() {
    this.paused = true;
  }
}

class FakeOutput {
  written = '';
  constructor(
    readonly isTTY: boolean,
    readonly columns = 60,
  ) {}
  write(chunk: string) {
    this.written += chunk;
  }
}

function setup(tty: boolean, options: { cursorControl?: boolean; columns?: number } = {}) {
  const input = new FakeInput(tty);
  const output = new FakeOutput(tty, options.columns);
  return {
    input,
    output,
    terminal: new Terminal({ input, output, cursorControl: options.cursorControl ?? true }),
  };
}

describe('Terminal off a terminal (pipes)', () => {
  it('prints lines as they are, with no prompt', () => {
    const { output, terminal } = setup(false);
    terminal.start();
    terminal.showPrompt(() => '> ');
    terminal.print(['one', 'two']);
    expect(output.written).toBe('one\ntwo\n');
    expect(terminal.width()).toBe(80);
  });

  it('splits piped input into lines, keeps them until asked, then reports the end', async () => {
    const { input, terminal } = setup(false);
    terminal.start();
    input.emit('data', Buffer.from('first line\nsecond'));
    input.emit('data', Buffer.from(' line\n你'));
    input.emit('data', Buffer.from([0xe5, 0xa5]));
    input.emit('data', Buffer.from([0xbd]));
    input.emit('end');
    expect(await terminal.next()).toEqual({ kind: 'submit', line: 'first line' });
    const rest: unknown[] = [];
    terminal.listen((event) => rest.push(event));
    expect(rest).toEqual([
      { kind: 'submit', line: 'second line' },
      { kind: 'submit', line: '你好' },
      { kind: 'eof' },
    ]);
    expect(await terminal.next()).toEqual({ kind: 'eof' });
  });

  it('takes a read error for the end of input, never a crash (nohup: stdin opened write-only)', async () => {
    const { input, terminal } = setup(false);
    terminal.start();
    input.emit('data', Buffer.from('piped before the failure\n'));
    // An EventEmitter with no 'error' listener throws this at the emitter: the process would die.
    input.emit('error', Object.assign(new Error('EBADF: bad file descriptor, read'), { code: 'EBADF' }));
    expect(await terminal.next()).toEqual({ kind: 'submit', line: 'piped before the failure' });
    expect(await terminal.next()).toEqual({ kind: 'eof' });
    // After close, a read that was under way may still fail: still no crash.
    terminal.close();
    expect(() => input.emit('error', new Error('EBADF'))).not.toThrow();
  });
});

describe('Terminal.nextWithin', () => {
  it('gives up after the wait, and the event that comes later is kept for the next reader', async () => {
    const { input, terminal } = setup(false);
    terminal.start();
    expect(await terminal.nextWithin(30)).toBeUndefined();
    input.emit('data', Buffer.from('late words\n'));
    // The timed-out reader took nothing: the line waits for whoever asks next.
    expect(await terminal.nextWithin(30)).toEqual({ kind: 'submit', line: 'late words' });
    const seen: unknown[] = [];
    terminal.listen((event) => seen.push(event));
    input.emit('data', Buffer.from('to the run\n'));
    expect(seen).toEqual([{ kind: 'submit', line: 'to the run' }]);
  });
});

describe('Terminal on a terminal', () => {
  it('switches to raw mode while reading and restores it on close', () => {
    const { input, terminal } = setup(true);
    terminal.start();
    expect(input.rawModes).toEqual([true]);
    expect(input.paused).toBe(false);
    terminal.close();
    expect(input.rawModes).toEqual([true, false]);
    expect(input.paused).toBe(true);
  });

  it('prints above the prompt and redraws the prompt with the half-typed input', () => {
    const { input, output, terminal } = setup(true);
    terminal.start();
    terminal.showPrompt(() => 'say > ');
    input.emit('data', Buffer.from('hel'));
    output.written = '';
    terminal.print(['  + done']);
    expect(output.written).toBe('\r\x1b[K  + done\nsay > hel');
  });

  it('puts the cursor back where the editor has it', () => {
    const { input, output, terminal } = setup(true);
    terminal.start();
    terminal.showPrompt(() => '> ');
    input.emit('data', Buffer.from('abc\x1b[D\x1b[D'));
    expect(output.written.endsWith('> abc\x1b[2D')).toBe(true);
  });

  it('keeps a submitted line visible above a fresh prompt and reports it', () => {
    const { input, output, terminal } = setup(true);
    const events: unknown[] = [];
    terminal.start();
    terminal.listen((event) => events.push(event));
    terminal.showPrompt(() => 'answer > ');
    output.written = '';
    input.emit('data', Buffer.from('2\r'));
    expect(events).toEqual([{ kind: 'submit', line: '2' }]);
    expect(output.written).toContain('\r\x1b[Kanswer > 2\nanswer > ');
  });

  it('reports Ctrl-C as an interrupt', () => {
    const { input, terminal } = setup(true);
    const events: unknown[] = [];
    terminal.start();
    terminal.listen((event) => events.push(event));
    input.emit('data', Buffer.from('\x03'));
    expect(events).toEqual([{ kind: 'interrupt' }]);
  });

  it('removes the prompt row when it is hidden or closed', () => {
    const { output, terminal } = setup(true);
    terminal.start();
    terminal.showPrompt(() => '> ');
    output.written = '';
    terminal.close();
    expect(output.written).toBe('\r\x1b[K');
  });
});

describe('the status row', () => {
  it('sits above the prompt, and both are erased and redrawn around printed lines', () => {
    const { output, terminal } = setup(true);
    terminal.start();
    terminal.showPrompt(() => '> ');
    terminal.setStatus(
      () => '~ waiting for the model · 0:03',
      (text) => `<${text}>`,
    );
    output.written = '';
    terminal.print(['  + done']);
    // Erase the prompt row, go up and erase the status row, print, then draw both again.
    expect(output.written).toBe('\r\x1b[K\x1b[1A\r\x1b[K  + done\n<~ waiting for the model · 0:03>\n> ');
    output.written = '';
    terminal.setStatus(undefined);
    expect(output.written).toBe('\r\x1b[K\x1b[1A\r\x1b[K> ');
  });

  it('stands alone when there is no prompt (once), cut to the width, and is gone after close', () => {
    const { output, terminal } = setup(true, { columns: 40 });
    terminal.setStatus(() => `~ running Bash: ${'x'.repeat(80)}`);
    expect(output.written).toBe(`\r\x1b[K~ running Bash: ${'x'.repeat(20)}...`);
    output.written = '';
    terminal.print(['line']);
    expect(output.written).toBe(`\r\x1b[Kline\n~ running Bash: ${'x'.repeat(20)}...`);
    output.written = '';
    terminal.close();
    expect(output.written).toBe('\r\x1b[K');
  });

  it('is never drawn off a terminal or without cursor control (TERM=dumb): no escape sequence at all', () => {
    for (const { output, terminal } of [setup(false), setup(true, { cursorControl: false })]) {
      terminal.start();
      terminal.showPrompt(() => '> ');
      terminal.setStatus(() => '~ waiting');
      terminal.print(['one']);
      terminal.close();
      expect(output.written).toBe('one\n');
      expect(terminal.interactive).toBe(false);
    }
  });

  it('treats a terminal that reports 0 columns as 80 wide', () => {
    expect(setup(true, { columns: 0 }).terminal.width()).toBe(80);
  });
});
