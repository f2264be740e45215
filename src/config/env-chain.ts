/**
 * The environment lookup chain: where flower finds credentials and settings, and who supplied each.
 *
 * Sources, in order (automatic mode):
 *   1. the process environment: always wins, never overwritten;
 *   2. the file named by `$FLOWER_ENV`, if set (relative paths resolve against the cwd);
 *   3. `$PWD/.env`;
 *   4. `${XDG_CONFIG_HOME:-~/.config}/flower/.env` (what `flower setup` writes);
 *   5. the package root's `.env`, only when flower runs from a git checkout;
 *   6. the `env` block of `~/.claude/settings.json`, then `~/.claude/settings.local.json`: only the
 *      KNOWN_KEYS, only non-empty strings; a missing, unreadable or invalid file is skipped.
 * With an explicit path only the process environment and that one file count (no fallback at all).
 *
 * Invariants:
 * - Precedence is per key: the first source that mentions a key owns it for good, even with an
 *   empty value (that "claims" the key and hides later sources; reported as a shadow warning).
 * - Every file key is loaded, not only the known ones: `.env` files may carry any variable.
 * - Nothing here throws for a bad file; a source that cannot be read is reported and skipped.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { packageRoot } from '../version.js';
import { type DotenvPitfall, parseDotenv } from './dotenv-parser.js';
import { type EnvMap, homeDirectory, isSourceCheckout, userEnvPath } from './paths.js';
import { windowSettingProblem } from './window.js';

/**
 * The keys flower itself reads: borrowed from Claude Code's settings, shown by `describe()` and by
 * `flower doctor` (masked where secret; a URL's password always).
 */
export const KNOWN_KEYS = [
  'ANTHROPIC_API_KEY',
  'ANTHROPIC_AUTH_TOKEN',
  'ANTHROPIC_BASE_URL',
  'ANTHROPIC_MODEL',
  'ANTHROPIC_DEFAULT_OPUS_MODEL',
  'ANTHROPIC_DEFAULT_SONNET_MODEL',
  'ANTHROPIC_DEFAULT_HAIKU_MODEL',
  'CLAUDE_CODE_SUBAGENT_MODEL',
  'CLAUDE_CODE_EFFORT_LEVEL',
  /** Where task state lives: a postgres:// URL or a SQLite file path; unset, SQLite in runs/ (config/store-url.ts). */
  'FLOWER_STORE_URL',
] as const;
export type KnownKey = (typeof KNOWN_KEYS)[number];

export type EnvSourceKind =
  | 'process'
  | 'flower-env'
  | 'project'
  | 'user'
  | 'checkout'
  | 'claude-settings'
  | 'claude-settings-local'
  | 'explicit';

/** One place in the chain. */
export interface EnvSource {
  kind: EnvSourceKind;
  /** The file behind the source; absent for the process environment and an unset `$FLOWER_ENV`. */
  path?: string;
  /** How a person would name it, e.g. "$FLOWER_ENV" or "project .env". */
  label: string;
}

export type EnvSourceStatus =
  | 'read'
  | 'missing'
  | 'unreadable'
  | 'invalid'
  /** `$FLOWER_ENV` is not set, so there is no file to read. */
  | 'not-set'
  /** The same file already appeared earlier in the chain; reading it again could change nothing. */
  | 'duplicate';

export interface EnvSourceReport {
  source: EnvSource;
  status: EnvSourceStatus;
  /** Why a file could not be used (the OS or JSON error), for `flower doctor`. */
  detail?: string;
  /** How many keys the source mentions (whether or not they won). */
  keyCount: number;
  /** `.env` lines that probably do not mean what their author intended. */
  pitfalls: DotenvPitfall[];
}

/** A value for a key as one source states it. */
export interface EnvSetting {
  key: string;
  value: string;
  source: EnvSource;
  /** Line in the source file, for `.env` files. */
  line?: number;
}

