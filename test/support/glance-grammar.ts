/**
 * A grammar of shell commands for testing the glance predicate: looks from the allow list, with
 * harmless and harmful arguments, every word spelled through one of bash's quoting and expansion
 * forms, joined by every operator and followed by every kind of redirection. Most of what it makes
 * is harmful or not understood; the property test runs what the predicate lets through.
 */
import fc from 'fast-check';

/** Arguments per tool: the usual ones and the ones that would write, run or leak if they got through. */
const TOOL_ARGUMENTS: Record<string, readonly string[]> = {
  ls: ['-la', '-R', '-a', '.', 'src', 'data.txt', '*.txt', './*', 'src/*', '.env', '-I', '-d', '~'],
  cat: [
    './src/../.env',
    './/.env',
    'src/*.ts',
    'src/a.ts',
    'data.txt',
    'notes.md',
    '-n',
    '-A',
    '.env',
    'src/.env',
    '../home/.config/flower/.env',
    '/proc/self/environ',
    '-',
    'src/*',
    '.e*',
  ],
  head: ['-n', '2', '-5', 'data.txt', '.env', '-c', '3', 'src/.env'],
  tail: ['-n', '1', '-3', 'data.txt', '.env', '-f', '--pid=1'],
  grep: [
    '--exclude-from=.env',
    '-A',
    '1',
    '-c',
    'src/*.ts',
    '-n',
    '-r',
    '-i',
    'KEY',
    'alpha',
    'data.txt',
    'notes.md',
    '.env',
    '-e',
    'src',
    '.',
    '-l',
    '-f',
    'src/.env',
    '--include=*.ts',
    '-R',
  ],
  sort: [
    '-k2',
    '-t',
    ':',
    '-u',
    '-o',
    'pwned-sort',
    '--output=pwned-sort2',
    '-T',
    '.',
    '--compress-program=touch',
    'data.txt',
    '-r',
    '-n',
    '.env',
    '--files0-from=.env',
  ],
  uniq: ['-c', '-', 'data.txt', 'pwned-uniq', '-d', 'a.txt'],
  find: [
    '-newer',
    '.env',
    '-samefile',
    '-path',
    './src/*',
    '-not',
    '.',
    '-name',
    'data.txt',
    '*.ts',
    '-delete',
    '-print',
    '-exec',
    'touch',
    'pwned-find',
    ';',
    '-fprint',
    'pwned-fprint',
    '-maxdepth',
    '1',
    '-type',
    'f',
    '-ok',
    '-fls',
    '-printf',
    '%p\\n',
    '-execdir',
  ],
  sed: [
    's/a/b/g',
    '-E',
    '-n',
    '1p',
    'p',
    'w pwned-sed',
    '1w pwned-sed1',
    's/a/b/w pwned-sed2',
    'e touch pwned-sed3',
    '-i',
    'r .env',
    'data.txt',
    '-e',
    '$p',
    's/a/b/e',
    '.env',
  ],
  awk: [
    '$2 > 1 {print $1}',
    '{print}',
    '{print $1}',
    'BEGIN{system("touch pwned-awk")}',
    '{print > "pwned-awk2"}',
    'BEGIN{print ENVIRON["FLOWER_PLANTED_SECRET"]}',
    '{print | "sh"}',
    '-F:',
    'data.txt',
    '.env',
    'BEGIN{while((getline l < ".env")>0) print l}',
    '-v',
    'x=1',
  ],
  jq: [
    '--slurpfile',
    '--arg',
    '.',
    '.name',
    '-n',
    'env',
    '$ENV',
    '--rawfile',
    'x',
    '.env',
    '$x',
    'p.json',
    '-r',
    '-R',
    '-c',
  ],
  git: [
    '--format=%G?',
    '--show-signature',
    '-p',
    '-L',
    '1,2:data.txt',
    '-L:x:.env',
    'HEAD:data.txt',
    '--format=%h',
    '--no-index',
    '-P',
    '--no-pager',
    'show',
    '-n',
    'remote',
    '--',
    'status',
    'log',
    '--oneline',
    '-1',
    'diff',
    'show',
    'HEAD:.env',
    '--output=pwned-git',
    'branch',
    'pwned-branch',
    '-c',
    'core.pager=touch pwned-pager',
    'config',
    '--get',
    'user.name',
    'stash',
    'ls-files',
    'rev-parse',
    'HEAD',
    '-s',
    '--stat',
    'HEAD~1',
    '--ext-diff',
    'config',
    'user.name',
    'x',
    '-D',
  ],
  date: ['+%s', '-f', '.env', '-s', '-d', 'yesterday', '010112002030', '-r', 'data.txt', '-u'],
  diff: ['a.txt', 'b.txt', '-u', '--paginate', '-r', '.', 'src', '.env', '-q'],
  wc: ['-l', 'data.txt', '--files0-from=.env', '.env', '-c'],
  echo: ['hello', '-n', 'KEY', '-e', 'a\\tb'],
  ps: ['aux', 'e', '-ef', 'auxe', '-eo', 'pid,cmd', 'eww', '-o', 'environ', 'axe', '-p', '1'],
  cut: ['-d:', '-f1', 'data.txt', '.env', '-c1-5', '-d', ' '],
  tr: ['a-z', 'A-Z', '-d', 'a'],
  comm: ['a.txt', 'b.txt', '-12', '-3', '.env'],
  nl: ['-ba', 'data.txt', '.env'],
  rev: ['data.txt', '.env'],
  column: ['-t', 'data.txt', '.env'],
  stat: ['data.txt', '-c', '%s', '.env'],
  file: ['data.txt', '-C', '-m', 'magic', '.env', '-z', '-b'],
  du: ['-sh', '.', '-a', '--files0-from=.env'],
  df: ['-h', '.'],
  pwd: ['-P'],
  whoami: [],
  uname: ['-a', '-r'],
  id: ['-u', '-n'],
  nproc: [],
  which: ['ls', 'git', '-a'],
  command: ['-v', 'ls', 'git', 'touch'],
  type: ['ls', '-t'],
  free: ['-m', '-s', '1'],
  uptime: ['-p'],
  hostname: ['-s', 'newname'],
  ss: ['-tlnp', '-D', 'pwned-ss', '-K', '-a', 'state', 'listening', '-N', 'x'],
  lsof: ['-i', ':3000', '+m', '-D', 'b', '-n', '-P', '+D', '.', '-t'],
  netstat: ['-tulpn', '-c', '-a', '-n'],
  pgrep: ['-a', 'bash', '--env', 'X', '-f'],
  systemctl: ['status', 'x', '--no-pager', 'stop', '-H', 'h'],
  kubectl: ['get', 'pods', 'secrets', '-o', 'yaml', 'wide', '-A'],
  docker: ['ps', '-a', 'run', 'images', 'x'],
};

