/**
 * `flower report --html FILE`: the report as one self-contained page that opens from disk.
 *
 * Charts are drawn by Chart.js (MIT, chart.js 4.6.1 pinned in package.json), inlined into the page
 * from the installed package: a well-kept canvas chart library of ~210 KB minified that draws
 * line, stacked bar and floating bar charts, which is every chart here, with no dependency at run
 * time. (uPlot is smaller but has no bar charts of its own; ECharts and Plotly are 1–4 MB, half or
 * more of the page budget.)
 *
 * Invariants:
 * - No network: no external script, style, font or image; a Content-Security-Policy forbids any
 *   fetch, so a page that tried would fail loudly in the browser rather than leak.
 * - The tables are written here, from the same `RunReport` that `--json` prints: the numbers on
 *   the page are the numbers in the JSON (each cell carries its field name in `data-field`).
 * - Every string from the run goes through the output sink first (`shownFields`: secrets masked,
 *   controls and bidi made visible, e.g. ESC as `␛`), then is HTML-escaped; the embedded data is
 *   JSON with `<` escaped, so no transcript text can close the script element. A tool name, a
 *   worker's description or a file name is text on the page, never markup, a link or a title.
 * - Size: the curve is already downsampled in the report (`CURVE_POINTS_PER_GENERATION`), so a
 *   20k-entry run stays far below 2 MB.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { shownFields } from '../output/sink.js';
import type { ThreadLedger } from '../runtime/ledger.js';
import type { RunReport, StepReport } from './report.js';
import { compact, duration, LISTED_OUTAGES, outcomeText, percent, usd } from './report-text.js';

let chartSource: string | undefined;

/** The Chart.js UMD bundle, read once from the installed package. */
export function chartLibrary(): string {
  if (chartSource === undefined) {
    const entry = createRequire(import.meta.url).resolve('chart.js');
    chartSource = readFileSync(join(dirname(entry), 'chart.umd.min.js'), 'utf8');
  }
  return chartSource;
}

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (char) => `&#${char.charCodeAt(0)};`);
}

/** JSON that is safe inside a `<script>` element. */
function scriptJson(value: unknown): string {
  return JSON.stringify(value)
    .replace(/</g, '\\u003c')
    .replace(/\u2028/g, '\\u2028')
    .replace(/\u2029/g, '\\u2029');
}

/** How a cell's text may wrap: numbers and names are tokens, read whole; prose wraps freely. */
type CellKind = 'text' | 'number' | 'token';

const CELL_CLASS: Record<CellKind, string> = { text: '', number: ' class="n"', token: ' class="t"' };

function cell(field: string, text: string, kind: CellKind = 'text'): string {
  return `<td data-field="${escapeHtml(field)}"${CELL_CLASS[kind]}>${escapeHtml(text)}</td>`;
}

/**
 * A table in a box that scrolls sideways: a wide table (the ledger has twelve columns) scrolls
 * inside itself on a phone instead of making the whole page wider than the screen.
 */
function scrolling(table: string): string {
  return `<div class="scroll">${table}</div>`;
}

function head(...names: string[]): string {
  return `<thead><tr>${names.map((name) => `<th>${escapeHtml(name)}</th>`).join('')}</tr></thead>`;
}

