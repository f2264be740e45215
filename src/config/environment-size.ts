/**
 * Whether an environment is small enough to start a process with, and if not, which variable (and
 * which `.env` line) makes it too large.
 *
 * A 2 MB value in a `.env` file ended every step in "spawn E2BIG" (observed): the kernel refuses
 * to start a program whose environment is too large, and the message names neither the file nor
 * the key. Checked before the agent starts, the user is told which line to shorten.
 *
 * Limits (Linux, measured on the development machine): one `KEY=value` string may have at most
 * 131072 bytes with its terminating NUL (MAX_ARG_STRLEN, 32 pages: a 131069-byte value under a
 * one-letter name starts, one byte more fails); arguments and environment together at most
 * ARG_MAX (a quarter of the stack limit, 2 MiB by default). macOS allows 1 MiB for both together.
 */
import { loadedEnvironment, processChainContext, resolveEnvChain, settingLocation } from './env-chain.js';
import type { EnvMap } from './paths.js';

export interface EnvironmentLimits {
  /** Bytes of one `KEY=value` string including its NUL (Linux's MAX_ARG_STRLEN). */
  readonly maxVariableBytes: number;
  /**
   * Bytes of all strings together. 1 MiB: half of Linux's default ARG_MAX, so the arguments the
   * SDK passes (the role's prompt, agent definitions) still fit, and macOS's whole limit.
   */
  readonly maxTotalBytes: number;
}

export const defaultEnvironmentLimits: EnvironmentLimits = {
  maxVariableBytes: 131_072,
  maxTotalBytes: 1024 * 1024,
};

export interface EnvironmentSizeProblem {
  /** The variable to shorten: the one over the limit, or the largest one when the total is. */
  key: string;
  /** Bytes of that variable's `KEY=value` string. */
  bytes: number;
  /** All variables together. */
  totalBytes: number;
  kind: 'variable' | 'total';
}

function entryBytes(key: string, value: string): number {
  return Buffer.byteLength(key) + Buffer.byteLength(value) + 2; // '=' and the terminating NUL
}

/** The size problem of `env`, or undefined when a process can be started with it. */
export function environmentSizeProblem(
  env: EnvMap,
  limits: EnvironmentLimits = defaultEnvironmentLimits,
): EnvironmentSizeProblem | undefined {
  let totalBytes = 0;
  let largest: { key: string; bytes: number } | undefined;
  for (const [key, value] of Object.entries(env)) {
    if (value === undefined) continue;
    const bytes = entryBytes(key, value);
    totalBytes += bytes;
    if (largest === undefined || bytes > largest.bytes) largest = { key, bytes };
  }
  if (largest === undefined) return undefined;
  if (largest.bytes > limits.maxVariableBytes) return { ...largest, totalBytes, kind: 'variable' };
  if (totalBytes > limits.maxTotalBytes) return { ...largest, totalBytes, kind: 'total' };
  return undefined;
}

function size(bytes: number): string {
  return bytes >= 1024 * 1024 ? `${(bytes / 1024 / 1024).toFixed(1)} MB` : `${Math.ceil(bytes / 1024)} KB`;
}

/**
 * Where `key` came from when the configuration chain (the `.env` files flower reads) supplied the
 * value `env` holds: `file:line`, or undefined for anything else (exported in the shell, a library
 * caller's own map).
 */
export function chainLocation(key: string, env: EnvMap): string | undefined {
  try {
    // Once the chain is in `process.env`, re-resolving would credit every value to the process.
    const report = loadedEnvironment() ?? resolveEnvChain(processChainContext());
    const setting = report.winners.get(key);
    if (setting === undefined || setting.value !== env[key] || setting.source.kind === 'process')
      return undefined;
    return settingLocation(setting);
  } catch {
    return undefined;
  }
}

/** One message naming the variable, where it came from, and what to do; undefined when it fits. */
export function environmentSizeMessage(
  env: EnvMap,
  limits: EnvironmentLimits = defaultEnvironmentLimits,
  locate: (key: string, env: EnvMap) => string | undefined = chainLocation,
): string | undefined {
  const problem = environmentSizeProblem(env, limits);
  if (problem === undefined) return undefined;
  const where = locate(problem.key, env);
  const origin = where ? ` (set in ${where})` : '';
  const fix = where ? 'Shorten that line or remove it.' : 'Shorten it or unset it.';
  if (problem.kind === 'variable') {
    return (
      `${problem.key}${origin} is ${size(problem.bytes)}; the agent process cannot start with one ` +
      `environment variable over ${size(limits.maxVariableBytes)} (the system refuses it: E2BIG). ${fix}`
    );
  }
  return (
    `The environment is ${size(problem.totalBytes)} in all, more than the ${size(limits.maxTotalBytes)} ` +
    `the agent process can be started with (E2BIG); the largest variable is ${problem.key}${origin} ` +
    `(${size(problem.bytes)}). ${fix}`
  );
}
