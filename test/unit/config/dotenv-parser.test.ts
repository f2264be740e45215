import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type DotenvPitfallKind, parseDotenv } from '../../../src/config/dotenv-parser.js';

function values(text: string): Record<string, string> {
  const result: Record<string, string> = {};
  for (const entry of parseDotenv(text).entries) if (!(entry.key in result)) result[entry.key] = entry.value;
  return result;
}

function pitfallKinds(text: string): DotenvPitfallKind[] {
  return parseDotenv(text).pitfalls.map((pitfall) => pitfall.kind);
}

describe("accepted forms (the seed's table)", () => {
  it.each([
    ['KEY=VALUE', 'KEY', 'VALUE'],
    ['KEY = VALUE', 'KEY', 'VALUE'],
    ['KEY="VALUE"', 'KEY', 'VALUE'],
    ["KEY='VALUE'", 'KEY', 'VALUE'],
    ['KEY=a=b', 'KEY', 'a=b'],
    ['   KEY=VALUE   ', 'KEY', 'VALUE'],
    ['KEY=VALUE\r', 'KEY', 'VALUE'],
  ])('%j gives %s=%j without a warning', (line, key, value) => {
    expect(values(line)).toEqual({ [key]: value });
    expect(pitfallKinds(line)).toEqual([]);
  });

  it('skips comment lines and blank lines', () => {
    const text = '# comment\n\n   \n  # indented comment\nKEY=VALUE\n';
    expect(parseDotenv(text).entries).toEqual([{ key: 'KEY', value: 'VALUE', line: 5 }]);
    expect(pitfallKinds(text)).toEqual([]);
  });

  it('an empty value is a value (it claims the key)', () => {
    expect(values('KEY=')).toEqual({ KEY: '' });
    expect(values('KEY=""')).toEqual({ KEY: '' });
    expect(pitfallKinds('KEY=')).toEqual([]);
  });
});

