/**
 * The glance tokenizer: what it accepts it splits into exactly the words bash passes to the
 * program (checked against real bash), and every expansion or operator outside its subset is
 * refused.
 */
import { spawnSync } from 'node:child_process';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseCommandLine } from '../../../src/store/glance/command-line.js';

const words = (source: string) =>
  parseCommandLine(source)?.map((command) => command.words.map((word) => word.text));

describe('parseCommandLine: words after quote removal', () => {
  it.each([
    ['ls -la', [['ls', '-la']]],
    [`echo 'a b' "c d" e\\ f`, [['echo', 'a b', 'c d', 'e f']]],
    [`echo "a\\"b" "a\\$b" "a\\\\b" "a\\xb"`, [['echo', 'a"b', 'a$b', 'a\\b', 'a\\xb']]],
    [`echo 'it'"'"'s'`, [['echo', "it's"]]],
    // biome-ignore lint/suspicious/noTemplateCurlyInString: shell text, on purpose
    ["echo '$(x) `y` ${z}'", [['echo', '$(x) `y` ${z}']]],
    ['gi\\\nt status', [['git', 'status']]],
    ['git status \\\n  -s', [['git', 'status', '-s']]],
    ['a && b || c; d | e\nf', [['a'], ['b'], ['c'], ['d'], ['e'], ['f']]],
    ['git show HEAD~1', [['git', 'show', 'HEAD~1']]],
    ['ls a#b', [['ls', 'a#b']]],
    ['echo ;', undefined],
  ])('%j', (source, expected) => {
    expect(words(source)).toEqual(expected);
  });

  it('records unquoted pattern characters only', () => {
    const [command] = parseCommandLine(`ls *.ts '*.md' \\?x [ab]`) ?? [];
    expect(command?.words.map((word) => word.globAt)).toEqual([[], [0], [], [], [0]]);
  });

  it('reads redirections with their parsed target and descriptor', () => {
    const [command] = parseCommandLine(`ls 2>/dev/null >"/dev/null"'x' 2>&1 &>/dev/null x2>y`) ?? [];
    expect(command?.redirections.map((r) => [r.fd, r.operator, r.target.text])).toEqual([
      ['2', '>', '/dev/null'],
      [undefined, '>', '/dev/nullx'],
      ['2', '>&', '1'],
      [undefined, '&>', '/dev/null'],
      [undefined, '>', 'y'],
    ]);
    expect(command?.words.map((word) => word.text)).toEqual(['ls', 'x2']);
  });
});

describe('parseCommandLine: refuses what it does not model', () => {
  it.each([
    // expansions
    'echo $HOME',
    // biome-ignore lint/suspicious/noTemplateCurlyInString: a shell parameter expansion, on purpose
    'echo ${HOME}',
    'echo $(id)',
    'echo `id`',
    'echo $((1+1))',
    "echo $'\\x41'",
    'echo $"x"',
    'echo "$HOME"',
    'echo "`id`"',
    'echo {a,b}',
    'echo a{1..3}',
    'echo }',
    'echo ~',
    'echo ~/x',
    'echo x=~/y',
    'echo a:~',
    "echo ''~",
    'echo !!',
    'echo "!x"',
    'echo # comment',
    // operators and compound commands
    'ls &',
    'ls |& cat',
    'ls ;; ls',
    '(ls)',
    'ls <(x)',
    'cat < f',
    'cat << EOF',
    'cat <<< x',
    'ls <> f',
    'ls >(x)',
    // structure
    '',
    'ls;',
    '| ls',
    'ls &&',
    '> /dev/null',
    'ls >',
    "echo 'open",
    'echo "open',
    'echo \\',
    'ls\r',
    'ls\u0000',
    'ls\u200b-la',
  ])('%j', (source) => {
    expect(parseCommandLine(source)).toBeUndefined();
  });
});

/** Pieces of a word the tokenizer accepts: each is also valid bash meaning the same thing. */
const piece = fc.oneof(
  fc.stringMatching(/^[A-Za-z0-9_./:=,+%@^-]{1,6}$/),
  fc
    .string({ unit: fc.constantFrom(...'ab $`"\\\n{}();&|<>*?~#!\''), maxLength: 6 })
    .map((text) => `'${text.replace(/'/g, '')}'`),
  fc
    .array(
      fc.oneof(
        fc.constantFrom('a', ' ', ';', '|', '*', '{', '#', "'", '\\x', '\\\\', '\\"', '\\$', '\\`', '\\\n'),
      ),
      {
        maxLength: 5,
      },
    )
    .map((parts) => `"${parts.join('')}"`),
  fc.constantFrom(...'ab $`"\\{}();&|<>*?~#!\'-').map((char) => `\\${char}`),
);

const simpleWord = fc.array(piece, { minLength: 1, maxLength: 4 }).map((pieces) => pieces.join(''));

describe('parseCommandLine: the same words as bash', () => {
  it('matches the argv bash passes, for generated quoting', () => {
    const cases = fc.sample(fc.array(simpleWord, { minLength: 1, maxLength: 4 }), { seed: 7, numRuns: 300 });
    const accepted = cases
      .map((args) => ({ line: args.join(' '), parsed: parseCommandLine(`show ${args.join(' ')}`) }))
      .filter((item) => item.parsed !== undefined && item.parsed.length === 1);
    expect(accepted.length).toBeGreaterThan(100);
    // One bash run: `show` prints each argument NUL-terminated, and \x01 after each case.
    const script = `show() { printf '%s\\0' "$@"; printf '\\1'; }\n${accepted.map((item) => `show ${item.line}`).join('\n')}\n`;
    const output = spawnSync('bash', ['-c', script], { encoding: 'utf8' }).stdout;
    const fromBash = output
      .split('\u0001')
      .slice(0, -1)
      .map((chunk) => chunk.split('\u0000').slice(0, -1));
    expect(fromBash).toEqual(
      accepted.map((item) => item.parsed?.[0]?.words.slice(1).map((word) => word.text)),
    );
  });
});
