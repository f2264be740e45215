/**
 * What a run did and cost (issue 12), through the real stack: the runtime with the real SDK and
 * binary against the mock model writes the ledger into the manifest; `flower report`, `status`
 * and `log` run as real processes over the run directory; the HTML page is opened from disk in
 * Debian's Chromium.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Browser } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import type { RunReport } from '../../src/report/report.js';
import type { AgentSpec } from '../../src/runtime/agent-spec.js';
import type { ManifestRow } from '../../src/runtime/step-result.js';
import { mock } from '../../src/testing/index.js';
import { tempDir } from './cli-harness.js';
import { expectOneLineFailure, fingerprint, launchChromium, look, readPage } from './report-harness.js';
import { type Harness, runNode, startHarness, stepDriver } from './runtime-harness.js';

const MODEL = 'claude-opus-5-5';
/** claude-opus-5-5 per million tokens: input 4, output 20, cache read 0.2, cache write 5. */
const price = (u: {
  input_tokens: number;
  output_tokens: number;
  cache_read_input_tokens: number;
  cache_creation_input_tokens: number;
}) =>
  (u.input_tokens * 4 +
    u.output_tokens * 20 +
    u.cache_read_input_tokens * 0.2 +
    u.cache_creation_input_tokens * 5) /
  1e6;
const usage = (input: number, cacheRead: number, cacheCreation: number, output: number) => ({
  input_tokens: input,
  cache_read_input_tokens: cacheRead,
  cache_creation_input_tokens: cacheCreation,
  output_tokens: output,
});
const sum = (...all: Array<ReturnType<typeof usage>>) =>
  all.reduce((total, u) => ({
    input_tokens: total.input_tokens + u.input_tokens,
    cache_read_input_tokens: total.cache_read_input_tokens + u.cache_read_input_tokens,
    cache_creation_input_tokens: total.cache_creation_input_tokens + u.cache_creation_input_tokens,
    output_tokens: total.output_tokens + u.output_tokens,
  }));

// The scripted usage of every response: the coordinator twice, the coder twice, the tester once.
const MAIN = [usage(12_000, 30_000, 4_000, 300), usage(2_000, 46_000, 1_500, 80)];
const CODER = [usage(3_000, 9_000, 2_000, 120), usage(500, 14_000, 600, 60)];
const TESTER = [usage(2_500, 0, 7_000, 40)];

let harness: Harness | undefined;
let browser: Browser | undefined;

afterEach(async () => {
  await harness?.cleanup();
  harness = undefined;
});
beforeAll(async () => {
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
});

