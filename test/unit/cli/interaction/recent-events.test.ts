import { describe, expect, it } from 'vitest';
import { RecentEvents } from '../../../../src/cli/interaction/recent-events.js';

describe('RecentEvents', () => {
  it('tags each entry with kind, tool and speaker, on one line', () => {
    const recent = new RecentEvents();
    recent.add({
      kind: 'tool_call',
      tool: 'Bash',
      text: 'npm\ntest',
      payload: { subagent: true, id: 't', input: {} },
    });
    recent.add({ kind: 'text', text: 'all green', payload: { subagent: false } });
    expect(recent.lines()).toEqual(['[tool_call/Bash·subagent] npm test', '[text·main] all green']);
  });

  it('leaves out thinking and prompts', () => {
    const recent = new RecentEvents();
    recent.add({ kind: 'thinking', text: 'hmm', payload: { subagent: false } });
    recent.add({ kind: 'prompt', text: 'do it', payload: { subagent: false } });
    expect(recent.lines()).toEqual([]);
  });

  it('keeps only the newest entries, each cut to its size', () => {
    const recent = new RecentEvents({ capacity: 2, entryChars: 5 });
    for (const word of ['first', 'second', 'third'])
      recent.add({ kind: 'error', text: `${word} event`, payload: {} });
    expect(recent.lines()).toEqual(['[error·main] secon', '[error·main] third']);
  });
});
