/**
 * Issue 21 (Medium 4 and 5) through the whole CLI: a step its own gate rejects, and a judge that
 * leaves items open, are recorded as data (`rejected`, `missing`, `not_passed`) and said in the stop
 * line, the live warning, `status`, and `report` as text, JSON and HTML. Real SDK, binary and files;
 * only the model is scripted.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { mainRouter, type Scenario, startFrozen, startScenario } from './scenario-harness.js';

let scenario: Scenario | undefined;
afterEach(async () => {
  await scenario?.close();
  scenario = undefined;
});

const oneSpaced = (text: string) => text.replace(/\s+/g, ' ');

interface JsonStep {
  step: string;
  outcome: string;
  detail: string;
  missing: string[];
  verdict: { not_passed: string[] } | null;
}

async function reports(current: Scenario) {
  const status = await current.flower(['status']);
  const text = await current.flower(['report']);
  const json = await current.flower(['report', '--json']);
  const file = join(current.root, 'report.html');
  const html = await current.flower(['report', '--html', file]);
  for (const run of [status, text, json]) expect(run.stderr).toBe('');
  expect(html.status, html.stderr).toBe(0);
  return {
    status: status.stdout,
    text: text.stdout,
    json: JSON.parse(json.stdout) as { steps: JsonStep[]; task: { last_verdict: string | null } },
    html: readFileSync(file, 'utf8'),
  };
}

describe('a step its own gate rejects (issue 21, Medium 4)', () => {
  it('is recorded rejected with what was missing, and every view and the stop line say so', async () => {
    const incomplete = '## Goal\nhello.py prints hello world\n## Acceptance\npython hello.py prints it';
    scenario = await startScenario({ main: mainRouter({ clarifier: () => ({ text: incomplete }) }) });
    const run = await scenario.flower(['--timeout', '0', '--no-bequest', 'write hello.py'], { input: '\n' });
    expect(run.status).toBe(1);
    const why = 'the reply is not a complete brief (missing: Boundaries; Unknowns & assumptions)';
    expect(run.stderr).toBe(`flower: stopped at step 'clarify': the agent finished, but ${why}.\n`);
    // The live warning of the last attempt says why too, wrapped whole rather than cut at the width.
    expect(oneSpaced(run.stdout)).toContain(
      `! gate rejected clarify (attempt 1/1): ${why}; no attempts left`,
    );

    const [row] = scenario.manifest();
    expect(row).toMatchObject({
      step: 'clarify',
      ok: true,
      rejected: 'the reply is not a complete brief',
      missing: ['Boundaries', 'Unknowns & assumptions'],
    });

    const views = await reports(scenario);
    expect(views.status).toContain(`clarify`);
    expect(oneSpaced(views.status)).toContain(`rejected: ${why}`);
    expect(oneSpaced(views.text)).toContain(`clarify: rejected: ${why}`);
    expect(views.json.steps[0]).toMatchObject({
      step: 'clarify',
      outcome: 'rejected',
      detail: 'the reply is not a complete brief',
      missing: ['Boundaries', 'Unknowns & assumptions'],
    });
    // escapeHtml writes `&` as `&#38;`; a bare boolean keeps a failure from printing the whole page.
    expect(views.html.includes('missing: Boundaries; Unknowns &#38; assumptions)')).toBe(true);
  }, 150_000);
});

describe('what the judge left open (issue 21, Medium 5)', () => {
  it('is in the stop line (no stray `.;`), status, and report text, JSON and HTML', async () => {
    const ruling = [
      '## Conclusion',
      'not yet',
      '## Reason',
      'Two items are open.',
      '## Not passed',
      '- hello.py prints hello world',
      '- a README says how to run it',
    ].join('\n');
    scenario = await startFrozen({
      main: mainRouter({
        coordinator: () => ({ text: 'Started on hello.py.' }),
        verdict: () => ({ text: ruling }),
      }),
    });
    const run = await scenario.flower(['--timeout', '0', '--rounds', '1', '--no-bequest'], { input: '\n' });
    expect(run.status).toBe(1);
    const open = 'hello.py prints hello world; a README says how to run it';
    expect(run.stderr).toBe(
      `flower: the judge ruled not yet after 1/1 rounds: Two items are open; not passed: ${open}; flower --rounds 2 continues\n`,
    );
    expect(run.stderr).not.toContain('.;');

    const rows = scenario.manifest();
    expect(rows[0]).toMatchObject({
      step: 'work',
      rejected: 'Two items are open.',
      missing: ['hello.py prints hello world', 'a README says how to run it'],
    });
    expect(rows[1]).toMatchObject({
      not_passed: ['hello.py prints hello world', 'a README says how to run it'],
    });

    const views = await reports(scenario);
    const verdictLine = `not yet after 1/1 round: Two items are open; not passed: ${open}`;
    expect(oneSpaced(views.status)).toContain(`Last verdict: ${verdictLine}`);
    expect(oneSpaced(views.status)).toContain(`rejected: Two items are open. (missing: ${open})`);
    expect(oneSpaced(views.text)).toContain(`Last verdict: ${verdictLine}`);
    expect(oneSpaced(views.text)).toContain(`work: rejected: Two items are open. (missing: ${open})`);
    expect(oneSpaced(views.text)).toContain(`work:verdict#1: verdict: not yet; not passed: ${open}`);
    expect(views.json.task.last_verdict).toBe(verdictLine);
    const [work, verdict] = views.json.steps;
    expect(work).toMatchObject({
      outcome: 'rejected',
      missing: ['hello.py prints hello world', 'a README says how to run it'],
    });
    expect(verdict?.verdict?.not_passed).toEqual([
      'hello.py prints hello world',
      'a README says how to run it',
    ]);
    expect(views.html.includes(`not passed: ${open}`)).toBe(true);
    expect(views.html.includes(`(missing: ${open})`)).toBe(true);
  }, 150_000);
});
