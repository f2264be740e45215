import { describe, expect, it } from 'vitest';
import { withoutEmptySections } from '../../../../src/cli/terminal/empty-sections.js';

describe('withoutEmptySections', () => {
  it('drops a heading with nothing under it, at the end or before another heading', () => {
    expect(withoutEmptySections('## Reason\nok\n\n## Not passed\n')).toBe('## Reason\nok\n');
    expect(withoutEmptySections('## Not passed\n\n## Reason\nok')).toBe('## Reason\nok');
  });

  it('keeps a heading over content or over a deeper heading, and text without headings as it is', () => {
    const text = '## Not passed\n- the exit code is 1\n## Plan\n### Step one\ndo it';
    expect(withoutEmptySections(text)).toBe(text);
    expect(withoutEmptySections('plain prose')).toBe('plain prose');
  });

  it('never takes a comment inside fenced code for a heading', () => {
    const text = '## Script\n```bash\n# install\n# run\n```\n~~~\n# x\n~~~';
    expect(withoutEmptySections(text)).toBe(text);
  });
});