/** An empty value that claims a key although a later source has a real value for it. */
export interface ShadowWarning {
  key: string;
  empty: EnvSetting;
  hidden: EnvSetting[];
  message: string;
}

export interface EnvChainReport {
  /** Every source considered, in lookup order, including absent ones. */
  sources: EnvSourceReport[];
  /**
   * The winning setting of every key any file mentions, and of every known key set in the process.
   * Keys absent here come from the process environment or are unset.
   */
  winners: Map<string, EnvSetting>;
  /** What the chain adds to the process environment: winners whose source is a file. */
  additions: Record<string, string>;
  shadowWarnings: ShadowWarning[];
}

/** Everything the chain depends on, so tests can run it in a temporary world. */
export interface EnvChainContext {
  env: EnvMap;
  cwd: string;
  home: string;
  packageRoot: string;
  /** Whether `packageRoot` is a git checkout (only then is its `.env` read). */
  sourceCheckout: boolean;
}

export function processChainContext(): EnvChainContext {
  return {
    env: process.env,
    cwd: process.cwd(),
    home: homeDirectory(process.env),
    packageRoot,
    sourceCheckout: isSourceCheckout(packageRoot),
  };
}

const PROCESS_SOURCE: EnvSource = { kind: 'process', label: 'process environment' };

/** The sources of the chain for this context, in order (the process environment first). */
export function lookupSources(context: EnvChainContext, explicitPath?: string): EnvSource[] {
  if (explicitPath !== undefined) {
    return [
      PROCESS_SOURCE,
      { kind: 'explicit', path: resolve(context.cwd, explicitPath), label: 'explicit file' },
    ];
  }
  const flowerEnv = context.env.FLOWER_ENV;
  const sources: EnvSource[] = [
    PROCESS_SOURCE,
    flowerEnv
      ? { kind: 'flower-env', path: resolve(context.cwd, flowerEnv), label: '$FLOWER_ENV' }
      : { kind: 'flower-env', label: '$FLOWER_ENV' },
    { kind: 'project', path: resolve(context.cwd, '.env'), label: 'project .env' },
    { kind: 'user', path: userEnvPath(context.env, context.home), label: 'user .env (flower setup)' },
  ];
  if (context.sourceCheckout) {
    sources.push({
      kind: 'checkout',
      path: resolve(context.packageRoot, '.env'),
      label: 'source checkout .env',
    });
  }
  sources.push(
    {
      kind: 'claude-settings',
      path: resolve(context.home, '.claude', 'settings.json'),
      label: 'Claude Code settings.json (env block)',
    },
    {
      kind: 'claude-settings-local',
      path: resolve(context.home, '.claude', 'settings.local.json'),
      label: 'Claude Code settings.local.json (env block)',
    },
  );
  return sources;
}

interface SourceContent {
  report: EnvSourceReport;
  settings: EnvSetting[];
}

function readText(source: EnvSource): { text: string } | { status: EnvSourceStatus; detail: string } {
  try {
    return { text: readFileSync(source.path!, 'utf8') };
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const detail = error instanceof Error ? error.message : String(error);
    return { status: code === 'ENOENT' ? 'missing' : 'unreadable', detail };
  }
}

function readDotenvSource(source: EnvSource): SourceContent {
  const read = readText(source);
  if (!('text' in read)) {
    return {
      report: { source, status: read.status, detail: read.detail, keyCount: 0, pitfalls: [] },
      settings: [],
    };
  }
  const parsed = parseDotenv(read.text);
  const settings = parsed.entries.map((entry) => ({ ...entry, source }));
  const keyCount = new Set(parsed.entries.map((entry) => entry.key)).size;
  return { report: { source, status: 'read', keyCount, pitfalls: parsed.pitfalls }, settings };
}

