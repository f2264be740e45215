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

function setup(tty: boolean) {
  const input = new FakeInput(tty);
  const output = new FakeOutput(tty);
  return { input, output, terminal: new Terminal({ input, output }) };
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