describe('forms that are not understood: documented values plus a warning', () => {
  it('export KEY=VALUE sets a variable literally named "export KEY"', () => {
    expect(values('export KEY=VALUE')).toEqual({ 'export KEY': 'VALUE' });
    const [pitfall] = parseDotenv('export KEY=VALUE').pitfalls;
    expect(pitfall).toMatchObject({ kind: 'export-prefix', line: 1, key: 'export KEY' });
    expect(pitfall?.message).toContain('remove "export "');
  });

  it('a trailing comment becomes part of the value', () => {
    expect(values('KEY=value # note')).toEqual({ KEY: 'value # note' });
    expect(parseDotenv('KEY=value # note').pitfalls).toMatchObject([
      { kind: 'inline-comment', line: 1, key: 'KEY' },
    ]);
  });

  it('a # without a blank before it is an ordinary character (no warning)', () => {
    expect(values('KEY=abc#def')).toEqual({ KEY: 'abc#def' });
    expect(pitfallKinds('KEY=abc#def')).toEqual([]);
  });

  it.each([
    ['KEY=$OTHER', '$OTHER'],
    // biome-ignore lint/suspicious/noTemplateCurlyInString: the literal ${...} text is what is tested
    ['KEY=${OTHER}', '${OTHER}'],
    ['KEY="prefix-$HOME/x"', 'prefix-$HOME/x'],
  ])('%j is taken literally, no interpolation', (line, value) => {
    expect(values(line)).toEqual({ KEY: value });
    expect(pitfallKinds(line)).toEqual(['variable-reference']);
  });

  it('a dollar sign not followed by a name is not flagged', () => {
    expect(pitfallKinds('PRICE=5$')).toEqual([]);
  });

  it('a multi-line quoted value is read line by line; continuation lines without = are dropped', () => {
    const text = 'KEY="line one\nline two\nline three"\nNEXT=after';
    expect(values(text)).toEqual({ KEY: 'line one', NEXT: 'after' });
    const pitfalls = parseDotenv(text).pitfalls;
    expect(pitfalls).toHaveLength(1);
    expect(pitfalls[0]).toMatchObject({ kind: 'multiline-value', line: 1, key: 'KEY' });
    expect(pitfalls[0]?.message).toContain('lines 2-3');
  });

  it('a continuation line that contains = becomes a key of its own', () => {
    const text = "CERT='-----BEGIN\nabc=def\n-----END'";
    expect(values(text)).toEqual({ CERT: '-----BEGIN', abc: 'def' });
    expect(pitfallKinds(text)).toContain('multiline-value');
  });

  it.each([
    ['KEY="abc', 'abc'],
    ["KEY=abc'", 'abc'],
    ['KEY="abc\'', 'abc'],
    ['KEY="', ''],
  ])('unpaired quotes %j are all stripped, giving %j', (line, value) => {
    expect(values(line)).toEqual({ KEY: value });
    expect(pitfallKinds(line)).toEqual(['unpaired-quote']);
  });

  it('nested quotes are all stripped from both ends', () => {
    expect(values(`KEY="'abc'"`)).toEqual({ KEY: 'abc' });
  });

  it('only the first = splits, whitespace around the key is trimmed', () => {
    expect(values('  MY KEY  =  a = b  ')).toEqual({ 'MY KEY': 'a = b' });
  });

  it('a line without = is skipped and reported', () => {
    expect(values('JUSTTEXT\nKEY=1')).toEqual({ KEY: '1' });
    expect(parseDotenv('JUSTTEXT\nKEY=1').pitfalls).toMatchObject([{ kind: 'ignored-line', line: 1 }]);
  });

  it('a line with nothing before = is skipped and reported', () => {
    expect(values('=value')).toEqual({});
    expect(pitfallKinds('=value')).toEqual(['empty-key']);
  });

  it('a repeated key keeps the first value and the repeat is reported with both lines', () => {
    const text = 'KEY=first\nKEY=second';
    expect(values(text)).toEqual({ KEY: 'first' });
    const [pitfall] = parseDotenv(text).pitfalls;
    expect(pitfall).toMatchObject({ kind: 'duplicate-key', line: 2, key: 'KEY' });
    expect(pitfall?.message).toContain('line 1');
  });

  it('reports every pitfall of a file with its own line number', () => {
    const text = [
      '# flower',
      'export ANTHROPIC_API_KEY=sk-ant-123',
      'ANTHROPIC_BASE_URL=https://gw.example # my gateway',
      'ANTHROPIC_MODEL=$MODEL',
      'ANTHROPIC_AUTH_TOKEN="abc',
      'def"',
      "CLAUDE_CODE_EFFORT_LEVEL=high'",
    ].join('\n');
    expect(parseDotenv(text).pitfalls.map((pitfall) => [pitfall.kind, pitfall.line])).toEqual([
      ['export-prefix', 2],
      ['inline-comment', 3],
      ['variable-reference', 4],
      ['multiline-value', 5],
      ['unpaired-quote', 7],
    ]);
  });
});

describe('properties', () => {
  // A key the rules can express: no "=", no line break, not a comment, no blanks at the ends.
  const key = fc
    .string({ minLength: 1, maxLength: 20 })
    .filter((text) => !/[=\r\n]/.test(text) && text.trim() === text && text !== '' && !text.startsWith('#'));
  // A value the rules keep as-is: no line break, no blanks or quotes at the ends.
  const value = fc.string({ maxLength: 40 }).filter((text) => !/[\r\n]/.test(text) && unquoted(text));

  function unquoted(text: string): boolean {
    return text.trim() === text && !/^['"]|['"]$/.test(text);
  }

  it('KEY=value reads back exactly, in any quoting and spacing', () => {
    fc.assert(
      fc.property(
        key,
        value,
        fc.constantFrom('', '"', "'"),
        fc.constantFrom('', ' ', '  '),
        (k, v, quote, pad) => {
          const parsed = parseDotenv(`${pad}${k}${pad}=${pad}${quote}${v}${quote}${pad}`);
          expect(parsed.entries).toEqual([{ key: k, value: v, line: 1 }]);
        },
      ),
    );
  });

  it('never throws, and every entry points at a line that has an "="', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 200 }), (text) => {
        const lines = text.split(/\r?\n|\r/);
        for (const entry of parseDotenv(text).entries) expect(lines[entry.line - 1]).toContain('=');
      }),
    );
  });
});
