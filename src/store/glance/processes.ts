/**
 * Looking at processes, sockets and services: ps, pgrep, lsof, ss, netstat, systemctl, docker
 * and kubectl, each limited to the forms that only report.
 *
 * Invariants:
 * - No form shows another process's environment: ps's BSD `e` is refused, and so is every format
 *   key outside an allow list; pgrep's `--env` (which would let a look probe environments value by
 *   value) is not listed.
 * - Nothing that acts: ss `-K` (kill sockets), `-D FILE` (dump to a file) and `-N` (enter a network
 *   namespace); lsof `-D` (write the device cache), `+m` and repeat modes; systemctl only `status`;
 *   docker only `ps`, `images`, `stats --no-stream`; kubectl only `get`, never of secrets, and only
 *   with `-o wide`/`-o name` (full manifests carry environment values).
 * - Nothing that never ends: `docker stats` needs `--no-stream`; lsof's repeat modes, ss `-E`
 *   (events), netstat `-c` (continuous), `kubectl get -w`, `docker logs -f`, `kubectl logs -f`,
 *   `journalctl -f`, `top` and `watch` are not listed.
 * - No form contacts another machine: systemctl `-H`, kubectl `--server`/`--kubeconfig` and docker's
 *   global options are not listed.
 */
import type { Word } from './command-line.js';
import { type ArgumentCheck, has, oneOf, TEXT, textWhere, tool } from './options.js';

/** ps format keys that show nothing beyond the process table (no environment). */
const PS_KEYS = new Set(
  (
    'pid ppid pgid pgrp sid sess tty tt tname user uid euser euid ruser ruid group gid egroup rgroup ' +
    'comm args cmd command ucmd ucomm fname etime etimes time cputime bsdtime %cpu pcpu %mem pmem rss ' +
    'rsz vsz vsize sz stat s state start start_time lstart bsdstart nlwp lwp spid tid thcount psr pri ' +
    'priority ni nice wchan f flags c cls class policy sched label'
  ).split(' '),
);

/**
 * A ps format (`pid,user,cmd`, `pid=ID`). Every comma- or blank-separated item must start with a
 * safe key, even text that ps would take as header after an `=` — which only errs towards "no".
 */
function psFormatIsSafe(format: string): boolean {
  return format
    .split(/[,\s]+/)
    .filter((item) => item !== '')
    .every((item) => PS_KEYS.has(item.split('=', 1)[0] as string));
}

/** BSD-style ps letters (no dash) that only choose processes or columns; `e` is not among them. */
const PS_BSD_FLAGS = new Set([...'auxfwjlrvschnSTXHmLV']);
/** Letters that take a value (the rest of the word, or the next word), BSD and UNIX style. */
const PS_BSD_VALUES = new Set([...'oOpqtUk']);
const PS_UNIX_FLAGS = new Set([...'eAadNfFljyHwcLTmMZPV']);
const PS_UNIX_VALUES = new Set([...'puUgGCtsqoO']);
const PS_LONG_FLAGS = new Set(['no-headers', 'headers', 'forest', 'cumulative', 'deselect', 'context']);
const PS_LONG_VALUES = new Set(
  'pid ppid user User group Group sid tty sort format cols columns width rows lines quick-pid'.split(' '),
);

/**
 * procps ps, which mixes three option styles: `--long[=value]`, UNIX `-eo FORMAT` clusters, and
 * BSD words (`aux`); a plain number is a pid. Format values must list only safe keys.
 */
export const psReports: ArgumentCheck = (args: readonly Word[]) => {
  for (let index = 0; index < args.length; index += 1) {
    const word = args[index] as Word;
    const text = word.text;
    if (word.globAt.length > 0) return false;
    if (text.startsWith('--')) {
      const equals = text.indexOf('=');
      const name = equals < 0 ? text.slice(2) : text.slice(2, equals);
      if (PS_LONG_FLAGS.has(name) && equals < 0) continue;
      if (!PS_LONG_VALUES.has(name)) return false;
      const value = equals < 0 ? args[++index]?.text : text.slice(equals + 1);
      if (value === undefined || (name === 'format' && !psFormatIsSafe(value))) return false;
      continue;
    }
    if (/^\d+(,\d+)*$/.test(text)) continue; // a pid list
    const unix = text.startsWith('-');
    const [flags, values] = unix ? [PS_UNIX_FLAGS, PS_UNIX_VALUES] : [PS_BSD_FLAGS, PS_BSD_VALUES];
    if (text === '-' || text === '') return false;
    for (let letter = unix ? 1 : 0; letter < text.length; letter += 1) {
      const option = text[letter] as string;
      if (flags.has(option)) continue;
      if (!values.has(option)) return false;
      const value = text.slice(letter + 1) || args[++index]?.text;
      if (value === undefined) return false;
      if ((option === 'o' || option === 'O') && !psFormatIsSafe(value)) return false;
      break;
    }
  }
  return true;
};

export const pgrepReports = tool({
  flags: 'lacfinovwxA',
  values: { d: TEXT, g: TEXT, G: TEXT, P: TEXT, s: TEXT, t: TEXT, u: TEXT, U: TEXT, r: TEXT, F: TEXT },
  long: [
    'list-name',
    'list-full',
    'count',
    'full',
    'ignore-case',
    'newest',
    'oldest',
    'inverse',
    'lightweight',
    'exact',
    'ignore-ancestors',
  ],
  longValues: {
    delimiter: TEXT,
    pgroup: TEXT,
    group: TEXT,
    parent: TEXT,
    session: TEXT,
    terminal: TEXT,
    euid: TEXT,
    uid: TEXT,
    runstates: TEXT,
    pidfile: TEXT,
  },
  operands: { fixed: [TEXT], max: 1 },
});

