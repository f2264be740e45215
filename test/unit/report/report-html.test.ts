/**
 * What the HTML page says about money it did not cost (issue 21, polish): a run directory that
 * `flower demo` wrote is marked, the report document carries `simulated_cost`, and the page puts
 * "simulated" first thing and on every dollar label. The layout itself is checked in Chromium
 * (test/e2e/report-html-layout.test.ts). And the chart data embedded in the page: no step name can
 * end its script element.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { buildReport, type ReportInput } from '../../../src/report/report.js';
import { priced, reportHtml, SIMULATED_NOTICE } from '../../../src/report/report-html.js';
import { DEMO_MARKER, isDemoRun } from '../../../src/runtime/demo-run.js';
import type { StoredManifestRow } from '../../../src/runtime/manifest.js';

const made: string[] = [];
afterEach(() => {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A workspace with an empty run directory; `marker` is written as the demo's marker file. */
function runDir(marker?: string): string {
  const workspace = mkdtempSync(join(tmpdir(), 'flower-report-html-'));
  made.push(workspace);
  const dir = join(workspace, 'runs');
  mkdirSync(dir);
  if (marker !== undefined) writeFileSync(join(dir, DEMO_MARKER), marker);
  return dir;
}

function reportOf(dir: string, rows: StoredManifestRow[] = []) {
  // Cast: the run data has more parts than an empty run needs.
  const data = {
    location: { workspace: join(dir, '..'), runDir: dir },
    manifest: { state: 'ok', document: rows },
    setAside: [],
    asides: { state: 'missing', document: [] },
    lineage: { state: 'missing', document: { workspace: '', woke: 0, steps: {} } },
    store: { state: 'ok', sessions: new Map() },
    workbench: undefined,
  } as unknown as ReportInput['data'];
  return buildReport({ data, transcripts: new Map() });
}

describe('a demo run directory', () => {
  it('is recognised by the marker the demo writes, and by nothing else', () => {
    expect(isDemoRun(runDir('{"demo":true,"startedAt":"2026-12-07T00:00:00.000Z"}\n'))).toBe(true);
    expect(isDemoRun(runDir())).toBe(false);
    expect(isDemoRun(runDir('{"demo":false}'))).toBe(false);
    expect(isDemoRun(runDir('not json'))).toBe(false);
  });

  it('gives a page that says its costs are simulated, first and on every dollar label', () => {
    const report = reportOf(runDir('{"demo":true}'));
    expect(report.simulated_cost).toBe(true);
    const page = reportHtml(report);
    const body = page.slice(page.indexOf('<body>'));
    expect(body.indexOf(SIMULATED_NOTICE)).toBeGreaterThan(0);
    expect(body.indexOf(SIMULATED_NOTICE)).toBeLessThan(body.indexOf('class="cards"'));
    for (const label of [
      'task total (simulated)',
      'main thread (ledger, simulated)',
      'workers (ledger, simulated)',
      'cost (SDK, simulated)',
      'ledger (simulated)',
    ])
      expect(body).toContain(label);
  });

  it('leaves a real run’s page without the word', () => {
    const report = reportOf(runDir());
    expect(report.simulated_cost).toBe(false);
    expect(reportHtml(report)).not.toMatch(/simulated/i);
  });
});

describe('priced', () => {
  it('puts "simulated" inside a label’s own parentheses, or adds them', () => {
    expect(priced(true)('cost (SDK)')).toBe('cost (SDK, simulated)');
    expect(priced(true)('cost')).toBe('cost (simulated)');
    expect(priced(false)('cost (SDK)')).toBe('cost (SDK)');
  });
});

/**
 * The text of the element that starts with `open`, ended where an HTML parser ends a script: at the
 * first `</script` followed by whitespace, `/` or `>`, in any case (HTML Living Standard, script data
 * end tag). What a browser runs or parses as the chart data is exactly this.
 */
function scriptText(page: string, open: string): string {
  const start = page.indexOf(open);
  expect(start).toBeGreaterThanOrEqual(0);
  const from = start + open.length;
  const end = /<\/script[\t\n\f\r />]/i.exec(page.slice(from));
  expect(end).not.toBeNull();
  return page.slice(from, from + (end?.index ?? 0));
}

describe('the chart data embedded in the page', () => {
  const hostile = ['</script><script>alert(1)</script>', '</SCRIPT >x', '<!--<script>'];

  it('cannot be ended by a step name: the script element holds all of it, and it parses back to the names', () => {
    const T0 = Date.UTC(2026, 0, 1) / 1000;
    const rows: StoredManifestRow[] = hostile.map((step, index) => ({
      step,
      run: 'run-1',
      ok: true,
      cost_usd: 0.01,
      num_turns: 1,
      started_at: T0 + index * 100,
      ended_at: T0 + index * 100 + 50,
      duration_s: 50,
    }));
    const page = reportHtml(reportOf(runDir(), rows));
    const data = scriptText(page, '<script type="application/json" id="report-data">');
    // No `<` at all: neither `</script` nor `<!--` (which would change where the element ends).
    expect(data).not.toContain('<');
    const parsed = JSON.parse(data) as { steps: Array<{ step: string }> };
    expect(parsed.steps.map((step) => step.step)).toEqual(hostile);
    // The names are on the page as text only: no script element beyond the page's own three.
    expect(page.match(/<script[\s>]/gi)).toHaveLength(3);
  });
});