function stepsTable(steps: readonly StepReport[], dollars: Label): string {
  const rows = steps.map(
    (step, index) =>
      `<tr data-index="${index}" data-step="${escapeHtml(step.step)}" class="${step.outcome}">${[
        cell('step', step.step, 'token'),
        cell('outcome', outcomeText(step)),
        cell('cost_usd', usd(step.cost_usd), 'number'),
        cell('num_turns', String(step.num_turns), 'number'),
        cell('attempts', String(step.attempts), 'number'),
        cell('resumed', step.resumed ? 'yes' : 'no'),
        cell('handoffs', String(step.handoffs), 'number'),
        cell('duration_s', duration(step.duration_s), 'number'),
        cell('reconciliation.ledger_usd', usd(step.reconciliation.ledger_usd), 'number'),
        cell(
          'reconciliation.difference_usd',
          step.reconciliation.difference_usd === null ? 'n/a' : step.reconciliation.difference_usd.toFixed(4),
          'number',
        ),
      ].join('')}</tr>`,
  );
  return scrolling(
    `<table id="steps">${head('step', 'outcome', dollars('cost (SDK)'), 'turns', 'attempts', 'resumed', 'handoffs', 'time', dollars('ledger'), 'ledger − SDK')}<tbody>${rows.join('')}</tbody></table>`,
  );
}

function ledgerRow(
  step: StepReport,
  index: number,
  who: string,
  thread: ThreadLedger,
  extra: { worker?: number; description?: string; duration?: number } = {},
): string {
  const attributes = `data-index="${index}" data-thread="${extra.worker === undefined ? 'main' : `worker-${extra.worker}`}"`;
  return `<tr ${attributes}>${[
    cell('step', step.step, 'token'),
    cell('who', who),
    cell('description', extra.description ?? ''),
    cell('model', thread.model ?? '', 'token'),
    cell('turns', String(thread.turns), 'number'),
    cell('input_tokens', String(thread.input_tokens), 'number'),
    cell('cache_read_input_tokens', String(thread.cache_read_input_tokens), 'number'),
    cell('cache_creation_input_tokens', String(thread.cache_creation_input_tokens), 'number'),
    cell('output_tokens', String(thread.output_tokens), 'number'),
    cell('cost_usd', usd(thread.cost_usd), 'number'),
    cell('tool_calls', String(thread.tool_calls), 'number'),
    cell('duration_s', extra.duration === undefined ? '' : String(extra.duration), 'number'),
  ].join('')}</tr>`;
}

function ledgerTable(steps: readonly StepReport[], dollars: Label): string {
  const rows: string[] = [];
  steps.forEach((step, index) => {
    rows.push(ledgerRow(step, index, 'main thread', step.main));
    step.workers.forEach((worker, number) => {
      rows.push(
        ledgerRow(step, index, `${worker.agent_type ?? 'worker'} ${worker.agent_id}`, worker, {
          worker: number,
          description: worker.description,
          duration: worker.duration_s,
        }),
      );
    });
  });
  return scrolling(
    `<table id="ledger">${head('step', 'who', 'dispatched to', 'model', 'turns', 'input', 'cache read', 'cache write', 'output', dollars('cost'), 'tool calls', 'seconds')}<tbody>${rows.join('')}</tbody></table>`,
  );
}

function keyValueTable(id: string, rows: Array<[string, string, string]>): string {
  return scrolling(
    `<table id="${id}"><tbody>${rows
      .map(([field, label, value]) => `<tr><th>${escapeHtml(label)}</th>${cell(field, value, 'number')}</tr>`)
      .join('')}</tbody></table>`,
  );
}

function countsTable(id: string, counts: Record<string, number>): string {
  const sorted = Object.entries(counts).sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
  if (sorted.length === 0) return `<p class="dim" id="${id}">none</p>`;
  return scrolling(
    `<table id="${id}"><tbody>${sorted.map(([name, count]) => `<tr><th>${escapeHtml(name)}</th>${cell(name, String(count), 'number')}</tr>`).join('')}</tbody></table>`,
  );
}

