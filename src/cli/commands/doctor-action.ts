/**
 * What `flower doctor` does (its flags live in `doctor.ts`): what configuration flower actually
 * sees, where each value came from, and what in the `.env` files probably does not mean what it says.
 *
 * Shows every place of the lookup chain and its state, each known key with its (masked) value and
 * source, every pitfall in every file read, a credential exported in the shell that hides the one
 * `flower setup` saved, whether the endpoint answers a TCP handshake, where task state is kept
 * (FLOWER_STORE_URL checked read-only), whether the sandbox can run here and what it hides and
 * lets through (doctor-sandbox.ts), and with `--probe` the credential probe (one small real
 * request).
 *
 * Everything from a file is masked where secret and sanitised like model text before it is shown
 * (a `.env` can hold random bytes or escape sequences, see `terminal/shown-text.ts`).
 *
 * Exit code (cli/command-line/exit-errors.ts): 0 when a run could start as configured; 1
 * (`EXIT.failed`) when something shown would stop one, named on the last line: no usable credential
 * (missing, or a `$VARIABLE` written where the key belongs), an endpoint that does not answer or
 * speaks another protocol, a task store that cannot be used, a sandbox that cannot run or a
 * `FLOWER_NETWORK` that does not parse (runs refuse both unattended), or, with `--probe`, a probe
 * that did not pass. Warnings that only explain (a `.env` pitfall, an ignored `FLOWER_WINDOW`, an
 * exported key that hides the saved one) do not fail it: the run goes on with what is shown.
 */

import { hiddenSavedCredential } from '../../config/credential-shadow.js';
import {
  activeCredentialKey,
  checkCredentials,
  DEFAULT_BASE_URL,
  unusableCredential,
} from '../../config/credentials.js';
import {
  chainWarnings,
  type EnvChainReport,
  type EnvSetting,
  type EnvSourceReport,
  KNOWN_KEYS,
  loadEnvironment,
  processChainContext,
  settingLocation,
  sourceOf,
} from '../../config/env-chain.js';
import { type EnvMap, userEnvPath } from '../../config/paths.js';
import { type ProbeVerdict, probeCredentials, probeDisabled } from '../../config/probe.js';
import { checkProtocol, checkReachable, protocolMistakeText } from '../../config/reachability.js';
import { maskStoreUrl } from '../../config/store-url.js';
import { readEnvFileValues } from '../../config/user-env-file.js';
import { resolveWindow, type WindowSource, windowSettingProblem } from '../../config/window.js';
import { maskSecrets, rememberSecrets } from '../../output/secrets.js';
import { writeOut } from '../../output/sink.js';
import { sandboxAvailability } from '../../runtime/sandbox/availability.js';
import { pc } from '../terminal/colors.js';
import { shownSetting } from '../terminal/shown-text.js';
import { neutralise, oneLine } from '../terminal/terminal-text.js';
import { sandboxSection } from './doctor-sandbox.js';
import { checkStoreSetting } from './doctor-store.js';

/** flower's own switches, shown when set so their effect is never a mystery. */
const FLOWER_KEYS = [
  'FLOWER_ENV',
  'FLOWER_WINDOW',
  'FLOWER_NO_PROBE',
  'FLOWER_NO_UPDATE',
  'FLOWER_NETWORK',
  'FLOWER_SANDBOX_HIDE',
] as const;

export interface DoctorFlags {
  probe?: boolean;
  /** The global `--store URL`: checked instead of FLOWER_STORE_URL. */
  store?: string;
  /** The global `-w`/`-r` (the run directory is one of the hidden stores) and `-v`. */
  workspace: string;
  runDir: string;
  verbose?: boolean;
}

function sourceState(report: EnvSourceReport): string {
  switch (report.status) {
    case 'read':
      return report.source.kind === 'process'
        ? ''
        : `read, ${report.keyCount} key${report.keyCount === 1 ? '' : 's'}`;
    case 'missing':
      return pc.dim('not found');
    case 'not-set':
      return pc.dim('not set');
    case 'duplicate':
      return pc.dim('same file as above, skipped');
    case 'invalid':
      return pc.yellow('not valid JSON, ignored');
    case 'unreadable':
      return pc.yellow('unreadable, ignored');
  }
}

