/**
 * A reader that goes away (`flower report | head -3`, a pager quit early) is not a crash.
 *
 * Without a listener, the first write to a closed pipe throws EPIPE as an unhandled 'error' event
 * and Node prints a stack trace. Invariants:
 * - A closed standard output ends the process quietly: with the exit code already set, else 0 —
 *   what the reader took is all anyone asked for.
 * - While a step is in flight (`rescuesPending`, runtime/signals.ts) it ends the way a closed
 *   terminal does: SIGHUP, so the step is written to the books as killed and resumes later.
 * - A command with its own handler (the demo cleans up its temporary configuration first) keeps
 *   the decision: this one steps aside whenever another 'error' listener is present.
 * - Any other output error is still thrown: a full disk behind a redirection must not pass silently.
 */
import type { Writable } from 'node:stream';
import { rescuesPending } from '../../runtime/signals.js';

export function endQuietlyWhenOutputCloses(output: Writable = process.stdout): void {
  let closed = false;
  const onError = (error: NodeJS.ErrnoException) => {
    if (error.code !== 'EPIPE') throw error;
    if (output.listenerCount('error') > 1 || closed) return;
    closed = true;
    if (rescuesPending()) process.kill(process.pid, 'SIGHUP');
    else process.exit(process.exitCode ?? 0);
  };
  output.on('error', onError);
}