/** What the charts need, small: the page script reads it from the embedded JSON. */
function chartData(report: RunReport) {
  const base = Math.min(
    ...report.steps.map((step) => step.started_at).filter((at) => at > 0),
    Number.POSITIVE_INFINITY,
  );
  const origin = Number.isFinite(base) ? base : 0;
  const now = Date.parse(report.generated_at) / 1000;
  return {
    origin,
    cost_axis: priced(report.simulated_cost)('USD (ledger)'),
    steps: report.steps.map((step) => ({
      step: step.step,
      outcome: step.outcome,
      main_usd: step.main.cost_usd ?? 0,
      workers_usd: step.workers.reduce((sum, worker) => sum + (worker.cost_usd ?? 0), 0),
      sdk_usd: step.cost_usd,
      start: step.started_at > 0 ? (step.started_at - origin) / 60 : 0,
      end: ((step.ended_at > 0 ? step.ended_at : now) - origin) / 60,
      handoff_at: step.context.handoff_at,
      generations: step.context.generations,
      outages: step.outages
        .filter((outage) => outage.at !== null)
        .map((outage) => ((outage.at ?? 0) - origin) / 60),
      handoffs: step.context.handoff_times.map((at) => (at - origin) / 60),
    })),
  };
}

type Label = (label: string) => string;

/**
 * A demo's dollars price a scripted model's made-up usage: every dollar label says so, inside the
 * label's own parentheses when it has them ("main thread (ledger, simulated)").
 */
export function priced(simulated: boolean): Label {
  if (!simulated) return (label) => label;
  return (label) => (label.endsWith(')') ? `${label.slice(0, -1)}, simulated)` : `${label} (simulated)`);
}

/** The first line of a demo's page: its dollar figures are not money anyone spent. */
export const SIMULATED_NOTICE =
  'Costs are simulated: flower demo ran this against a scripted model, so every dollar figure prices made-up token usage and nothing was paid.';

const STYLE = `
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px auto;max-width:1180px;color:#1c1e21;padding:0 16px}
h1{font-size:20px;margin:0 0 4px}h2{font-size:16px;margin:28px 0 8px;border-bottom:1px solid #ddd;padding-bottom:4px}
.dim{color:#777}.notice{background:#fff4e5;border-left:4px solid #f0a020;padding:6px 10px;margin:6px 0}
table{border-collapse:collapse;margin:6px 0;font-size:13px}th,td{padding:3px 8px;border-bottom:1px solid #eee;text-align:left;vertical-align:top}
td.n{text-align:right;font-variant-numeric:tabular-nums}thead th{background:#f6f7f9}
.scroll{overflow-x:auto;max-width:100%;margin:6px 0}.scroll table{margin:0}
td.n,td.t{white-space:nowrap}h1,p,li{overflow-wrap:anywhere}
@media (max-width:600px){body{margin:12px auto;padding:0 10px}}
tr.failed td,tr.rejected td{color:#b3261e}tr.running td{color:#6b4fbb}
.chart{position:relative;height:260px;margin:8px 0 18px}
.cards{display:grid;gap:12px;grid-template-columns:repeat(auto-fill,minmax(150px,1fr))}
.card{border:1px solid #e3e3e3;border-radius:6px;padding:8px 12px}.card b{display:block;font-size:18px}
`;

