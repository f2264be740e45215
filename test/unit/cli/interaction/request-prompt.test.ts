/**
 * The request prompt's end of input: off a terminal it means "carry on" at a wake (cron, nohup and
 * systemd give an empty standard input, and a restart must continue the task), and so does a pipe
 * that stays silent past the wait, but a fresh start still cancels or waits; piped words are still
 * the request; a person's Ctrl-D on a terminal still cancels.
 */
import { EventEmitter } from 'node:events';
import { PassThrough } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { readRequest } from '../../../../src/cli/interaction/request-prompt.js';
import { Terminal } from '../../../../src/cli/terminal/terminal.js';

const plain = (text: string) => text;
const output = () => ({
  isTTY: false,
  columns: 80,
  written: '',
  write(chunk: string) {
    this.written += chunk;
  },
});

const terminals: Terminal[] = [];
afterEach(() => {
  for (const terminal of terminals.splice(0)) terminal.close();
});

/** A Terminal reading a real pipe that carries `text` and then ends. */
function piped(text: string): Terminal {
  const input = new PassThrough();
  const terminal = new Terminal({ input, output: output() });
  terminals.push(terminal);
  input.end(text);
  return terminal;
}

class KeyboardInput extends EventEmitter {
  readonly isTTY = true;
  setRawMode() {}
  resume() {}
  pause() {}
}

describe('readRequest off a terminal', () => {
  it('reads the end of input at a wake as "carry on" (an empty request)', async () => {
    await expect(readRequest(piped(''), { waking: true, paint: plain })).resolves.toBe('');
  });

  it('still cancels a fresh start when the input ends: there is nothing to carry on with', async () => {
    await expect(readRequest(piped(''), { waking: false, paint: plain })).rejects.toThrow('cancelled');
  });

  it('carries on at a wake when a pipe stays open and silent (a CI runner), keeping later words', async () => {
    const input = new PassThrough();
    const terminal = new Terminal({ input, output: output() });
    terminals.push(terminal);
    await expect(readRequest(terminal, { waking: true, paint: plain, pipeWaitMs: 50 })).resolves.toBe('');
    input.write('said too late for the prompt\n');
    // Not lost: the run reads it (as mail) like any line typed while it works.
    await expect(terminal.next()).resolves.toEqual({ kind: 'submit', line: 'said too late for the prompt' });
  });

  it('waits for a fresh request however long the pipe is silent: there is nothing to carry on', async () => {
    const input = new PassThrough();
    const terminal = new Terminal({ input, output: output() });
    terminals.push(terminal);
    const asked = readRequest(terminal, { waking: false, paint: plain, pipeWaitMs: 20 });
    await new Promise((resolve) => setTimeout(resolve, 100));
    input.write('build the thing\n');
    await expect(asked).resolves.toBe('build the thing');
  });

  it('takes piped words at a wake as the request, as before', async () => {
    await expect(readRequest(piped('also print the date\n'), { waking: true, paint: plain })).resolves.toBe(
      'also print the date',
    );
  });
});

describe('readRequest on a terminal', () => {
  it("cancels on a person's Ctrl-D at the wake prompt: that is a choice, not an empty input", async () => {
    const input = new KeyboardInput();
    const screen = { ...output(), isTTY: true };
    const terminal = new Terminal({ input, output: screen });
    terminals.push(terminal);
    const asked = readRequest(terminal, { waking: true, paint: plain });
    input.emit('data', Buffer.from('\x04'));
    await expect(asked).rejects.toThrow('cancelled');
  });
});
