/**
 * A sandbox that runs shell commands the way the coordinator's Bash tool would (`bash -c`), each
 * under `strace -f`, and reports what they really did: programs executed, files written or
 * created, credential files and process environments read, and planted secrets printed.
 *
 * These commands run as root on a shared machine, and the point of the test is that some of them
 * might be harmful if the predicate has a bug. So the sandbox holds even against a command that
 * tries to do damage:
 * - new mount, network, PID, IPC and UTS namespaces (`unshare`), so no host process is visible or
 *   signalable and only a downed loopback exists;
 * - every mount is remounted read-only; `/tmp`, `/var/tmp` and `/run` (where the host's Unix sockets
 *   live) are replaced by empty read-only tmpfs, and `/dev` by one holding only null, zero, random,
 *   urandom and tty; the only writable place is the scratch box, bound at `BOX` below;
 * - the commands run as `nobody` with no capabilities, no new privileges and an empty bounding set,
 *   a scrubbed environment, HOME inside the box, a file-size limit, and a timeout each.
 * `sandboxSelfTest` (run by the property test) checks that a write outside the box and a
 * connection to the host fail inside it while a write inside the box succeeds.
 *
 * Requires root, util-linux (`unshare`, `setpriv`, `mount`) and strace; `sandboxUnavailable` says
 * why not when something is missing.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';

/** Where the box appears inside the sandbox. */
export const BOX = '/run/flower-glance';
const NOBODY = 65534;

/** Secrets planted for every batch: in the environment and in credential files under HOME and the workspace. */
export interface PlantedSecrets {
  readonly environment: Record<string, string>;
  /** Box-relative path → contents, each containing one secret value. */
  readonly files: Record<string, string>;
  /** Every secret value, for output scanning. */
  readonly values: readonly string[];
}

export interface CommandReport {
  readonly command: string;
  readonly exitStatus: string;
  readonly stdout: string;
  readonly stderr: string;
  /** Basenames of every program the command tried to execute (after the `bash` that runs it). */
  readonly executed: readonly string[];
  /** Each attempted write, creation, removal or metadata change: `syscall path`. */
  readonly writes: readonly string[];
  /** Credential files or `environ` files opened, with the program that opened them. */
  readonly secretReads: readonly string[];
  /** Secret values (or simple transformations of them) found in stdout or stderr. */
  readonly printedSecrets: readonly string[];
}

/** Why the sandbox cannot run here, or undefined when it can. */
export function sandboxUnavailable(): string | undefined {
  if (process.platform !== 'linux') return 'the glance sandbox needs Linux namespaces';
  if (process.getuid?.() !== 0) return 'the glance sandbox needs root (to create namespaces and mounts)';
  for (const tool of ['unshare', 'setpriv', 'strace', 'timeout', 'mount', 'mknod']) {
    if (spawnSync('sh', ['-c', `command -v ${tool}`], { stdio: 'ignore' }).status !== 0)
      return `the glance sandbox needs ${tool} (apt-get install ${tool === 'strace' ? 'strace' : 'util-linux'})`;
  }
  const probe = spawnSync('unshare', ['--mount', '--net', '--pid', '--fork', 'true'], { stdio: 'ignore' });
  if (probe.status !== 0) return 'unshare could not create namespaces here';
  return undefined;
}

/** Fresh random secrets, so a value seen in output can only have come from where it was planted. */
export function plantSecrets(): PlantedSecrets {
  const secret = (label: string) => `${label}${randomBytes(12).toString('hex')}`;
  const envKey = secret('sk-ant-env-');
  const planted = secret('planted-env-');
  const flowerFile = secret('sk-ant-flower-');
  const workspaceFile = secret('sk-ant-dotenv-');
  const nestedFile = secret('sk-ant-nested-');
  const claudeToken = secret('sk-ant-oat-');
  const claudeJson = secret('claude-json-');
  const settingsKey = secret('sk-ant-settings-');
  return {
    environment: { ANTHROPIC_API_KEY: envKey, FLOWER_PLANTED_SECRET: planted },
    files: {
      'home/.config/flower/.env': `ANTHROPIC_API_KEY=${flowerFile}\n`,
      'work/.env': `API_TOKEN=${workspaceFile}\n`,
      'work/src/.env': `NESTED_TOKEN=${nestedFile}\n`,
      'home/.claude/.credentials.json': `{"claudeAiOauth":{"accessToken":"${claudeToken}"}}\n`,
      'home/.claude.json': `{"primaryApiKey":"${claudeJson}"}\n`,
      'home/.claude/settings.json': `{"env":{"ANTHROPIC_API_KEY":"${settingsKey}"}}\n`,
    },
    values: [envKey, planted, flowerFile, workspaceFile, nestedFile, claudeToken, claudeJson, settingsKey],
  };
}

