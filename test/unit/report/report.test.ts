/**
 * The report room's pure parts on hand-built books and transcripts: outcomes (explicit goal-guard
 * fields win, older rows are derived), the report document, the running-step inference, status,
 * the log, and what every view does with hostile transcript text.
 */
import { describe, expect, it } from 'vitest';
import { buildReport, questionCounts, runningSteps } from '../../../src/report/report.js';
import { reportHtml } from '../../../src/report/report-html.js';
import { reportLines } from '../../../src/report/report-text.js';
import type { RunData, StoredSession } from '../../../src/report/run-data.js';
import { NoTaskError, statusLines, taskStatus } from '../../../src/report/status.js';
import { pickStep, rejectedLine, stepRecords, verdictLine } from '../../../src/report/steps.js';
import { commandWord, downsample, stepThreads } from '../../../src/report/threads.js';
import { stepJsonLines, stepMarkdown } from '../../../src/report/transcript-markdown.js';
import type { SessionTranscripts } from '../../../src/runtime/ledger.js';
import type { StoredManifestRow } from '../../../src/runtime/manifest.js';
import { HOSTILE_ESCAPES, HOSTILE_SECRETS } from '../../support/hostile-payloads.js';
import { jsonLeaksIn, jsonLinesLeaksIn, leaksIn } from '../../support/leaks.js';
import { books, manifestRow, T0 } from '../../support/report-books.js';
import { type Entry, TranscriptBuilder } from '../../support/transcript-builder.js';

const OPUS = 'claude-opus-5-5';
const row = manifestRow;

const usage = (input: number, output: number) => ({
  input_tokens: input,
  output_tokens: output,
  cache_read_input_tokens: 0,
  cache_creation_input_tokens: 0,
});

const CHECK = {
  command: 'npm test',
  exit_code: 1,
  passed: false,
  duration_s: 4.2,
  output_path: '.flower/checks/1.txt',
};

