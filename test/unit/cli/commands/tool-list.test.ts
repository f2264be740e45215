import { describe, expect, it } from 'vitest';
import { KNOWN_TOOLS, unknownToolMessage } from '../../../../src/cli/commands/tool-list.js';

describe('unknownToolMessage', () => {
  it('accepts built-in tools, legacy aliases, permission rules and MCP tools', () => {
    expect(KNOWN_TOOLS).toEqual(expect.arrayContaining(['Read', 'Write', 'Bash', 'Glob', 'Grep', 'Agent']));
    expect(
      unknownToolMessage(['Read', 'Glob', 'Grep', 'Bash(npm test:*)', 'mcp__human__ask']),
    ).toBeUndefined();
  });

  it('refuses the first unknown name, with the tool it is one slip from', () => {
    expect(unknownToolMessage(['Read', 'Grpe'])).toBe(
      '-t: unknown tool "Grpe" — did you mean "Grep"? Tool names are case-sensitive, e.g. -t Read,Glob,Grep,Bash,Write,Edit.',
    );
    expect(unknownToolMessage(['bash'])).toContain('did you mean "Bash"?');
    expect(unknownToolMessage(['Teleport'])).toMatch(/^-t: unknown tool "Teleport"\. /);
  });
});
