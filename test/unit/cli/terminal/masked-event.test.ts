import { describe, expect, it } from 'vitest';
import { TerminalRenderer } from '../../../../src/cli/terminal/renderer.js';
import { maskSecret } from '../../../../src/config/credentials.js';
import { secretMask } from '../../../../src/config/secret-mask.js';
import { rememberSecrets } from '../../../../src/output/secrets.js';
import type { FlowerEvent } from '../../../../src/runtime/events.js';

const KEY = 'sk-ant-api03-0123456789abcdef';
const meta = { subagent: false };
const events: FlowerEvent[] = [
  { kind: 'text', text: `The key is ${KEY}`, payload: meta },
  { kind: 'thinking', text: `maybe ${KEY}`, payload: meta },
  {
    kind: 'tool_call',
    tool: 'Bash',
    text: `echo ${KEY}`,
    payload: { ...meta, id: 't1', input: { command: `echo ${KEY}` } },
  },
  { kind: 'tool_result', text: KEY, payload: { ...meta, toolUseId: 't1', isError: false } },
  {
    kind: 'dispatch',
    tool: 'Agent',
    text: 'coder',
    payload: { ...meta, id: 'd', input: {}, subagentType: 'coder', description: `use ${KEY}` },
  },
  {
    kind: 'ask',
    text: `Is ${KEY} right?`,
    payload: { kind: 'question', state: 'asked', options: [`yes, ${KEY}`] },
  },
  {
    kind: 'handoff',
    text: 'done',
    payload: {
      phase: 'done',
      step: 'work',
      context: 1,
      window: 2,
      sections: { doing: KEY, decided: KEY, deadends: KEY, next: KEY },
    },
  },
  { kind: 'error', text: `API Error: bad key ${KEY}`, payload: { synthetic: true } },
];

describe('TerminalRenderer with a mask', () => {
  it('shows no credential value in any line, whichever field it came from', () => {
    const renderer = new TerminalRenderer({
      verbose: true,
      color: false,
      width: () => 200,
      mask: secretMask({ ANTHROPIC_API_KEY: KEY }),
    });
    const lines = events.flatMap((event) => renderer.render(event));
    expect(lines.join('\n')).not.toContain(KEY);
    expect(lines.filter((line) => line.includes(maskSecret(KEY))).length).toBeGreaterThanOrEqual(
      events.length,
    );
  });

  it('masks them without one too: the default is the output sink mask', () => {
    rememberSecrets({ ANTHROPIC_API_KEY: KEY });
    const renderer = new TerminalRenderer({ verbose: true, color: false, width: () => 200 });
    const shown = renderer.render(events[0]!).join('\n');
    expect(shown).not.toContain(KEY);
    expect(shown).toContain(maskSecret(KEY));
  });
});