describe('step outcomes', () => {
  it('reads a verdict from the judge’s text when the row has no explicit fields, and rejects the round it judged', () => {
    const records = stepRecords([
      row({ step: 'work' }),
      row({ step: 'work:verdict#1', text: '## Conclusion\nnot yet\n\n## Reason\nThe tests fail.\n' }),
      row({ step: 'work#round2' }),
      row({ step: 'work:verdict#2', text: '## Conclusion\nachieved\n\n## Reason\nAll green.' }),
    ]);
    expect(records.map((record) => [record.step, record.outcome, record.detail])).toEqual([
      ['work', 'rejected', 'The tests fail.'],
      ['work:verdict#1', 'verdict', 'not yet'],
      ['work#round2', 'ok', ''],
      ['work:verdict#2', 'verdict', 'achieved'],
    ]);
    expect(records[1]?.verdict).toMatchObject({
      verdict: 'not yet',
      reason: 'The tests fail.',
      round: 1,
      rounds: null,
    });
  });

  it('lets the goal guard’s explicit fields win over the text', () => {
    const [work, verdict] = stepRecords([
      row({ step: 'work', rejected: 'Checks 2 and 3 fail.' }),
      row({
        step: 'work:verdict#2',
        text: '## Conclusion\nachieved',
        verdict: 'not yet',
        reason: 'Checks 2 and 3 fail.',
        round: 2,
        rounds: 3,
        checks: [CHECK],
      }),
    ]);
    expect(work).toMatchObject({ outcome: 'rejected', detail: 'Checks 2 and 3 fail.' });
    expect(verdict?.verdict).toEqual({
      verdict: 'not yet',
      reason: 'Checks 2 and 3 fail.',
      round: 2,
      rounds: 3,
      checks: [CHECK],
      notPassed: [],
    });
    expect(verdictLine(verdict!.verdict!)).toBe('not yet after 2/3 rounds: Checks 2 and 3 fail.');
  });

  it('keeps what was missing and what the judge left open as data, and says both in one line (issue 21)', () => {
    const [clarify, work, verdict, older, olderVerdict] = stepRecords([
      row({
        step: 'clarify',
        rejected: 'the reply is not a complete brief',
        missing: ['Goal', 'Constraints'],
      }),
      row({ step: 'work', rejected: 'Two checks fail.', missing: ['npm test passes', 'README exists'] }),
      row({
        step: 'work:verdict#1',
        verdict: 'not yet',
        reason: 'Two checks fail.',
        not_passed: ['npm test passes', 'README exists'],
        round: 1,
        rounds: 2,
      }),
      // An older row: no `rejected` or `not_passed`; the judge's text says what is left.
      row({ step: 'work', run: 'old' }),
      row({
        step: 'work:verdict#1',
        run: 'old',
        text: '## Conclusion\nnot yet\n\n## Reason\nNo README.\n\n## Not passed\n- README exists',
      }),
    ]);
    expect(clarify).toMatchObject({ outcome: 'rejected', missing: ['Goal', 'Constraints'] });
    expect(rejectedLine(clarify!)).toBe('the reply is not a complete brief (missing: Goal; Constraints)');
    expect(work).toMatchObject({ outcome: 'rejected', missing: ['npm test passes', 'README exists'] });
    expect(verdict?.verdict?.notPassed).toEqual(['npm test passes', 'README exists']);
    expect(verdictLine(verdict!.verdict!)).toBe(
      'not yet after 1/2 rounds: Two checks fail; not passed: npm test passes; README exists',
    );
    expect(older).toMatchObject({ outcome: 'rejected', detail: 'No README.', missing: ['README exists'] });
    expect(verdictLine(olderVerdict!.verdict!)).toBe(
      'not yet after 1 round: No README; not passed: README exists',
    );
  });

  it('says why a step failed, and reads rows of other versions without their fields', () => {
    const [failed, bare] = stepRecords([
      row({ step: 'work', ok: false, error: 'API Error: 529 Overloaded\nmore' }),
      { step: 'clarify', ok: true } as StoredManifestRow,
    ]);
    expect(failed).toMatchObject({ outcome: 'failed', detail: 'API Error: 529 Overloaded' });
    expect(bare).toMatchObject({ outcome: 'ok', costUsd: 0, attempts: 1, sessions: [], ledger: undefined });
  });

  it('picks the latest row of a label, or the one of a given run', () => {
    const records = stepRecords([
      row({ step: 'work', run: 'a', started_at: T0 }),
      row({ step: 'work', run: 'b', started_at: T0 + 500 }),
    ]);
    expect(pickStep(records, 'work')?.run).toBe('b');
    expect(pickStep(records, 'work', 'a')?.run).toBe('a');
    expect(pickStep(records, 'nope')).toBeUndefined();
  });
});

/** A main session with one dispatched worker; times follow the builder's clock (T0 + n s). */
function workSession(): SessionTranscripts {
  const main = new TranscriptBuilder('m');
  main.prompt('Do it.');
  const call = main.toolUseBlock('Agent', {
    subagent_type: 'coder',
    description: 'Build \u001b[31mred\u001b[0m',
    prompt: 'Build.',
  });
  main.response([call], { model: OPUS, usage: usage(10_000, 100) });
  main.push({
    type: 'user',
    message: { role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id, content: 'launched' }] },
    toolUseResult: { agentId: 'w1' },
  });
  main.bash('git status', 'clean');
  main.response([{ type: 'text', text: 'Done.' }], { model: OPUS, usage: usage(2_000, 10) });
  main.denied('rm -rf build');
  const worker = new TranscriptBuilder('w');
  worker.prompt('Build.');
  worker.response([{ type: 'text', text: 'Built.' }], { model: OPUS, usage: usage(500, 50) });
  worker.apiError('API Error: Connection error.');
  return {
    sessionId: 's1',
    main: main.entries,
    subagents: [{ subpath: 'subagents/agent-w1', agentId: 'w1', entries: worker.entries }],
  };
}

