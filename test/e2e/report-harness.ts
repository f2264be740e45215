/**
 * Looking at a run from the outside, the way a person does: `flower status`, `report` and `log`
 * as real processes, and the `--html` page in real headless Chromium (Debian's `chromium`, driven
 * by playwright-core; never a downloaded browser).
 */
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { type Browser, chromium } from 'playwright-core';
import { expect } from 'vitest';
import type { RunReport } from '../../src/report/report.js';
import { isolatedEnv, runFlower } from './cli-harness.js';

export const CHROMIUM = '/usr/bin/chromium';

/** The flags a root CI machine with a closed network needs (see the machine notes). */
const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
}

/** A snapshot of the files a read-only command must leave exactly as they were. */
export function fingerprint(runDir: string): Record<string, string> {
  const files: Record<string, string> = {};
  for (const name of ['manifest.json', 'lineage.json']) {
    try {
      const stat = statSync(join(runDir, name));
      files[name] = `${stat.size}:${stat.mtimeMs}:${readFileSync(join(runDir, name), 'utf8')}`;
    } catch {
      files[name] = 'missing';
    }
  }
  return files;
}

/** A one-line failure: exit 1, one line on stderr, no stack trace. */
export function expectOneLineFailure(
  run: { status: number | null; stderr: string; stdout: string },
  pattern: RegExp,
): void {
  expect(run.status, run.stderr).toBe(1);
  const lines = run.stderr.trim().split('\n');
  expect(lines).toHaveLength(1);
  expect(lines[0]).toMatch(pattern);
  expect(run.stderr).not.toMatch(/\n\s+at |Error:/);
}

/** `flower <args> -w <workspace>` with no credentials at all (none of these commands may need them). */
export function look(workspace: string, ...args: string[]) {
  return runFlower([...args, '-w', workspace], { env: isolatedEnv(), timeoutMs: 60_000 });
}

/**
 * A finished run directory reads cleanly: status says what to do next, report and report --json
 * agree with the manifest, log shows each step, and none of them changed a file.
 */
export async function expectReadableRun(workspace: string): Promise<RunReport> {
  const runDir = join(workspace, 'runs');
  const before = fingerprint(runDir);
  const status = await look(workspace, 'status');
  expect(status.status, status.stderr).toBe(0);
  expect(status.stdout).toMatch(/^Task: /m);
  expect(status.stdout).toMatch(/^Spent: \$\d+\.\d{4} on the whole task/m);
  expect(status.stdout).toMatch(/^Next: /m);

  const text = await look(workspace, 'report');
  expect(text.status, text.stderr).toBe(0);
  expect(text.stdout).toContain('Ledger: main thread and workers');

  const json = await look(workspace, 'report', '--json');
  expect(json.status, json.stderr).toBe(0);
  const report = JSON.parse(json.stdout) as RunReport;
  const rows = JSON.parse(readFileSync(join(runDir, 'manifest.json'), 'utf8')) as Array<{
    step: string;
    cost_usd: number;
  }>;
  expect(report.steps.map((step) => [step.step, step.cost_usd])).toEqual(
    rows.map((row) => [row.step, row.cost_usd]),
  );
  expect(report.totals.steps_cost_usd).toBeCloseTo(
    rows.reduce((sum, row) => sum + row.cost_usd, 0),
    4,
  );

  for (const step of report.steps) {
    const log = await look(workspace, 'log', step.step);
    expect(log.status, log.stderr).toBe(0);
    expect(log.stdout.split('\n')[0]).toContain(`# ${step.step}`);
    expect(log.stdout).toContain('## Main thread · session');
  }
  expect(fingerprint(runDir)).toEqual(before);
  return report;
}

/** What the page shows, read in the browser. */
export interface PageReading {
  consoleErrors: string[];
  requests: string[];
  charts: number;
  /** Canvases with fewer than this many painted pixels (should be none). */
  blankCanvases: number;
  /** Distinct colours in a screenshot of the first chart (a blank one has one or two). */
  screenshotColours: number;
  /** The ledger table: per row, field → text. */
  ledger: Array<Record<string, string>>;
  steps: Array<Record<string, string>>;
}

