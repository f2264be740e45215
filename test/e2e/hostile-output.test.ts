/**
 * One sink for everything flower shows or writes (issue 20), accepted end to end: a hostile run —
 * keys in thirteen formats and the escape payloads (window title, clear screen, OSC 52 clipboard,
 * OSC 8 link, 8-bit CSI, BEL, RLO, NUL) in the request, in every role's text, in a tool's name, in
 * a worker's description, in the name of a file a worker writes, in what a worker's Bash prints
 * (`cat` of a workspace file: the sandbox keeps credential variables from the worker's shell) and
 * in what a goal check prints — and then everything a person sees or reads of it:
 *
 * - the run on a real terminal (tmux: the pane's text, and every byte written to it) and piped;
 * - `status`, `report` (text, `--json`, the HTML page, opened in Debian's Chromium), `log` of each
 *   step (Markdown and JSON lines), `doctor`, from a shell that never had the key;
 * - CLAUDE.md, AGENTS.md, the check logs and the workbench notes.
 *
 * Nowhere a secret's core (test/support/hostile-payloads.ts), nowhere a raw control: flower's own
 * colours and footer controls are allowed in the terminal's byte stream only. `log --format jsonl
 * --raw` is the one explicit raw mode: it prints the stored bytes and says so on stderr.
 *
 * Real binary (dist/: `npm run build` first), SDK, Claude Code, sandbox, checks and files; only the
 * model is scripted. Every assertion names the output and what it leaked.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunReport } from '../../src/report/report.js';
import type { MockResponse, MockScript } from '../../src/testing/index.js';
import { HOSTILE_ESCAPES, HOSTILE_SECRETS } from '../support/hostile-payloads.js';
import { jsonLeaksIn, jsonLinesLeaksIn, leaksIn, withoutOwnControls } from '../support/leaks.js';
import { TmuxSession } from '../support/tmux-session.js';
import { flowerBin, isolatedEnv, mockedEnv, runFlower, tempDir } from './cli-harness.js';
import { launchChromium, readPageStructure } from './report-harness.js';
import {
  BEQUEST_REPLY,
  mainRouter,
  type Scenario,
  startScenario,
  toolResultTexts,
} from './scenario-harness.js';

const { anthropic = '', github = '', gitlab = '', urlPassword = '' } = HOSTILE_SECRETS;
const ESCAPES = Object.values(HOSTILE_ESCAPES).join(' ');
/** Every secret, one per line (the PEM block spans lines). */
const SECRETS = Object.values(HOSTILE_SECRETS).join('\n');
/** The secrets that fit on one line (all but the PEM block), space-separated. */
const SECRETS_LINE = Object.values(HOSTILE_SECRETS)
  .filter((secret) => !secret.includes('\n'))
  .join(' ');
/** What the model says in every role: every escape and every key. */
const PAYLOAD = `${ESCAPES}\n${SECRETS}\n${ESCAPES}`;
/** The same on one line (goal statements, reasons, titles). */
const PAYLOAD_LINE = `${ESCAPES} ${SECRETS_LINE}`;

/** The file the worker's Bash and the goal's check print: a project's deploy notes. */
const DEPLOY_NOTES = 'deploy-notes.txt';
/** A tool no harness has, named by the model: the binary records the call as named. */
const TOOL_NAME = `${github}${HOSTILE_ESCAPES.title}${HOSTILE_ESCAPES.rlo}`;
/** A file name is any byte but `/` and NUL. */
const FILE_NAME = `release-${HOSTILE_ESCAPES.title}${HOSTILE_ESCAPES.rlo}-${gitlab}.md`;

const BRIEF = [
  '## Goal',
  `Publish the release notes. ${PAYLOAD_LINE}`,
  '## Acceptance',
  `- the notes print ${ESCAPES}`,
  '## Boundaries',
  `- nothing else; ${SECRETS_LINE}`,
  '## Unknowns & assumptions',
  `- none ${ESCAPES}`,
].join('\n');

const GOAL = [
  '## Statement',
  `The release notes are published. ${PAYLOAD_LINE}`,
  '## Checklist',
  `- the deploy notes print — check: \`cat ${DEPLOY_NOTES}\``,
  '- the release notes exist',
].join('\n');

const VERDICT = `## Conclusion\nachieved\n## Reason\nThe notes print. ${PAYLOAD_LINE}\n## Not passed\n`;