describe('stepThreads', () => {
  it('splits main and workers, finds drops over 30 %, denials, Bash words and outages', () => {
    const threads = stepThreads([workSession()], { from: -Infinity, to: Infinity });
    expect(threads.main.turns).toBe(4); // two scripted responses + the builder's bash call and denial
    expect(threads.workers).toMatchObject({ turns: 1, tool_calls: 0 });
    expect(threads.main.tools).toMatchObject({ Agent: 1, Bash: 2 });
    expect(threads.denials).toBe(1);
    expect(threads.bash_first_words).toEqual({ git: 1, rm: 1 });
    expect(threads.outages).toEqual([
      expect.objectContaining({ side: 'worker', text: 'API Error: Connection error.' }),
    ]);
    // 10 000 → 2 150 (bash call: 100 + 2000 + 50) is a drop of more than 30 %.
    expect(threads.drops[0]).toMatchObject({ generation: 1, from: 10_000 });
  });

  it('reads the command word past assignments and paths', () => {
    expect(commandWord('FOO=1 BAR=2 /usr/bin/make -j4')).toBe('make');
    expect(commandWord('  ')).toBe('(empty)');
  });

  it('downsamples a long curve within its budget and keeps the marked turns', () => {
    const points = Array.from({ length: 20_000 }, (_, index) => ({
      turn: index + 1,
      tokens: 1000 + index,
      at: null,
    }));
    points[12_345] = { turn: 12_346, tokens: 5, at: null };
    const kept = downsample(points, 400, new Set([777]));
    expect(kept.length).toBeLessThanOrEqual(403);
    expect(kept.map((point) => point.turn)).toEqual(expect.arrayContaining([1, 777, 12_346, 20_000]));
    expect(kept.map((point) => point.turn)).toEqual(
      [...kept.map((point) => point.turn)].sort((a, b) => a - b),
    );
  });
});

describe('buildReport', () => {
  const session = workSession();
  const window = { started_at: T0 - 10, ended_at: T0 + 1000 };

  it('computes the ledger from the transcripts for a row that lacks it, and keeps a recorded one as it is', () => {
    const recorded = {
      main: {
        model: OPUS,
        turns: 9,
        input_tokens: 1,
        output_tokens: 2,
        cache_read_input_tokens: 3,
        cache_creation_input_tokens: 4,
        cost_usd: 0.5,
        tool_calls: 0,
      },
      workers: [],
    };
    const report = buildReport(
      {
        data: books([
          row({ step: 'work', session_id: 's1', cost_usd: 0.1, ...window }),
          row({ step: 'other', session_id: 's1', cost_usd: 0.2, ...window, ...recorded }),
        ]),
        transcripts: new Map([['s1', session]]),
      },
      { all: true, now: T0 + 2000 },
    );
    const [computed, kept] = report.steps;
    expect(computed?.ledger_source).toBe('transcripts');
    expect(computed?.workers).toHaveLength(1);
    expect(computed?.workers[0]).toMatchObject({
      agent_id: 'w1',
      agent_type: 'coder',
      turns: 1,
      input_tokens: 500,
    });
    expect(kept).toMatchObject({ ledger_source: 'manifest', main: recorded.main, workers: [] });
    expect(computed?.workers[0]?.cost_usd).toBeCloseTo((500 * 4 + 50 * 20) / 1e6, 9);
    // The builder's own turns are of a model the table does not know: no sum, no difference.
    expect(computed?.reconciliation).toEqual({ sdk_usd: 0.1, ledger_usd: null, difference_usd: null });
    expect(kept?.reconciliation).toEqual({ sdk_usd: 0.2, ledger_usd: 0.5, difference_usd: 0.3 });
  });

  it('makes control sequences in transcript text visible and inert before they reach any view', () => {
    const report = buildReport(
      {
        data: books([row({ step: 'work', session_id: 's1', ...window })]),
        transcripts: new Map([['s1', session]]),
      },
      { now: T0 },
    );
    expect(report.steps[0]?.workers[0]?.description).toBe('Build ␛[31mred␛[0m');
    expect(JSON.stringify(report)).not.toContain('\\u001b');
    expect(reportLines(report).join('\n')).not.toContain('\u001b');
  });

  it('totals the whole task (every run and the asides) while listing only the last run', () => {
    const report = buildReport(
      {
        data: books(
          [
            row({ step: 'clarify', run: 'old', cost_usd: 1, started_at: T0 }),
            row({ step: 'work', run: 'new', cost_usd: 2, started_at: T0 + 500, ended_at: T0 + 600 }),
          ],
          { asides: { state: 'ok', document: [row({ step: 'aside', run: 'x', cost_usd: 0.25 })] } },
        ),
        transcripts: new Map(),
      },
      { now: T0 + 700 },
    );
    expect(report.steps.map((step) => step.step)).toEqual(['work']);
    expect(report.runs.map((run) => run.run)).toEqual(['new']);
    expect(report.totals).toMatchObject({
      cost_usd: 3.25,
      steps_cost_usd: 3,
      asides_cost_usd: 0.25,
      runs: 2,
    });
    expect(report.asides).toMatchObject({ count: 1, cost_usd: 0.25 });
  });

  it('says so when the manifest is unreadable, and does not call finished sessions running', () => {
    const sessions = new Map<string, StoredSession>([
      ['s1', { projectKey: '-ws', sessionId: 's1', mtime: (T0 + 50) * 1000 }],
    ]);
    const report = buildReport(
      {
        data: books([], {
          manifest: { state: 'corrupt', document: [], reason: 'not valid JSON' },
          store: { state: 'ok', sessions },
          lineage: { state: 'ok', document: { workspace: '/ws', woke: 1, steps: { work: 's1' } } },
        }),
        transcripts: new Map(),
      },
      { now: T0 },
    );
    expect(report.notices[0]).toContain('manifest.json is unreadable (not valid JSON)');
    expect(report.notices[0]).toContain('left as it is');
    expect(report.steps).toEqual([]);
    expect(report.manifest).toEqual({ state: 'corrupt', reason: 'not valid JSON', set_aside: [] });
  });
});