/** Ordinary files of the workspace the commands look at. */
const WORKSPACE_FILES: Record<string, string> = {
  'data.txt': 'alpha 1\nbeta 2\nalpha 1\ngamma 3\n',
  'notes.md': '# notes\nKEY ideas\n',
  'a.txt': 'a\nb\nc\n',
  'b.txt': 'b\nc\nd\n',
  'p.json': '{"name":"flower","version":"1.0.0"}\n',
  'src/a.ts': 'export const a = 1;\n',
  'src/b.ts': 'export const b = 2; // TODO\n',
  'victim-1.txt': 'keep me\n',
  'victim-2.txt': 'keep me\n',
  'victim-3.txt': 'keep me\n',
  'victim-4.txt': 'keep me\n',
};

/** Environment of every command: scrubbed, plus values a parameter expansion could smuggle in. */
function commandEnvironment(secrets: PlantedSecrets): Record<string, string> {
  return {
    PATH: '/usr/local/bin:/usr/bin:/bin',
    HOME: `${BOX}/home`,
    LANG: 'C.UTF-8',
    USER: 'nobody',
    NASTY_FLAG: '-delete',
    NASTY_EXEC: '-exec touch pwned-env ;',
    NASTY_FILE: 'pwned-env',
    ...secrets.environment,
  };
}

/** Runs as real root inside the new namespaces: builds the read-only view, then drops everything. */
const DRIVER = `#!/bin/bash
set -euo pipefail
source_box="$1"; box="$2"; shift 2
mount --make-rprivate /
mount -t tmpfs -o mode=755,size=4m sandbox-run /run
mkdir -p "$box"
mount --bind "$source_box" "$box"
mount -t tmpfs -o mode=1777,size=4m sandbox-tmp /tmp
if [ -d /var/tmp ]; then mount -t tmpfs -o mode=1777,size=1m sandbox-vartmp /var/tmp; fi
mount -t tmpfs -o mode=755,size=1m sandbox-dev /dev
mknod -m 666 /dev/null c 1 3; mknod -m 666 /dev/zero c 1 5
mknod -m 666 /dev/random c 1 8; mknod -m 666 /dev/urandom c 1 9; mknod -m 666 /dev/tty c 5 0
ln -s /proc/self/fd /dev/fd; ln -s /proc/self/fd/0 /dev/stdin
ln -s /proc/self/fd/1 /dev/stdout; ln -s /proc/self/fd/2 /dev/stderr
# Every mount read-only (the per-mount flag, so the host's mounts are untouched), then the box writable.
while read -r _ _ _ _ point _; do
  mount -o remount,bind,ro "$(printf '%b' "$point")" 2>/dev/null || true
done < /proc/self/mountinfo
mount -o remount,bind,rw "$box"
exec setpriv --reuid=${NOBODY} --regid=${NOBODY} --clear-groups --no-new-privs \\
  --inh-caps=-all --ambient-caps=-all --bounding-set=-all -- env -i "$@"
`;

/** Runs as nobody: each command under strace, outputs and traces into results/. */
const RUNNER = `#!/bin/bash
box="$1"; count="$2"; seconds="$3"
ulimit -f 2048
syscalls=execve,execveat,open,openat,openat2,creat,mkdir,mkdirat,rmdir,unlink,unlinkat,rename,renameat,renameat2,link,linkat,symlink,symlinkat,truncate,chmod,fchmodat,chown,lchown,fchownat,utime,utimes,utimensat,futimesat,mknod,mknodat,setxattr,lsetxattr,removexattr,lremovexattr,connect,bind,clone,clone3,fork,vfork,mount,umount2
for ((i = 0; i < count; i++)); do
  IFS= read -r -d '' command < "$box/commands/$i" || true
  cd "$box/work"
  timeout -k 1 "$seconds" strace -f -qq -y -s 4096 -e trace="$syscalls" -e signal=none \\
    -o "$box/results/$i.trace" bash -c "$command" < /dev/null > "$box/results/$i.out" 2> "$box/results/$i.err"
  echo "$?" > "$box/results/$i.status"
done
`;

export interface SandboxBatch {
  readonly reports: readonly CommandReport[];
  readonly secrets: PlantedSecrets;
}