describe('the cost ledger per worker, end to end', () => {
  it('writes exactly the scripted usage of a coordinator and two workers into the manifest, report --json and the HTML page', async () => {
    harness = await startHarness({
      main: [
        {
          // One response with two dispatches: two transcript entries sharing one message id.
          content: [
            { type: 'text', text: 'Two jobs.' },
            {
              type: 'tool_use',
              name: 'Agent',
              input: {
                subagent_type: 'coder',
                description: 'Write the parser',
                prompt: 'Write the parser.',
                run_in_background: false,
              },
            },
            {
              type: 'tool_use',
              name: 'Agent',
              input: {
                subagent_type: 'tester',
                description: 'Test the parser',
                prompt: 'Test the parser.',
                run_in_background: false,
              },
            },
          ],
          usage: MAIN[0],
        },
        { text: 'Both done.', usage: MAIN[1] },
      ],
      agents: {
        coder: [
          { text: 'Looking first.', toolUses: [{ name: 'Glob', input: { pattern: '*' } }], usage: CODER[0] },
          { text: 'Parser written.', usage: CODER[1] },
        ],
        tester: [{ text: 'Tests pass.', usage: TESTER[0] }],
      },
    });
    const spec: AgentSpec = {
      name: 'work',
      instructions: '',
      allowedTools: ['Agent', 'Glob'],
      permissionMode: 'default',
      agents: {
        coder: { description: 'writes code', prompt: 'You write code.', tools: ['Glob'] },
        tester: { description: 'tests code', prompt: 'You test code.', tools: ['Glob'] },
      },
    };
    const runtime = harness.runtime();
    const result = await runtime.run(spec, 'Have the parser written and tested.');
    runtime.close();
    expect(result.ok, result.error ?? '').toBe(true);
    expect(harness.model.unmatched).toEqual([]);

    // The manifest row, as the runtime wrote it when the step ended.
    const [row] = JSON.parse(readFileSync(runtime.manifestPath, 'utf8')) as ManifestRow[];
    const main = sum(...MAIN);
    expect(row?.main).toEqual({
      model: MODEL,
      turns: 2,
      ...main,
      cost_usd: expect.closeTo(price(main), 6),
      tool_calls: 2,
    });
    const byType = Object.fromEntries((row?.workers ?? []).map((worker) => [worker.agent_type, worker]));
    expect(Object.keys(byType).sort()).toEqual(['coder', 'tester']);
    const coder = sum(...CODER);
    expect(byType.coder).toMatchObject({
      description: 'Write the parser',
      model: MODEL,
      turns: 2,
      ...coder,
      tool_calls: 1,
    });
    expect(byType.coder?.cost_usd).toBeCloseTo(price(coder), 6);
    const tester = TESTER[0]!;
    expect(byType.tester).toMatchObject({
      description: 'Test the parser',
      model: MODEL,
      turns: 1,
      ...tester,
      tool_calls: 0,
    });
    expect(byType.tester?.cost_usd).toBeCloseTo(price(tester), 6);
    expect(byType.coder?.agent_id).toMatch(/^[0-9a-f]+$/);
    expect(byType.coder?.duration_s).toBeGreaterThanOrEqual(0);
    // The binary prices from the same catalog: the ledger reconciles with the SDK's own figure.
    expect(price(main) + price(coder) + price(tester)).toBeCloseTo(row?.cost_usd ?? 0, 6);

    // report --json from a separate process: the same numbers.
    const json = await look(harness.workspace, 'report', '--json');
    expect(json.status, json.stderr).toBe(0);
    const report = JSON.parse(json.stdout) as RunReport;
    const [step] = report.steps;
    expect(step?.ledger_source).toBe('manifest');
    expect(step?.main).toEqual(row?.main);
    expect(step?.workers).toEqual(row?.workers);
    expect(step?.reconciliation.difference_usd).toBeCloseTo(0, 6);
    expect(report.totals.main).toMatchObject({ turns: 2, ...main });
    expect(report.totals.workers).toMatchObject({ turns: 3, ...sum(coder, tester) });
    expect(step?.threads.workers.turns).toBe(3);
    expect(step?.context.generations[0]?.points.map(([, tokens]) => tokens)).toEqual(
      MAIN.map((u) => u.input_tokens + u.cache_read_input_tokens + u.cache_creation_input_tokens),
    );

    // The HTML page: self-contained, drawn, and its tables say what the JSON says.
    const file = join(harness.root, 'report.html');
    const html = await look(harness.workspace, 'report', '--html', file);
    expect(html.status, html.stderr).toBe(0);
    // Only where the page is: the text report is `flower report` (issue 21: it printed both).
    expect(html.stdout).toBe(
      `Wrote the report page to ${file} (${Math.ceil(statSync(file).size / 1024)} KB); open it in a browser.\n`,
    );
    expect(html.stderr).toBe('');
    const page = await readPage(browser!, file);
    expect(page.consoleErrors).toEqual([]);
    expect(page.requests.filter((url) => !url.startsWith('data:'))).toEqual([pathToFileURL(file).href]);
    expect(page.charts).toBeGreaterThanOrEqual(3);
    expect(page.blankCanvases).toBe(0);
    expect(page.screenshotColours).toBeGreaterThan(20);
    const threads = [step!.main, ...step!.workers];
    expect(page.ledger).toHaveLength(threads.length);
    page.ledger.forEach((cells, index) => {
      const thread = threads[index]!;
      expect(cells).toMatchObject({
        turns: String(thread.turns),
        input_tokens: String(thread.input_tokens),
        output_tokens: String(thread.output_tokens),
        cache_read_input_tokens: String(thread.cache_read_input_tokens),
        cache_creation_input_tokens: String(thread.cache_creation_input_tokens),
        cost_usd: `$${thread.cost_usd?.toFixed(4)}`,
        tool_calls: String(thread.tool_calls),
      });
    });
    expect(page.steps[0]).toMatchObject({
      step: 'work',
      cost_usd: `$${step?.cost_usd.toFixed(4)}`,
      num_turns: String(step?.num_turns),
    });
  }, 180_000);
});

/** A reader that may look at files: the step the resume tests run twice. */
const readingSpec: AgentSpec = {
  name: 'work',
  instructions: '',
  allowedTools: ['Read'],
  permissionMode: 'default',
};

