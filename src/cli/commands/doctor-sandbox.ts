/**
 * The "Sandbox:" section of `flower doctor`: whether the walls can go up here (and, when not, what
 * is missing and the command that installs it), where the workers' commands may connect, and how
 * many credential stores the walls hide (every one with `-v`).
 *
 * Invariants:
 * - A sandbox that cannot run, or a `FLOWER_NETWORK` that does not parse, is a warning in doctor's
 *   summary, and doctor exits 1 for it (doctor-action.ts): both stop an unattended run, and doctor
 *   is where one learns why.
 * - The list shown is the one the runtime hides (config/credential-stores.ts) for this workspace,
 *   never a copy of it.
 * - Pure apart from `exists`: availability is passed in, so the section can be tested anywhere.
 */
import { existsSync } from 'node:fs';
import { credentialStores, EXTRA_STORES_VARIABLE } from '../../config/credential-stores.js';
import { type EnvMap, homeDirectory, isSourceCheckout } from '../../config/paths.js';
import type { SandboxAvailability } from '../../runtime/sandbox/availability.js';
import { describeReach, NETWORK_VARIABLE } from '../../runtime/sandbox/policy.js';
import { packageRoot } from '../../version.js';
import { resolveSandboxPolicy } from '../command-line/sandbox-flags.js';
import { pc } from '../terminal/colors.js';
import { oneLine } from '../terminal/terminal-text.js';

export interface SandboxSectionInput {
  readonly env: EnvMap;
  readonly workspace: string;
  readonly runDir: string;
  readonly availability: SandboxAvailability;
  /** `-v`: list every credential store. */
  readonly verbose: boolean;
  /** Whether a path exists (to mark the stores present on this machine); default `existsSync`. */
  readonly exists?: (path: string) => boolean;
}

export interface SandboxSection {
  readonly lines: string[];
  /** For doctor's warnings summary. */
  readonly warnings: string[];
}

/** `~/x` for paths under the home directory. */
function short(path: string, home: string): string {
  return home && path.startsWith(`${home}/`) ? `~${path.slice(home.length)}` : path;
}

export function sandboxSection(input: SandboxSectionInput): SandboxSection {
  const { env, availability } = input;
  const lines: string[] = [];
  const warnings: string[] = [];
  if (availability.available) {
    lines.push(`${pc.bold('Sandbox:')} ${pc.green('available')} (${availability.engine})`);
  } else {
    lines.push(`${pc.bold('Sandbox:')} ${pc.yellow(`cannot run here: ${availability.problem}`)}`);
    if (availability.fix) lines.push(`  fix: ${availability.fix}`);
    lines.push(
      pc.dim('  until then go, run and once ask on a terminal and refuse unattended; --no-sandbox skips it'),
    );
    warnings.push(
      `the sandbox cannot run here: ${availability.problem}${availability.fix ? `; fix: ${availability.fix}` : ''}`,
    );
  }

  const setting = env[NETWORK_VARIABLE];
  const from =
    setting === undefined || setting.trim() === ''
      ? `default; set ${NETWORK_VARIABLE} or --network to change it`
      : `from ${NETWORK_VARIABLE}; --network overrides it per run`;
  try {
    const policy = resolveSandboxPolicy({}, env);
    lines.push(`  workers' network: ${describeReach(policy.workerNetwork)} ${pc.dim(`(${from})`)}`);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    lines.push(`  workers' network: ${pc.yellow(oneLine(reason))}`);
    warnings.push(`${oneLine(reason)} Runs refuse to start until it is fixed or --network is given.`);
  }

  const stores = credentialStores({
    env,
    workspace: input.workspace,
    runDir: input.runDir,
    ...(isSourceCheckout(packageRoot) ? { sourceCheckout: packageRoot } : {}),
  });
  const exists = input.exists ?? existsSync;
  const present = stores.filter((path) => exists(path)).length;
  const extended = env[EXTRA_STORES_VARIABLE] ? `, extended by ${EXTRA_STORES_VARIABLE}` : '';
  lines.push(
    `  credential stores hidden: ${stores.length} places, ${present} present here${extended} ` +
      pc.dim(`(add more with ${EXTRA_STORES_VARIABLE}${input.verbose ? '' : '; -v lists them'})`),
  );
  if (input.verbose) {
    const home = homeDirectory(env);
    for (const path of stores)
      lines.push(`    ${exists(path) ? oneLine(short(path, home)) : pc.dim(oneLine(short(path, home)))}`);
  }
  return { lines, warnings };
}
