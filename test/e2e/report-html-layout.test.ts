/**
 * The HTML report as a person sees it on a phone and on a desktop (issue 21, polish): a real
 * `flower demo` run (the real binary against the built-in scripted model), `flower report --html`
 * as a real process, and the page in Debian's headless Chromium at 390 and 1400 px.
 *
 * What broke before: at 390 px the page was 930 px wide (tables pushed it), model names broke at
 * their hyphens, the context charts had fractional response numbers and a one-response step got a
 * 0.94–1.06 axis with no threshold line, the timeline's outcome colours had no legend, and the
 * demo's made-up dollars were not marked simulated.
 *
 * The screenshots are kept in a temporary directory (its path is printed) for a person to look at.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunReport } from '../../src/report/report.js';
import { isolatedEnv, runFlower, tempDir } from './cli-harness.js';
import { launchChromium, look } from './report-harness.js';

/** What the page shows at one width, read in the browser. */
interface Layout {
  viewport: number;
  pageWidth: number;
  tables: Array<{
    id: string;
    overflowX: string;
    wrapperWidth: number;
    /** How far the wrapper moved when asked to scroll 80 px sideways. */
    scrolledBy: number;
    tableWidth: number;
  }>;
  /** Each model cell: its text and the number of lines it takes. */
  models: Array<{ text: string; lines: number }>;
  contextCharts: Array<{
    id: string;
    ticks: Array<{ value: number; label: string }>;
    xMin: number;
    xMax: number;
    points: number;
    /** The threshold line's ends in pixels, or null when the chart has none. */
    threshold: { left: number; right: number; y: number } | null;
    area: { left: number; right: number; top: number; bottom: number };
  }>;
  legend: { display: boolean; items: string[]; drawn: number } | null;
  text: string;
  cards: string[];
  consoleErrors: string[];
}

// Browser-side code, as plain JavaScript (the test build has no DOM types).
const READ_LAYOUT = `(() => {
  const tables = Array.from(document.querySelectorAll('table')).map((table) => {
    const wrapper = table.parentElement;
    const before = wrapper.scrollLeft;
    wrapper.scrollLeft = before + 80;
    const scrolledBy = wrapper.scrollLeft - before;
    wrapper.scrollLeft = before;
    return { id: table.id, overflowX: getComputedStyle(wrapper).overflowX, wrapperWidth: wrapper.getBoundingClientRect().width,
      scrolledBy, tableWidth: table.getBoundingClientRect().width };
  });
  const models = Array.from(document.querySelectorAll('td[data-field="model"]')).filter((cell) => cell.textContent).map((cell) => {
    const range = document.createRange();
    range.selectNodeContents(cell);
    const tops = new Set(Array.from(range.getClientRects()).map((rect) => Math.round(rect.top)));
    return { text: cell.textContent, lines: tops.size };
  });
  const charts = Object.values(window.Chart.instances);
  const contextCharts = charts.filter((chart) => chart.canvas.id.startsWith('context-')).map((chart) => {
    const x = chart.scales.x;
    const index = chart.data.datasets.findIndex((set) => set.label === 'handoff threshold');
    const ends = index < 0 ? null : chart.getDatasetMeta(index).data;
    const points = chart.data.datasets.filter((set) => set.label.startsWith('generation')).reduce((sum, set) => sum + set.data.length, 0);
    return { id: chart.canvas.id, ticks: x.ticks.map((tick) => ({ value: tick.value, label: String(tick.label) })),
      xMin: x.min, xMax: x.max, points,
      threshold: ends ? { left: ends[0].x, right: ends[ends.length - 1].x, y: ends[0].y } : null,
      area: { left: chart.chartArea.left, right: chart.chartArea.right, top: chart.chartArea.top, bottom: chart.chartArea.bottom } };
  });
  const timeline = charts.find((chart) => chart.canvas.id === 'timeline-chart');
  const legend = timeline ? { display: timeline.options.plugins.legend.display !== false,
    items: (timeline.legend.legendItems || []).map((item) => item.text), drawn: (timeline.legend.legendHitBoxes || []).length } : null;
  const cards = Array.from(document.querySelectorAll('.card')).map((card) => card.textContent);
  return { pageWidth: document.scrollingElement.scrollWidth, tables, models, contextCharts, legend, text: document.body.innerText, cards };
})()`;

let browser: Browser | undefined;
let file = '';
let report: RunReport | undefined;
const shots = tempDir('report-html-screens');

beforeAll(async () => {
  browser = await launchChromium();
  const workspace = join(tempDir('report-html-demo'), 'demo');
  const demo = await runFlower(['demo', workspace], { env: isolatedEnv(), timeoutMs: 170_000 });
  expect(demo.status, demo.stderr).toBe(0);
  file = join(shots, 'report.html');
  const html = await look(workspace, 'report', '--html', file);
  expect(html.status, html.stderr).toBe(0);
  const json = await look(workspace, 'report', '--json');
  expect(json.status, json.stderr).toBe(0);
  report = JSON.parse(json.stdout) as RunReport;
}, 240_000);
afterAll(async () => {
  await browser?.close();
});

