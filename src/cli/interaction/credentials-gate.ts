/**
 * The credential gate in front of `go` and `run`: nothing starts without a usable credential, and
 * on a terminal a missing or refused one is fixed on the spot instead of failing an hour later.
 *
 * Invariants:
 * - Off a terminal nothing is asked: a missing credential ends the command with the lookup-chain
 *   text (exit 1), and a credential or model the live probe refuses ends it with one line naming
 *   what was refused (CI learns of a rotated key in seconds, not after the binary's retries).
 * - On a terminal a missing credential opens the setup dialog; what the person enters is applied to
 *   this process at once (it wins over what was loaded before, because it was just chosen). The
 *   credential the file holds after the dialog is the one this run uses, even where the shell
 *   exports another: otherwise a key kept with Enter, or saved while an old one is exported, would
 *   be ignored and the dialog would open again, run after run (issue 21). The dialog says that the
 *   exported one wins again at the next start, and how to remove it. A
 *   dialog left unanswered (no token, Ctrl-C, Ctrl-D) ends the command with one message saying
 *   what to do; nothing is written then.
 * - The live probe (one tiny request with the run's model; `FLOWER_NO_PROBE` turns it off) runs at
 *   most twice: a refused credential or a wrong endpoint/model opens the dialog again; a network
 *   problem never does — it is reported and the run starts anyway (resilience handles outages).
 * - A refused credential that comes from before the user file (exported, `$FLOWER_ENV`, the
 *   project's `.env`) is not sent to `flower setup`, which cannot override it: the stop names where
 *   it is set and how to take it out of the way.
 * - Mistakes in the configuration `flower doctor` would show are mentioned in one line before the
 *   check, pointing at `flower doctor` (a run goes on with what the rules read).
 */
import {
  credentialBeforeUserFile,
  fileCredential,
  overrideWords,
  useCredential,
} from '../../config/credential-shadow.js';
import { activeCredentialKey, checkCredentials } from '../../config/credentials.js';
import { chainMistakesNotice, loadEnvironment } from '../../config/env-chain.js';
import { userEnvPath } from '../../config/paths.js';
import { type ProbeResult, probeCredentials, probeDisabled } from '../../config/probe.js';
import { credentialOrigin, settingOrigin } from '../../config/setting-origin.js';
import { type EnvFileUpdates, readEnvFileValues } from '../../config/user-env-file.js';
import { runSetupDialog, SetupCancelled } from '../commands/setup-action.js';

export interface GatePolicy {
  /** Probe → fix → probe again, at most this many probes. */
  readonly maxProbes: number;
}

export const defaultGatePolicy: GatePolicy = { maxProbes: 2 };

export interface GateIo {
  /** Someone is at a terminal to answer the setup dialog. */
  readonly interactive: boolean;
  readonly say: (line: string) => void;
}

function apply(updates: EnvFileUpdates): void {
  for (const [key, value] of Object.entries(updates)) {
    if (value === null) delete process.env[key];
    else process.env[key] = value;
  }
}

/**
 * Opens the setup dialog; true when something was saved (and applied to this process). `forThisRun`:
 * the run continues with what was chosen (the gate); otherwise (a run that already stopped) the
 * dialog's texts speak of the next start only. Leaving the
 * dialog (Ctrl-C, end of input) is a "no" like giving no token: the caller then ends with its own
 * message, which says what to do next, instead of the dialog's bare "cancelled".
 */
export async function configure(reason: string, forThisRun = false): Promise<boolean> {
  let written: EnvFileUpdates | undefined;
  try {
    written = await runSetupDialog(process.env, reason, { forThisRun });
  } catch (error) {
    if (error instanceof SetupCancelled) return false;
    throw error;
  }
  if (written === undefined) return false;
  apply(written);
  // What the file holds now was typed or kept on purpose: this run uses it, whatever else is set.
  const saved = fileCredential(readEnvFileValues(userEnvPath(process.env)));
  if (saved) useCredential(process.env, saved.key, saved.value);
  return true;
}

/** Loads the environment chain and makes sure a credential is present (and, on a terminal, accepted). */
export async function ensureCredentials(io: GateIo, policy: GatePolicy = defaultGatePolicy): Promise<void> {
  const report = loadEnvironment();
  const mistakes = chainMistakesNotice(report, process.env);
  if (mistakes !== undefined) io.say(mistakes);
  const missing = checkCredentials(process.env);
  if (missing !== undefined) {
    if (!io.interactive) throw new Error(missing);
    if (!(await configure('No credentials yet; flower needs one before it can start.', true)))
      throw new Error(missing);
    const stillMissing = checkCredentials(process.env);
    if (stillMissing !== undefined) throw new Error(stillMissing);
  }
  if (probeDisabled(process.env)) return;
  for (let probe = 1; probe <= policy.maxProbes; probe += 1) {
    const result = await probeCredentials(process.env);
    if (result.verdict === 'ok') return;
    if (result.verdict === 'net') {
      io.say(
        `(the credential check could not reach ${result.url}: ${result.detail.slice(0, 80)}; starting anyway)`,
      );
      return;
    }
    const what = refusal(result);
    if (!io.interactive) {
      throw new Error(`${what}: ${result.detail.slice(0, 160)}. ${fixAdvice(result)}`);
    }
    io.say(`! ${what}: ${result.detail.slice(0, 160)}`);
    if (probe === policy.maxProbes) break;
    if (!(await configure(`${what}; fix it here, then the run starts.`, true))) break;
  }
  throw new Error(`the credentials did not pass the check and could not be fixed here. ${fixAdvice()}`);
}

/**
 * What fixes a refusal. `flower setup` writes the user file, which an exported key (or one in
 * `$FLOWER_ENV` or the project's `.env`) beats: sending the person there would loop, so a refused
 * credential from such a place is fixed where it lives.
 */
function fixAdvice(result?: ProbeResult): string {
  const setup = 'Run `flower setup` to fix it, or `flower doctor --probe` to check.';
  if (result !== undefined && result.verdict !== 'auth') return setup;
  const earlier = credentialBeforeUserFile(loadEnvironment());
  const key = activeCredentialKey(process.env);
  if (earlier === undefined || key !== earlier.key || process.env[key] !== earlier.value) return setup;
  const { where, undo } = overrideWords(earlier);
  return `${where}, which wins over what \`flower setup\` saves: put the right key there, or ${undo}; then run \`flower setup\`.`;
}

/** What the probe refused, naming the model and where it was set when that is the problem. */
function refusal(result: ProbeResult): string {
  if (result.verdict === 'auth') {
    const origin = credentialOrigin(process.env);
    return `The credential was refused${origin ? ` (${origin})` : ''}`;
  }
  if (result.modelMissing && result.modelKey !== undefined) {
    return `The endpoint does not serve the model ${result.model} (${settingOrigin(result.modelKey, process.env)})`;
  }
  return 'The gateway URL or model name looks wrong';
}