describe('runningSteps', () => {
  const stored = (sessionId: string, at: number): [string, StoredSession] => [
    sessionId,
    { projectKey: '-ws', sessionId, mtime: at * 1000 },
  ];

  it('finds a lineage step with no row, a session written after its last row, and an unrecorded later session', () => {
    const records = stepRecords([row({ step: 'clarify', session_id: 'c', ended_at: T0 + 100 })]);
    const running = runningSteps(
      records,
      { clarify: 'c', work: 'w' },
      new Map([
        stored('c', T0 + 500),
        stored('w', T0 + 300),
        stored('judge', T0 + 400),
        stored('old', T0 + 50),
      ]),
    );
    expect(running.map((step) => [step.step, step.startedAt])).toEqual([
      ['work', 0],
      ['clarify', T0 + 100],
      ['(unrecorded session)', T0 + 100],
    ]);
    expect(running.every((step) => step.outcome === 'running')).toBe(true);
  });

  it('leaves a session alone that was last written when its step ended', () => {
    const records = stepRecords([row({ step: 'work', session_id: 'w', ended_at: T0 + 100 })]);
    expect(runningSteps(records, { work: 'w' }, new Map([stored('w', T0 + 100.5)]))).toEqual([]);
  });
});

describe('questionCounts', () => {
  it('counts asked, answered by a person, and decided by the agent', () => {
    const log = [
      '- **Q** (q1) Which language?',
      '  - options: JS / Python',
      '  - **A** [answered] JS',
      '- **Q** (q2) Which port?',
      '  - **A** [timeout] assumed 8080',
      '- **Q** (q3) Why?',
      '  - **A** [declined] ',
    ].join('\n');
    expect(questionCounts(log)).toEqual({ asked: 3, answered: 1, assumed: 1, other: 1 });
  });
});