async function layoutAt(width: number): Promise<Layout> {
  const page: Page = await browser!.newPage({ viewport: { width, height: 900 } });
  const consoleErrors: string[] = [];
  page.on('console', (message) => {
    if (message.type() === 'error') consoleErrors.push(message.text());
  });
  page.on('pageerror', (error) => consoleErrors.push(String(error)));
  try {
    await page.goto(pathToFileURL(file).href, { waitUntil: 'load' });
    const layout = (await page.evaluate(READ_LAYOUT)) as Omit<Layout, 'viewport' | 'consoleErrors'>;
    const shot = join(shots, `report-${width}.png`);
    await page.screenshot({ path: shot, fullPage: true });
    console.info(`screenshot at ${width} px: ${shot}`);
    return { viewport: width, consoleErrors, ...layout };
  } finally {
    await page.close();
  }
}

/** Steps of the run whose main thread answered exactly once (the demo's set-goal and bequest). */
function oneResponseSteps(): number[] {
  return (report?.steps ?? []).flatMap((step, index) =>
    step.context.generations.reduce((sum, generation) => sum + generation.points.length, 0) === 1
      ? [index]
      : [],
  );
}

function expectReadableCharts(layout: Layout): void {
  expect(layout.consoleErrors).toEqual([]);
  expect(layout.contextCharts.length).toBe(report?.steps.length);
  for (const chart of layout.contextCharts) {
    // The x axis counts responses: every tick is a whole number, labelled as one.
    expect(chart.ticks.length, chart.id).toBeGreaterThanOrEqual(2);
    for (const tick of chart.ticks) {
      expect(Number.isInteger(tick.value), `${chart.id}: tick ${tick.value}`).toBe(true);
      expect(tick.label, chart.id).toMatch(/^\d[\d,]*$/);
    }
  }
  // A one-response step: a sane axis around its dot and a threshold line across the chart.
  const single = oneResponseSteps();
  expect(single.length).toBeGreaterThan(0);
  for (const index of single) {
    const chart = layout.contextCharts.find((candidate) => candidate.id === `context-${index}`);
    expect(chart, `context-${index}`).toBeDefined();
    const point =
      report?.steps[index]?.context.generations.flatMap((generation) => generation.points)[0]?.[0] ?? 0;
    expect(chart!.xMax - chart!.xMin, chart!.id).toBeGreaterThanOrEqual(1);
    expect(chart!.xMin).toBeLessThan(point);
    expect(chart!.xMax).toBeGreaterThan(point);
    expect(chart!.threshold, `${chart!.id} has no threshold line`).not.toBeNull();
    const { left, right, y } = chart!.threshold!;
    expect(right - left).toBeGreaterThanOrEqual((chart!.area.right - chart!.area.left) * 0.99);
    expect(y).toBeGreaterThanOrEqual(chart!.area.top);
    expect(y).toBeLessThanOrEqual(chart!.area.bottom);
  }
  // The timeline's bar colours are explained: one legend entry per outcome on it, drawn.
  expect(layout.legend?.display).toBe(true);
  expect(layout.legend?.items).toEqual(expect.arrayContaining(['step ok', "judge's verdict"]));
  expect(layout.legend?.drawn).toBe(layout.legend?.items.length);
}

describe('the HTML report of a demo run', () => {
  it('fits a 390-px phone: only the tables scroll, sideways, inside themselves; model names stay whole', async () => {
    const layout = await layoutAt(390);
    expect(layout.pageWidth).toBeLessThanOrEqual(390);
    expect(layout.tables.map((table) => table.id)).toEqual(
      expect.arrayContaining(['steps', 'ledger', 'threads', 'workbench']),
    );
    for (const table of layout.tables) {
      expect(['auto', 'scroll'], table.id).toContain(table.overflowX);
      expect(table.wrapperWidth, table.id).toBeLessThanOrEqual(390);
    }
    // The ledger (twelve columns) is wider than a phone: its box scrolls, the page does not.
    const ledger = layout.tables.find((table) => table.id === 'ledger');
    expect(ledger?.tableWidth).toBeGreaterThan(390);
    expect(ledger?.scrolledBy).toBeGreaterThan(0);
    expect(layout.models.length).toBeGreaterThan(0);
    for (const model of layout.models) expect(model.lines, model.text).toBe(1);
    expectReadableCharts(layout);
    expect(existsSync(join(shots, 'report-390.png'))).toBe(true);
  }, 60_000);

  it('reads the same at 1400 px, with integer response ticks, the threshold line and the timeline legend', async () => {
    const layout = await layoutAt(1400);
    expect(layout.pageWidth).toBeLessThanOrEqual(1400);
    for (const model of layout.models) expect(model.lines, model.text).toBe(1);
    expectReadableCharts(layout);
    expect(existsSync(join(shots, 'report-1400.png'))).toBe(true);
  }, 60_000);

  it('says its costs are simulated, first thing and on every dollar figure', async () => {
    expect(report?.simulated_cost).toBe(true);
    const layout = await layoutAt(390);
    expect(layout.text.split('\n').slice(0, 6).join('\n')).toMatch(
      /Costs are simulated: flower demo ran this/,
    );
    const dollarCards = layout.cards.filter((card) => card.includes('$'));
    expect(dollarCards.length).toBeGreaterThanOrEqual(5);
    for (const card of dollarCards) expect(card).toContain('simulated');
  }, 60_000);
});
