/**
 * The model's context window, which decides when a session hands off to a fresh one.
 *
 * Priority (the CLI's `--window` beats all of these by passing a window explicitly):
 *   1. `FLOWER_WINDOW`: a positive integer; anything else ("abc", "0", "-5", "") is ignored;
 *   2. the calibration file: the smallest context at which this endpoint + model ever overflowed;
 *   3. a guess from the model name: a standalone "1m" token → 1M, "haiku" → 200k, otherwise 1M.
 *
 * Why guess high: an over-estimate is caught by the overflow error (one degraded handoff, and the
 * calibration file remembers the real limit); an under-estimate would hand off far too early forever.
 * Calibration is best effort: every I/O problem is swallowed, a broken file just means "no record".
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { writeFileAtomic } from './atomic-file.js';
import { type EnvMap, userConfigDir } from './paths.js';

export const LARGE_WINDOW = 1_000_000;
export const HAIKU_WINDOW = 200_000;

export type WindowSource = 'FLOWER_WINDOW' | 'calibration' | 'model-name';

export interface WindowContext {
  env: EnvMap;
  /** Overrides `$HOME` for locating the calibration file (tests). */
  home?: string;
}

/** A positive integer, or undefined. Accepts surrounding blanks and digit-group underscores ("1_000_000"). */
export function parsePositiveInteger(text: string | undefined): number | undefined {
  const cleaned = text?.trim().replace(/_/g, '');
  if (!cleaned || !/^\+?\d+$/.test(cleaned)) return undefined;
  const value = Number(cleaned);
  return Number.isSafeInteger(value) && value > 0 ? value : undefined;
}

/** `200k` → 200000, `1.5m` → 1500000: what a suffixed value was meant to say, for the advice only. */
function suffixedTokens(text: string): number | undefined {
  const match = /^(\d+(?:\.\d+)?)\s*([km])$/i.exec(text.trim());
  if (!match) return undefined;
  const tokens = Number(match[1]) * (match[2]!.toLowerCase() === 'k' ? 1_000 : 1_000_000);
  return Number.isSafeInteger(tokens) && tokens > 0 ? tokens : undefined;
}

/**
 * Why a `FLOWER_WINDOW` value is ignored, with what to write instead; undefined when it is used or
 * unset. Silent ignoring is the rule above (priority 1), so this is the only place a person learns
 * that `200k` did nothing (issue 21).
 */
export function windowSettingProblem(value: string | undefined): string | undefined {
  if (value === undefined || value.trim() === '' || parsePositiveInteger(value) !== undefined)
    return undefined;
  const meant = suffixedTokens(value);
  const example = meant === undefined ? 'e.g. 200000' : `here ${meant}`;
  return `FLOWER_WINDOW=${value} is not a whole number of tokens and is ignored; write the number itself, ${example} (digits only, _ allowed)`;
}

/** The model whose window matters: the main model, else the opus-tier mapping. */
export function windowModel(env: EnvMap): string {
  return env.ANTHROPIC_MODEL || env.ANTHROPIC_DEFAULT_OPUS_MODEL || '';
}

export function windowFromModelName(model: string): number {
  const name = model.toLowerCase();
  if (/(^|[^a-z0-9])1m([^a-z0-9]|$)/.test(name)) return LARGE_WINDOW;
  if (name.includes('haiku')) return HAIKU_WINDOW;
  return LARGE_WINDOW;
}

export function calibrationFilePath(context: WindowContext): string {
  return join(userConfigDir(context.env, context.home), '.windows');
}

/** Records are per endpoint and model: a different gateway or model may have a different limit. */
export function calibrationKey(env: EnvMap): string {
  return `${env.ANTHROPIC_BASE_URL || 'default'}|${windowModel(env)}`;
}

function readCalibrations(path: string): Record<string, unknown> {
  try {
    const data: unknown = JSON.parse(readFileSync(path, 'utf8'));
    return typeof data === 'object' && data !== null && !Array.isArray(data)
      ? (data as Record<string, unknown>)
      : {};
  } catch {
    return {};
  }
}

export function calibratedWindow(context: WindowContext): number | undefined {
  const value = readCalibrations(calibrationFilePath(context))[calibrationKey(context.env)];
  return typeof value === 'number' && Number.isFinite(value) && value > 0 ? Math.floor(value) : undefined;
}

/**
 * Remembers that a request with `contextTokens` of context overflowed this endpoint + model. Keeps
 * the smallest such value: the real limit is at or below every overflow seen.
 */
export function rememberOverflow(contextTokens: number, context: WindowContext): void {
  if (!Number.isFinite(contextTokens) || contextTokens <= 0) return;
  try {
    const path = calibrationFilePath(context);
    const records = readCalibrations(path);
    const key = calibrationKey(context.env);
    const previous = records[key];
    const tokens = Math.floor(contextTokens);
    records[key] = typeof previous === 'number' && previous > 0 ? Math.min(previous, tokens) : tokens;
    writeFileAtomic(path, `${JSON.stringify(records, null, 2)}\n`, { mode: 0o600, directoryMode: 0o700 });
  } catch {
    // Best effort: failing to remember costs one more degraded handoff later, nothing else.
  }
}

export function resolveWindow(context: WindowContext = { env: process.env }): {
  window: number;
  source: WindowSource;
} {
  const fromEnv = parsePositiveInteger(context.env.FLOWER_WINDOW);
  if (fromEnv !== undefined) return { window: fromEnv, source: 'FLOWER_WINDOW' };
  const calibrated = calibratedWindow(context);
  if (calibrated !== undefined) return { window: calibrated, source: 'calibration' };
  return { window: windowFromModelName(windowModel(context.env)), source: 'model-name' };
}

export function defaultWindow(context: WindowContext = { env: process.env }): number {
  return resolveWindow(context).window;
}
