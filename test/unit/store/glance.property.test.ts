/**
 * The glance predicate against real bash: commands generated from a grammar that mixes allowed looks
 * with every expansion and quoting form bash has (`test/support/glance-grammar.ts`); each command the
 * predicate allows is run under strace in a sandbox (`test/support/glance-sandbox.ts`) with secrets
 * planted in the environment and in credential files, and the test fails if any of them wrote a
 * file, ran a program outside the allow list, read a credential file or environment, or printed a
 * planted secret.
 *
 * CI runs a fixed seed and a bounded count. For a longer hunt on your own machine (as root):
 *
 *   GLANCE_PROPERTY_SEED=random GLANCE_PROPERTY_RUNS=20000 npx vitest run test/unit/store/glance.property.test.ts
 *
 * (`GLANCE_PROPERTY_SEED` takes a number to replay a run; the seed in use is printed on failure.)
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { GLANCE_TOOLS } from '../../../src/store/glance/tools.js';
import { isEphemeral } from '../../../src/store/glance.js';
import { commandLine } from '../../support/glance-grammar.js';
import {
  type CommandReport,
  harmDone,
  runSandboxed,
  sandboxUnavailable,
} from '../../support/glance-sandbox.js';

const unavailable = sandboxUnavailable();
// CI must run it; elsewhere (not root, no strace) it says why it is skipped.
const skip = unavailable !== undefined && !process.env.CI;

const seedSetting = process.env.GLANCE_PROPERTY_SEED;
const seed =
  seedSetting === 'random'
    ? Math.floor(Math.random() * 2 ** 31)
    : Number(seedSetting ?? 20261201) || 20261201;
const runs = Number(process.env.GLANCE_PROPERTY_RUNS ?? 4000) || 4000;

/** Programs an allowed command may start: the allow list (grep for egrep/fgrep, which are scripts). */
const ALLOWED_PROGRAMS = new Set([...GLANCE_TOOLS, 'grep']);

function harmful(reports: readonly CommandReport[]): string[] {
  return reports
    .map((report) => ({ report, harm: harmDone(report, ALLOWED_PROGRAMS) }))
    .filter(({ harm }) => harm.length > 0)
    .map(({ report, harm }) => `${JSON.stringify(report.command)}: ${harm.join(', ')}`);
}

describe.skipIf(skip)(`glance predicate under real bash (${unavailable ?? 'sandboxed'})`, () => {
  it('the sandbox holds: writes outside the box, connections and host processes are out of reach', () => {
    const { reports } = runSandboxed([
      'touch /tmp/flower-glance-escape; echo $?',
      `touch ${process.cwd()}/flower-glance-escape; echo $?`,
      'touch /flower-glance-escape; echo $?',
      'echo x > /dev/tcp/127.0.0.1/22; echo $?',
      'ls /proc | grep -c "^[0-9]"',
      'id -u',
      'touch pwned-inside; echo $?',
    ]);
    const [tmp, worktree, root, network, processes, uid, inside] = reports.map((report) =>
      report.stdout.trim(),
    );
    expect(tmp).not.toBe('0');
    expect(worktree).not.toBe('0');
    expect(root).not.toBe('0');
    expect(network).not.toBe('0');
    expect(Number(processes)).toBeLessThan(10); // a fresh PID namespace: only the sandbox's own
    expect(uid).toBe('65534');
    expect(inside).toBe('0'); // the box itself is writable, so the refusals above are the sandbox's
    // And the tracer sees those attempts: the checker would have failed each of them.
    expect(reports[0]?.writes.some((write) => write.includes('/tmp/flower-glance-escape'))).toBe(true);
    expect(reports[6]?.writes.some((write) => write.includes('pwned-inside'))).toBe(true);
  });

  it('the checker catches every kind of harm (known-bad commands, not run through the predicate)', () => {
    const { reports } = runSandboxed([
      'find . -name data.txt -delete',
      'find . -maxdepth 0 -exec touch pwned \\;',
      'cat .env',
      'cat ~/.config/flower/.env | rev',
      'env',
      'ps axe',
      'awk \'BEGIN{print ENVIRON["ANTHROPIC_API_KEY"]}\'',
      'echo x | uniq - a.txt',
      'ls -la',
    ]);
    const verdicts = reports.map((report) => harmDone(report, ALLOWED_PROGRAMS));
    expect(verdicts.slice(0, -1).every((harm) => harm.length > 0)).toBe(true);
    expect(verdicts.at(-1)).toEqual([]);
  });

  it(`no allowed command does harm (seed ${seed}, ${runs} generated commands)`, () => {
    const generated = fc.sample(commandLine, { seed, numRuns: runs });
    const allowed = [...new Set(generated.filter(isEphemeral))];
    // The grammar must reach past the refusals often enough for the run to mean something.
    expect(allowed.length).toBeGreaterThan(runs / 100);
    const { reports } = runSandboxed(allowed);
    expect(harmful(reports), `seed ${seed}`).toEqual([]);
  });
});