/** Claude Code keeps its token in `{"env": {...}}`; only the known keys with real values are borrowed. */
function readClaudeSettingsSource(source: EnvSource): SourceContent {
  const read = readText(source);
  if (!('text' in read)) {
    return {
      report: { source, status: read.status, detail: read.detail, keyCount: 0, pitfalls: [] },
      settings: [],
    };
  }
  let data: unknown;
  try {
    data = JSON.parse(read.text);
  } catch (error) {
    const detail = error instanceof Error ? error.message : String(error);
    return { report: { source, status: 'invalid', detail, keyCount: 0, pitfalls: [] }, settings: [] };
  }
  const block = typeof data === 'object' && data !== null ? (data as { env?: unknown }).env : undefined;
  const settings: EnvSetting[] = [];
  if (typeof block === 'object' && block !== null && !Array.isArray(block)) {
    const values = block as Record<string, unknown>;
    for (const key of KNOWN_KEYS) {
      const value = values[key];
      if (typeof value === 'string' && value !== '') settings.push({ key, value, source });
    }
  }
  return { report: { source, status: 'read', keyCount: settings.length, pitfalls: [] }, settings };
}

/** Where a setting came from, as `path:line` for files or the source's name otherwise. */
export function settingLocation(setting: EnvSetting): string {
  const where = setting.source.path ?? setting.source.label;
  return setting.line === undefined ? where : `${where}:${setting.line}`;
}

/** Resolves the chain without touching the environment: what would be loaded, from where, and why. */
export function resolveEnvChain(context: EnvChainContext, explicitPath?: string): EnvChainReport {
  const sources: EnvSourceReport[] = [];
  const allSettings: EnvSetting[] = [];
  const seenPaths = new Set<string>();

  for (const [key, value] of Object.entries(context.env)) {
    if (value !== undefined) allSettings.push({ key, value, source: PROCESS_SOURCE });
  }
  sources.push({
    source: PROCESS_SOURCE,
    status: 'read',
    keyCount: KNOWN_KEYS.filter((key) => context.env[key] !== undefined).length,
    pitfalls: [],
  });

  for (const source of lookupSources(context, explicitPath).slice(1)) {
    if (source.path === undefined) {
      sources.push({ source, status: 'not-set', keyCount: 0, pitfalls: [] });
      continue;
    }
    if (seenPaths.has(source.path)) {
      sources.push({ source, status: 'duplicate', keyCount: 0, pitfalls: [] });
      continue;
    }
    seenPaths.add(source.path);
    const isClaude = source.kind === 'claude-settings' || source.kind === 'claude-settings-local';
    const content = isClaude ? readClaudeSettingsSource(source) : readDotenvSource(source);
    sources.push(content.report);
    allSettings.push(...content.settings);
  }

  const byKey = new Map<string, EnvSetting[]>();
  for (const setting of allSettings) {
    const list = byKey.get(setting.key);
    if (list) list.push(setting);
    else byKey.set(setting.key, [setting]);
  }

  const winners = new Map<string, EnvSetting>();
  const additions: Record<string, string> = {};
  const shadowWarnings: ShadowWarning[] = [];
  const knownKeys: ReadonlySet<string> = new Set(KNOWN_KEYS);
  for (const [key, settings] of byKey) {
    const winner = settings[0]!;
    const mentionedByFile = settings.some((setting) => setting.source.kind !== 'process');
    if (!mentionedByFile && !knownKeys.has(key)) continue;
    winners.set(key, winner);
    if (winner.source.kind !== 'process') additions[key] = winner.value;
    const hidden = settings
      .slice(1)
      .filter((setting) => setting.value !== '' && setting.source !== winner.source);
    if (winner.value === '' && hidden.length > 0) {
      shadowWarnings.push({
        key,
        empty: winner,
        hidden,
        message:
          `${key} is empty in ${settingLocation(winner)}, which hides its value in ${settingLocation(hidden[0]!)}; ` +
          'an empty value still claims the key. Delete that line (or unset the variable) to use the later value',
      });
    }
  }
  return { sources, winners, additions, shadowWarnings };
}

/**
 * Everything in the chain a person should know about, one line each: `.env` pitfalls (with file and
 * line), sources that could not be used, and empty values that hide later ones. Shown by
 * `flower doctor` and under `-v`, because the parsing rules themselves never complain.
 */
