import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { type AskEvent, resolveReply, waitedSeconds } from '../../../src/agents/human/ask.js';
import { DEFAULT_CHANNEL_TEXTS, HumanChannel } from '../../../src/agents/human/channel.js';
import { HOSTILE_ESCAPES, HOSTILE_SECRETS, RAW_CONTROL, secretCore } from '../../support/hostile-payloads.js';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'flower-human-'));
  dirs.push(dir);
  return dir;
}

function recorder() {
  const events: AskEvent[] = [];
  return { events, onEvent: (event: AskEvent) => events.push(event) };
}

describe('HumanChannel.ask', () => {
  it('refuses every question when the quota is 0, and counts refused and invalid ones', async () => {
    const { events, onEvent } = recorder();
    const channel = new HumanChannel({ maxAsks: 0, onEvent });
    const ask = await channel.ask('Anything?');
    expect(ask.state).toBe('over_budget');
    expect(ask.answer).toBe(DEFAULT_CHANNEL_TEXTS.overBudget);
    expect(events.map((event) => event.payload.state)).toEqual(['over_budget']);

    const limited = new HumanChannel({ maxAsks: 1, timeoutSeconds: 0 });
    expect((await limited.ask('   ')).state).toBe('invalid');
    expect((await limited.ask('Real question?')).state).toBe('over_budget');
    expect(limited.remaining).toBe(0);
  });

  it('answers an empty question with the invalid text', async () => {
    const ask = await new HumanChannel().ask('  ');
    expect(ask).toMatchObject({ state: 'invalid', answer: DEFAULT_CHANNEL_TEXTS.invalid, question: '' });
  });

  it('times out at once in unattended mode without an asked event or a queued question', async () => {
    const { events, onEvent } = recorder();
    const channel = new HumanChannel({ timeoutSeconds: 0, onEvent });
    const ask = await channel.ask('Which one?', ['a', 'b']);
    expect(ask.state).toBe('timeout');
    expect(ask.answer).toBe(DEFAULT_CHANNEL_TEXTS.timeout);
    expect(events.map((event) => event.payload.state)).toEqual(['timeout']);
    expect(await channel.nextAsk(10)).toBeUndefined();
  });

  it('times out after the configured wait', async () => {
    const channel = new HumanChannel({ timeoutSeconds: 0.05 });
    const ask = await channel.ask('Still there?');
    expect(ask.state).toBe('timeout');
    expect(channel.pending()).toEqual([]);
    expect(waitedSeconds(ask)).toBeGreaterThanOrEqual(0);
  });

  it('is answered from outside, by text or by option number, exactly once', async () => {
    const { events, onEvent } = recorder();
    const channel = new HumanChannel({ onEvent, maxAsks: 5 });
    const asking = channel.ask('  Which? ', ['red', ' ', 'blue']);
    expect(channel.pending().map((ask) => ask.id)).toEqual(['q1']);
    expect(events[0]).toMatchObject({
      kind: 'ask',
      text: 'Which?',
      payload: { state: 'asked', options: ['red', 'blue'], remaining: 4 },
    });
    expect(channel.answer('q1', '2')).toBe(true);
    expect(channel.answer('q1', 'again')).toBe(false);
    expect((await asking).answer).toBe('blue');
    expect(events.map((event) => event.payload.state)).toEqual(['asked', 'answered']);
    expect(channel.answer('q9', 'x')).toBe(false);
  });

  it('is declined with the declined text and the reason', async () => {
    const channel = new HumanChannel();
    const asking = channel.ask('Shall I?');
    expect(channel.decline('q1', 'busy')).toBe(true);
    const ask = await asking;
    expect(ask.state).toBe('declined');
    expect(ask.answer).toBe(`${DEFAULT_CHANNEL_TEXTS.declined} (The human said: busy)`);
  });

  it('hands questions to a pulling UI in order', async () => {
    const channel = new HumanChannel();
    const waiting = channel.nextAsk();
    const first = channel.ask('One?');
    const second = channel.ask('Two?');
    expect((await waiting)?.id).toBe('q1');
    expect((await channel.nextAsk(10))?.id).toBe('q2');
    channel.answer('q1', 'a');
    channel.answer('q2', 'b');
    expect((await first).answer).toBe('a');
    expect((await second).answer).toBe('b');
  });

  it('rejects when the query is cancelled, leaving nothing pending', async () => {
    const channel = new HumanChannel();
    const controller = new AbortController();
    const asking = channel.ask('Wait?', [], { signal: controller.signal });
    controller.abort(new Error('cancelled'));
    await expect(asking).rejects.toThrow('cancelled');
    expect(channel.pending()).toEqual([]);
  });

  it('keeps UI callback errors out of the run', async () => {
    const channel = new HumanChannel({
      timeoutSeconds: 0,
      onEvent: () => {
        throw new Error('ui broke');
      },
    });
    expect((await channel.ask('Hm?')).state).toBe('timeout');
    expect(String(channel.uiErrors[0])).toContain('ui broke');
  });

  it('logs every question and answer to the Q&A log', async () => {
    const logPath = join(tempDir(), 'notes', 'qa-log.md');
    const channel = new HumanChannel({ logPath, timeoutSeconds: 0 });
    await channel.ask('Which db?', ['pg', 'sqlite']);
    const log = readFileSync(logPath, 'utf8');
    expect(log.startsWith('# Q&A log\n')).toBe(true);
    expect(log).toContain(
      '- **Q** (q1) Which db?\n  - options: pg / sqlite\n  - **A** [timeout] No one answered.',
    );
    expect(channel.transcript()).toBe(`- Q: Which db?\n  A: [timeout] ${DEFAULT_CHANNEL_TEXTS.timeout}`);
  });
});

