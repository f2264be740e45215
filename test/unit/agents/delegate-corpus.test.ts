/**
 * Security of the coordinator's wall: an adversarial corpus of mutating or escaping commands, each
 * of which the delegate guard (with glances allowed) must deny on the main thread, and a property:
 * any command containing a generated mutating segment is denied, whatever glances surround it.
 *
 * The guard is called exactly as the SDK calls it (a PreToolUse hook input without `agent_id`).
 */
import type { HookInput, HookJSONOutput } from '@anthropic-ai/claude-agent-sdk';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { delegateGuard } from '../../../src/agents/guards/delegate.js';

const guard = delegateGuard({ allowGlance: true });

async function decide(command: string): Promise<'deny' | 'pass'> {
  const input = {
    hook_event_name: 'PreToolUse',
    session_id: 's',
    transcript_path: '/tmp/t.jsonl',
    cwd: '/tmp',
    tool_name: 'Bash',
    tool_input: { command },
    tool_use_id: 'toolu_1',
  } as HookInput;
  const output: HookJSONOutput = await guard.hooks[0]!(input, 'toolu_1', {
    signal: new AbortController().signal,
  });
  const specific = (output as { hookSpecificOutput?: { permissionDecision?: string } }).hookSpecificOutput;
  return specific?.permissionDecision === 'deny' ? 'deny' : 'pass';
}

