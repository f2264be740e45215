/**
 * The human channel with the real binary: the model's `mcp__human__ask` calls block until a UI
 * answers (by text or by option number), are refused past the quota, time out at once when
 * unattended; mail sent mid-run reaches the model through `mcp__human__inbox` and is appended to
 * the brief; every question lands in the Q&A log.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { AskEvent } from '../../src/agents/human/ask.js';
import { DEFAULT_CHANNEL_TEXTS, HumanChannel } from '../../src/agents/human/channel.js';
import { coordinator } from '../../src/agents/roles.js';
import { cleanUp, resultFor, runSpec, startMock, tempDir } from './agents-harness.js';

afterEach(cleanUp);

const ask = (id: string, question: string, options?: string[]) => ({
  toolUses: [{ name: 'mcp__human__ask', id, input: { question, ...(options ? { options } : {}) } }],
});
const inbox = (id: string) => ({ toolUses: [{ name: 'mcp__human__inbox', id, input: {} }] });

describe('human channel (real binary)', () => {
  it('answers by option number and by text, refuses past the quota, delivers mail and logs it all', async () => {
    const workspace = tempDir('flower-ws-');
    const briefPath = join(workspace, '.flower/notes/brief.md');
    const logPath = join(workspace, '.flower/notes/qa-log.md');
    const events: AskEvent[] = [];
    const channel: HumanChannel = new HumanChannel({
      maxAsks: 2,
      logPath,
      amendPath: briefPath,
      onEvent: (event) => {
        events.push(event);
        if (event.payload.kind !== 'question' || event.payload.state !== 'asked') return;
        const { id } = event.payload;
        // A UI answers a little later, from outside the tool call.
        setTimeout(() => {
          if (id === 'q1') channel.answer(id, '2');
          else {
            channel.send('Also report the total bytes.');
            channel.answer(id, 'Blue, please.');
          }
        }, 100);
      },
    });
    const server = await startMock([
      ask('toolu_q1', 'Which language?', ['Python', 'Go']),
      ask('toolu_q2', 'Which colour?'),
      ask('toolu_q3', 'One more?'),
      inbox('toolu_inbox'),
      inbox('toolu_inbox_empty'),
      { text: 'Done.' },
    ]);

    const { thrown } = await runSpec(server, coordinator({ workers: {}, channel }), workspace);
    expect(thrown).toBeUndefined();

    expect(resultFor(server, 'toolu_q1')).toBe('Go');
    expect(resultFor(server, 'toolu_q2')).toBe('Blue, please.');
    expect(resultFor(server, 'toolu_q3')).toBe(DEFAULT_CHANNEL_TEXTS.overBudget);
    expect(resultFor(server, 'toolu_inbox')).toContain('1. Also report the total bytes.');
    expect(resultFor(server, 'toolu_inbox')).toContain('appended to the brief');
    expect(resultFor(server, 'toolu_inbox_empty')).toBe(DEFAULT_CHANNEL_TEXTS.noMail);

    expect(channel.asks.map((entry) => entry.state)).toEqual(['answered', 'answered', 'over_budget']);
    const states = events.map((event) => `${event.payload.id}:${event.payload.state}`);
    expect(states).toEqual([
      'q1:asked',
      'q1:answered',
      'q2:asked',
      'm3:queued',
      'q2:answered',
      'q4:over_budget',
      'm3:delivered',
    ]);

    expect(readFileSync(briefPath, 'utf8')).toMatch(
      /## Added during run \(\d\d:\d\d:\d\d\)\nAlso report the total bytes\.\n/,
    );
    const log = readFileSync(logPath, 'utf8');
    expect(log).toContain('- **Q** (q1) Which language?\n  - options: Python / Go\n  - **A** [answered] Go');
    expect(log).toContain('- **Q** (q2) Which colour?\n  - **A** [answered] Blue, please.');
    expect(log).toContain('- **Q** (q4) One more?\n  - **A** [over_budget]');
    expect(log).toContain('(m3) Also report the total bytes.');
  });

  it('times out at once when unattended (timeout 0), without an asked event', async () => {
    const workspace = tempDir('flower-ws-');
    const events: AskEvent[] = [];
    const channel = new HumanChannel({ timeoutSeconds: 0, onEvent: (event) => events.push(event) });
    const server = await startMock([ask('toolu_q1', 'Anyone there?'), { text: 'Decided myself.' }]);

    const started = Date.now();
    const { thrown } = await runSpec(server, coordinator({ workers: {}, channel }), workspace);
    expect(thrown).toBeUndefined();

    expect(resultFor(server, 'toolu_q1')).toBe(DEFAULT_CHANNEL_TEXTS.timeout);
    expect(DEFAULT_CHANNEL_TEXTS.timeout).toContain('Decide yourself');
    expect(events.map((event) => event.payload.state)).toEqual(['timeout']);
    expect(Date.now() - started).toBeLessThan(60_000);
  });

  it('serves a second query of the same spec (a retry or resume reuses the MCP server)', async () => {
    const workspace = tempDir('flower-ws-');
    const channel = new HumanChannel({ timeoutSeconds: 0 });
    const spec = coordinator({ workers: {}, channel });
    const server = await startMock([
      ask('toolu_first', 'First run?'),
      { text: 'First run over.' },
      ask('toolu_second', 'Second run?'),
      { text: 'Second run over.' },
    ]);

    expect((await runSpec(server, spec, workspace)).thrown).toBeUndefined();
    expect((await runSpec(server, spec, workspace)).thrown).toBeUndefined();

    expect(resultFor(server, 'toolu_first')).toBe(DEFAULT_CHANNEL_TEXTS.timeout);
    expect(resultFor(server, 'toolu_second')).toBe(DEFAULT_CHANNEL_TEXTS.timeout);
    expect(channel.asks.map((entry) => entry.question)).toEqual(['First run?', 'Second run?']);
  });
});