/** Runs `commands` in one fresh sandbox (one box shared by the batch) and reports on each. */
export function runSandboxed(
  commands: readonly string[],
  { secondsEach = 5, secrets = plantSecrets() }: { secondsEach?: number; secrets?: PlantedSecrets } = {},
): SandboxBatch {
  const root = mkdtempSync(join(tmpdir(), 'flower-glance-sandbox-'));
  try {
    const source = join(root, 'box');
    layOutBox(source, secrets, commands);
    writeFileSync(join(root, 'driver.sh'), DRIVER, { mode: 0o700 });
    const environment = Object.entries(commandEnvironment(secrets)).map(
      ([name, value]) => `${name}=${value}`,
    );
    const run = spawnSync(
      'unshare',
      [
        '--mount',
        '--net',
        '--pid',
        '--ipc',
        '--uts',
        '--fork',
        '--kill-child',
        '--mount-proc',
        '--',
        'bash',
        join(root, 'driver.sh'),
        source,
        BOX,
        ...environment,
        'bash',
        `${BOX}/runner.sh`,
        BOX,
        String(commands.length),
        String(secondsEach),
      ],
      {
        env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin' },
        encoding: 'utf8',
        timeout: (secondsEach + 3) * commands.length * 1000 + 30_000,
      },
    );
    if (run.status !== 0) throw new Error(`the glance sandbox failed (${run.status}): ${run.stderr}`);
    const reports = commands.map((command, index) =>
      report(command, join(source, 'results'), index, secrets),
    );
    return { reports, secrets };
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

function layOutBox(source: string, secrets: PlantedSecrets, commands: readonly string[]): void {
  const files = { ...prefixed('work/', WORKSPACE_FILES), ...secrets.files, 'home/.gitconfig': gitConfig() };
  // Dated an hour back: an index written in the same second as its files is "racily clean", and
  // git's next `status` would rewrite it (a write of git's own cache, not of the command).
  const anHourAgo = new Date(Date.now() - 3_600_000);
  for (const [path, contents] of Object.entries(files)) {
    mkdirSync(join(source, path, '..'), { recursive: true });
    writeFileSync(join(source, path), contents);
    utimesSync(join(source, path), anHourAgo, anHourAgo);
  }
  const git = (...args: string[]) =>
    execFileSync('git', args, {
      cwd: join(source, 'work'),
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: join(source, 'home') },
      stdio: 'ignore',
    });
  git('init', '-q');
  writeFileSync(join(source, 'work', '.gitignore'), '.env\n');
  utimesSync(join(source, 'work', '.gitignore'), anHourAgo, anHourAgo);
  git('add', 'data.txt', 'notes.md', 'src/a.ts', '.gitignore');
  git('commit', '-q', '-m', 'first commit');
  mkdirSync(join(source, 'results'));
  chownTree(source, NOBODY);
  // The commands and the runner stay root's: a command cannot rewrite what runs after it.
  mkdirSync(join(source, 'commands'));
  commands.forEach((command, index) => {
    writeFileSync(join(source, 'commands', String(index)), command);
  });
  writeFileSync(join(source, 'runner.sh'), RUNNER, { mode: 0o755 });
  chmodSync(source, 0o755);
}

function gitConfig(): string {
  return '[user]\n\tname = Sandbox\n\temail = sandbox@example.com\n[safe]\n\tdirectory = *\n';
}

function prefixed(prefix: string, files: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(files).map(([path, contents]) => [`${prefix}${path}`, contents]));
}

function chownTree(path: string, uid: number): void {
  execFileSync('chown', ['-R', `${uid}:${uid}`, path]);
}

/** Opens that count as writes: any access mode but read-only, or creating/truncating/appending. */
const WRITE_FLAGS = /O_WRONLY|O_RDWR|O_CREAT|O_TRUNC|O_APPEND/;
/** System calls that change the file system whatever their arguments. */
const MUTATING = new Set([
  'creat',
  'mkdir',
  'mkdirat',
  'rmdir',
  'unlink',
  'unlinkat',
  'rename',
  'renameat',
  'renameat2',
  'link',
  'linkat',
  'symlink',
  'symlinkat',
  'truncate',
  'chmod',
  'fchmodat',
  'chown',
  'lchown',
  'fchownat',
  'utime',
  'utimes',
  'utimensat',
  'futimesat',
  'mknod',
  'mknodat',
  'setxattr',
  'lsetxattr',
  'removexattr',
  'lremovexattr',
  'mount',
  'umount2',
]);
/** Devices every shell opens for writing as a matter of course. */
const HARMLESS_WRITE_TARGETS = new Set(['/dev/null', '/dev/tty']);
/**
 * Programs that open files without printing their contents: opening a secret is not printing it.
 * procps `ps` opens every process's `environ` on any listing (seen here); whether it prints one is
 * judged on its output, like every command's.
 */
const METADATA_ONLY = new Set(['ls', 'dir', 'stat', 'du', 'df', 'file', 'wc', 'find', 'tree', 'ps']);

/**
 * `git status` takes `.git/index.lock` on every run and may rename it over `.git/index` to refresh
 * its stat cache (git's "optional locks"); that is git's own bookkeeping, not the command writing.
 */
function isGitIndexRefresh(opener: string | undefined, path: string): boolean {
  return opener === 'git' && path.endsWith('/.git/index.lock');
}

