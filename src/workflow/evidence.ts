/**
 * What host-run checks mean for a round: the evidence block in the judge's prompt, the ruling once
 * the checks have had their say, what the worker is told when sent back, and the manifest's copy.
 *
 * Invariants:
 * - A failing check makes the round `not yet`, whatever the judge concluded (achieved, cannot
 *   verify, or nothing readable): a command that failed on this machine is a fact, a ruling is an
 *   opinion. Passing checks never upgrade a ruling: other items may still need judgement.
 * - Only tails travel: the judge and the worker see the last lines of an output and its path,
 *   never the whole log (a check printing 100 MB must not enter a prompt).
 * - Pure: formats and decides, reads and writes nothing.
 */
import type { CheckRun } from '../checks/runner.js';
import type { ManifestCheck } from '../runtime/step-result.js';
import { Verdict } from './verdict.js';

/**
 * `exit 1 in 0.3 s`, `killed at its time limit after 600 s`, `ended by SIGKILL after 2 s`, `did not
 * run`; without the time when `timed` is false (for text that must not change between two runs).
 */
export function outcomeOf(run: CheckRun, timed = true): string {
  const after = timed ? ` after ${run.durationS} s` : '';
  if (run.problem !== undefined) return 'did not run';
  if (run.timedOut) return `killed at its time limit${after}`;
  if (run.exitCode === null) return `ended by ${run.signal ?? 'a signal'}${after}`;
  return `exit ${run.exitCode}${timed ? ` in ${run.durationS} s` : ''}`;
}

function indented(text: string): string {
  return text
    .split('\n')
    .map((line) => `      ${line}`)
    .join('\n');
}

/** One check as the judge and the worker read it: what it proves, how it ended, its tail and file. */
export function describeRun(run: CheckRun, index: number): string {
  const head = `${index + 1}. [${run.passed ? 'passed' : 'FAILED'}] \`${run.command || '(no command)'}\` — ${outcomeOf(run)}`;
  const lines = [head, `   item: ${run.item}`];
  if (run.problem !== undefined) lines.push(`   why: ${run.problem}`);
  lines.push(
    run.cutBytes > 0
      ? `   output: ${run.outputPath} (${run.outputBytes} bytes printed; the log keeps the start and the end, ${run.cutBytes} bytes cut between)`
      : `   whole output: ${run.outputPath} (${run.outputBytes} bytes)`,
  );
  if (run.tail !== '' && run.problem === undefined) lines.push('   its last lines:', indented(run.tail));
  return lines.join('\n');
}

/** The evidence section of the judge's prompt; empty when the goal has no checks. */
export function checksEvidence(runs: readonly CheckRun[]): string {
  if (runs.length === 0) return '';
  return [
    '# Checks flower ran on this machine after the round',
    'flower itself ran these commands in the workspace (not the worker, not a model). A failing check',
    'means not yet whatever else you see; a passing check proves its own item and nothing more.',
    '',
    ...runs.map(describeRun),
  ].join('\n');
}

/** The judge's ruling with the checks taken into account (see the module's invariants). */
export function rulingWithChecks(ruling: Verdict, runs: readonly CheckRun[]): Verdict {
  const failing = runs.filter((run) => !run.passed);
  if (failing.length === 0) return ruling;
  const judged = ruling.state ? `The judge ruled "${ruling.state}"` : 'The judge gave no clear conclusion';
  const reason = [
    `${failing.length} of ${runs.length} check${runs.length === 1 ? '' : 's'} flower ran failed, so this round is not yet: ` +
      failing.map((run) => `\`${run.command || run.item}\` (${outcomeOf(run)})`).join(', ') +
      '.',
    `${judged}${ruling.reason ? `: ${ruling.reason}` : '.'}`,
  ].join('\n');
  const failed = [...new Set([...failing.map((run) => run.item), ...ruling.failed])];
  return new Verdict({ state: 'not yet', reason, failed });
}

/** What the worker is told when sent back: the judge's gaps, then what the failing checks printed. */
export function sendBackText(ruling: Verdict, runs: readonly CheckRun[]): string {
  const failing = runs.filter((run) => !run.passed);
  const feedback = ruling.feedback();
  if (failing.length === 0) return feedback;
  return [
    feedback,
    'What the failing checks printed (flower runs them again after your next round):',
    ...failing.map(describeRun),
  ].join('\n\n');
}

/** The manifest's copy of the checks of a round. */
export function manifestChecks(runs: readonly CheckRun[]): ManifestCheck[] {
  return runs.map((run) => ({
    item: run.item,
    command: run.command,
    exit_code: run.exitCode,
    passed: run.passed,
    duration_s: run.durationS,
    output_path: run.outputPath,
    ...(run.timedOut ? { timed_out: true } : {}),
  }));
}

/** One screen line per check, how it went first (a narrow screen cuts the end): `+ check passed · exit 0 in 0.1 s · node hello.js`. */
export function checkLine(run: CheckRun): string {
  const mark = run.passed ? '+ check passed' : 'x check failed';
  const tail = run.passed ? '' : ` · ${run.outputPath}`;
  return `${mark} · ${outcomeOf(run)} · ${run.command || run.item}${tail}`;
}