// Browser-side code, as plain JavaScript (the test build has no DOM types).
const READ_PAGE = `(() => {
  const charts = Object.keys(window.Chart.instances).length;
  let blankCanvases = 0;
  for (const canvas of document.querySelectorAll('canvas')) {
    const pixels = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
    let painted = 0;
    for (let index = 3; index < pixels.length; index += 4) if (pixels[index] > 0) painted += 1;
    if (painted < 500) blankCanvases += 1;
  }
  const table = (id) => Array.from(document.querySelectorAll('#' + id + ' tbody tr')).map((row) =>
    Object.fromEntries(Array.from(row.querySelectorAll('td[data-field]')).map((cell) => [cell.getAttribute('data-field'), cell.textContent])));
  return { charts, blankCanvases, ledger: table('ledger'), steps: table('steps') };
})()`;

/** Decodes a PNG (base64) in the page and counts its distinct colours. */
const COUNT_COLOURS = `async (base64) => {
  const image = new Image();
  image.src = 'data:image/png;base64,' + base64;
  await image.decode();
  const canvas = document.createElement('canvas');
  canvas.width = image.width;
  canvas.height = image.height;
  const context = canvas.getContext('2d');
  context.drawImage(image, 0, 0);
  const data = context.getImageData(0, 0, canvas.width, canvas.height).data;
  const colours = new Set();
  for (let index = 0; index < data.length; index += 4) colours.add((data[index] << 16) | (data[index + 1] << 8) | data[index + 2]);
  return colours.size;
}`;

/** Opens `file` from disk in Chromium and reads what a person would see. */
export async function readPage(browser: Browser, file: string): Promise<PageReading> {
  const page = await browser.newPage({ viewport: { width: 1280, height: 1800 } });
  const consoleErrors: string[] = [];
  const requests: string[] = [];
  page.on('console', (message) => {
    if (message.type() === 'error') consoleErrors.push(message.text());
  });
  page.on('pageerror', (error) => consoleErrors.push(String(error)));
  page.on('request', (request) => requests.push(request.url()));
  try {
    await page.goto(pathToFileURL(file).href, { waitUntil: 'load' });
    const reading = (await page.evaluate(READ_PAGE)) as Omit<
      PageReading,
      'consoleErrors' | 'requests' | 'screenshotColours'
    >;
    const shot = await page.locator('canvas').first().screenshot();
    const screenshotColours = (await page.evaluate(
      `(${COUNT_COLOURS})(${JSON.stringify(shot.toString('base64'))})`,
    )) as number;
    return { consoleErrors, requests, screenshotColours, ...reading };
  } finally {
    await page.close();
  }
}

/** What a page shows of hostile run text, and what of its own structure the run could have added. */
export interface PageStructure {
  title: string;
  /** The page's visible text (`innerText`), as a person reads it. */
  text: string;
  /** Every element that fetches, links, frames or navigates (the report has none of its own). */
  active: string[];
  /** Each script element: its id or `inline`, and its type. */
  scripts: string[];
  /** Attribute values anywhere in the page that name a URL scheme a run could have planted. */
  urls: string[];
  /** Every request the page made (the page itself included). */
  requests: string[];
  consoleErrors: string[];
}

const READ_STRUCTURE = `(() => ({
  title: document.title,
  text: document.body.innerText,
  active: Array.from(document.querySelectorAll('a, link, iframe, frame, img, object, embed, base, form, meta[http-equiv="refresh"], audio, video, source')).map((element) => element.outerHTML.slice(0, 200)),
  scripts: Array.from(document.scripts).map((script) => (script.id || 'inline') + ':' + (script.type || 'classic')),
  urls: Array.from(document.querySelectorAll('*')).flatMap((element) => Array.from(element.attributes).filter((attribute) => /(?:https?|javascript|data|file):/i.test(attribute.value) && attribute.name !== 'content').map((attribute) => element.tagName + ' ' + attribute.name + '=' + attribute.value.slice(0, 120))),
}))()`;

/** Opens `file` in Chromium and reads its title, visible text and active elements. */
export async function readPageStructure(browser: Browser, file: string): Promise<PageStructure> {
  const page = await browser.newPage();
  const consoleErrors: string[] = [];
  const requests: string[] = [];
  page.on('console', (message) => {
    if (message.type() === 'error') consoleErrors.push(message.text());
  });
  page.on('pageerror', (error) => consoleErrors.push(String(error)));
  page.on('request', (request) => requests.push(request.url()));
  try {
    await page.goto(pathToFileURL(file).href, { waitUntil: 'load' });
    const reading = (await page.evaluate(READ_STRUCTURE)) as Omit<
      PageStructure,
      'requests' | 'consoleErrors'
    >;
    return { ...reading, requests, consoleErrors };
  } finally {
    await page.close();
  }
}
