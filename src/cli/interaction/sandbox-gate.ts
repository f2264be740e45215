/**
 * The sandbox gate in front of every command that runs agents: before a task starts, the sandbox
 * the policy asks for either can run here, or the person decides, in so many words, to go without.
 *
 * Invariants:
 * - Never unsandboxed silently. `--no-sandbox` is said in one line at the start of every run (so a
 *   log shows it, not only the first one); a sandbox that cannot run is, on a terminal, one yes/no
 *   question whose default is no; off a terminal, a refusal naming the problem, the command that
 *   fixes it and `--no-sandbox` (exit 1).
 * - The gate runs before the task's lock is taken or anything is created: a refusal leaves the
 *   workspace as it found it.
 * - The answer holds for this run only; nothing is remembered.
 */

import { createInterface } from 'node:readline';
import { writeOut } from '../../output/sink.js';
import type { SandboxAvailability } from '../../runtime/sandbox/availability.js';
import { describeReach, type SandboxPolicy } from '../../runtime/sandbox/policy.js';
import { InterruptedError } from '../command-line/exit-errors.js';

export interface SandboxGateIo {
  /** Someone is at a terminal to answer the question. */
  readonly interactive: boolean;
  /** Prints one line (the caller colours it). */
  readonly say: (line: string) => void;
  /** Asks a yes/no question; default `askYesNo` on the process's terminal. */
  readonly ask?: (question: string) => Promise<boolean>;
  /** Whether the sandbox can run; default the real check (runtime/sandbox/availability.ts). */
  readonly availability?: () => SandboxAvailability;
}

/** Said at the start of every run without the sandbox. */
export const UNSANDBOXED_LINE =
  "! running without the sandbox (--no-sandbox): the agents' commands and the checks can read " +
  'every file you can and reach any host';

type Unavailable = Extract<SandboxAvailability, { available: false }>;

/** The question asked on a terminal when the sandbox cannot run. */
export function unavailableQuestion(why: Unavailable): string {
  const fix = why.fix ? ` Fix: ${why.fix}.` : '';
  return `The sandbox cannot run here: ${why.problem}.${fix} Run this task without the sandbox? [y/N]`;
}

/** The refusal off a terminal (and after a "no"): problem, fix, and the flag that overrides. */
export function unavailableRefusal(why: Unavailable): string {
  const override = 'run again with --no-sandbox to work without it';
  const next = why.fix ? `Fix: ${why.fix}; or ${override}` : `You can ${override}`;
  return `the sandbox cannot run here: ${why.problem}. ${next}. Nothing was started.`;
}

/** `y` or `yes`, any case; anything else (Enter included) is no. */
export function isYes(answer: string): boolean {
  return /^y(es)?$/i.test(answer.trim());
}

/**
 * One yes/no question on the process's terminal, before any other reader owns standard input.
 * Ctrl-C quits (exit 130, nothing was started); end of input is "no".
 */
export function askYesNo(question: string): Promise<boolean> {
  return new Promise((resolve, reject) => {
    const lines = createInterface({ input: process.stdin, output: process.stdout, terminal: true });
    let settled = false;
    const settle = (outcome: boolean | Error) => {
      if (settled) return;
      settled = true;
      lines.close();
      if (outcome instanceof Error) reject(outcome);
      else resolve(outcome);
    };
    lines.on('SIGINT', () => {
      writeOut('\n');
      settle(new InterruptedError('quit (Ctrl-C); nothing was started'));
    });
    lines.on('close', () => settle(false));
    lines.question(`${question} `, (answer) => settle(isYes(answer)));
  });
}

/**
 * The policy this run goes ahead with: `policy` itself when the sandbox can run (or the person
 * already said `--no-sandbox`), the same policy disabled when the person agreed at the question.
 * Throws (exit 1) when the sandbox cannot run and nobody agreed to go without.
 */
export async function ensureSandbox(policy: SandboxPolicy, io: SandboxGateIo): Promise<SandboxPolicy> {
  if (!policy.enabled) {
    io.say(UNSANDBOXED_LINE);
    return policy;
  }
  const { sandboxAvailability } = await import('../../runtime/sandbox/availability.js');
  const availability = (io.availability ?? (() => sandboxAvailability()))();
  if (availability.available) return policy;
  if (!io.interactive) throw new Error(unavailableRefusal(availability));
  const agreed = await (io.ask ?? askYesNo)(unavailableQuestion(availability));
  if (!agreed) throw new Error(unavailableRefusal(availability));
  io.say(UNSANDBOXED_LINE);
  return { ...policy, enabled: false };
}

/** The reach in one short clause, for verbose start lines. */
export function sandboxLine(policy: SandboxPolicy): string {
  return policy.enabled
    ? `sandbox: on; workers reach ${describeReach(policy.workerNetwork)}`
    : 'sandbox: off (--no-sandbox)';
}