const LSOF_FLAGS = new Set([...'abhlnNPRtUwVXE']);
const LSOF_VALUES = new Set([...'pucgdsF']);

/**
 * lsof selections and output switches; operands are files or addresses it only looks up. `+D`
 * and `+d` take a directory; every other `+` form (`+m` writes a mount supplement file, `+r`
 * repeats forever) is refused.
 */
export const lsofReports: ArgumentCheck = (args) => {
  for (let index = 0; index < args.length; index += 1) {
    const word = args[index] as Word;
    const text = word.text;
    if (word.globAt.length > 0) return false;
    if (text === '+D' || text === '+d') {
      if (!args[++index]) return false;
      continue;
    }
    if (text.startsWith('+')) return false;
    if (!text.startsWith('-')) continue; // a file name or an address
    if (text.startsWith('-i')) continue; // `-i`, `-i:3000`, `-iTCP@host`; a separate address is an operand
    for (let letter = 1; letter < text.length; letter += 1) {
      const option = text[letter] as string;
      if (LSOF_FLAGS.has(option)) continue;
      if (!LSOF_VALUES.has(option)) return false;
      if (letter === text.length - 1 && !args[++index]) return false;
      break;
    }
    if (text.length === 1) return false;
  }
  return true;
};

export const ssReports = tool({
  flags: 'altuxwdSM046nrpemiosOHZzbT',
  values: { f: TEXT, A: TEXT },
  long: [
    'all',
    'listening',
    'tcp',
    'udp',
    'unix',
    'raw',
    'dccp',
    'sctp',
    'mptcp',
    'packet',
    'ipv4',
    'ipv6',
    'numeric',
    'resolve',
    'processes',
    'extended',
    'memory',
    'options',
    'info',
    'summary',
    'oneline',
    'no-header',
    'context',
    'contexts',
    'bpf',
    'threads',
  ],
  longValues: { family: TEXT, query: TEXT },
  operands: { rest: TEXT }, // the filter: `state listening`, `sport = :80`
});

export const netstatReports = tool({
  flags: 'aAeFgilMnNoprstuvwWxZ46C',
  long: [
    'all',
    'listening',
    'numeric',
    'numeric-hosts',
    'numeric-ports',
    'numeric-users',
    'tcp',
    'udp',
    'raw',
    'unix',
    'program',
    'route',
    'interfaces',
    'statistics',
    'extend',
    'timers',
    'wide',
    'verbose',
    'groups',
    'masquerade',
    'symbolic',
  ],
});

/** `systemctl status [UNIT…]` with display options only. */
export const systemctlReports: ArgumentCheck = (args) => {
  const check = tool({
    flags: 'laq',
    values: { n: TEXT, o: TEXT },
    long: ['no-pager', 'full', 'all', 'user', 'system', 'quiet', 'no-legend'],
    longValues: { lines: TEXT, output: TEXT },
    operands: { fixed: [oneOf('status')], rest: TEXT, min: 1 },
  });
  return check(args);
};

const DOCKER: Record<string, ArgumentCheck> = {
  ps: tool({
    flags: 'alqs',
    values: { f: TEXT, n: TEXT },
    long: ['all', 'latest', 'no-trunc', 'quiet', 'size'],
    longValues: { filter: TEXT, format: TEXT, last: TEXT },
  }),
  images: tool({
    flags: 'aq',
    values: { f: TEXT },
    long: ['all', 'digests', 'no-trunc', 'quiet'],
    longValues: { filter: TEXT, format: TEXT },
    operands: { fixed: [TEXT], max: 1 },
  }),
  // Without `--no-stream` it redraws until killed.
  stats: tool({
    flags: 'a',
    long: ['all', 'no-stream', 'no-trunc'],
    longValues: { format: TEXT },
    operands: { rest: TEXT },
    also: (parsed) => has(parsed, '--no-stream'),
  }),
};

export const dockerReports: ArgumentCheck = (args) => {
  const [subcommand, ...rest] = args;
  if (!subcommand || subcommand.globAt.length > 0 || !Object.hasOwn(DOCKER, subcommand.text)) return false;
  return (DOCKER[subcommand.text] as ArgumentCheck)(rest);
};

/** A kubectl resource list (`pods`, `svc,deploy`, `pod/web-1`) that names no secrets. */
const KUBE_RESOURCES = textWhere((text) =>
  text.split(/[,/]/).every((part) => part !== '' && !/^secrets?(\.|$)/i.test(part)),
);

const kubectlGet = tool({
  flags: 'A',
  values: { n: TEXT, l: TEXT, o: oneOf('wide', 'name'), L: TEXT },
  long: ['all-namespaces', 'show-labels', 'no-headers', 'show-kind', 'ignore-not-found'],
  longValues: {
    namespace: TEXT,
    selector: TEXT,
    'field-selector': TEXT,
    'sort-by': TEXT,
    'label-columns': TEXT,
    output: oneOf('wide', 'name'),
    'chunk-size': TEXT,
  },
  operands: { rest: KUBE_RESOURCES, min: 1 },
});

export const kubectlReports: ArgumentCheck = (args) => args[0]?.text === 'get' && kubectlGet(args.slice(1));
