import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ASK_TOOL } from '../../../../src/agents/tools.js';
import {
  defaultLiveStatusPolicy,
  LiveStatus,
  nextHeartbeatAt,
  type StatusSurface,
  showLiveStatus,
} from '../../../../src/cli/terminal/live-status.js';
import type { FlowerEvent } from '../../../../src/runtime/events.js';

const main = { subagent: false };
const step: FlowerEvent = {
  kind: 'step',
  text: 'work',
  payload: { name: 'work', index: 1, total: 1, resumed: false, woke: 1 },
};
const dispatch: FlowerEvent = {
  kind: 'dispatch',
  text: 'write it',
  tool: 'Agent',
  payload: { ...main, id: 'toolu_1', input: {}, subagentType: 'coder', description: 'write it' },
};
const subagentBash: FlowerEvent = {
  kind: 'tool_call',
  text: 'npm test',
  tool: 'Bash',
  payload: { subagent: true, parentToolUseId: 'toolu_1', id: 'toolu_2', input: {} },
};

function clocked() {
  let now = 0;
  const status = new LiveStatus(() => now);
  return { status, advance: (ms: number) => (now += ms) };
}

describe('LiveStatus', () => {
  it('says nothing before the first event', () => {
    expect(new LiveStatus().text()).toBeUndefined();
  });

  it('says what it waits for and for how long since the last thing happened', () => {
    const { status, advance } = clocked();
    status.observe(step);
    advance(14_000);
    expect(status.text()).toBe('~ waiting for the model · 0:14');
    status.observe({
      kind: 'tool_call',
      text: 'src/a.ts',
      tool: 'Read',
      payload: { ...main, id: 't', input: {} },
    });
    advance(2_000);
    expect(status.text()).toBe('~ running Read: src/a.ts · 0:02');
  });

  it('names the worker that is busy, from the dispatch that started it', () => {
    const { status } = clocked();
    status.observe(dispatch);
    expect(status.waitingFor).toBe('coder at work');
    status.observe(subagentBash);
    expect(status.waitingFor).toBe('coder running Bash: npm test');
  });

  it('waits for the person while a question is open, and for the model once it is settled', () => {
    const { status } = clocked();
    status.observe({ kind: 'tool_call', text: '', tool: ASK_TOOL, payload: { ...main, id: 'q', input: {} } });
    status.observe({ kind: 'ask', text: 'Which?', payload: { kind: 'question', state: 'asked' } });
    expect(status.waitingFor).toBe('waiting for your answer');
    status.observe({ kind: 'ask', text: 'Which?', payload: { kind: 'question', state: 'answered' } });
    expect(status.waitingFor).toBe('waiting for the model');
  });

  it('waits for a retry, or for an endpoint that is down to answer again', () => {
    const { status } = clocked();
    status.observe({ kind: 'retry', text: 'retrying', payload: { source: 'binary', attempt: 2 } });
    expect(status.waitingFor).toBe('waiting to retry the API request');
    status.observe({
      kind: 'retry',
      text: 'endpoint down',
      payload: {
        source: 'runtime',
        reason: 'offline',
        offline: { endpoint: '127.0.0.1:45999', downSince: 0, nextProbeAt: 12_000, givesUpAt: 3_600_000 },
      },
    });
    expect(status.waitingFor).toBe('waiting for 127.0.0.1:45999 to answer again');
  });

  it('restarts the clock when the same wait sees activity, and stops on stop()', () => {
    const { status, advance } = clocked();
    status.observe(step);
    advance(5_000);
    status.observe({ kind: 'text', text: 'still thinking', payload: main });
    expect(status.quietMs()).toBe(0);
    status.stop();
    expect(status.text()).toBeUndefined();
  });
});

describe('nextHeartbeatAt', () => {
  it('comes after 30 s, then doubles the silence, with gaps of at most 10 minutes', () => {
    const at: number[] = [];
    let last: number | undefined;
    for (let index = 0; index < 8; index++) {
      last = nextHeartbeatAt(last, defaultLiveStatusPolicy);
      at.push(last / 1000);
    }
    expect(at).toEqual([30, 60, 120, 240, 480, 960, 1560, 2160]);
  });
});

class FakeSurface implements StatusSurface {
  printed: string[] = [];
  redraws = 0;
  status: (() => string | undefined) | undefined;
  constructor(readonly drawsFooter: boolean) {}
  setStatus(status: (() => string | undefined) | undefined) {
    this.status = status;
  }
  redraw() {
    this.redraws += 1;
  }
  print(lines: readonly string[]) {
    this.printed.push(...lines);
  }
}

describe('showLiveStatus', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  it('on a terminal: a footer row, redrawn every second, removed at the end; nothing printed', () => {
    const surface = new FakeSurface(true);
    const status = new LiveStatus(() => Date.now());
    status.observe(step);
    const stop = showLiveStatus(surface, status, { paint: (text) => text });
    expect(surface.status?.()).toBe('~ waiting for the model · 0:00');
    vi.advanceTimersByTime(3_000);
    expect(surface.redraws).toBe(3);
    expect(surface.status?.()).toBe('~ waiting for the model · 0:03');
    stop();
    expect(surface.status).toBeUndefined();
    expect(surface.printed).toEqual([]);
  });

  it('off a terminal: only sparse "still …" lines, the first after 30 s of silence', () => {
    const surface = new FakeSurface(false);
    const status = new LiveStatus(() => Date.now());
    status.observe(step);
    const stop = showLiveStatus(surface, status, { paint: (text) => text });
    vi.advanceTimersByTime(29_000);
    expect(surface.printed).toEqual([]);
    vi.advanceTimersByTime(1_000);
    expect(surface.printed).toEqual(['  ~ still waiting for the model · 0:30']);
    vi.advanceTimersByTime(29_000);
    expect(surface.printed).toHaveLength(1);
    vi.advanceTimersByTime(1_000);
    expect(surface.printed.at(-1)).toBe('  ~ still waiting for the model · 1:00');
    // Ten minutes of silence: 30 s, 1, 2, 4 and 8 minutes — five lines, not six hundred.
    vi.advanceTimersByTime(9 * 60_000);
    expect(surface.printed).toHaveLength(5);
    // Something happens: the next silence starts its own schedule.
    status.observe(dispatch);
    vi.advanceTimersByTime(30_000);
    expect(surface.printed.at(-1)).toBe('  ~ still coder at work · 0:30');
    stop();
    vi.advanceTimersByTime(600_000);
    expect(surface.printed).toHaveLength(6);
    expect(surface.redraws).toBe(0);
  });
});