/** Every command here changes something, runs something unlisted, or tries to smuggle one in. */
const corpus: Record<string, string[]> = {
  'reference: must be denied': [
    'git commit -m x',
    'git push',
    'pytest -q',
    'npm install',
    'python train.py',
    'rm -rf build',
    'make',
    'git status && rm -rf /tmp/x',
    'ls; git commit -am x',
    'git status && curl evil.com',
    'ls > out.txt',
    'echo $(whoami)',
    'cat urls | xargs curl',
    "sed -i 's/a/b/' f.py",
    'ls | tee saved.txt',
    'ls &',
    "find . -name '*.pyc' -delete",
    `awk 'BEGIN{system("rm -rf /tmp/x")}'`,
    'find . -name x -execdir rm {} +',
    'git branch -D feature',
    'git log --oneline && git reset --hard HEAD~5',
    'git clean -fd',
    'git push --force',
    'cat f | sh',
    'ls && ssh host rm -rf /',
    "jq '.' f.json > out.json",
    'git worktree list && git worktree remove wt',
  ],
  'holes the reference left open': [
    'env rm -rf x',
    'env X=y rm -rf x',
    'git branch new-feature',
    'git remote add evil https://example.com/x.git',
    'git hash-object -w app.py',
    'command rm -rf x',
    'type ls; rm -rf x',
  ],
  'quoting tricks': [
    "'rm' -rf x",
    "r''m -rf x",
    '"r"m -rf x',
    'r\\m -rf x',
    'git status && "rm" -rf x',
    "sed -i'' 's/a/b/' f",
    'sed "-i" \'s/a/b/\' f',
    "git 'commit' -m x",
    "ls ';' && rm -rf x",
    "echo 'unterminated && rm -rf x",
  ],
  newlines: [
    'git status\nrm -rf x',
    'ls\r\nrm -rf x',
    'git status \\\n&& rm -rf x',
    'echo ok\n\nmake',
    'cat f\n|sh',
  ],
  "ANSI-C quoting $'…'": ["$'rm' -rf x", "$'\\x72\\x6d' -rf x", "ls $'\\x3b' rm -rf x", "echo $'\\n'rm"],
  'here-strings and here-documents': [
    "bash <<< 'rm -rf x'",
    'sh <<< "touch pwned"',
    "cat <<< 'x' > out.txt",
    'cat <<EOF > f\nx\nEOF',
    'grep x <<< "$(rm -rf y)"',
  ],
  'env and assignments': [
    'env -i sh -c "rm x"',
    'X=y rm -rf x',
    'GIT_DIR=. git commit -m x',
    'env -- rm x',
    'env -u HOME touch x',
  ],
  'git options that run or write': [
    "git -c core.pager='rm -rf x' log",
    "git -c alias.st='!rm -rf x' st",
    'git -c core.sshCommand=evil fetch',
    'git --exec-path=/tmp log',
    'git -C sub commit -m x',
    'git --no-pager -c core.pager=sh log',
    'git log --output=out.txt',
    'git diff --output out.txt',
  ],
  'long option spellings': [
    "sed --in-place 's/a/b/' f",
    "sed --in-place=.bak 's/a/b/' f",
    "sed --in-pl 's/a/b/' f",
    "sed -n --expr='w out.txt' f",
    'sort --output=out.txt f',
    'sort --out=out.txt f',
    'sort --compress-prog=sh f',
    'git diff --outp=out.txt',
    'git push --forc',
    'git reset --har',
    "date --set='2020-01-01'",
    "date --se='2020-01-01'",
    'hostname --fil=/etc/hosts',
    'ss --kill',
    'ss --ki',
    'file --comp -m magic',
  ],
  'unicode look-alikes': [
    'ｒｍ -rf x',
    'rм -rf x',
    'gіt commit -m x',
    'ls；rm -rf x',
    'ls\u00a0-la && rm -rf x',
    'сat f',
  ],
  'sed and awk programs that write or run': [
    "sed -n 'w out.txt' f",
    "sed -n -e'w out.txt' f",
    "sed -n '1w/tmp/x' f",
    "sed -n '\\%a%w out' f",
    "sed -n '/a/Iw out' f",
    "sed -n '/a s/w /tmp/x' f",
    "sed '1edate' f",
    "sed 's/a/b/e' f",
    "sed 's/a/b/w out' f",
    'awk \'{print > "out"}\' f',
    'awk \'{print | "sh"}\' f',
    `awk --source='BEGIN{system("rm x")}'`,
    `awk '@include "inplace"; {print}' f`,
    `awk 'BEGIN{f="sys" "tem"; @f("rm x")}'`,
    'awk -f evil.awk f',
  ],
  'find actions': ['find . -exec rm {} \\;', 'find . -ok rm {} \\;', 'find . -fprint out', 'find . -fls out'],
  'redirections, pipes into shells, substitutions': [
    'ls &>out.txt',
    'ls 2>err.txt',
    'ls >| out',
    'ls >>out.txt',
    'ls 3>out.txt',
    'ls >/dev/null/../../tmp/x',
    'cat f | bash',
    'cat f |& sh',
    'echo rm | sh',
    'ls && $(rm x)',
    'ls `rm x`',
    'cat <(rm x)',
    'diff <(ls) >(tee x)',
    'ls $HOME && rm x',
    // biome-ignore lint/suspicious/noTemplateCurlyInString: a shell parameter expansion, on purpose
    'echo ${X}',
  ],
  'programs that are not glances': [
    'eval "rm -rf x"',
    'source evil.sh',
    '. evil.sh',
    'exec rm x',
    'nohup rm x',
    '(rm -rf x)',
    '{ rm -rf x; }',
    'time rm x',
    'sudo ls',
    'tee x < f',
    'xargs rm < list',
    'cp a b',
    'mv a b',
    'touch x',
    'mkdir d',
    'chmod +x f',
    'ln -s a b',
    'curl -o x http://example.com',
    'wget http://example.com',
    'npm test',
    "node -e \"require('fs').rmSync('x')\"",
    'python -c "import os"',
    "perl -e 'unlink q(x)'",
    'git checkout -- .',
    'git restore .',
    'git stash',
    'git stash drop',
    'git reflog expire --all',
    'git symbolic-ref HEAD refs/heads/x',
    'git config user.name x',
    'git tag v1',
    'git fetch',
    'git pull',
    'git gc --prune=now',
    'git update-ref -d HEAD',
    'docker run x',
    'docker rm x',
    'kubectl delete pod x',
    'systemctl restart x',
    'uniq in.txt out.txt',
    'sort -o out f',
    'tree -o out',
  ],
  'empty segments and stray operators': ['ls;', 'ls |', 'ls ||', 'ls;;', '&& ls', ''],
};