describe('what a resume changed', () => {
  it('records the rewrite layers’ report of each resume and the handoff threshold in the step’s row', async () => {
    harness = await startHarness([
      mock.text('first', { usage: usage(1_000, 0, 0, 10) }),
      mock.text('second', { usage: usage(1_200, 0, 0, 10) }),
    ]);
    const runtime = harness.runtime({ handoff: { window: 400_000 } });
    const first = await runtime.run(readingSpec, 'One.');
    const second = await runtime.run(readingSpec, 'Two.', {
      stepName: 'work#round2',
      resume: first.sessionId ?? '',
    });
    runtime.close();
    const rows = JSON.parse(readFileSync(runtime.manifestPath, 'utf8')) as ManifestRow[];
    expect(rows[0]?.rewrites).toBeUndefined();
    expect(rows[1]?.rewrites).toEqual([
      expect.objectContaining({ session_id: first.sessionId, expired: 0, trimmed: 0, pruned: 0 }),
    ]);
    expect(rows.map((row) => row.handoff_at)).toEqual([runtime.handoff.at, runtime.handoff.at]);
    // The second round continued the first one's session: the report says it resumed (issue 21:
    // `resumed no`, since the runtime's flag counts only resumes in the middle of a step).
    const json = JSON.parse((await look(harness.workspace, 'report', '--json')).stdout) as RunReport;
    expect(json.steps.map((step) => [step.step, step.resumed])).toEqual([
      ['work', false],
      ['work#round2', true],
    ]);
    const text = (await look(harness.workspace, 'report')).stdout;
    expect(text).toMatch(/^ {2}work#round2\s+ok\s+\$\d+\.\d{4}\s+1\s+1\s+yes\s/m);
    // The second round's ledger holds its own turn only, though it continued the same session.
    expect(rows[1]?.main).toMatchObject({ turns: 1, input_tokens: 1_200 });
    expect(second.ok).toBe(true);
  }, 120_000);
});

describe('the books at a step end (issue 23)', () => {
  it('read only what the step appended to a resumed session, not its whole history', async () => {
    harness = await startHarness([
      mock.toolUse('Read', { file_path: 'a.txt' }, { usage: usage(1_000, 0, 0, 10) }),
      mock.toolUse('Read', { file_path: 'b.txt' }, { usage: usage(1_100, 0, 0, 10) }),
      mock.text('first', { usage: usage(1_150, 0, 0, 10) }),
      mock.text('second', { usage: usage(1_200, 0, 0, 10) }),
    ]);
    const runtime = harness.runtime();
    const first = await runtime.run(readingSpec, 'One.');
    const { SqliteSessionStore } = await import('../../src/store/sqlite-session-store.js');
    const stored = (store: InstanceType<typeof SqliteSessionStore>) =>
      store.entryCounts(runtime.projectKey).reduce((total, key) => total + key.entries, 0);
    // The runtime's own store (private): what it holds before and after the second step.
    const store = (runtime as unknown as { store: InstanceType<typeof SqliteSessionStore> }).store;
    const wholeReads = vi.spyOn(SqliteSessionStore.prototype, 'loadRaw');
    const counting = vi.spyOn(SqliteSessionStore.prototype, 'entriesFrom');
    try {
      const before = stored(store);
      const second = await runtime.run(readingSpec, 'Two.', {
        stepName: 'work#round2',
        resume: first.sessionId ?? '',
      });
      const after = stored(store);
      expect(second.ok).toBe(true);
      expect(wholeReads).not.toHaveBeenCalled();
      const read = counting.mock.results.reduce(
        (total, call) => total + ((call.value as unknown[] | null)?.length ?? 0),
        0,
      );
      // The first step's entries (prompt, three responses, two tool results) are not read again.
      expect(before).toBeGreaterThanOrEqual(6);
      expect(read).toBe(after - before);
      expect(second.ledger?.main).toMatchObject({ turns: 1, input_tokens: 1_200 });
    } finally {
      wholeReads.mockRestore();
      counting.mockRestore();
      runtime.close();
    }
  }, 120_000);
});

describe('status, report and log where there is little or nothing to show', () => {
  it('an empty directory: one line each, exit 1, and status does not become a paid task', async () => {
    const workspace = tempDir('report-empty');
    expectOneLineFailure(await look(workspace, 'status'), /^flower: No task in .*start one with: flower "/);
    expectOneLineFailure(await look(workspace, 'report'), /^flower: No runs in .*run flower here first/);
    expectOneLineFailure(
      await look(workspace, 'log', 'work'),
      /^flower: No session store at .*run flower here first/,
    );
    // Nothing was created: not even runs/.
    expect(readdirSync(workspace)).toEqual([]);
  });

  it('a corrupt manifest: said so, left as it is, nothing set aside', async () => {
    const workspace = tempDir('report-corrupt');
    const runDir = join(workspace, 'runs');
    mkdirSync(join(workspace, '.flower', 'notes'), { recursive: true });
    mkdirSync(runDir);
    writeFileSync(join(workspace, '.flower', 'notes', 'brief.md'), '## Goal\nA parser.\n');
    writeFileSync(join(runDir, 'manifest.json'), '[{"step": "work", "cost_usd": 0.5');
    const before = fingerprint(runDir);

    const status = await look(workspace, 'status');
    expect(status.status, status.stderr).toBe(0);
    expect(status.stdout).toMatch(/^! runs\/manifest\.json is unreadable \(not valid JSON\).*left as it is/m);
    expect(status.stdout).toContain('Task: A parser.');
    expectOneLineFailure(
      await look(workspace, 'report'),
      /^flower: .*manifest\.json is unreadable \(not valid JSON\).*left as it is/,
    );
    expectOneLineFailure(await look(workspace, 'report', '--json'), /manifest\.json is unreadable/);
    expectOneLineFailure(await look(workspace, 'log', 'work'), /^flower: No session store/);

    expect(fingerprint(runDir)).toEqual(before);
    expect(readdirSync(runDir).sort()).toEqual(['manifest.json']);
  });

  it('a run in progress: shown as running while the flower works on, which it finishes undisturbed', async () => {
    harness = await startHarness([
      mock.toolUse('Glob', { pattern: '*' }, { usage: usage(5_000, 0, 0, 50) }),
      { text: 'Finished looking.', usage: usage(6_000, 0, 0, 20), delayMs: 8_000 },
    ]);
    let pid = 0;
    const flower = runNode(
      ['--input-type=module', '-e', stepDriver, harness.workspace, 'work', 'Look around.'],
      harness.env,
      { onSpawn: (child) => (pid = child.pid ?? 0) },
    );
    const runDir = join(harness.workspace, 'runs');
    // Wait until the first turn is in the store and the step is in the lineage.
    const deadline = Date.now() + 60_000;
    while (
      Date.now() < deadline &&
      !(existsSync(join(runDir, 'lineage.json')) && harness.model.mainRequests().length >= 2)
    ) {
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(harness.model.mainRequests().length).toBeGreaterThanOrEqual(2);
    const before = fingerprint(runDir);

    const status = await look(harness.workspace, 'status');
    expect(status.status, status.stderr).toBe(0);
    // The process at work, from its in-flight marker (issue 21: no holder was shown).
    expect(status.stdout).toMatch(new RegExp(`^ {2}work\\s+running · pid ${pid} since \\d\\d:\\d\\d$`, 'm'));
    expect(status.stdout).toMatch(/^Next: a step is in progress/m);

    const json = await look(harness.workspace, 'report', '--json');
    expect(json.status, json.stderr).toBe(0);
    const report = JSON.parse(json.stdout) as RunReport;
    expect(report.steps.map((step) => [step.step, step.outcome])).toEqual([['work', 'running']]);
    expect(report.steps[0]?.main).toMatchObject({ turns: 1, input_tokens: 5_000, output_tokens: 50 });
    // Its turns and time so far, not 0 turns in 0:00 (issue 21).
    expect(report.steps[0]?.num_turns).toBe(1);
    expect(report.steps[0]?.duration_s).toBeGreaterThan(0);
    const text = await look(harness.workspace, 'report');
    expect(text.stdout).toMatch(
      /^ {2}work\s+running · pid \d+ since \d\d:\d\d\s+-\s+1\s+1\s+no\s+0\s+\d+:\d\d so far$/m,
    );

    const log = await look(harness.workspace, 'log', 'work');
    expect(log.status, log.stderr).toBe(0);
    expect(log.stdout).toContain('Look around.');
    expect(log.stdout).toContain('**→ Glob**');
    expect(fingerprint(runDir)).toEqual(before);

    const done = await flower;
    expect(done.code, done.stderr).toBe(0);
    expect(done.stdout).toContain('"ok":true');
    const after = JSON.parse((await look(harness.workspace, 'report', '--json')).stdout) as RunReport;
    expect(after.steps.map((step) => [step.step, step.outcome])).toEqual([['work', 'ok']]);
    expect(after.steps[0]?.main).toMatchObject({ turns: 2, input_tokens: 11_000, output_tokens: 70 });
  }, 120_000);
});