/** Commands that are not glances at all, to mix in. */
const NOT_GLANCES = [
  'touch pwned-touch',
  'env',
  'printenv',
  'set',
  'declare -p',
  'export -p',
  "sh -c 'touch pwned-sh'",
  'rm data.txt',
  'tee pwned-tee',
  'xargs touch',
  'mkdir pwned-dir',
  'cp data.txt pwned-cp',
];

/** Ways bash can spell a word; all but the first few are expansions a glance must refuse. */
const spellings: Array<(word: string) => string> = [
  (word) => word,
  (word) => word,
  (word) => word,
  (word) => `'${word.replace(/'/g, `'\\''`)}'`,
  (word) => `"${word.replace(/(["\\$`])/g, '\\$1')}"`,
  (word) => (word.length > 1 ? `\\${word}` : word),
  (word) => (word.length > 1 ? `${word[0]}''${word.slice(1)}` : word),
  (word) => (word.length > 1 ? `${word[0]}\\\n${word.slice(1)}` : word),
  (word) => `$'${word.replace(/'/g, "\\'")}'`,
  (word) => `$"${word}"`,
  (word) => (word.startsWith('-') ? `-{${word.slice(1)},print}` : `{${word},}`),
  (word) => `{x,${word}}`,
  (word) => (word.length > 1 ? `${word.slice(0, -1)}?` : `${word}*`),
  (word) => `${word}*`,
  (word) => `[${word[0]}]${word.slice(1)}`,
  (word) => `~/${word}`,
  () => '$NASTY_FLAG',
  () => '$NASTY_EXEC',
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a shell parameter expansion, on purpose
  () => '${NASTY_FILE}',
  (word) => `\${X:-${word}}`,
  (word) => `$(echo ${word})`,
  (word) => `\`echo ${word}\``,
  (word) => `$((1))${word}`,
  () => '<(cat .env)',
  () => '>(touch pwned-procsub)',
  () => '!!',
  (word) => `!${word}`,
  (word) => `@(${word})`,
  (word) => `${word} #`,
  (word) => `#${word}`,
];