function settingLine(key: string, setting: EnvSetting | undefined): string {
  const name = oneLine(key).padEnd(32);
  if (setting === undefined) {
    return key === 'ANTHROPIC_BASE_URL'
      ? `  ${name}${DEFAULT_BASE_URL} ${pc.dim('(default)')}`
      : `  ${name}${pc.dim('(not set)')}`;
  }
  const shown = setting.value === '' ? pc.yellow('(empty)') : shownSetting(key, setting.value);
  return `  ${name}${shown}  ${pc.dim(`from ${oneLine(settingLocation(setting))}`)}`;
}

/**
 * Masks every credential value the chain knows of, shadowed ones included: a pitfall warning can
 * quote a line whose value lost to another source.
 */
function chainMask(report: EnvChainReport, env: EnvMap): (text: string) => string {
  const values: Record<string, string | undefined> = { ...env };
  for (const [key, setting] of report.winners) values[`${key}#winner`] = setting.value;
  for (const shadow of report.shadowWarnings)
    shadow.hidden.forEach((setting, index) => {
      values[`${shadow.key}#hidden${index}`] = setting.value;
    });
  rememberSecrets(values);
  return maskSecrets;
}

const WINDOW_SOURCE_TEXT: Record<WindowSource, string> = {
  FLOWER_WINDOW: 'from FLOWER_WINDOW',
  calibration: 'from the calibration file (smallest overflow seen)',
  'model-name': 'guessed from the model name',
};