describe('taskStatus', () => {
  const data = (rows: StoredManifestRow[], extra: Parameters<typeof books>[1] = {}) =>
    books(rows, {
      workbench: {
        root: '/ws/.flower',
        scripts: { files: 0, bytes: 0 },
        artifacts: { files: 0, bytes: 0 },
        notes: { files: 2, bytes: 10 },
        spill: { files: 0, bytes: 0 },
        brief:
          '## Goal\nA tiny \u001b]0;pwned\u0007greeter.\n\n## Acceptance\n- prints hi\n\n## Boundaries\n- none\n\n## Unknowns & assumptions\n- none\n',
        goal: '# Statement\n\nIt greets.\n\n# Checklist\n\n- `node hi.js` prints hi\n',
      },
      ...extra,
    }) as Parameters<typeof taskStatus>[0];

  it('refuses a directory with no task in one line', () => {
    expect(() => taskStatus(books([]) as Parameters<typeof taskStatus>[0])).toThrow(NoTaskError);
    expect(() => taskStatus(books([]) as Parameters<typeof taskStatus>[0])).toThrow(
      /^No task in \/ws .*flower "/,
    );
  });

  it('shows the request, the checks, the last verdict with its round, the task spend and what to type next', () => {
    const status = taskStatus(
      data(
        [
          row({ step: 'work', cost_usd: 1, rejected: 'Still red.' }),
          row({
            step: 'work:verdict#2',
            cost_usd: 0.5,
            verdict: 'not yet',
            reason: 'Still red.',
            round: 2,
            rounds: 3,
          }),
        ],
        { asides: { state: 'ok', document: [row({ step: 'aside', cost_usd: 0.25 })] } },
      ),
    );
    const lines = statusLines(status, T0 + 3700);
    expect(lines).toContain('Task: A tiny ␛]0;pwned␇greeter.');
    expect(lines).toContain('  - `node hi.js` prints hi');
    expect(lines).toContain('Last verdict: not yet after 2/3 rounds: Still red.');
    expect(lines).toContain('Spent: $1.7500 on the whole task (steps $1.5000, asides $0.2500) over 1 run');
    expect(lines.find((line) => line.startsWith('Last ran:'))).toMatch(/\(1 hour ago\)$/);
    expect(lines.at(-1)).toBe('Next: `flower` to continue where it stopped');
    expect(lines.join('\n')).not.toMatch(/[\u001b\u0007]/);
  });

  it('points at the log after a failure and at a new task after success', () => {
    const failed = taskStatus(data([row({ step: 'work', ok: false, error: 'boom' })]));
    expect(failed.next).toContain('`flower log work`');
    const done = taskStatus(data([row({ step: 'work:verdict#1', text: '## Conclusion\nachieved' })]));
    expect(done.next).toContain('--new');
  });
});

describe('the log', () => {
  it('writes who said what, tool inputs, results cut with their size, and marks the synthetic turn', () => {
    const main = new TranscriptBuilder('m');
    main.prompt('Go.');
    main.tool('Bash', { command: 'cat big.txt' }, `\`\`\`\` breakout ${'x'.repeat(5000)}`);
    main.apiError('API Error: Connection error.');
    main.say('Done.');
    const markdown = stepMarkdown(
      { step: 'work', run: 'r1', outcome: 'ok', costUsd: 0.5 },
      [{ sessionId: 's', main: main.entries, subagents: [] }],
      { from: -Infinity, to: Infinity },
    );
    expect(markdown).toContain('# work · run r1 · ok · $0.5000');
    expect(markdown).toContain('**User**');
    expect(markdown).toContain('**→ Bash**');
    expect(markdown).toContain('"command": "cat big.txt"');
    expect(markdown).toContain('**← result** (5,014 characters)');
    expect(markdown).toContain('… (cut: 5,014 characters in all)');
    expect(markdown).toContain("**API error** (the harness's stand-in turn; the model never saw it)");
    // The result holds four backticks; its fence must be longer so the text cannot close it.
    expect(markdown).not.toMatch(/^`{1,4}\n`{4} breakout/m);
    expect(markdown).toContain('`````\n```` breakout');
  });

  it('gives the entries back as stored for --format jsonl, inside the window', () => {
    const main = new TranscriptBuilder('m');
    main.prompt('one');
    main.prompt('two');
    const second = Date.parse(String(main.entries[1]?.timestamp)) / 1000;
    const lines = stepJsonLines([{ sessionId: 's', main: main.entries, subagents: [] }], {
      from: second - 0.1,
      to: Infinity,
    })
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as Entry);
    expect(lines).toEqual([main.entries[1]]);
  });
});