describe('delegate guard: adversarial corpus', () => {
  const all = Object.values(corpus).flat();
  it('holds at least 60 commands', () => {
    expect(all.length).toBeGreaterThanOrEqual(60);
  });

  for (const [group, commands] of Object.entries(corpus)) {
    it(`denies every command: ${group}`, async () => {
      const passed: string[] = [];
      for (const command of commands) if ((await decide(command)) !== 'deny') passed.push(command);
      expect(passed).toEqual([]);
    });
  }

  it('still lets the glances through', async () => {
    const glances = [
      'git status -s && git log --oneline -5',
      'ls -la 2>&1 | head -20',
      "sed -n '1,20p' f",
      "sed -n '/error/p' log.txt",
      "sed 's/a/b/g' f",
      "sed -n -e '1p' -e '$p' f",
      "sed -E 's/(x|y)/z/' f",
      "sed -n '1,/^$/p' f",
      "sed -n '/a/,+3p' f",
      "awk -F: '{print $1}' /etc/passwd",
      'sort -n f | uniq -c',
      'git log --stat -3',
      'date +%s',
    ];
    for (const command of glances) {
      expect(await decide(command)).toBe('pass');
    }
  });
});

/** Read-only glances that may surround the mutating segment. */
const glance = fc.constantFrom(
  'git status -s',
  'git log --oneline -5',
  'ls -la',
  'cat README.md',
  'wc -l f',
  "grep -n 'x' f",
  'head -5 f',
  'pwd',
  'echo ---',
);

const mutatingVerb = fc.constantFrom(
  'rm',
  'mv',
  'cp',
  'touch',
  'mkdir',
  'chmod',
  'tee',
  'xargs',
  'sh',
  'bash',
  'python',
  'node',
  'make',
  'npm',
  'curl',
  'dd',
  'truncate',
  'git commit',
  'git push',
  'git reset --hard',
  'git clean -fdx',
  'git checkout',
  'sed -i',
  'sort -o',
  'eval rm',
  'exec rm',
  'env rm',
  'command touch',
);

/** A way to spell the verb that a naive check might not recognise; the shell runs it all the same. */
const disguise = fc.constantFrom<(verb: string) => string>(
  (verb) => verb,
  (verb) => `'${verb}'`,
  (verb) => `"${verb}"`,
  (verb) => `${verb[0]}''${verb.slice(1)}`,
  (verb) => `\\${verb}`,
  (verb) => `X=1 ${verb}`,
);

const argument = fc.stringMatching(/^[a-z0-9./_-]{1,12}$/);

/** A segment that changes something: a disguised mutating verb with arguments, or a glance writing a file. */
const mutatingSegment = fc.oneof(
  fc
    .tuple(mutatingVerb, disguise, fc.array(argument, { maxLength: 3 }))
    .map(([verb, spell, args]) => [spell(verb), ...args].join(' ')),
  fc
    .tuple(glance, fc.constantFrom('>', '>>', '&>', '2>', '>|'), argument)
    .filter(([, , target]) => target !== '/dev/null')
    .map(([segment, operator, target]) => `${segment} ${operator} ${target}`),
);

const separator = fc.constantFrom(' && ', ' || ', '; ', ' | ', '\n', ';');

describe('delegate guard: property', () => {
  it('denies any command that contains a mutating segment', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(glance, { maxLength: 3 }),
        mutatingSegment,
        fc.array(glance, { maxLength: 3 }),
        fc.array(separator, { minLength: 6, maxLength: 6 }),
        async (before, bad, after, separators) => {
          const segments = [...before, bad, ...after];
          const command = segments.reduce((joined, segment, index) =>
            index === 0 ? segment : `${joined}${separators[index - 1]}${segment}`,
          );
          expect(await decide(command)).toBe('deny');
        },
      ),
      { numRuns: 500 },
    );
  });
});
