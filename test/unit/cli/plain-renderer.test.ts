import { describe, expect, it } from 'vitest';
import { formatElapsed, formatTokens, formatTurns, PlainRenderer } from '../../../src/cli/plain-renderer.js';
import type { FlowerEvent } from '../../../src/runtime/events.js';

const plain = (line: string) => line.replace(/\u001b\[[0-9;]*m/g, '');

function render(events: FlowerEvent[], verbose = false): string[] {
  const lines: string[] = [];
  let clock = 0;
  const renderer = new PlainRenderer({
    verbose,
    write: (line) => lines.push(plain(line)),
    now: () => {
      clock += 1000;
      return clock;
    },
  });
  for (const event of events) renderer.render(event);
  return lines;
}

const main = { subagent: false };
const sub = { subagent: true, parentToolUseId: 't1' };

describe('PlainRenderer', () => {
  it('prints main-thread prose with a status line: context, running cost, elapsed', () => {
    const lines = render([
      {
        kind: 'result',
        text: 'success',
        payload: {
          sessionId: 's',
          costUsd: 0.25,
          numTurns: 2,
          isError: false,
          subtype: 'success',
          errors: [],
        },
      },
      { kind: 'text', text: 'Line one\nLine two', payload: { ...main, context: 36_800 } },
    ]);
    expect(lines).toContain('  Line one');
    expect(lines).toContain('  Line two');
    expect(lines[lines.length - 1]).toMatch(/^ {2}- context 36\.8K · total \$0\.25 · 0:0\d$/);
  });

  it('shows tool calls, dispatches and failed tool results; hides successful results unless verbose', () => {
    const events: FlowerEvent[] = [
      { kind: 'tool_call', tool: 'Glob', text: '**/*.ts', payload: { ...main, id: 'a', input: {} } },
      { kind: 'tool_call', tool: 'Bash', text: 'npm test', payload: { ...sub, id: 'b', input: {} } },
      {
        kind: 'dispatch',
        tool: 'Agent',
        text: '',
        payload: { ...main, id: 'c', input: {}, subagentType: 'coder', description: 'write the parser' },
      },
      { kind: 'tool_result', text: 'no such file', payload: { ...main, toolUseId: 'a', isError: true } },
      { kind: 'tool_result', text: 'src/a.ts', payload: { ...main, toolUseId: 'a', isError: false } },
    ];
    expect(render(events)).toEqual([
      '  * Glob **/*.ts',
      '  | * Bash npm test',
      '  > dispatch coder write the parser',
      '  x no such file',
    ]);
    expect(render(events, true)).toContain('    src/a.ts');
  });

  it('never shows subagent thinking, and subagent prose only when verbose', () => {
    const events: FlowerEvent[] = [
      { kind: 'thinking', text: 'main idea', payload: main },
      { kind: 'thinking', text: 'worker idea', payload: sub },
      { kind: 'text', text: 'worker prose', payload: sub },
    ];
    expect(render(events)).toEqual(['  ~ main idea']);
    expect(render(events, true)).toEqual(['  ~ main idea', '  | worker prose']);
  });

  it('strips terminal escapes from model output', () => {
    const [line] = render([{ kind: 'text', text: 'hi\u001b]0;pwned\u0007 there\u001b[2J', payload: main }]);
    expect(line).toBe('  hi there');
  });

  it('renders a handoff as a block with the sections, the file and the landing line', () => {
    const lines = render([
      {
        kind: 'handoff',
        text: '',
        payload: {
          phase: 'done',
          step: 'work',
          context: 152_000,
          window: 200_000,
          degraded: true,
          path: '/p/notes/handoff-work.md',
          sections: { doing: 'porting', decided: '', deadends: 'regex lexer', next: 'strings' },
        },
      },
    ]);
    expect(lines[0]).toBe('  # context 152.0K of 200.0K: handing off');
    expect(lines.some((line) => line.includes('degraded'))).toBe(true);
    expect(lines).toContain('    Doing     porting');
    expect(lines).toContain('    Dead ends regex lexer');
    expect(lines.some((line) => line.includes('Decided'))).toBe(false);
    expect(lines).toContain('  <- handoff written to /p/notes/handoff-work.md');
  });

  it('says how a query ended', () => {
    const [done] = render([
      {
        kind: 'result',
        text: '',
        payload: {
          sessionId: 's',
          costUsd: 0.1234,
          numTurns: 4,
          isError: false,
          subtype: 'success',
          errors: [],
        },
      },
    ]);
    expect(done).toBe('  + done 4 turns · $0.1234 · 0:01');
    const [failed] = render([
      {
        kind: 'result',
        text: '',
        payload: { sessionId: 's', costUsd: 0, numTurns: 1, isError: true, subtype: 'success', errors: [] },
      },
    ]);
    expect(failed).toMatch(/^ {2}x failed 1 turn ·/);
  });
});

describe('formatting helpers', () => {
  it('says "1 turn" but "2 turns"', () => {
    expect(formatTurns(1)).toBe('1 turn');
    expect(formatTurns(2)).toBe('2 turns');
    expect(formatTurns(0)).toBe('0 turns');
  });

  it('formats elapsed time as m:ss, and h:mm:ss from an hour on', () => {
    expect(formatElapsed(0)).toBe('0:00');
    expect(formatElapsed(61_000)).toBe('1:01');
    expect(formatElapsed(3_723_000)).toBe('1:02:03');
  });

  it('formats tokens in thousands with one decimal', () => {
    expect(formatTokens(36_812)).toBe('36.8K');
  });
});