describe('the Q&A log people read', () => {
  it('is masked, inert and private: a hostile question, options, answer and mail drive nothing and leak no secret', async () => {
    const dir = tempDir();
    const logPath = join(dir, 'notes', 'qa-log.md');
    mkdirSync(join(dir, 'notes'));
    // An older run's log, readable by everyone: the next entry tightens it.
    writeFileSync(logPath, '# Q&A log\n\n', { mode: 0o644 });
    chmodSync(logPath, 0o644);
    const escapes = Object.values(HOSTILE_ESCAPES).join(' ');
    const channel = new HumanChannel({ logPath, timeoutSeconds: null });
    const asked = channel.ask(`Use ${HOSTILE_SECRETS.anthropic}? ${escapes}`, [
      `yes\x1b]0;PWNED-TITLE\x07`,
      HOSTILE_SECRETS.github!,
    ]);
    channel.answer('q1', `no, use ${HOSTILE_SECRETS.dbPassword} and ${HOSTILE_SECRETS.urlPassword}`);
    const answered = await asked;
    channel.send(`Also: ${HOSTILE_SECRETS.stripe} \u202eevil`);
    channel.takeInbox();
    const log = readFileSync(logPath, 'utf8');
    const { anthropic, github, dbPassword, urlPassword, stripe } = HOSTILE_SECRETS;
    for (const secret of [anthropic, github, dbPassword, urlPassword, stripe])
      expect(log).not.toContain(secretCore(secret!));
    expect(log).not.toMatch(RAW_CONTROL);
    expect(log).toContain('options: yes\u241b]0;PWNED-TITLE\u2407 / ghp_');
    expect(log).toContain('[U+202E]evil');
    expect(statSync(logPath).mode & 0o777).toBe(0o600);
    // The model still got the human's answer as given: only the record is masked.
    expect(answered.answer).toContain(HOSTILE_SECRETS.dbPassword);
  });

  it('creates a new log 0600 whatever the umask', async () => {
    const logPath = join(tempDir(), 'notes', 'qa-log.md');
    const previous = process.umask(0o022);
    try {
      await new HumanChannel({ logPath, timeoutSeconds: 0 }).ask('Which db?');
    } finally {
      process.umask(previous);
    }
    expect(statSync(logPath).mode & 0o777).toBe(0o600);
  });
});

describe('HumanChannel mail', () => {
  it('queues mail, appends it to the brief under a timestamped heading, and delivers it once', () => {
    const dir = tempDir();
    const amendPath = join(dir, 'notes', 'brief.md');
    const logPath = join(dir, 'notes', 'qa-log.md');
    const { events, onEvent } = recorder();
    const channel = new HumanChannel({ amendPath, logPath, onEvent });
    expect(channel.send('   ')).toBeUndefined();
    const mail = channel.send('Also count the bytes.');
    expect(mail).toMatchObject({ id: 'm1', taken: false });
    expect(readFileSync(amendPath, 'utf8')).toMatch(
      /^# Added during the run\n\n## Added during run \(\d\d:\d\d:\d\d\)\nAlso count the bytes\.\n$/,
    );
    expect(channel.pendingMail()).toHaveLength(1);

    const delivered = channel.takeInbox();
    expect(delivered).toContain('1. Also count the bytes.');
    expect(delivered).toContain(`appended to the brief (${amendPath})`);
    expect(channel.takeInbox()).toBe(DEFAULT_CHANNEL_TEXTS.noMail);
    expect(events.map((event) => `${event.payload.kind}:${event.payload.state}`)).toEqual([
      'mail:queued',
      'mail:delivered',
    ]);
    expect(events[0]?.payload).toMatchObject({ kind: 'mail', amended: amendPath });
    expect(readFileSync(logPath, 'utf8')).toContain('(m1) Also count the bytes.');
  });

  it('warns the model when mail is kept nowhere else', () => {
    const channel = new HumanChannel();
    channel.send('Use tabs.');
    expect(channel.takeInbox()).toContain('NOT saved anywhere else');
    expect(channel.amend('x')).toBe(false);
  });

  it('shares one id counter between questions and mail', async () => {
    const channel = new HumanChannel({ timeoutSeconds: 0 });
    await channel.ask('q?');
    expect(channel.send('m')?.id).toBe('m2');
    expect((await channel.ask('q?')).id).toBe('q3');
  });

  it("records who asked: flower's own questions unless the agent's tool asks (issue 21)", async () => {
    const events: AskEvent[] = [];
    const channel = new HumanChannel({ timeoutSeconds: 0, onEvent: (event) => events.push(event) });
    expect((await channel.ask('Accept the changed checks?')).askedBy).toBe('workflow');
    expect((await channel.ask('Which db?', [], { askedBy: 'agent' })).askedBy).toBe('agent');
    expect(events.map((event) => (event.payload as { askedBy?: string }).askedBy)).toEqual([
      'workflow',
      'agent',
    ]);
  });

  it('exposes the ask and inbox tools on an MCP server named human', () => {
    const channel = new HumanChannel();
    const servers = channel.mcpServers();
    expect(Object.keys(servers)).toEqual(['human']);
    expect(servers.human?.type).toBe('sdk');
    expect(channel.askTool).toBe('mcp__human__ask');
    expect(channel.inboxTool).toBe('mcp__human__inbox');
    expect(channel.mcpServers().human).not.toBe(servers.human);
  });
});

describe('resolveReply', () => {
  it('turns an in-range option number into the option', () => {
    expect(resolveReply(['a', 'b'], ' 2 ')).toBe('b');
    expect(resolveReply(['a', 'b'], '3')).toBe('3');
    expect(resolveReply(['a', 'b'], 'b please')).toBe('b please');
    expect(resolveReply([], '1')).toBe('1');
  });
});