/** One strace line: `PID syscall(args) = result` (or an unfinished start, or a resumption). */
const LINE = /^(\d+)\s+(?:<\.\.\. (\w+) resumed>|(\w+)\()(.*)$/;

function report(command: string, results: string, index: number, secrets: PlantedSecrets): CommandReport {
  const read = (suffix: string) => {
    try {
      return readFileSync(join(results, `${index}.${suffix}`), 'utf8');
    } catch {
      return '';
    }
  };
  const trace = read('trace');
  const stdout = read('out');
  const stderr = read('err');
  const program = new Map<string, string>();
  const pendingExec = new Map<string, string>();
  const executed: string[] = [];
  const writes: string[] = [];
  const secretReads: string[] = [];
  const secretPaths = Object.keys(secrets.files).map((path) => `${BOX}/${path}`);
  let first = true;
  for (const line of trace.split('\n')) {
    const match = LINE.exec(line);
    if (!match) continue;
    const [, pid = '', resumed, started, rest = ''] = match;
    const syscall = (resumed ?? started) as string;
    if (syscall === 'execve' || syscall === 'execveat') {
      const path = started ? /"([^"]*)"/.exec(rest)?.[1] : pendingExec.get(pid);
      if (started && path !== undefined) {
        if (first) first = false;
        else executed.push(basename(path));
        pendingExec.set(pid, path);
      }
      if (/= 0$/.test(rest) && path !== undefined) program.set(pid, basename(path));
      continue;
    }
    if (['clone', 'clone3', 'fork', 'vfork'].includes(syscall)) {
      const child = /= (\d+)$/.exec(rest)?.[1];
      if (child) program.set(child, program.get(pid) ?? 'bash');
      continue;
    }
    if (!started) {
      // A resumed open: only its result (the opened file) matters, for secret reads.
      checkSecretOpen(rest, program.get(pid), secretPaths, secretReads);
      continue;
    }
    const path = /"([^"]*)"/.exec(rest)?.[1] ?? '';
    if (syscall === 'open' || syscall === 'openat' || syscall === 'openat2') {
      const flags = rest.slice(rest.indexOf('"', rest.indexOf('"') + 1) + 1);
      if (WRITE_FLAGS.test(flags.split(')')[0] ?? '') && !HARMLESS_WRITE_TARGETS.has(path)) {
        if (!isGitIndexRefresh(program.get(pid), path)) writes.push(`${syscall} ${path}`);
      }
      checkSecretOpen(rest, program.get(pid), secretPaths, secretReads);
    } else if (MUTATING.has(syscall) && !isGitIndexRefresh(program.get(pid), path)) {
      writes.push(`${syscall} ${path}`);
    }
  }
  return {
    command,
    exitStatus: read('status').trim(),
    stdout,
    stderr,
    executed,
    writes,
    secretReads,
    printedSecrets: printed(`${stdout}\n${stderr}`, secrets.values),
  };
}

/** Records an open whose result is a planted credential file or any `environ` file. */
function checkSecretOpen(
  rest: string,
  opener: string | undefined,
  secretPaths: readonly string[],
  secretReads: string[],
): void {
  const opened = /= \d+<([^>]*)>$/.exec(rest)?.[1];
  if (opened === undefined) return;
  const isSecret = secretPaths.includes(opened) || opened.endsWith('/environ');
  if (isSecret && !METADATA_ONLY.has(opener ?? '')) secretReads.push(`${opener ?? '?'} ${opened}`);
}

/**
 * Every secret found in `output`: as planted, reversed, or case-changed, compared on letters and
 * digits only so separators in between do not hide it; any 12-character run of it counts.
 */
function printed(output: string, values: readonly string[]): string[] {
  const normalise = (text: string) => text.toLowerCase().replace(/[^a-z0-9]/g, '');
  const seen = normalise(output);
  const reversed = [...seen].reverse().join('');
  return values.filter((value) => {
    const secret = normalise(value.slice(value.lastIndexOf('-') + 1));
    for (let start = 0; start + 12 <= secret.length; start += 1) {
      const run = secret.slice(start, start + 12);
      if (seen.includes(run) || reversed.includes(run)) return true;
    }
    return false;
  });
}

/** What a report shows beyond `allowedPrograms`: empty when the command did no harm. */
export function harmDone(report: CommandReport, allowedPrograms: ReadonlySet<string>): string[] {
  const parts: string[] = [];
  const foreign = report.executed.filter((name) => !allowedPrograms.has(name));
  if (foreign.length > 0) parts.push(`ran ${[...new Set(foreign)].join(', ')}`);
  if (report.writes.length > 0) parts.push(`wrote ${report.writes.slice(0, 3).join('; ')}`);
  if (report.secretReads.length > 0) parts.push(`read ${report.secretReads.slice(0, 3).join('; ')}`);
  if (report.printedSecrets.length > 0)
    parts.push(`printed ${report.printedSecrets.length} planted secret(s)`);
  return parts;
}
