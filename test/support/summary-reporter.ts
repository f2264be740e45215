/**
 * A vitest reporter that ends the run with what the counts alone hide: every skipped test, with
 * why it skipped, and every test that passed only when CI ran it again.
 *
 * Why: a test that needs a real PostgreSQL server (two sessions, advisory locks) or root (a
 * size-limited tmpfs) skips elsewhere, and "3 skipped" in the summary did not say that the lease's
 * real-server tests never ran; and CI's one retry made a flaky test look green (issue 22: the
 * disk-full test lost an entry in 3 of 8 runs under load, a real bug). Both must be visible.
 */
import type { Reporter, TestCase, TestModule } from 'vitest/node';

/**
 * Why it skipped: the note a test gives with `context.skip(condition, note)` (the PostgreSQL tests
 * do, through `onlyOnRealServer`), or which kind of condition it was.
 */
function skipReason(test: TestCase): string {
  const result = test.result();
  const note = result.state === 'skipped' ? result.note : undefined;
  return note ?? 'its runIf/skipIf condition is false on this machine (the file says which)';
}

export function summaryLines(modules: ReadonlyArray<TestModule>): string[] {
  const skipped: string[] = [];
  const flaky: string[] = [];
  for (const module of modules) {
    for (const test of module.children.allTests()) {
      const where = `${test.module.relativeModuleId} > ${test.fullName}`;
      if (test.result().state === 'skipped' && test.options.mode !== 'todo') {
        skipped.push(`  - ${where}: ${skipReason(test)}`);
      } else if (test.diagnostic()?.flaky) {
        flaky.push(`  - ${where} (failed ${test.diagnostic()?.retryCount} time(s) first)`);
      }
    }
  }
  const lines: string[] = [];
  if (skipped.length > 0) lines.push(`Skipped ${skipped.length} test(s), and why:`, ...skipped);
  if (flaky.length > 0)
    lines.push(`Passed only on retry (a flake to fix at its cause): ${flaky.length}`, ...flaky);
  return lines;
}

export default class SummaryReporter implements Reporter {
  onTestRunEnd(modules: ReadonlyArray<TestModule>): void {
    const lines = summaryLines(modules);
    if (lines.length > 0) process.stdout.write(`\n${lines.join('\n')}\n`);
  }
}