describe('hostile names and text from a run, in every view', () => {
  const escapes = Object.values(HOSTILE_ESCAPES).join('');
  const secrets = Object.values(HOSTILE_SECRETS).join(' ');
  // The model names its tools: the binary records whatever name the call carried.
  const github = String(HOSTILE_SECRETS.github);
  const toolName = `${github}${HOSTILE_ESCAPES.title}${HOSTILE_ESCAPES.rlo}`;
  const toolShown = `${github.slice(0, 4)}***(${github.length} chars)␛]0;PWNED-TITLE␇[U+202E]txt.exe`;
  const window = { started_at: T0 - 10, ended_at: T0 + 1000 };

  function hostileSession(): SessionTranscripts {
    const main = new TranscriptBuilder('m');
    main.prompt(`Do it. ${secrets}`);
    const call = main.toolUseBlock('Agent', {
      subagent_type: `coder${HOSTILE_ESCAPES.hyperlink}`,
      description: `Write ${escapes} ${HOSTILE_SECRETS.anthropic}`,
      prompt: 'Build.',
    });
    main.response([call], { model: OPUS, usage: usage(1000, 10) });
    main.push({
      type: 'user',
      message: {
        role: 'user',
        content: [{ type: 'tool_result', tool_use_id: call.id, content: 'launched' }],
      },
      toolUseResult: { agentId: 'w1' },
    });
    main.tool(toolName, {}, 'done');
    // A value whose lines start with tokens: quoted as JSON, each would follow the `n` of `\n`.
    main.tool('Write', { file_path: 'notes.txt', content: Object.values(HOSTILE_SECRETS).join('\n') }, 'ok');
    main.say(Object.values(HOSTILE_SECRETS).join('\n'));
    main.tool('constructor', {}, 'done');
    main.tool('__proto__', {}, 'done');
    main.bash(`${HOSTILE_SECRETS.slack}${HOSTILE_ESCAPES.clear} ls`, 'ok');
    main.bash(`${HOSTILE_SECRETS.stripe}${HOSTILE_ESCAPES.bell}`, 'ok');
    main.apiError(`API Error: ${HOSTILE_ESCAPES.clipboard} ${HOSTILE_SECRETS.jwt}`);
    const worker = new TranscriptBuilder('w');
    worker.prompt('Build.');
    worker.response([worker.toolUseBlock(`Write${HOSTILE_ESCAPES.csi8bit}`, { file_path: 'x' })], {
      model: OPUS,
      usage: usage(500, 50),
    });
    return {
      sessionId: 's1',
      main: main.entries,
      subagents: [{ subpath: 'subagents/agent-w1', agentId: 'w1', entries: worker.entries }],
    };
  }

  function hostileReport() {
    return buildReport(
      {
        data: books([
          row({ step: `work${HOSTILE_ESCAPES.title}`, session_id: 's1', ...window }),
          row({
            step: 'work:verdict#1',
            ...window,
            verdict: 'not yet',
            reason: `Still red ${escapes} ${HOSTILE_SECRETS.pem}`,
            round: 1,
            rounds: 3,
            checks: [
              {
                command: `cat ${HOSTILE_SECRETS.urlPassword}${HOSTILE_ESCAPES.nul}`,
                exit_code: 1,
                passed: false,
                duration_s: 1,
                output_path: `.flower/artifacts/checks/${HOSTILE_ESCAPES.rlo}.log`,
              },
            ],
          }),
          row({
            step: 'work#round2',
            ...window,
            ok: false,
            error: `${HOSTILE_ESCAPES.clear}${HOSTILE_SECRETS.awsSecret} ${HOSTILE_SECRETS.dbPassword}`,
          }),
        ]),
        transcripts: new Map([['s1', hostileSession()]]),
      },
      { now: T0 + 2000 },
    );
  }

  it('prints a tool name with an escape sequence as visible, inert text in `report` (observed: the raw title sequence)', () => {
    const text = reportLines(hostileReport()).join('\n');
    expect(leaksIn('report text', text)).toEqual([]);
    expect(text).toContain(`${toolShown} 1`);
    expect(text).toContain('work␛]0;PWNED-TITLE␇');
    expect(text).toContain('coder␛]8;;https://evil.test/');
    expect(text).toContain('␛[2J␛[H');
    // A tool named like a property of every object counts like any other tool.
    expect(text).toMatch(/constructor 1\b/);
    expect(text).toMatch(/__proto__ 1\b/);
  });

  it('passes every string field of `--json`, keys too, through the sink', () => {
    const report = hostileReport();
    const json = JSON.stringify(report, null, 2);
    expect(jsonLeaksIn('report --json', json)).toEqual([]);
    expect(json).not.toMatch(/\\u00(?:0|1)[0-9a-f]/);
    expect(report.steps[0]?.threads.main.tools).toMatchObject({
      Agent: 1,
      constructor: 1,
      __proto__: 1,
    });
    expect(Object.keys(report.steps[0]?.threads.main.tools ?? {})).toContain(toolShown);
    expect(report.steps[0]?.workers[0]?.agent_type).toBe('coder␛]8;;https://evil.test/␛\\click␛]8;;␛\\');
    expect(Object.keys(report.steps[0]?.threads.workers.tools ?? {})).toEqual(['Write[U+009B]31m']);
  });

  it('writes the HTML page with the payloads as escaped, inert text', () => {
    const page = reportHtml(hostileReport());
    expect(leaksIn('report --html', page)).toEqual([]);
    expect(page).not.toContain('https://evil.test/\x1b');
    expect(page).toContain(toolShown);
    expect(page).toMatch(/<title>flower report · \/ws<\/title>/);
  });

  it('shows hostile step names, outcomes and checks in `status` as inert text', () => {
    const status = taskStatus(hostileReportData());
    const text = statusLines(status, T0 + 3000).join('\n');
    expect(leaksIn('status', text)).toEqual([]);
    expect(text).toContain('work␛]0;PWNED-TITLE␇');
    expect(text).toContain('failed: ␛[2J␛[H');
  });

  function hostileReportData() {
    return books([
      row({ step: `work${HOSTILE_ESCAPES.title}`, session_id: 's1', ...window }),
      row({
        step: 'work#round2',
        ...window,
        ok: false,
        error: `${HOSTILE_ESCAPES.clear}${HOSTILE_SECRETS.awsSecret} ${HOSTILE_SECRETS.google}`,
      }),
    ]) as Parameters<typeof taskStatus>[0];
  }

  it('keeps the log Markdown and JSON lines free of secrets and raw controls, tool names and session ids included', () => {
    const session = { ...hostileSession(), sessionId: `s1${HOSTILE_ESCAPES.title}` };
    const markdown = stepMarkdown(
      { step: `work${HOSTILE_ESCAPES.rlo}`, run: `r${HOSTILE_ESCAPES.bell}`, outcome: 'ok', costUsd: 0 },
      [session],
      { from: -Infinity, to: Infinity },
    );
    expect(leaksIn('log markdown', markdown)).toEqual([]);
    expect(markdown).toContain(`**→ ${toolShown}**`);
    const lines = stepJsonLines([session], { from: -Infinity, to: Infinity });
    expect(jsonLinesLeaksIn('log --format jsonl', lines)).toEqual([]);
    expect(lines).not.toContain('\u202e');
  });
});

describe('RunData shape', () => {
  it('is what the report needs and nothing the tests cannot build', () => {
    const data: Omit<RunData, 'transcripts' | 'close'> = books([]);
    expect(Object.keys(data).sort()).toEqual([
      'asides',
      'lineage',
      'location',
      'manifest',
      'setAside',
      'store',
      'workbench',
    ]);
  });
});