export async function runDoctor(flags: DoctorFlags): Promise<void> {
  const out = (line = '') => writeOut(`${line}\n`);
  const report = loadEnvironment();
  const env: EnvMap = process.env;

  out(pc.bold('Where flower looks (the first value found for a key wins):'));
  report.sources.forEach((source, index) => {
    const name = source.source.path ? `${source.source.label}: ${source.source.path}` : source.source.label;
    out(`  ${index + 1}. ${oneLine(name)}  ${sourceState(source)}`.trimEnd());
  });

  out();
  out(pc.bold('Settings:'));
  for (const key of KNOWN_KEYS) out(settingLine(key, sourceOf(report, key, env)));
  for (const key of FLOWER_KEYS) {
    const setting = sourceOf(report, key, env);
    if (setting !== undefined) out(settingLine(key, setting));
  }
  const shown = new Set<string>([...KNOWN_KEYS, ...FLOWER_KEYS]);
  for (const [key, setting] of report.winners) {
    if (!shown.has(key) && setting.source.kind !== 'process') out(settingLine(key, setting));
  }
  const window = resolveWindow({ env });
  out(`  ${'context window'.padEnd(32)}${window.window}  ${pc.dim(WINDOW_SOURCE_TEXT[window.source])}`);

  out();
  const hidden = hiddenSavedCredential(report, env, readEnvFileValues(userEnvPath(env)), userEnvPath(env));
  const sandbox = sandboxSection({
    env,
    workspace: flags.workspace,
    runDir: flags.runDir,
    availability: sandboxAvailability(env),
    verbose: flags.verbose ?? false,
  });
  const windowSetting = sourceOf(report, 'FLOWER_WINDOW', env);
  const windowProblem = windowSettingProblem(windowSetting?.value);
  const warnings = [
    ...chainWarnings(report),
    ...(windowSetting && windowProblem ? [`${settingLocation(windowSetting)}: ${windowProblem}`] : []),
    ...(hidden ? [hidden] : []),
    ...sandbox.warnings,
  ];
  out(pc.bold(`Warnings: ${warnings.length === 0 ? 'none' : warnings.length}`));
  const mask = chainMask(report, env);
  for (const warning of warnings) out(pc.yellow(`  ! ${oneLine(mask(warning))}`));

  out();
  const reach = await checkReachable(env.ANTHROPIC_BASE_URL);
  const endpoint = reach.host === '' ? 'ANTHROPIC_BASE_URL' : oneLine(`${reach.host}:${reach.port}`);
  // Something listening is not yet a gateway: https on a plain-HTTP port, or another server's port,
  // passes TCP and fails every request (issue 21). Said as the run's stop says it (fail-fast.ts).
  // One request line without credentials; not under FLOWER_NO_PROBE (no live request at all), nor
  // with --probe, whose own request finds the same mistake and says it on the Probe line.
  const mistake =
    reach.reachable && env.ANTHROPIC_BASE_URL && !flags.probe && !probeDisabled(env)
      ? protocolMistakeText(env.ANTHROPIC_BASE_URL, await checkProtocol(env.ANTHROPIC_BASE_URL))
      : undefined;
  out(
    mistake !== undefined
      ? `${pc.bold('Endpoint:')} ${endpoint} reachable (TCP), ${pc.yellow(`but ${oneLine(mistake)} — fix ANTHROPIC_BASE_URL`)}`
      : reach.reachable
        ? `${pc.bold('Endpoint:')} ${endpoint} reachable (TCP, ${reach.elapsedMs} ms)`
        : `${pc.bold('Endpoint:')} ${pc.yellow(`${endpoint} unreachable: ${oneLine(reach.reason ?? '')}`)}`,
  );

  const store = await checkStoreSetting(flags.store ?? env.FLOWER_STORE_URL);
  // The flag wins over FLOWER_STORE_URL (cli/interaction/task-store.ts): say which was checked.
  const given = flags.store === undefined ? '' : `--store ${maskStoreUrl(flags.store)}: `;
  out(`${pc.bold('Store:')} ${given}${store.ok ? store.line : pc.red(store.line)}`);
  for (const line of sandbox.lines) out(line);

  const credential = activeCredentialKey(env);
  const missing = checkCredentials(env, processChainContext(), report);
  const unusable = missing === undefined ? unusableCredential(env) : undefined;
  if (unusable !== undefined && credential !== undefined) {
    const setting = sourceOf(report, credential, env);
    out(
      `${pc.bold('Credentials:')} ${pc.red('not usable')} (${credential}${setting ? ` from ${oneLine(settingLocation(setting))}` : ''})`,
    );
    out(`  ${oneLine(unusable)}`);
  } else if (missing === undefined && credential !== undefined) {
    const setting = sourceOf(report, credential, env);
    out(
      `${pc.bold('Credentials:')} ${pc.green('usable')} (${credential}${setting ? ` from ${oneLine(settingLocation(setting))}` : ''})`,
    );
  } else {
    out(`${pc.bold('Credentials:')} ${pc.red('missing')}`);
    for (const line of neutralise(missing ?? '').split('\n')) out(`  ${line}`);
  }
  if (!flags.probe)
    out(`${pc.bold('Probe:')} ${pc.dim('not run (add --probe to send one small real request)')}`);

  const usable = missing === undefined && unusable === undefined;
  const probePassed = flags.probe ? await reportProbe(env, usable, out) : true;
  const stops = [
    ...(usable ? [] : ['no usable credentials']),
    ...(reach.reachable ? [] : ['the endpoint does not answer']),
    ...(mistake === undefined ? [] : ['the endpoint does not speak the API at that URL']),
    ...(store.ok ? [] : ['the task store is not usable']),
    ...(sandbox.warnings.length === 0 ? [] : ['the sandbox settings stop unattended runs']),
    ...(probePassed ? [] : ['the credential probe did not pass']),
  ];
  // One line naming everything a run would stop for; main prints it and exits 1 (EXIT.failed).
  if (stops.length > 0) throw new Error(`${stops.join('; ')} (see above)`);
}

export const PROBE_ADVICE: Record<ProbeVerdict, string> = {
  ok: pc.green('the credentials, endpoint and model work'),
  auth: pc.red('credentials rejected; run `flower setup` to enter them again'),
  config: pc.red('wrong endpoint or model name; check ANTHROPIC_BASE_URL (without /v1) and the model'),
  net: pc.yellow('the endpoint did not answer properly; a network or server problem, not your settings'),
};

/** Runs the probe when it can and may; true unless it ran and did not pass. */
async function reportProbe(
  env: EnvMap,
  haveCredentials: boolean,
  out: (line?: string) => void,
): Promise<boolean> {
  if (probeDisabled(env)) {
    out(`${pc.bold('Probe:')} ${pc.dim('skipped: FLOWER_NO_PROBE is set')}`);
    return true;
  }
  if (!haveCredentials) {
    out(`${pc.bold('Probe:')} ${pc.dim('skipped: no credentials to try')}`);
    return true;
  }
  const probe = await probeCredentials(env);
  out(`${pc.bold('Probe:')} ${probe.verdict}: ${PROBE_ADVICE[probe.verdict]}`);
  out(`  ${oneLine(`POST ${probe.url} (model ${probe.model}) → ${probe.detail}`)}`);
  return probe.verdict === 'ok';
}