const SCRIPT = `
(function(){
  var data = JSON.parse(document.getElementById('report-data').textContent);
  var colors = ['#3366cc','#dc3912','#ff9900','#109618','#990099','#0099c6','#dd4477','#66aa00'];
  var outcomeColor = {ok:'#4caf50',verdict:'#3366cc',rejected:'#f0a020',failed:'#d32f2f',running:'#8e6ccf'};
  var outcomeLabel = {ok:'step ok',verdict:"judge's verdict",rejected:'rejected by its gate',failed:'failed',running:'running'};
  Chart.defaults.animation = false;
  Chart.defaults.maintainAspectRatio = false;
  data.steps.forEach(function(step, index){
    var canvas = document.getElementById('context-' + index);
    if (!canvas) return;
    var sets = step.generations.map(function(g, n){
      return {label:'generation ' + g.generation, data:g.points.map(function(p){return {x:p[0],y:p[1]};}),
        borderColor:colors[n % colors.length], backgroundColor:colors[n % colors.length], pointRadius:g.points.length === 1 ? 4 : 1.5, borderWidth:1.5};
    });
    var xs = [].concat.apply([], step.generations.map(function(g){return g.points.map(function(p){return p[0];});}));
    var lo = Math.min.apply(null, xs), hi = Math.max.apply(null, xs);
    // x counts responses: whole numbers only. One response would make a zero-width axis (Chart.js
    // pads it to 0.94-1.06) and a zero-length threshold line: widen it by one response each side.
    var xmin = lo === hi ? Math.max(0, lo - 1) : lo, xmax = lo === hi ? hi + 1 : hi;
    if (step.handoff_at && xs.length) {
      sets.push({label:'handoff threshold', data:[{x:xmin,y:step.handoff_at},{x:xmax,y:step.handoff_at}],
        borderColor:'#999', borderDash:[6,4], pointRadius:0, borderWidth:1});
    }
    var handoffs = step.generations.slice(1).filter(function(g){return g.points.length;}).map(function(g){return {x:g.points[0][0], y:g.points[0][1]};});
    if (handoffs.length) sets.push({label:'handoff', type:'scatter', data:handoffs, pointStyle:'triangle', pointRadius:7, borderColor:'#000', backgroundColor:'#ffeb3b'});
    new Chart(canvas, {type:'line', data:{datasets:sets}, options:{parsing:true,
      scales:{x:{type:'linear', min:xmin, max:xmax, ticks:{precision:0}, title:{display:true,text:'main-thread response'}}, y:{beginAtZero:true, title:{display:true,text:'context tokens'}}},
      plugins:{title:{display:true,text:step.step + ': main-thread context'}}}});
  });
  var cost = document.getElementById('cost-chart');
  if (cost) new Chart(cost, {type:'bar', data:{labels:data.steps.map(function(s){return s.step;}), datasets:[
      {label:'main thread', data:data.steps.map(function(s){return s.main_usd;}), backgroundColor:'#3366cc'},
      {label:'workers', data:data.steps.map(function(s){return s.workers_usd;}), backgroundColor:'#ff9900'}]},
    options:{scales:{x:{stacked:true}, y:{stacked:true, title:{display:true,text:data.cost_axis}}}, plugins:{title:{display:true,text:'Cost per step: main thread and workers'}}}});
  var timeline = document.getElementById('timeline-chart');
  if (timeline) {
    var sets = [{label:'steps', data:data.steps.map(function(s){return [s.start, Math.max(s.end, s.start + 0.01)];}),
      backgroundColor:data.steps.map(function(s){return outcomeColor[s.outcome] || '#999';})}];
    var outages = [];
    data.steps.forEach(function(s){ s.outages.forEach(function(at){ outages.push({x:at, y:s.step}); }); });
    if (outages.length) sets.push({label:'outage', type:'scatter', data:outages, pointStyle:'crossRot', pointRadius:8, borderColor:'#d32f2f', borderWidth:2});
    var handoffs = [];
    data.steps.forEach(function(s){ s.handoffs.forEach(function(at){ handoffs.push({x:at, y:s.step}); }); });
    if (handoffs.length) sets.push({label:'handoff', type:'scatter', data:handoffs, pointStyle:'triangle', pointRadius:8, borderColor:'#000', backgroundColor:'#ffeb3b'});
    new Chart(timeline, {type:'bar', data:{labels:data.steps.map(function(s){return s.step;}), datasets:sets},
      options:{indexAxis:'y', scales:{x:{type:'linear', title:{display:true,text:'minutes since the first step'}}},
        plugins:{title:{display:true,text:'Timeline: steps, rounds, verdicts, outages, handoffs'}, legend:{
          // The bars are coloured by outcome, which one dataset's legend cannot say: one entry per
          // outcome on the chart, then the outage and handoff markers as Chart.js labels them.
          labels:{generateLabels:function(chart){
            var seen = {}, items = [];
            data.steps.forEach(function(s){
              if (seen[s.outcome]) return;
              seen[s.outcome] = true;
              var colour = outcomeColor[s.outcome] || '#999';
              items.push({text:outcomeLabel[s.outcome] || s.outcome, fillStyle:colour, strokeStyle:colour, lineWidth:0, hidden:false, datasetIndex:0});
            });
            var markers = Chart.defaults.plugins.legend.labels.generateLabels(chart).filter(function(item){return item.datasetIndex > 0;});
            return items.concat(markers);
          }},
          // Hiding "steps" would hide every bar: only the markers toggle.
          onClick:function(event, item, legend){ if (item.datasetIndex > 0) Chart.defaults.plugins.legend.onClick.call(this, event, item, legend); }}}}});
  }
})();
`;

