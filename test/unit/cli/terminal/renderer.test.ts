import { describe, expect, it } from 'vitest';
import { TerminalRenderer } from '../../../../src/cli/terminal/renderer.js';
import { displayWidth } from '../../../../src/cli/terminal/terminal-text.js';
import type { FlowerEvent } from '../../../../src/runtime/events.js';

function renderer(
  options: {
    verbose?: boolean;
    width?: number;
    color?: boolean;
    labelSpeakers?: boolean;
    simulatedCost?: boolean;
  } = {},
) {
  let clock = 0;
  const instance = new TerminalRenderer({
    verbose: options.verbose ?? false,
    color: options.color ?? false,
    width: () => options.width ?? 60,
    now: () => clock,
    labelSpeakers: options.labelSpeakers ?? false,
    simulatedCost: options.simulatedCost ?? false,
  });
  return {
    instance,
    advance: (ms: number) => {
      clock += ms;
    },
  };
}

const main = { subagent: false };
const sub = { subagent: true, parentToolUseId: 'toolu_1' };

const text = (body: string, context?: number): FlowerEvent => ({
  kind: 'text',
  text: body,
  payload: context === undefined ? main : { ...main, context },
});
const result = (costUsd: number, isError = false): FlowerEvent => ({
  kind: 'result',
  text: 'success',
  payload: {
    sessionId: 's',
    sessionCostUsd: costUsd,
    costUsd,
    numTurns: 3,
    isError,
    subtype: 'success',
    errors: [],
  },
});
const question = (state: string, extra: Record<string, unknown> = {}): FlowerEvent => ({
  kind: 'ask',
  text: 'Which language?',
  payload: {
    kind: 'question',
    id: 'q1',
    options: ['Python', 'Go'],
    state,
    answer: '',
    remaining: -1,
    ...extra,
  },
});