/** Two neighbouring arguments folded into one brace expansion: `{-exec,touch,x,\;}`. */
function braceJoin(words: readonly string[]): string {
  return `{${words.map((word) => word.replace(/([;,{}\\ ])/g, '\\$1')).join(',')}}`;
}

const REDIRECTIONS = [
  '2>/dev/null',
  '>/dev/null',
  '2>&1',
  '>&2',
  '&>/dev/null',
  '> /dev/null',
  '>pwned-redirect',
  ">/dev/null'pwned'",
  '>/dev/null\\x',
  ">&2'pwned-dup'",
  '>>"pwned-append"',
  '&>pwned-both',
  '<.env',
  '<<<KEY',
  '2>/dev/null"x"',
  '>|pwned-clobber',
  '3>pwned-fd',
  '>&-',
  '2>pwned-err',
];

const SEPARATORS = [' && ', ' && ', ' || ', '; ', ' | ', ' | ', ' | ', '\n', ' & ', ' |& ', ' ;; '];

const toolNames = Object.keys(TOOL_ARGUMENTS);

/** One simple command: a tool with 0–4 arguments, each spelled some way, maybe a redirection. */
const simpleCommand: fc.Arbitrary<string> = fc.oneof(
  { weight: 12, arbitrary: fc.constantFrom(...toolNames).chain((name) => withArguments(name)) },
  { weight: 1, arbitrary: fc.constantFrom(...NOT_GLANCES) },
);

function withArguments(name: string): fc.Arbitrary<string> {
  const pool = TOOL_ARGUMENTS[name] as readonly string[];
  const argument = pool.length > 0 ? fc.constantFrom(...pool) : fc.constant('');
  return fc
    .record({
      verb: fc.nat(spellings.length - 1).map((index) => (index < 7 ? index : 0)),
      args: fc.array(fc.tuple(argument, fc.nat(spellings.length - 1), fc.nat(9)), { maxLength: 4 }),
      brace: fc.nat(7),
      redirection: fc.option(fc.constantFrom(...REDIRECTIONS), { freq: 4 }),
    })
    .map(({ verb, args, brace, redirection }) => {
      const words = args.filter(([text]) => text !== '');
      // Mostly plain or quoted spellings, so that a fair share of commands is understood at all.
      const spelled = words.map(([text, spelling, plain]) =>
        (plain < 7
          ? (spellings[0] as (word: string) => string)
          : (spellings[spelling] as (word: string) => string))(text),
      );
      if (brace === 0 && words.length >= 2)
        spelled.splice(0, 2, braceJoin(words.slice(0, 2).map(([text]) => text)));
      const head = (spellings[verb] as (word: string) => string)(name);
      return [head, ...spelled, ...(redirection ? [redirection] : [])].join(' ');
    });
}

/** A command line of one to three simple commands. */
export const commandLine: fc.Arbitrary<string> = fc
  .tuple(
    fc.oneof(
      { weight: 3, arbitrary: fc.array(simpleCommand, { minLength: 1, maxLength: 1 }) },
      { weight: 2, arbitrary: fc.array(simpleCommand, { minLength: 2, maxLength: 3 }) },
    ),
    fc.array(fc.constantFrom(...SEPARATORS), { minLength: 2, maxLength: 2 }),
  )
  .map(([commands, separators]) =>
    commands.reduce(
      (line, command, index) => (index === 0 ? command : `${line}${separators[index - 1]}${command}`),
      '',
    ),
  );