export function chainWarnings(report: EnvChainReport): string[] {
  const warnings: string[] = [];
  for (const { source, pitfalls, status, detail } of report.sources) {
    const where = source.path ?? source.label;
    for (const pitfall of pitfalls) warnings.push(`${where}:${pitfall.line}: ${pitfall.message}`);
    if (status === 'invalid') warnings.push(`${where}: not valid JSON, ignored (${detail})`);
    if (status === 'unreadable') warnings.push(`${where}: cannot be read, ignored (${detail})`);
    // Naming a file on purpose and having it missing is a mistake; the other files are optional.
    if (status === 'missing' && (source.kind === 'flower-env' || source.kind === 'explicit')) {
      warnings.push(`${where}: named by ${source.label} but does not exist`);
    }
  }
  for (const shadow of report.shadowWarnings) warnings.push(shadow.message);
  return warnings;
}

/**
 * Where each mistake `chainWarnings` names sits (`file:line`, or the file), plus a `FLOWER_WINDOW`
 * that is ignored; in the same order. Locations only: a warning's text can quote a secret.
 */
export function chainMistakeLocations(report: EnvChainReport, env: EnvMap): string[] {
  const locations: string[] = [];
  for (const { source, pitfalls, status } of report.sources) {
    const where = source.path ?? source.label;
    for (const pitfall of pitfalls) locations.push(`${where}:${pitfall.line}`);
    const namedButMissing =
      status === 'missing' && (source.kind === 'flower-env' || source.kind === 'explicit');
    if (status === 'invalid' || status === 'unreadable' || namedButMissing) locations.push(where);
  }
  for (const shadow of report.shadowWarnings) locations.push(settingLocation(shadow.empty));
  const window = sourceOf(report, 'FLOWER_WINDOW', env);
  if (window && windowSettingProblem(window.value)) locations.push(settingLocation(window));
  return locations;
}

/**
 * The one line a run prints before it starts when its configuration holds mistakes `flower doctor`
 * shows (a run would otherwise go on with a value its author did not mean, issue 21); undefined
 * when there are none.
 */
export function chainMistakesNotice(report: EnvChainReport, env: EnvMap): string | undefined {
  const locations = chainMistakeLocations(report, env);
  if (locations.length === 0) return undefined;
  const where =
    locations.length === 1
      ? `a likely mistake (at ${locations[0]})`
      : `${locations.length} likely mistakes (first at ${locations[0]})`;
  return `! the configuration has ${where}; \`flower doctor\` shows what and how to fix it`;
}

/** Adds the chain's file values to `target`; a key already present (even empty) is never overwritten. */
export function applyEnvChain(report: EnvChainReport, target: Record<string, string | undefined>): string[] {
  const applied: string[] = [];
  for (const [key, value] of Object.entries(report.additions)) {
    if (key in target) continue;
    target[key] = value;
    applied.push(key);
  }
  return applied;
}

let processReport: EnvChainReport | undefined;

/**
 * Loads the chain into `process.env` once and returns its report. Later calls return the first
 * report: once applied, re-resolving would attribute every file value to the process environment.
 */
export function loadEnvironment(): EnvChainReport {
  if (processReport === undefined) {
    processReport = resolveEnvChain(processChainContext());
    applyEnvChain(processReport, process.env);
  }
  return processReport;
}

/**
 * The report of the chain `loadEnvironment` applied to this process, or undefined when it has not
 * run (a library caller that builds its own environment). Never loads anything itself.
 */
export function loadedEnvironment(): EnvChainReport | undefined {
  return processReport;
}

/** Which source supplied `key`: the chain's record, or the process environment, or nothing. */
export function sourceOf(report: EnvChainReport, key: string, env: EnvMap): EnvSetting | undefined {
  const winner = report.winners.get(key);
  if (winner) return winner;
  const value = env[key];
  return value === undefined ? undefined : { key, value, source: PROCESS_SOURCE };
}
