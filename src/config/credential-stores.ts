/**
 * The credential stores: every place on the machine that holds a secret an agent's command, or a
 * check, has no business reading. One list, used by every wall that hides files (the SDK's sandbox
 * for the agents' Bash, flower's own bubblewrap for the coordinator's glances and for checks).
 *
 * Why a list of places and not a predicate over command text: the glance predicate guessed from a
 * command's words which files it would open, and an outside corpus still found holes in it
 * (`git diff ~/.config /tmp/empty` printed flower's key). A path hidden by the operating system is
 * hidden from every program, however the command is spelled.
 *
 * Invariants:
 * - flower's whole `.env` lookup chain is on the list ($FLOWER_ENV, the project's `.env`, the user's
 *   file `flower setup` writes, a source checkout's), with Claude Code's settings files (their
 *   `env` block is on that chain) and the agent's own transcripts (its config directory's
 *   `projects/`), and the task's run directory (`runs/`: every transcript, the store's database).
 * - The usual user-level stores follow (SSH, cloud CLIs, git and registry credentials, netrc, shell
 *   histories, password managers, secrets mounts); `FLOWER_SANDBOX_HIDE` adds more (paths joined by
 *   the platform's delimiter, `~/` expanded).
 * - Absolute paths only, each once, in a stable order. Whether a path exists is the wall's business
 *   (a wall that mounts over paths can only hide existing ones; one that matches names hides any).
 * - Pure: the same context gives the same list.
 */
import { delimiter, isAbsolute, join, resolve } from 'node:path';
import { lookupSources } from './env-chain.js';
import { type EnvMap, homeDirectory, userConfigDir } from './paths.js';

/** Where the list is worked out from. */
export interface CredentialContext {
  env: EnvMap;
  /** The task's workspace (a project `.env` there is on the chain). */
  workspace: string;
  /** Where flower was started (its `.env` is the chain's project file); default the workspace. */
  cwd?: string;
  /** The task's run directory (`runs/`). */
  runDir?: string;
  /** flower's package root, when it runs from a source checkout (its `.env` is on the chain). */
  sourceCheckout?: string;
}

/** The user-level stores, relative to the home directory. */
export const HOME_CREDENTIAL_STORES: readonly string[] = [
  '.ssh',
  '.gnupg',
  '.aws',
  '.azure',
  '.config/gcloud',
  '.kube',
  '.docker/config.json',
  '.git-credentials',
  '.config/git/credentials',
  '.netrc',
  '.npmrc',
  '.yarnrc.yml',
  '.pypirc',
  '.cargo/credentials',
  '.cargo/credentials.toml',
  '.gem/credentials',
  '.config/gh',
  '.config/hub',
  '.vault-token',
  '.terraform.d/credentials.tfrc.json',
  '.password-store',
  '.local/share/keyrings',
  '.bash_history',
  '.zsh_history',
  '.local/share/fish/fish_history',
  '.python_history',
  '.node_repl_history',
  '.psql_history',
  '.mysql_history',
  '.sqlite_history',
  '.lesshst',
  '.viminfo',
];

/** Machine-wide secrets mounts (Docker and Kubernetes secrets, the service-account token). */
export const SYSTEM_CREDENTIAL_STORES: readonly string[] = ['/run/secrets', '/var/run/secrets'];

/** The variable that extends the list. */
export const EXTRA_STORES_VARIABLE = 'FLOWER_SANDBOX_HIDE';

/** Every credential store for this task, absolute, each once. */
export function credentialStores(context: CredentialContext): string[] {
  const { env } = context;
  const home = homeDirectory(env);
  const chain = lookupSources({
    env,
    cwd: context.cwd ?? context.workspace,
    home,
    packageRoot: context.sourceCheckout ?? context.workspace,
    // Stryker disable next-line ConditionalExpression: without a checkout the package root is the workspace, whose .env is listed below anyway (only its place in the list moves)
    sourceCheckout: context.sourceCheckout !== undefined,
  }).flatMap((source) => (source.path === undefined ? [] : [source.path]));
  const claudeConfig = env.CLAUDE_CONFIG_DIR || join(home, '.claude');
  const paths = [
    ...chain,
    join(context.workspace, '.env'),
    userConfigDir(env, home),
    join(claudeConfig, 'projects'),
    join(claudeConfig, 'settings.json'),
    join(claudeConfig, 'settings.local.json'),
    join(claudeConfig, '.credentials.json'),
    join(home, '.claude.json'),
    ...(context.runDir === undefined ? [] : [context.runDir]),
    ...HOME_CREDENTIAL_STORES.map((relative) => join(home, relative)),
    ...SYSTEM_CREDENTIAL_STORES,
    ...extraStores(env, home, context.workspace),
  ];
  return [...new Set(paths.map((path) => resolve(path)))];
}

/** `FLOWER_SANDBOX_HIDE`'s paths: `~/` from the home directory, relative ones from the workspace. */
export function extraStores(env: EnvMap, home: string, workspace: string): string[] {
  const value = env[EXTRA_STORES_VARIABLE];
  if (!value) return [];
  return value
    .split(delimiter)
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '')
    .map((entry) =>
      entry === '~' || entry.startsWith('~/')
        ? join(home, entry.slice(1))
        : isAbsolute(entry)
          ? entry
          : resolve(workspace, entry),
    );
}
