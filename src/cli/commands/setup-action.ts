/**
 * What `flower setup` does (registered in `setup.ts`), and the dialog the credentials gate reuses:
 * ask for the credential, gateway, model and window once, and store them in the per-user `.env`
 * that every project reads.
 *
 * Invariants:
 * - Interactive only. Without a terminal it changes nothing and exits 1 with the file and the keys
 *   to write by hand (a silent success would hide that nothing was configured).
 * - The secret is never echoed; after entry only its masked form is shown.
 * - Enter keeps what the file already has; `-` removes it. Other keys and comments in the file stay.
 *   Where the file has nothing but the environment has a value (exported, another `.env`), the hint
 *   shows that value and where it comes from, because that is what Enter leaves in force.
 * - The file it will write is named before the first question; after saving, `flower setup` offers
 *   the credential probe (one small request) so a wrong key or URL shows up now, not in the run.
 * - The file is written atomically with mode 0600, and only after every question was answered:
 *   Ctrl-C or end of input leaves it untouched.
 * - A model name is written to ANTHROPIC_MODEL, ANTHROPIC_DEFAULT_OPUS_MODEL and
 *   ANTHROPIC_DEFAULT_SONNET_MODEL together, so every tier Claude Code may pick uses it.
 * - Never claims a value is in force when an earlier source wins (issue 21): a credential exported
 *   in the shell (or set in `$FLOWER_ENV` or the project's `.env`) is named before the first
 *   question with how to take it out of the way, a file value it beats is marked "not in force",
 *   and after saving the dialog says again which key the next start will use. The offered check
 *   asks with the key just saved, because that is the one the person wants to know about.
 * - For the credential gate (`forThisRun`), the credential chosen here is the one this run uses,
 *   whatever the shell exports; the dialog says so, and that later runs use the exported one again.
 */

import { createInterface, type Interface } from 'node:readline';
import { Writable } from 'node:stream';
import {
  BEFORE_USER_FILE,
  credentialBeforeUserFile,
  credentialHiding,
  fileCredential,
  overrideWords,
  useCredential,
} from '../../config/credential-shadow.js';
import { activeCredentialKey, CREDENTIAL_KEYS, maskSecret } from '../../config/credentials.js';
import {
  type EnvChainReport,
  type EnvSetting,
  loadEnvironment,
  settingLocation,
} from '../../config/env-chain.js';
import { type EnvMap, userEnvPath } from '../../config/paths.js';
import { probeCredentials, probeDisabled } from '../../config/probe.js';
import {
  type EnvFileUpdates,
  readEnvFileValues,
  saveEnvFile,
  unstorableReason,
} from '../../config/user-env-file.js';
import { parsePositiveInteger } from '../../config/window.js';
import { writeErr, writeOut } from '../../output/sink.js';
import { pc } from '../terminal/colors.js';
import { PROBE_ADVICE } from './doctor-action.js';

export const MODEL_KEYS = [
  'ANTHROPIC_MODEL',
  'ANTHROPIC_DEFAULT_OPUS_MODEL',
  'ANTHROPIC_DEFAULT_SONNET_MODEL',
] as const;

const PROMPT = '   > ';
/** Typed at a question, removes the stored value. */
const REMOVE = '-';

export class SetupCancelled extends Error {
  constructor() {
    super('setup cancelled; nothing was saved');
  }
}

/** Ctrl-C during the dialog: the person wants out, so the command ends with the interrupt code. */
export class SetupInterrupted extends SetupCancelled {}

/** What to write when there is no terminal to ask on. */
export function nonInteractiveHelp(path: string): string {
  return [
    'flower setup asks its questions on a terminal, and this is not one; nothing was changed.',
    `To configure flower without it, write these lines to ${path} (then chmod 600 it):`,
    '  ANTHROPIC_API_KEY=sk-ant-...            an Anthropic API key, or instead:',
    '  ANTHROPIC_AUTH_TOKEN=...                a token issued by your gateway',
    '  ANTHROPIC_BASE_URL=https://...          optional: the gateway root, without /v1',
    '  ANTHROPIC_MODEL=...                     optional: the model name; put the same value in',
    '  ANTHROPIC_DEFAULT_OPUS_MODEL=...          ANTHROPIC_DEFAULT_OPUS_MODEL and',
    '  ANTHROPIC_DEFAULT_SONNET_MODEL=...        ANTHROPIC_DEFAULT_SONNET_MODEL as well',
    '  FLOWER_WINDOW=200000                    optional: the context window in tokens',
  ].join('\n');
}