export function reportHtml(given: RunReport): string {
  // Idempotent over a document `buildReport` made; a document built elsewhere gets the same pass.
  const report = shownFields(given);
  const title = `flower report · ${report.workspace}`;
  const notices = [...(report.simulated_cost ? [SIMULATED_NOTICE] : []), ...report.notices]
    .map((notice) => `<p class="notice">${escapeHtml(notice)}</p>`)
    .join('');
  const totals = report.totals;
  const dollars = priced(report.simulated_cost);
  const cards = [
    [dollars('task total'), usd(totals.cost_usd), 'totals.cost_usd'],
    [dollars('steps'), usd(totals.steps_cost_usd), 'totals.steps_cost_usd'],
    [dollars('asides'), usd(totals.asides_cost_usd), 'totals.asides_cost_usd'],
    [dollars('main thread (ledger)'), usd(totals.main.cost_usd), 'totals.main.cost_usd'],
    [dollars('workers (ledger)'), usd(totals.workers.cost_usd), 'totals.workers.cost_usd'],
    ['cache hit ratio', percent(report.cache.hit_ratio), 'cache.hit_ratio'],
  ]
    .map(
      ([label, value, field]) =>
        `<div class="card">${escapeHtml(label ?? '')}<b data-field="${field}">${escapeHtml(value ?? '')}</b></div>`,
    )
    .join('');
  const contextCharts = report.steps
    .map((step, index) =>
      step.context.generations.some((generation) => generation.points.length > 0)
        ? `<div class="chart"><canvas id="context-${index}" aria-label="context of ${escapeHtml(step.step)}"></canvas></div>`
        : '',
    )
    .join('');
  const { main, workers } = report.threads;
  const q = report.questions;
  const workbench = report.workbench;
  const sections = [
    `<h1>${escapeHtml(title)}</h1>`,
    `<p class="dim">${escapeHtml(`generated ${report.generated_at} · ${report.scope} · run directory ${report.run_dir}`)}</p>`,
    notices,
    report.task.request ? `<p><b>Task:</b> ${escapeHtml(report.task.request)}</p>` : '',
    report.task.goal ? `<p><b>Goal:</b> ${escapeHtml(report.task.goal)}</p>` : '',
    report.task.last_verdict ? `<p><b>Last verdict:</b> ${escapeHtml(report.task.last_verdict)}</p>` : '',
    report.task.checks.length > 0
      ? `<ul id="checks">${report.task.checks.map((check) => `<li>${escapeHtml(check)}</li>`).join('')}</ul>`
      : '',
    `<div class="cards">${cards}</div>`,
    '<h2>Timeline</h2><div class="chart"><canvas id="timeline-chart"></canvas></div>',
    '<h2>Steps</h2>',
    stepsTable(report.steps, dollars),
    '<h2>Cost per step</h2><div class="chart"><canvas id="cost-chart"></canvas></div>',
    '<h2>Ledger: main thread and workers</h2>',
    ledgerTable(report.steps, dollars),
    '<h2>Context of the main thread</h2>',
    contextCharts || '<p class="dim">No main-thread responses with usage.</p>',
    '<h2>Main thread vs workers</h2>',
    scrolling(
      `<table id="threads">${head('', 'entries', 'turns', 'characters', 'tokens', 'tool calls')}<tbody>${[
        ['main', main],
        ['workers', workers],
      ]
        .map(
          ([label, side]) =>
            `<tr data-side="${label}"><th>${label}</th>${[
              cell('entries', String((side as typeof main).entries), 'number'),
              cell('turns', String((side as typeof main).turns), 'number'),
              cell('chars', String((side as typeof main).chars), 'number'),
              cell('tokens', String((side as typeof main).tokens), 'number'),
              cell('tool_calls', String((side as typeof main).tool_calls), 'number'),
            ].join('')}</tr>`,
        )
        .join('')}</tbody></table>`,
    ),
    `<p>Workers' share of body characters: <b data-field="threads.workers_share_of_chars">${percent(report.threads.workers_share_of_chars)}</b></p>`,
    '<h2>Tools</h2><h3>main thread</h3>',
    countsTable('tools-main', main.tools),
    '<h3>workers</h3>',
    countsTable('tools-workers', workers.tools),
    `<p>Coordinator calls denied: <b data-field="denials">${report.denials}</b>. Its Bash commands by first word:</p>`,
    countsTable('bash-words', report.bash_first_words),
    '<h2>Outages, retries, rewrites</h2>',
    report.outages.length === 0
      ? '<p class="dim">No outages.</p>'
      : `<ul id="outages">${report.outages
          .slice(0, LISTED_OUTAGES * 5)
          .map((outage) => `<li>${escapeHtml(`${outage.step} (${outage.side}): ${outage.text}`)}</li>`)
          .join(
            '',
          )}${report.outages.length > LISTED_OUTAGES * 5 ? `<li>… and ${report.outages.length - LISTED_OUTAGES * 5} more (all in --json)</li>` : ''}</ul>`,
    `<p>Attempts retried: <b data-field="retries">${report.retries}</b></p>`,
    '<h2>Workbench, questions, asides</h2>',
    keyValueTable('workbench', [
      ['workbench.scripts.files', 'scripts', String(workbench?.scripts.files ?? 0)],
      ['workbench.artifacts.files', 'artifacts', String(workbench?.artifacts.files ?? 0)],
      ['workbench.notes.files', 'notes', String(workbench?.notes.files ?? 0)],
      ['workbench.spill.files', 'spill files', String(workbench?.spill.files ?? 0)],
      ['questions.asked', 'questions asked', String(q.asked)],
      ['questions.answered', 'answered', String(q.answered)],
      ['questions.assumed', 'decided by the agent', String(q.assumed)],
      ['asides.count', 'asides', String(report.asides.count)],
      ['asides.cost_usd', 'asides cost', usd(report.asides.cost_usd)],
    ]),
    `<p class="dim">Ledger tokens and dollars count each API response once; prices from the table in flower's config/prices.ts. The step's cost is the SDK's own figure. Token totals: main ${compact(totals.main.input_tokens + totals.main.cache_read_input_tokens + totals.main.cache_creation_input_tokens)} in, workers ${compact(totals.workers.input_tokens + totals.workers.cache_read_input_tokens + totals.workers.cache_creation_input_tokens)} in.</p>`,
  ];
  return [
    '<!doctype html>',
    '<html lang="en"><head><meta charset="utf-8">',
    `<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:">`,
    `<meta name="viewport" content="width=device-width, initial-scale=1"><title>${escapeHtml(title)}</title>`,
    `<style>${STYLE}</style></head><body>`,
    sections.join('\n'),
    `<script type="application/json" id="report-data">${scriptJson(chartData(report))}</script>`,
    `<script>${chartLibrary()}</script>`,
    `<script>${SCRIPT}</script>`,
    '</body></html>',
    '',
  ].join('\n');
}
