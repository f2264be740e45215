/**
 * The flags of the commands that run agents (`go`, `run`, `once`) for scripts and CI jobs:
 * `--output-format text|json|stream-json` and `--model NAME`.
 *
 * Invariants:
 * - A bad `--output-format` is commander's usage error (exit 2) naming the allowed values; a
 *   `--model` that cannot be a model name (empty, spaces, an option) is refused the same way.
 * - `--model` does exactly what `ANTHROPIC_MODEL` does: it is put into the process environment
 *   before the `.env` chain is loaded, so it wins over the shell and every file, and the probe,
 *   the handoff window and the agents all see the one model.
 */
import { InvalidArgumentError, Option } from 'commander';
import { noteFlagSetting } from '../../config/setting-origin.js';

export const OUTPUT_FORMATS = ['text', 'json', 'stream-json'] as const;
export type OutputFormat = (typeof OUTPUT_FORMATS)[number];

/** The schema version of `--output-format json|stream-json`; bumped only when a key changes meaning. */
export const OUTPUT_VERSION = 1;

export const OUTPUT_FORMAT_HELP =
  'text (default): lines for people on standard output; json: one JSON document on standard output ' +
  'when the command ends (outcome, steps, verdict, spend, session id), progress on standard error; ' +
  'stream-json: one JSON event per line on standard output as it happens, the same document last';

export const MODEL_HELP = 'the model the agents use (what ANTHROPIC_MODEL sets; this flag wins over it)';

/** `--output-format`: commander refuses anything else with "Allowed choices are text, json, stream-json". */
export function outputFormatOption(): Option {
  return new Option('--output-format <format>', OUTPUT_FORMAT_HELP).choices(OUTPUT_FORMATS).default('text');
}

/** `--model`'s parser: a model name is one word (`claude-sonnet-4-5`, `opus`, `x[1m]`). */
export function parseModel(value: string): string {
  const model = value.trim();
  if (model === '' || /\s/.test(model) || model.startsWith('-'))
    throw new InvalidArgumentError('give a model name, e.g. --model claude-sonnet-4-5');
  return model;
}

/** The environment variable `--model` stands for. */
export const MODEL_VARIABLE = 'ANTHROPIC_MODEL';

/** Puts `--model` into `env` (before the `.env` chain is loaded, which never overwrites a set key). */
export function applyModelFlag(model: string | undefined, env: Record<string, string | undefined>): void {
  if (model === undefined) return;
  env[MODEL_VARIABLE] = model;
  if (env === process.env) noteFlagSetting(MODEL_VARIABLE, '--model');
}

/** What the machine-readable flags add to a command's flags. */
export interface MachineFlags {
  outputFormat?: OutputFormat;
  model?: string;
}