/** The hostile run's model: every role says the payload; the coordinator calls a hostile tool, then a worker. */
function hostileScript(workspace: string): MockScript {
  const coordinator = (turn: number): MockResponse => {
    if (turn === 0) return { text: `Probing. ${PAYLOAD}`, toolUses: [{ name: TOOL_NAME, input: {} }] };
    if (turn === 1)
      return {
        toolUses: [
          {
            name: 'Agent',
            input: {
              subagent_type: 'coder',
              description: `Write notes ${PAYLOAD_LINE}`,
              prompt: `Print ${DEPLOY_NOTES} and write the release notes.`,
            },
          },
        ],
      };
    return { text: `The coder is on it. ${PAYLOAD}` };
  };
  return {
    main: mainRouter({
      clarifier: () => ({ text: BRIEF }),
      'set-goal': () => ({ text: GOAL }),
      coordinator: (_request, turn) => coordinator(turn),
      verdict: () => ({ text: VERDICT }),
      bequest: () => ({ text: `${BEQUEST_REPLY}\n${PAYLOAD}` }),
    }),
    agents: {
      coder: [
        {
          text: `Reading the notes. ${PAYLOAD}`,
          toolUses: [
            { name: 'Bash', input: { command: `cat ${DEPLOY_NOTES}`, description: `show ${PAYLOAD_LINE}` } },
          ],
        },
        {
          toolUses: [{ name: 'Write', input: { file_path: join(workspace, FILE_NAME), content: PAYLOAD } }],
        },
        { text: `Conclusion: done. ${PAYLOAD}` },
      ],
    },
  };
}

/** The run's environment: the key is one of the hostile ones; no colour forced into a pipe. */
function runEnv(scenario: Scenario): Record<string, string> {
  const env = mockedEnv(scenario.mock, { ANTHROPIC_API_KEY: anthropic });
  delete env.FORCE_COLOR;
  delete env.NO_COLOR;
  return env;
}

async function hostileScenario(): Promise<Scenario> {
  const scenario = await startScenario(hostileScript);
  writeFileSync(join(scenario.workspace, DEPLOY_NOTES), `${PAYLOAD}\n`);
  return scenario;
}

/** The request as typed: everything but NUL, which no argument can hold. */
const REQUEST = `Publish the release notes. ${PAYLOAD.replace(/\0/g, '')}`;
const GO = ['--timeout', '0', '-v', REQUEST];

/** Every file under `dir` (none when it does not exist), by path relative to `root`. */
function filesUnder(root: string, dir: string): Array<[string, string]> {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => {
      const path = join(entry.parentPath, entry.name);
      return [relative(root, path), readFileSync(path, 'utf8')] as [string, string];
    });
}

/** What flower wrote for people to read in a workspace: the bequest files, check logs, notes. */
function writtenFiles(workspace: string, label: string): Array<[string, string]> {
  const files: Array<[string, string]> = [];
  for (const name of ['CLAUDE.md', 'AGENTS.md']) {
    const path = join(workspace, name);
    files.push([`${label} ${name}`, existsSync(path) ? readFileSync(path, 'utf8') : '']);
  }
  for (const dir of [join('.flower', 'artifacts', 'checks'), join('.flower', 'notes')])
    for (const [path, text] of filesUnder(workspace, join(workspace, dir)))
      files.push([`${label} ${path}`, text]);
  return files;
}

let piped: Scenario | undefined;
let terminal: Scenario | undefined;
let tmux: TmuxSession | undefined;
let browser: Browser | undefined;
const outputs = {
  pipedRun: { status: null as number | null, stdout: '', stderr: '' },
  tmux: { screen: '', raw: '', statuses: [] as number[], title: '', buffers: '' },
};