describe('TerminalRenderer', () => {
  it('draws a step rule across the width with its position, and says when a session is resumed', () => {
    const { instance } = renderer({ width: 40 });
    const lines = instance.render({
      kind: 'step',
      text: 'clarify',
      payload: { name: 'clarify', index: 1, total: 3, resumed: true, woke: 2 },
    });
    expect(lines[0]).toBe('');
    expect(lines[1]).toMatch(/^== clarify =+ 1\/3$/);
    expect(displayWidth(lines[1]!)).toBe(40);
    expect(lines[2]).toBe('  <- resumed the last session · wake 2');
  });

  it('names the round in the rule of a step that works in rounds', () => {
    const { instance } = renderer({ width: 50 });
    const lines = instance.render({
      kind: 'step',
      text: 'work',
      payload: { name: 'work', index: 3, total: 3, resumed: false, woke: 1, round: 2, rounds: 3 },
    });
    expect(lines[1]).toMatch(/^== work · round 2\/3 =+ 3\/3$/);
  });

  it("shows flower's own notices always, one line each, coloured by how they went", () => {
    const notice = (text: string, tone: 'ok' | 'fail' | 'info'): FlowerEvent => ({
      kind: 'system',
      text,
      payload: { subtype: 'goal-guard', data: {}, notice: tone },
    });
    expect(renderer().instance.render(notice('+ check passed · npm test · exit 0 in 1 s', 'ok'))).toEqual([
      '  + check passed · npm test · exit 0 in 1 s',
    ]);
    expect(renderer().instance.render(notice('judging round 1/3', 'info'))).toEqual([
      '  - judging round 1/3',
    ]);
    const coloured = renderer({ color: true }).instance.render(notice('x check failed · npm test', 'fail'));
    expect(coloured[0]).toContain('\x1b[31m');
  });

  it('wraps main-thread prose and follows it with context, cumulative cost and elapsed time', () => {
    const { instance, advance } = renderer({ width: 40 });
    instance.render(result(0.5));
    advance(75_000);
    const lines = instance.render(text('The tests pass now and the build is green again.', 36_800));
    expect(lines.slice(0, -1)).toEqual(['  The tests pass now and the build is', '  green again.']);
    expect(lines.at(-1)).toBe('  - context 36.8K · total $0.50 · 1:15');
  });

  it('omits the context figure until the main thread reports one', () => {
    const { instance } = renderer();
    expect(instance.render(text('hi')).at(-1)).toBe('  - total $0.00 · 0:00');
  });

  it('ignores a subagent context for the status line', () => {
    const { instance } = renderer({ verbose: true });
    instance.render({ kind: 'text', text: 'worker talk', payload: { ...sub, context: 99_000 } });
    expect(instance.render(text('main')).at(-1)).toBe('  - total $0.00 · 0:00');
  });

  it('shows main thinking always, subagent thinking never', () => {
    const { instance } = renderer();
    expect(instance.render({ kind: 'thinking', text: 'plan first', payload: main })).toEqual([
      '  ~ plan first',
    ]);
    expect(instance.render({ kind: 'thinking', text: 'hidden', payload: sub })).toEqual([]);
  });

  it('shows subagent prose only with -v, in the gutter on every line', () => {
    expect(renderer().instance.render({ kind: 'text', text: 'done', payload: sub })).toEqual([]);
    const lines = renderer({ verbose: true, width: 40 }).instance.render({
      kind: 'text',
      text: 'I wrote hello.py and ran it; it printed the expected greeting.',
      payload: sub,
    });
    expect(lines.length).toBeGreaterThan(1);
    for (const line of lines) expect(line.startsWith('  | ')).toBe(true);
  });

  it('shows tool calls on one line, subagent ones in the gutter', () => {
    const { instance } = renderer();
    expect(
      instance.render({
        kind: 'tool_call',
        tool: 'Bash',
        text: 'npm\ntest',
        payload: { ...main, id: 't', input: {} },
      }),
    ).toEqual(['  * Bash npm test']);
    expect(
      instance.render({
        kind: 'tool_call',
        tool: 'Write',
        text: 'hello.py',
        payload: { ...sub, id: 't', input: {} },
      }),
    ).toEqual(['  | * Write hello.py']);
  });

  it('names MCP tools by server and tool, and leaves the ask call to the question it asks', () => {
    const { instance } = renderer();
    const call = (tool: string): FlowerEvent => ({
      kind: 'tool_call',
      tool,
      text: '',
      payload: { ...main, id: 't', input: {} },
    });
    expect(instance.render(call('mcp__human__inbox'))).toEqual(['  * human:inbox']);
    expect(instance.render(call('mcp__human__ask'))).toEqual([]);
  });

  it('shows a dispatch with the subagent type and at most 60 characters of description', () => {
    const { instance } = renderer({ width: 110 });
    const [line] = instance.render({
      kind: 'dispatch',
      tool: 'Agent',
      text: '',
      payload: { ...main, id: 't', input: {}, subagentType: 'coder', description: 'x'.repeat(100) },
    });
    expect(line).toBe(`  > dispatch coder ${'x'.repeat(57)}...`);
  });

  it('shows tool errors always and other tool results only with -v', () => {
    const event = (isError: boolean): FlowerEvent => ({
      kind: 'tool_result',
      text: 'No such file',
      payload: { ...main, toolUseId: 't', isError },
    });
    expect(renderer().instance.render(event(true))).toEqual(['  x No such file']);
    expect(renderer().instance.render(event(false))).toEqual([]);
    expect(renderer({ verbose: true }).instance.render(event(false))).toEqual(['    No such file']);
  });

  it('shows prompts, system notices and unknown events only with -v', () => {
    const events: FlowerEvent[] = [
      { kind: 'prompt', text: 'Write hello.py', payload: main },
      { kind: 'system', text: 'init', payload: { subtype: 'init', data: {} } },
      { kind: 'unknown', text: 'rate_limit_event', payload: {} },
    ];
    for (const event of events) {
      expect(renderer().instance.render(event)).toEqual([]);
      expect(renderer({ verbose: true }).instance.render(event)).toHaveLength(1);
    }
  });

  it("shows flower's own warnings even without -v", () => {
    const warning: FlowerEvent = {
      kind: 'system',
      text: '1/3 checks of the goal cannot be verified here.',
      payload: { subtype: 'unverifiable-checks', data: {}, warning: true },
    };
    expect(renderer().instance.render(warning)).toEqual([
      '  ! 1/3 checks of the goal cannot be verified here.',
    ]);
  });

  it('wraps a gate’s rejection whole instead of cutting it at the width (issue 21)', () => {
    const text =
      'gate rejected clarify (attempt 1/1): the reply is not a complete brief (missing: Boundaries; Unknowns & assumptions); no attempts left';
    const lines = renderer({ width: 60 }).instance.render({
      kind: 'system',
      text,
      payload: { subtype: 'gate_rejected', data: {}, warning: true },
    });
    expect(lines.length).toBeGreaterThan(1);
    expect(lines.join(' ').replace(/\s+/g, ' ')).toBe(`  ! ${text}`.replace(/\s+/g, ' ').trimEnd());
  });

  it('ends a worker’s task with its turns, tokens and dollars, each response counted once', () => {
    const { instance } = renderer({ width: 80 });
    instance.render({
      kind: 'dispatch',
      tool: 'Agent',
      text: 'coder: write it',
      payload: { ...main, id: 'toolu_1', input: {}, subagentType: 'coder', description: 'write it' },
    });
    const message = (id: string, output: number) => ({
      message: {
        id,
        model: 'claude-opus-5-5',
        usage: { input_tokens: 50_000, output_tokens: output, cache_read_input_tokens: 10_000 },
      },
    });
    // One response streamed as two block messages, then a second response.
    const first = message('msg_a', 1000);
    instance.render({ kind: 'text', text: 'Writing.', payload: sub, raw: first });
    instance.render({
      kind: 'tool_call',
      tool: 'Write',
      text: '/x',
      payload: { ...sub, id: 't1', input: {} },
      raw: first,
    });
    instance.render({ kind: 'text', text: 'Done.', payload: sub, raw: message('msg_b', 500) });
    const lines = instance.render({
      kind: 'task',
      text: 'Agent "write it" finished',
      payload: { phase: 'notification', taskId: 't', toolUseId: 'toolu_1' },
    });
    // 2 × (50K + 10K) + 1.5K output = 121.5K tokens; $ = (100K·4 + 1.5K·20 + 20K·0.2) / 1e6 = 0.434.
    expect(lines).toEqual(['  # Agent "write it" finished', '    coder: 2 turns · 121.5K tokens · $0.43']);
  });

  it('shows tasks with text, errors, retries and resets', () => {
    const { instance } = renderer();
    expect(instance.render({ kind: 'task', text: '', payload: { phase: 'started', taskId: 't' } })).toEqual(
      [],
    );
    expect(
      instance.render({
        kind: 'task',
        text: 'worker finished',
        payload: { phase: 'notification', taskId: 't' },
      }),
    ).toEqual(['  # worker finished']);
    expect(instance.render({ kind: 'error', text: 'API Error: 500', payload: { synthetic: true } })).toEqual([
      '  ! API Error: 500',
    ]);
    expect(
      instance.render({ kind: 'retry', text: 'retrying in 4s', payload: { source: 'runtime' } }),
    ).toEqual(['  ~ retrying in 4s']);
    instance.render(text('x', 150_000));
    expect(
      instance.render({
        kind: 'reset',
        text: 'compaction (auto)',
        payload: { subtype: 'compact_boundary', trigger: 'auto', micro: false, postTokens: 42_000 },
      }),
    ).toEqual(['  ~ compaction (auto)']);
    expect(instance.render(text('y')).at(-1)).toContain('context 42.0K');
  });

  it('ends a query with done or failed, turns, its cost and the elapsed time, and adds up the cost', () => {
    const { instance } = renderer();
    expect(instance.render(result(0.1234))).toEqual(['  + done 3 turns · $0.1234 · 0:00']);
    expect(instance.render(result(0.5, true))).toEqual(['  x failed 3 turns · $0.5000 · 0:00']);
    expect(instance.totalCostUsd).toBeCloseTo(0.6234);
  });

  it('shows a question with numbered options and the remaining quota when there is one', () => {
    expect(renderer().instance.render(question('asked'))).toEqual([
      '  ? Which language?',
      '     1) Python',
      '     2) Go',
    ]);
    expect(
      renderer()
        .instance.render(question('asked', { remaining: 2 }))
        .at(-1),
    ).toBe('     (2 more questions allowed)');
  });

  it('shows every way a question ends', () => {
    const { instance } = renderer({ width: 110 });
    expect(instance.render(question('answered', { answer: 'Python' }))).toEqual(['  + Python']);
    expect(instance.render(question('declined'))).toEqual(['  . skipped']);
    expect(instance.render(question('timeout'))[0]).toMatch(/^ {2}! nobody answered "Which language\?": /);
    expect(instance.render(question('over_budget'))[0]).toMatch(/^ {2}! out of questions/);
    expect(instance.render(question('invalid'))[0]).toMatch(/^ {2}! .*empty question/);
  });

  it('says which question nobody answered, shortened when long (issue 21)', () => {
    const { instance } = renderer({ width: 80 });
    const long = `Which greeting ${'and which punctuation '.repeat(10)}should it print?`;
    const lines = instance.render({ ...question('timeout'), text: long });
    const joined = lines.join(' ').replace(/\s+/g, ' ');
    expect(joined).toContain('! nobody answered "Which greeting and which punctuation');
    expect(joined).not.toContain('should it print?');
    expect(joined).toMatch(/\.\.\.": the agent decides itself/);
  });

  it("does not say the agent decides when nobody answered one of flower's own questions (issue 21)", () => {
    const { instance } = renderer({ width: 200 });
    const agents = instance.render(question('timeout', { askedBy: 'agent' })).join(' ');
    const flowers = instance.render(question('timeout', { askedBy: 'workflow' })).join(' ');
    expect(agents).toContain('"Which language?": the agent decides itself and records the assumption');
    expect(flowers).toContain('"Which language?": flower goes on without an answer');
    expect(flowers).not.toContain('Unknowns & assumptions');
  });

  it('shows mail being received and delivered', () => {
    const { instance } = renderer();
    const mail = (state: string): FlowerEvent => ({
      kind: 'ask',
      text: 'also report total bytes',
      payload: { kind: 'mail', id: 'm1', state, amended: '' },
    });
    expect(instance.render(mail('queued'))).toEqual(['  + received also report total bytes']);
    expect(instance.render(mail('delivered'))).toEqual(['  + delivered also report total bytes']);
  });

  it('shows a finished handoff with its sections, path and the context reset', () => {
    const { instance } = renderer({ width: 80 });
    instance.render(text('x', 950_000));
    const lines = instance.render({
      kind: 'handoff',
      text: 'handoff done',
      payload: {
        phase: 'done',
        step: 'work',
        context: 950_000,
        window: 1_000_000,
        degraded: true,
        path: '/w/.flower/notes/handoff-work.md',
        sections: {
          doing: 'porting the parser',
          decided: 'keep the AST',
          deadends: '',
          next: 'run the tests',
        },
      },
    });
    expect(lines[0]).toBe('  # context 950.0K/1000.0K: writing a handoff, a new session takes over');
    expect(lines.join('\n')).toContain('mechanical');
    expect(lines).toContain('    Doing      porting the parser');
    expect(lines.some((line) => line.includes('Dead ends'))).toBe(false);
    expect(lines).toContain('  <- handoff written to /w/.flower/notes/handoff-work.md');
    expect(instance.render(text('z')).at(-1)).toBe('  - total $0.00 · 0:00');
  });

  it('shows the near and writing handoff phases as one line', () => {
    const { instance } = renderer();
    expect(
      instance.render({
        kind: 'handoff',
        text: 'context 930K, handoff at 950K',
        payload: { phase: 'near', step: 'work', context: 930_000, window: 1_000_000, at: 950_000 },
      }),
    ).toEqual(['  # context 930K, handoff at 950K']);
  });

  it('never lets escape sequences from the model through and never exceeds the width', () => {
    const { instance } = renderer({ width: 40 });
    const hostile = `\x1b]0;pwned\x07\x1b[2J${'你好 world '.repeat(20)}\x1b[31m`;
    const lines = [
      ...instance.render(text(hostile)),
      ...instance.render({
        kind: 'tool_call',
        tool: 'Bash',
        text: hostile,
        payload: { ...main, id: 't', input: {} },
      }),
      ...instance.render({ kind: 'error', text: hostile, payload: {} }),
    ];
    for (const line of lines) {
      expect(line).not.toContain('\x1b');
      expect(displayWidth(line)).toBeLessThanOrEqual(40);
    }
  });

  it('colours by speaker when colour is on', () => {
    const { instance } = renderer({ color: true });
    const [line] = instance.render({ kind: 'error', text: 'boom', payload: {} });
    expect(line).toBe('\x1b[31m  ! boom\x1b[39m');
  });

  describe('who speaks', () => {
    const dispatch = (id: string, subagentType: string, description: string): FlowerEvent => ({
      kind: 'dispatch',
      text: description,
      tool: 'Agent',
      payload: { ...main, id, input: {}, subagentType, description },
    });
    const subagentCall = (parentToolUseId: string): FlowerEvent => ({
      kind: 'tool_call',
      text: 'npm test',
      tool: 'Bash',
      payload: { subagent: true, parentToolUseId, id: 't9', input: {} },
    });

    it('puts the role before main-thread prose, with the rest of the text hanging under it', () => {
      const { instance } = renderer({ width: 40, labelSpeakers: true });
      instance.speaker('judge');
      const lines = instance.render(text('The goal is met: every check passes on this machine.'));
      expect(lines.slice(0, -1)).toEqual([
        '  judge: The goal is met: every check',
        '         passes on this machine.',
      ]);
      instance.speaker('coordinator');
      expect(instance.render(text('Dispatching.'))[0]).toBe('  coordinator: Dispatching.');
    });

    it('names the worker on its lines, by type, or by its task when the type is generic', () => {
      const { instance } = renderer({ labelSpeakers: true, verbose: true });
      instance.render(dispatch('toolu_a', 'coder', 'write it'));
      instance.render(dispatch('toolu_b', 'general-purpose', 'check the docs'));
      expect(instance.render(subagentCall('toolu_a'))).toEqual(['  | coder * Bash npm test']);
      expect(instance.render(subagentCall('toolu_b'))).toEqual(['  | check the docs * Bash npm test']);
      expect(instance.render(subagentCall('toolu_unknown'))).toEqual(['  | * Bash npm test']);
      expect(
        instance.render({
          kind: 'text',
          text: 'done',
          payload: { subagent: true, parentToolUseId: 'toolu_a' },
        }),
      ).toEqual(['  | coder: done']);
    });

    it('labels nothing unless asked (once has a single speaker)', () => {
      const { instance } = renderer();
      instance.speaker('judge');
      instance.render(dispatch('toolu_a', 'coder', 'write it'));
      expect(instance.render(text('Fine.'))[0]).toBe('  Fine.');
      expect(instance.render(subagentCall('toolu_a'))).toEqual(['  | * Bash npm test']);
    });
  });

  it('wraps a worker’s conclusion, a check and a warning that a second row shows whole, instead of cutting them (issue 21)', () => {
    const { instance } = renderer({ width: 80 });
    const conclusion =
      'Conclusion: hello.js is written and runs and prints "Hello from flower!". Evidence: node hello.js';
    const task = instance.render({
      kind: 'task',
      text: conclusion,
      payload: { phase: 'notification', taskId: 't' },
    });
    expect(task).toEqual([
      '  # Conclusion: hello.js is written and runs and prints "Hello from flower!".',
      '    Evidence: node hello.js',
    ]);
    const check = "check passed · exit 0 in 0.33 s · node hello.js | grep -qx 'Hello from flower!'";
    const notice = instance.render({
      kind: 'system',
      text: `+ ${check}`,
      payload: { subtype: 'check', data: {}, notice: 'ok' },
    });
    expect(notice).toEqual([
      "  + check passed · exit 0 in 0.33 s · node hello.js | grep -qx 'Hello from",
      "    flower!'",
    ]);
    expect(notice.join('')).not.toContain('...');
    const bequest =
      'bequest (degraded: assembled by flower) written to CLAUDE.md and AGENTS.md for the next tool';
    const warning = instance.render({
      kind: 'system',
      text: bequest,
      payload: { subtype: 'bequest', data: {}, warning: true },
    });
    expect(warning).toEqual([
      '  ! bequest (degraded: assembled by flower) written to CLAUDE.md and AGENTS.md',
      '    for the next tool',
    ]);
    for (const line of [...task, ...notice, ...warning]) expect(displayWidth(line)).toBeLessThanOrEqual(80);
  });

  it('cuts a message only past four rows, and keeps a tool call to one row', () => {
    const { instance } = renderer({ width: 40 });
    const lines = instance.render({
      kind: 'task',
      text: 'word '.repeat(100),
      payload: { phase: 'notification', taskId: 't' },
    });
    expect(lines).toHaveLength(4);
    expect(lines[3]).toMatch(/\.\.\.$/);
    expect(lines.every((line) => displayWidth(line) <= 40)).toBe(true);
    const call = instance.render({
      kind: 'tool_call',
      tool: 'Bash',
      text: 'echo '.repeat(40),
      payload: { ...main, id: 't', input: {} },
    });
    expect(call).toHaveLength(1);
    expect(call[0]).toMatch(/\.\.\.$/);
  });

  it('drops an empty heading from prose (an achieved verdict’s "Not passed"), keeping the rest (issue 21)', () => {
    const { instance } = renderer({ width: 80 });
    const lines = instance.render(
      text('## Conclusion\nachieved\n\n## Reason\nhello.js prints it.\n\n## Not passed\n'),
    );
    expect(lines.slice(0, -1)).toEqual([
      '  ## Conclusion',
      '  achieved',
      '  ',
      '  ## Reason',
      '  hello.js prints it.',
    ]);
    expect(lines.join('\n')).not.toContain('Not passed');
    const open = instance.render(text('## Not passed\n- the exit code is 1'));
    expect(open.slice(0, -1)).toEqual(['  ## Not passed', '  - the exit code is 1']);
  });

  it('marks every dollar figure as simulated when the model is scripted', () => {
    const { instance } = renderer({ simulatedCost: true });
    expect(instance.render(result(0.25))[0]).toBe('  + done 3 turns · $0.2500 (simulated) · 0:00');
    expect(instance.render(text('Hi.')).at(-1)).toBe('  - total $0.25 (simulated) · 0:00');
  });
});

describe('the live status of an outage', () => {
  const down = (downSince: number, text = `endpoint e:1 down since ${downSince}`): FlowerEvent => ({
    kind: 'retry',
    text,
    payload: {
      source: 'runtime',
      reason: 'offline',
      offline: { endpoint: 'e:1', downSince, nextProbeAt: 0, givesUpAt: 0 },
    },
  });

  it('shows the first status of an outage, then one a minute, and a new outage at once', () => {
    const { instance, advance } = renderer();
    expect(instance.render(down(1))).toEqual(['  ~ endpoint e:1 down since 1']);
    advance(15_000);
    expect(instance.render(down(1))).toEqual([]);
    advance(45_000);
    expect(instance.render(down(1))).toEqual(['  ~ endpoint e:1 down since 1']);
    advance(1_000);
    expect(instance.render(down(2))).toEqual(['  ~ endpoint e:1 down since 2']);
  });
});
