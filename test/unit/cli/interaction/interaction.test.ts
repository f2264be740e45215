import { EventEmitter } from 'node:events';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { HumanChannel } from '../../../../src/agents/human/channel.js';
import { Interaction } from '../../../../src/cli/interaction/interaction.js';
import { PROMPT_HINTS } from '../../../../src/cli/terminal/prompt-line.js';
import { Terminal } from '../../../../src/cli/terminal/terminal.js';

class FakeInput extends EventEmitter {
  constructor(readonly isTTY: boolean) {
    super();
  }
  setRawMode() {}
  resume() {}
  pause() {}
}

const plain = { dim: (text: string) => text, yellow: (text: string) => text };
const running: Interaction[] = [];
afterEach(() => {
  for (const interaction of running.splice(0)) interaction.stop();
});

function setup(options: { tty?: boolean; brief?: boolean } = {}) {
  const input = new FakeInput(options.tty ?? true);
  const output = {
    isTTY: options.tty ?? true,
    columns: 100,
    written: '',
    write(chunk: string) {
      this.written += chunk;
    },
  };
  const terminal = new Terminal({ input, output });
  const dir = mkdtempSync(join(tmpdir(), 'flower-interaction-'));
  const brief = join(dir, 'brief.md');
  writeFileSync(brief, '## Goal\nx\n');
  // The channel reports to the interaction the way a run's sink does.
  let interaction: Interaction | undefined;
  const channel = new HumanChannel({
    ...((options.brief ?? true) ? { amendPath: brief } : {}),
    timeoutSeconds: 60,
    onEvent: (event) => interaction?.observe(event),
  });
  const calls = { interrupts: [] as string[], asides: [] as string[], quits: [] as number[] };
  interaction = new Interaction({
    terminal,
    channel,
    interrupt: (words) => calls.interrupts.push(words),
    aside: async (question) => {
      calls.asides.push(question);
    },
    quit: (code) => calls.quits.push(code),
    paint: plain,
  });
  interaction.start();
  running.push(interaction);
  const type = (keys: string) => input.emit('data', Buffer.from(keys));
  return { input, output, channel, interaction, calls, type, brief };
}

describe('Interaction', () => {
  it('answers the waiting question, a number picking its option', async () => {
    const { channel, interaction, type } = setup();
    const asked = channel.ask('Which language?', ['Python', 'Go']);
    expect(interaction.mode()).toBe('question');
    type('2\r');
    const ask = await asked;
    expect(ask.state).toBe('answered');
    expect(ask.answer).toBe('Go');
    expect(interaction.mode()).toBe('idle');
  });

  it('skips the waiting question on an empty line', async () => {
    const { channel, type } = setup();
    const asked = channel.ask('Any naming rules?');
    type('\r');
    expect((await asked).state).toBe('declined');
  });

  it('sends other text to the inbox and the brief, with a receipt', () => {
    const { channel, output, type, brief } = setup();
    type('also print the date\r');
    expect(channel.mail.map((mail) => mail.text)).toEqual(['also print the date']);
    expect(readFileSync(brief, 'utf8')).toContain('also print the date');
    expect(output.written).toContain('it reads this at its next inbox check; also added to the brief');
  });

  it('says when there is no brief to keep the mail in', () => {
    const { output, type } = setup({ brief: false });
    type('note\r');
    expect(output.written).toContain('there is no brief to keep it in, so it may not outlive this step');
  });

  it('asks the oracle on ? and the full-width ？, leaving a waiting question alone', () => {
    const { channel, calls, type } = setup();
    void channel.ask('Which language?');
    type('? where are we\r');
    type('？现在到哪了\r');
    expect(calls.asides).toEqual(['where are we', '现在到哪了']);
    expect(channel.pending()).toHaveLength(1);
  });

  it('arms on Ctrl-C, hands the next line to the interrupt, and quits with 130 on a second Ctrl-C', () => {
    const { interaction, calls, output, type } = setup();
    type('\x03');
    expect(interaction.mode()).toBe('interrupt');
    expect(output.written).toContain(PROMPT_HINTS.interrupt);
    type("don't touch the Makefile\r");
    expect(calls.interrupts).toEqual(["don't touch the Makefile"]);
    expect(output.written).toContain('! interrupted this round');
    expect(interaction.mode()).toBe('idle');
    expect(calls.quits).toEqual([]);
    type('\x03');
    type('\x03');
    expect(calls.quits).toEqual([130]);
  });

  it('tells how many questions still wait after an interrupt', () => {
    const { channel, output, type } = setup();
    void channel.ask('Which language?');
    type('\x03\r');
    expect(output.written).toContain('(1 question is still waiting; the interrupt leaves them alone)');
  });

  it('skips every waiting question when the input ends', async () => {
    const { channel, input } = setup({ tty: false });
    const first = channel.ask('one?');
    const second = channel.ask('two?');
    input.emit('end');
    expect((await first).state).toBe('declined');
    expect((await second).answer).toContain('input closed');
  });

  it('skips a question asked after the input ended, instead of letting it wait for nobody', async () => {
    const { channel, input } = setup({ tty: false });
    input.emit('end');
    const ask = await channel.ask('three?');
    expect(ask.state).toBe('declined');
    expect(ask.answer).toContain('input closed');
  });

  it('ignores Ctrl-C when the input is not a terminal', () => {
    const { interaction, calls, input } = setup({ tty: false });
    input.emit('data', Buffer.from('\x03'));
    expect(interaction.mode()).toBe('idle');
    expect(calls.quits).toEqual([]);
  });
});