describe('a hostile run, and everything flower shows or writes of it', () => {
  beforeAll(async () => {
    // Piped: a plain child process, stdout and stderr captured.
    piped = await hostileScenario();
    const run = await runFlower(['-w', piped.workspace, ...GO], {
      env: runEnv(piped),
      timeoutMs: 600_000,
    });
    outputs.pipedRun = { status: run.status, stdout: run.stdout, stderr: run.stderr };

    // On a terminal: the same run in tmux, then the views a person would type there.
    terminal = await hostileScenario();
    const flower = (...args: string[]) => [process.execPath, flowerBin, '-w', terminal!.workspace, ...args];
    tmux = await TmuxSession.start(
      [flower(...GO), flower('status'), flower('report'), flower('log', 'work')],
      {
        env: runEnv(terminal),
        cwd: terminal.workspace,
      },
    );
    outputs.tmux = await tmux.finished(900_000);
    // For a person looking into a failure: HOSTILE_OUTPUT_DUMP=dir keeps what the terminals got.
    const dump = process.env.HOSTILE_OUTPUT_DUMP;
    if (dump) {
      mkdirSync(dump, { recursive: true });
      writeFileSync(join(dump, 'piped-stdout.txt'), outputs.pipedRun.stdout);
      writeFileSync(join(dump, 'piped-stderr.txt'), outputs.pipedRun.stderr);
      writeFileSync(join(dump, 'tmux-screen.txt'), outputs.tmux.screen);
      writeFileSync(join(dump, 'tmux-raw.bin'), outputs.tmux.raw);
    }
  }, 1_800_000);

  afterAll(async () => {
    await browser?.close();
    await tmux?.close();
    await piped?.close();
    await terminal?.close();
  });

  it('ran the hostile script through: the payloads reached the model, the worker and the check', () => {
    expect(outputs.pipedRun.status, outputs.pipedRun.stderr).toBe(0);
    expect(outputs.tmux.statuses, outputs.tmux.screen).toEqual([0, 0, 0, 0]);
    for (const scenario of [piped!, terminal!]) {
      // The worker's Bash printed the notes, so the model saw the keys: there was something to mask.
      const coder = scenario.mock.agentRequests('coder').at(-1);
      expect(coder && toolResultTexts(coder)).toContain(github);
      expect(existsSync(join(scenario.workspace, FILE_NAME))).toBe(true);
      const check = join(scenario.workspace, '.flower', 'artifacts', 'checks', '1', 'item-1.log');
      expect(existsSync(check), 'the check ran and left its log').toBe(true);
      expect(scenario.manifest().map((row) => row.step)).toEqual([
        'clarify',
        'set-goal',
        'work',
        'work:verdict#1',
        'bequest',
      ]);
    }
  });

  it('the run piped: no secret, no raw control on stdout or stderr', () => {
    const found = [
      ...leaksIn('piped run stdout', outputs.pipedRun.stdout),
      ...leaksIn('piped run stderr', outputs.pipedRun.stderr),
    ];
    expect(found, found.join('\n')).toEqual([]);
    // The payloads were shown, inert: a reader sees that a sequence was there, and which file.
    expect(outputs.pipedRun.stdout).toContain('␛]0;PWNED-TITLE␇');
    expect(outputs.pipedRun.stdout).toContain('release-␛]0;');
  });

  it('the run on a terminal (tmux): the screen and the byte stream hold no secret and no control but flower’s own', () => {
    const { screen, raw, title, buffers } = outputs.tmux;
    const found = [
      ...leaksIn('tmux screen', screen),
      ...leaksIn(
        'tmux byte stream (flower’s own colours and footer controls removed)',
        withoutOwnControls(raw),
      ),
    ];
    expect(found, found.join('\n')).toEqual([]);
    expect(screen).toContain('␛]0;PWNED-TITLE␇');
    expect(screen).toContain('[U+202E]');
    // The byte stream is the terminal's: flower drew its colours there.
    expect(raw).toMatch(/\x1b\[3\dm/);
    // Nothing the run printed was taken as a command by the terminal.
    expect(title, 'the pane title (OSC 0)').not.toContain('PWNED');
    expect(buffers, 'the clipboard (OSC 52)').toBe('');
  });

  describe('the views, from a shell that never had the key', () => {
    const view = (...args: string[]) =>
      runFlower(['-w', piped!.workspace, ...args], { env: isolatedEnv(), timeoutMs: 120_000 });

    it('status, report and report --json', async () => {
      const found: string[] = [];
      const status = await view('status');
      expect(status.status, status.stderr).toBe(0);
      found.push(...leaksIn('status', status.stdout + status.stderr));
      const report = await view('report');
      expect(report.status, report.stderr).toBe(0);
      found.push(...leaksIn('report', report.stdout + report.stderr));
      expect(report.stdout).toContain('␛]0;PWNED-TITLE␇');
      const json = await view('report', '--json');
      expect(json.status, json.stderr).toBe(0);
      found.push(
        ...jsonLeaksIn('report --json', json.stdout),
        ...leaksIn('report --json stderr', json.stderr),
      );
      expect(found, found.join('\n')).toEqual([]);
    });

    it('log of every step, as Markdown and as JSON lines', async () => {
      const json = await view('report', '--json');
      const steps = (JSON.parse(json.stdout) as RunReport).steps.map((step) => step.step);
      expect(steps).toEqual(['clarify', 'set-goal', 'work', 'work:verdict#1', 'bequest']);
      const found: string[] = [];
      for (const step of steps) {
        const markdown = await view('log', step);
        expect(markdown.status, markdown.stderr).toBe(0);
        found.push(...leaksIn(`log ${step}`, markdown.stdout + markdown.stderr));
        const lines = await view('log', step, '--format', 'jsonl');
        expect(lines.status, lines.stderr).toBe(0);
        found.push(
          ...jsonLinesLeaksIn(`log ${step} --format jsonl`, lines.stdout),
          ...leaksIn(`log ${step} --format jsonl stderr`, lines.stderr),
        );
      }
      expect(found, found.join('\n')).toEqual([]);
      const work = await view('log', 'work');
      expect(work.stdout).toContain('␛]0;PWNED-TITLE␇');
    });

    it('log --format jsonl --raw, the one raw mode, prints what is stored and says so on stderr', async () => {
      const raw = await view('log', 'work', '--format', 'jsonl', '--raw');
      expect(raw.status, raw.stderr).toBe(0);
      expect(raw.stdout, 'the stored transcript holds the key the worker printed').toContain(
        JSON.stringify(github).slice(1, -1),
      );
      expect(raw.stderr).toMatch(/--raw .*NOT masked/);
    });

    it('doctor, with the keys and the escapes in a .env file', async () => {
      const project = tempDir('hostile-doctor');
      writeFileSync(
        join(project, '.env'),
        [
          `ANTHROPIC_API_KEY=${anthropic}`,
          `GITHUB_TOKEN=${github}`,
          `DEPLOY_DATABASE_URL=${urlPassword}`,
          `DEPLOY_NOTE=${ESCAPES.replace(/\n/g, ' ')} ${SECRETS_LINE}`,
          '',
        ].join('\n'),
      );
      const doctor = await runFlower(['doctor'], {
        cwd: project,
        env: isolatedEnv({ ANTHROPIC_BASE_URL: 'http://127.0.0.1:9' }),
        timeoutMs: 120_000,
      });
      const found = leaksIn('doctor', doctor.stdout + doctor.stderr);
      expect(found, found.join('\n')).toEqual([]);
      expect(doctor.stdout).toContain('DEPLOY_NOTE');
    });
  });

  it('CLAUDE.md, AGENTS.md, the check logs and the workbench notes', () => {
    const files = [
      ...writtenFiles(piped!.workspace, 'piped:'),
      ...writtenFiles(terminal!.workspace, 'terminal:'),
    ];
    expect(files.map(([name]) => name)).toEqual(
      expect.arrayContaining([
        'piped: CLAUDE.md',
        'piped: AGENTS.md',
        join('piped: .flower', 'artifacts', 'checks', '1', 'item-1.log'),
      ]),
    );
    // The check printed the notes: the keys were there to mask.
    const found = files.flatMap(([name, text]) => leaksIn(name, text));
    expect(found, found.join('\n')).toEqual([]);
  });

  it('the report page in Chromium: the payloads are inert text, nothing on it came from the model', async () => {
    const file = join(tempDir('hostile-page'), 'report.html');
    const written = await runFlower(['-w', piped!.workspace, 'report', '--html', file], {
      env: isolatedEnv(),
      timeoutMs: 120_000,
    });
    expect(written.status, written.stderr).toBe(0);
    const page = readFileSync(file, 'utf8');
    const found = [...leaksIn('report --html (the file)', page)];
    browser = await launchChromium();
    const reading = await readPageStructure(browser, file);
    // innerText puts a tab between table cells: the browser's, not the page's.
    found.push(...leaksIn('report --html (the visible text)', reading.text.replace(/\t/g, ' ')));
    found.push(...leaksIn('report --html (the title)', reading.title));
    expect(found, found.join('\n')).toEqual([]);
    expect(reading.title).toBe(`flower report · ${piped!.workspace}`);
    expect(reading.text, 'the payloads show as text').toContain('␛]0;PWNED-TITLE␇');
    expect(reading.text).toContain('␛]8;;https://evil.test/');
    expect(reading.active, 'links, frames, images or forms on the page').toEqual([]);
    expect(reading.urls, 'attributes naming a URL').toEqual([]);
    expect(reading.scripts).toEqual(['report-data:application/json', 'inline:classic', 'inline:classic']);
    expect(reading.requests).toEqual([expect.stringMatching(/^file:/)]);
    expect(page).not.toMatch(/<a\s|href=/i);
  });
});
