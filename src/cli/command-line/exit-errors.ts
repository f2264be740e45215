/**
 * The two ways a command ends that are not "it failed": the person typed something flower cannot
 * run (exit 2, like commander's own usage errors), or the person pressed Ctrl-C (exit 130). Both are
 * thrown from wherever the fact is known and turned into an exit code in one place, `main`.
 *
 * Invariant: the message is the whole explanation, one line that says what to type instead; `main`
 * prints it after `flower: ` and never a stack trace.
 */

/** The command line asks for something that cannot be done as typed: exit 2. */
export class UsageError extends Error {
  override name = 'UsageError';
}

/** The person interrupted (Ctrl-C) before anything was started: exit 130. */
export class InterruptedError extends Error {
  override name = 'InterruptedError';
}

/** Exit codes of the `flower` command. */
export const EXIT = { ok: 0, failed: 1, usage: 2, interrupted: 130 } as const;
