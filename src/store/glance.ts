/**
 * The glance predicate: is a shell command a quick, read-only look whose result goes stale?
 *
 * One function answers two questions that must always get the same answer:
 * - the coordinator's delegate guard lets the main thread run exactly these commands itself;
 * - the expire layer replaces old results of exactly these commands with a placeholder on resume.
 * If the sets drifted apart, either a stale `git status` would stay in context forever (allowed but
 * never expired) or the coordinator would start a subagent for a single `ls` (expired but never
 * allowed). Adding a tool here says both things at once.
 *
 * The decision rests on a real reading of the command line, not on patterns over its text: an
 * outside campaign got 27 of 108 commands past the earlier pattern-based version (brace expansion
 * producing `-delete`, `$"-exec"`, `uniq - FILE`, `>/dev/null'x'`, tool options that write or run,
 * looks that print the environment or a credential file). The parts live in `glance/`:
 * - `command-line.ts` reads the command the way bash will (quoting, expansions, operators,
 *   redirections) and refuses everything outside the small subset a glance needs;
 * - `tools.ts` is the allow list: each tool with the options and operands known to be safe,
 *   with `git.ts`, `find.ts`, `processes.ts` and `programs.ts` (sed, awk, jq) for the larger ones;
 * - `paths.ts` keeps credential files, process environments, secrets mounts, flower's run
 *   directory and gawk's network files out of any file operand.
 *
 * Since issue 19 the coordinator's glances also run in flower's read-only bubblewrap (no writes,
 * no network, the credential stores hidden): that wall holds whatever this predicate gets wrong.
 * The predicate still refuses on its own everything that wall exists for, and it stays the context
 * rule (what expires on resume).
 *
 * Invariants (security first, because the guard trusts this answer):
 * - Anything not understood is not a glance: every expansion other than plain words (brace,
 *   parameter, command and process substitution, arithmetic, `$'…'`, `$"…"`, history, tilde where
 *   bash would expand it) is refused, and a pattern (`*`, `?`, `[`) only stands where a tool's table
 *   says a file name may, starting with a literal character.
 * - Every command separated by `&&`, `||`, `;`, `|` or a newline must be a glance on its own.
 * - `$(`, a backtick, `<(` or `>(` anywhere, even inside single quotes, is refused as well: a cheap
 *   belt on top of the parse that can only err towards "no".
 * - Redirections are judged on the parsed target: output to `/dev/null`, or `>&1`/`>&2`. Nothing
 *   else, and no input redirection (a file read that way would escape the credential rules).
 * - Printing secrets is not a glance: the environment (`env`, `printenv`, `set`, ps's `e`, awk's
 *   `ENVIRON`, jq's `env`, `/proc/*\/environ`), flower's and Claude Code's credential files and the
 *   other usual stores (dotenv files under every name, private keys, secrets mounts, the user-level
 *   stores of `config/credential-stores.ts`), the run directory's transcripts (`runs/`), and git's
 *   configuration and remote URLs (`git config`, `git remote -v`: tokens live there).
 * - Nothing that connects elsewhere (gawk's `/inet/…` files, docker's and kubectl's remote
 *   options, `git remote show`) and nothing that never ends (`docker stats` without
 *   `--no-stream`, `tail -f`, `top`, `watch`, `… logs -f`).
 * - Tools and options are looked up by exact name (`/bin/ls`, `LS`, `--out` for `--output` are
 *   unknown). The user's own shell setup (aliases, functions, PATH, git and tool configuration)
 *   is trusted; the predicate judges the command, not the machine.
 */
import { parseCommandLine, type Redirection, type SimpleCommand } from './glance/command-line.js';
import { glanceTool } from './glance/tools.js';

/** Decide whether `command` is a read-only glance whose result goes stale (see module header). */
export function isEphemeral(command: string): boolean {
  if (SUBSTITUTION.test(command)) return false;
  const commands = parseCommandLine(command);
  return commands?.every(isGlance) ?? false;
}

/** `$(`, backtick, `<(` or `>(` anywhere: something else would run, were it unquoted. */
const SUBSTITUTION = /\$\(|`|<\(|>\(/;

function isGlance({ words, redirections }: SimpleCommand): boolean {
  if (!redirections.every(isHarmless)) return false;
  const [name, ...args] = words;
  if (name === undefined || name.globAt.length > 0) return false;
  const check = glanceTool(name.text);
  return check?.(args) ?? false;
}

/** Output thrown away (`>/dev/null`, `2>>/dev/null`, `&>/dev/null`) or merged (`2>&1`, `>&2`). */
function isHarmless({ operator, target }: Redirection): boolean {
  if (target.globAt.length > 0) return false;
  if (operator === '>&') return !target.quoted && (target.text === '1' || target.text === '2');
  return target.text === '/dev/null';
}