/** An Anthropic key goes to ANTHROPIC_API_KEY (sent as x-api-key); anything else is a gateway token. */
export function credentialKeyFor(token: string): (typeof CREDENTIAL_KEYS)[number] {
  return token.startsWith('sk-ant-') ? 'ANTHROPIC_API_KEY' : 'ANTHROPIC_AUTH_TOKEN';
}

/**
 * The gateway root as flower wants it: http(s), no trailing slash, no `/v1` (flower adds
 * `/v1/messages` itself). Returns an error text for anything that is not such a URL.
 */
export function normalizeBaseUrl(input: string): { url: string; note?: string } | { error: string } {
  let url: URL;
  try {
    url = new URL(input);
  } catch {
    return { error: 'that is not a URL; give it like https://gateway.example.com' };
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    return { error: 'the URL must start with http:// or https://' };
  let text = input.replace(/\/+$/, '');
  if (/\/v1$/.test(text)) {
    text = text.replace(/\/v1$/, '');
    return { url: text, note: 'dropped the trailing /v1: flower adds /v1/messages itself' };
  }
  return { url: text };
}

/** Passes output through to the terminal except while a secret is typed. */
class MaskableOutput extends Writable {
  muted = false;
  constructor(private readonly target: NodeJS.WriteStream) {
    super();
  }
  override _write(chunk: Buffer | string, _encoding: BufferEncoding, callback: () => void): void {
    if (!this.muted) this.target.write(chunk);
    callback();
  }
}

class Dialog {
  private readonly output = new MaskableOutput(process.stdout);
  private readonly lines: Interface;
  private cancel: ((error: Error) => void) | undefined;

  constructor() {
    this.lines = createInterface({ input: process.stdin, output: this.output, terminal: true });
    this.lines.on('SIGINT', () => this.abandon(new SetupInterrupted()));
    // End of input (Ctrl-D) also ends the dialog; nothing has been written at that point.
    this.lines.on('close', () => this.abandon(new SetupCancelled()));
  }

  /** Leaves a pending question: finish its prompt line first, so the reason starts a line of its own. */
  private abandon(error: SetupCancelled): void {
    if (!this.cancel) return;
    this.output.muted = false;
    writeOut('\n');
    this.cancel(error);
  }

  say(line = ''): void {
    writeOut(`${line}\n`);
  }

  ask(question: string, hint: string, secret = false): Promise<string> {
    this.say(`${question} ${pc.dim(`(${hint})`)}`);
    return new Promise((resolve, reject) => {
      this.cancel = reject;
      // readline redraws its line from the first column, so it must own the prompt; a secret's
      // prompt is written past it, because everything readline draws is muted then.
      if (secret) writeOut(PROMPT);
      this.output.muted = secret;
      this.lines.question(secret ? '' : PROMPT, (answer) => {
        this.cancel = undefined;
        if (secret) {
          this.output.muted = false;
          writeOut(answer.trim() === '' ? '\n' : `${pc.dim(maskSecret(answer.trim()))}\n`);
        }
        resolve(answer.trim());
      });
    });
  }

  close(): void {
    this.cancel = undefined;
    this.lines.close();
  }
}

/** A value Enter would keep: the file's own, or one the environment supplies from elsewhere. */
interface CurrentValue {
  readonly value: string;
  /** Where it comes from when that is not the file being written. */
  readonly from?: string;
  /** The file's value loses to an earlier source: which one, in words ("the exported one"). */
  readonly beatenBy?: string;
}

/** How the hint names a value from before the user file that wins over the file's own. */
function winnerWords(kind: string, location: string): string {
  return kind === 'process' ? 'the exported one' : `the one in ${location}`;
}

/**
 * What Enter keeps for `key`: the file's value, else the value in the environment with its source.
 * (The environment holds the file's values too, once loaded; those are the file's own.)
 */
export function currentValue(
  key: string,
  stored: Readonly<Record<string, string>>,
  env: EnvMap,
  report: EnvChainReport,
): CurrentValue | undefined {
  const setting = report.winners.get(key);
  if (stored[key]) {
    const beaten =
      setting !== undefined &&
      BEFORE_USER_FILE.has(setting.source.kind) &&
      setting.value !== '' &&
      setting.value !== stored[key];
    return beaten
      ? { value: stored[key], beatenBy: winnerWords(setting.source.kind, settingLocation(setting)) }
      : { value: stored[key] };
  }
  const value = env[key];
  if (!value) return undefined;
  return { value, from: setting ? settingLocation(setting) : 'the process environment' };
}

/**
 * `Enter = keep <value> [from <where>]; - = <fallback>`. Without a fallback (the credential, which
 * cannot be removed here) or for a value that lives outside the file, there is no `-` part: `-`
 * removes a value from the file, and one that lives elsewhere is not the file's to remove.
 */
function keepHint(current: CurrentValue | undefined, fallback?: string, secret = false): string {
  if (current === undefined) return `Enter = ${fallback}`;
  const shown = secret ? maskSecret(current.value) : current.value;
  if (current.from) return `Enter = keep ${shown} from ${current.from}`;
  const kept = current.beatenBy
    ? `Enter = keep ${shown} in the file (not in force: ${current.beatenBy} wins)`
    : `Enter = keep ${shown}`;
  return fallback === undefined ? kept : `${kept}; ${REMOVE} = ${fallback}`;
}

/** Asks until `accept` returns a value (or undefined for "no change"); each refusal says why. */
async function askUntilValid<T>(
  dialog: Dialog,
  question: string,
  hint: string,
  accept: (answer: string) => { value: T } | { error: string },
): Promise<T> {
  for (;;) {
    const verdict = accept(await dialog.ask(question, hint));
    if ('value' in verdict) return verdict.value;
    dialog.say(pc.red(`   ${verdict.error}`));
  }
}

export interface SetupDialogOptions {
  /** After saving, offer the credential probe (the `flower setup` command; the gate probes itself). */
  readonly offerProbe?: boolean;
  /**
   * The credential gate: the credential chosen here is applied to this run (credentials-gate.ts),
   * so the texts say "for this run" where an earlier source will win again at the next start.
   */
  readonly forThisRun?: boolean;
}

/**
 * Said before the first question when an earlier source supplies a credential: whatever is saved
 * here, that one is read first at every start (issue 21: the "saved but ignored" loop).
 */
export function overrideNotice(earlier: EnvSetting, forThisRun: boolean): string {
  const { where, undo } = overrideWords(earlier);
  return forThisRun
    ? `! ${where}, which wins over this file: a key entered here is used for this run, and later runs use that one again until you ${undo}.`
    : `! ${where}, which wins over this file: a key saved here is used only after you ${undo}.`;
}

/** Said after saving when the next start will still use the earlier credential instead of the saved one. */
export function hiddenAfterSaveNotice(earlier: EnvSetting, forThisRun: boolean): string {
  const { where, undo } = overrideWords(earlier);
  return forThisRun
    ? `! This run uses the key saved here, but ${where} and wins again at the next start: to use the saved one from then on, ${undo}.`
    : `! ${where}, which is used instead of the key saved here: to use the saved one, ${undo}.`;
}

/**
 * Runs the questions and writes the file. Returns the values written (null = removed), or
 * undefined when the user gave no credential and none is in force. Needs a terminal.
 */
export async function runSetupDialog(
  env: EnvMap,
  reason: string,
  options: SetupDialogOptions = {},
): Promise<EnvFileUpdates | undefined> {
  const path = userEnvPath(env);
  const stored = readEnvFileValues(path);
  const report = loadEnvironment();
  const current = (key: string) => currentValue(key, stored, env, report);
  const credentialKey = CREDENTIAL_KEYS.find((key) => current(key) !== undefined);
  const credential = credentialKey && current(credentialKey);
  const forThisRun = options.forThisRun ?? false;
  const earlier = credentialBeforeUserFile(report);
  const storedCredential = fileCredential(stored);
  const dialog = new Dialog();
  const updates: EnvFileUpdates = {};
  try {
    dialog.say(pc.bold(pc.cyan(`== Configure flower ${'='.repeat(20)}`)));
    dialog.say(pc.yellow(reason));
    dialog.say(
      pc.dim(`Will be saved to ${path} (readable only by you). Set up once, used by every project.`),
    );
    if (earlier && earlier.value !== storedCredential?.value)
      dialog.say(pc.yellow(overrideNotice(earlier, forThisRun)));

    const hidden = credentialHiding(report, storedCredential);
    const token = await dialog.ask(
      '1. Your API key or gateway token (an Anthropic sk-ant-... key, or the token your gateway issued)',
      hidden && storedCredential
        ? forThisRun
          ? `Enter = use ${maskSecret(storedCredential.value)} from the file for this run`
          : `Enter = keep ${maskSecret(storedCredential.value)} in the file (not in force: ${winnerWords(hidden.source.kind, settingLocation(hidden))} wins)`
        : credential
          ? keepHint(credential, undefined, true)
          : 'required; not shown while typed',
      true,
    );
    if (token === '' && credential === undefined) {
      dialog.say(pc.red('No token given; nothing was saved.'));
      return undefined;
    }
    if (token !== '') {
      const reasonNotStorable = unstorableReason(token);
      if (reasonNotStorable) throw new Error(`that token cannot be stored: ${reasonNotStorable}`);
      const key = credentialKeyFor(token);
      updates[key] = token;
      // One credential per file: a leftover of the other kind would be sent instead of, or with, this one.
      for (const other of CREDENTIAL_KEYS) if (other !== key) updates[other] = null;
    }

    const baseUrl = await askUntilValid<string | null | undefined>(
      dialog,
      '2. Gateway URL (for a third-party gateway: its base URL, without /v1)',
      keepHint(current('ANTHROPIC_BASE_URL'), "Anthropic's official API"),
      (answer) => {
        if (answer === '') return { value: undefined };
        if (answer === REMOVE) return { value: null };
        const normalized = normalizeBaseUrl(answer);
        if ('error' in normalized) return normalized;
        if (normalized.note) dialog.say(pc.dim(`   (${normalized.note})`));
        return { value: normalized.url };
      },
    );
    if (baseUrl !== undefined) updates.ANTHROPIC_BASE_URL = baseUrl;

    const model = await askUntilValid<string | null | undefined>(
      dialog,
      '3. Model name (if your gateway has its own names, e.g. claude-opus-5[1m])',
      keepHint(current('ANTHROPIC_MODEL'), 'the default model'),
      (answer) => {
        if (answer === '') return { value: undefined };
        if (answer === REMOVE) return { value: null };
        const problem = unstorableReason(answer) ?? (/\s/.test(answer) ? 'it contains blanks' : undefined);
        return problem ? { error: `a model name cannot be stored when ${problem}` } : { value: answer };
      },
    );
    if (model !== undefined) for (const key of MODEL_KEYS) updates[key] = model;

    const window = await askUntilValid<string | null | undefined>(
      dialog,
      "4. Context window in tokens (only when your gateway's window differs from what the model name says, e.g. 200000)",
      keepHint(current('FLOWER_WINDOW'), 'infer from the model name and learn from overflows'),
      (answer) => {
        if (answer === '') return { value: undefined };
        if (answer === REMOVE) return { value: null };
        const tokens = parsePositiveInteger(answer);
        return tokens === undefined
          ? { error: 'give a positive whole number, e.g. 200000' }
          : { value: String(tokens) };
      },
    );
    if (window !== undefined) updates.FLOWER_WINDOW = window;

    saveEnvFile(path, updates);
    dialog.say(pc.green(`+ Saved: ${path}`));
    const written = Object.keys(updates).filter((key) => updates[key] !== null);
    const removed = Object.keys(updates).filter((key) => updates[key] === null && key in stored);
    const summary = [
      ...(written.length > 0 ? [`set ${written.join(', ')}`] : []),
      ...(removed.length > 0 ? [`removed ${removed.join(', ')}`] : []),
    ];
    dialog.say(pc.dim(`  ${summary.length === 0 ? 'nothing changed' : summary.join('; ')}`));
    const saved = fileCredential(savedValues(stored, updates));
    const hiddenNow = credentialHiding(report, saved);
    if (hiddenNow) dialog.say(pc.yellow(hiddenAfterSaveNotice(hiddenNow, forThisRun)));
    if (options.offerProbe) {
      const next = effectiveAfterSave(env, report, updates);
      // The check is about the key just saved, not the one that still hides it.
      if (hiddenNow && saved) useCredential(next, saved.key, saved.value);
      await offerProbe(dialog, next);
    }
    return updates;
  } finally {
    dialog.close();
  }
}

/** The user file's values once `updates` are applied to `stored`. */
export function savedValues(
  stored: Readonly<Record<string, string>>,
  updates: EnvFileUpdates,
): Record<string, string> {
  const values: Record<string, string> = { ...stored };
  for (const [key, value] of Object.entries(updates)) {
    if (value === null) delete values[key];
    else values[key] = value;
  }
  return values;
}

/**
 * The environment the next run will see once `updates` are in the file: a key set before the user
 * file in the chain keeps its value; every other key takes the file's new value (or is gone).
 */
export function effectiveAfterSave(
  env: EnvMap,
  report: EnvChainReport,
  updates: EnvFileUpdates,
): Record<string, string | undefined> {
  const next: Record<string, string | undefined> = { ...env };
  for (const [key, value] of Object.entries(updates)) {
    const winner = report.winners.get(key);
    if (winner && BEFORE_USER_FILE.has(winner.source.kind)) continue;
    if (value === null) delete next[key];
    else next[key] = value;
  }
  return next;
}

/** Asks whether to send the probe now, and says what it found. Skipped under FLOWER_NO_PROBE. */
async function offerProbe(dialog: Dialog, env: EnvMap): Promise<void> {
  if (probeDisabled(env)) return;
  const answer = await dialog.ask(
    'Check them now with one small request to the endpoint?',
    'Enter = yes; n = no',
  );
  if (/^n/i.test(answer)) return;
  const probe = await probeCredentials(env);
  dialog.say(`${probe.verdict === 'ok' ? '+' : '!'} ${PROBE_ADVICE[probe.verdict]}`);
  if (probe.verdict !== 'ok')
    dialog.say(pc.dim(`  POST ${probe.url} (model ${probe.model}) → ${probe.detail}`));
}

/**
 * For each key just written, where a value that takes precedence over the user file lives. The
 * credential is left out: the dialog has said which one the next start uses (the other kind can
 * win too, which a per-key look cannot tell).
 */
export function overriddenKeys(report: EnvChainReport, keys: readonly string[]): string[] {
  return keys.flatMap((key) => {
    if ((CREDENTIAL_KEYS as readonly string[]).includes(key)) return [];
    const winner = report.winners.get(key);
    return winner && BEFORE_USER_FILE.has(winner.source.kind)
      ? [
          `${key} is also set in ${settingLocation(winner)}, which takes precedence over the file just written`,
        ]
      : [];
  });
}

export async function runSetup(): Promise<void> {
  const env = process.env;
  const report = loadEnvironment();
  if (!process.stdin.isTTY || !process.stdout.isTTY) throw new Error(nonInteractiveHelp(userEnvPath(env)));
  const reason = activeCredentialKey(env) ? 'Reconfiguring.' : 'No credentials configured yet.';
  let written: EnvFileUpdates | undefined;
  try {
    written = await runSetupDialog(env, reason, { offerProbe: true });
  } catch (error) {
    if (!(error instanceof SetupInterrupted)) throw error;
    writeErr(`flower: ${error.message}\n`);
    process.exit(130);
  }
  if (written === undefined) throw new Error('no token given; nothing was saved');
  for (const note of overriddenKeys(report, Object.keys(written))) writeOut(`${pc.yellow(`! ${note}`)}\n`);
}
