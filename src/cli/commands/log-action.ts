/**
 * What `flower log <step>` does (its flags live in `log.ts`): print a step's transcripts — the
 * main thread of each of its sessions, then each worker — as Markdown or as the stored JSON lines.
 * Read-only (with a store URL, the transcripts come from PostgreSQL too: task-view.ts); exit 1 with
 * one line when the step or its transcripts cannot be found.
 */
import { writeErr, writeOut, writeOutRaw } from '../../output/sink.js';
import { inferRunning } from '../../report/report.js';
import { pickStep, type StepRecord, stepRecords } from '../../report/steps.js';
import { stepJsonLines, stepMarkdown } from '../../report/transcript-markdown.js';
import { UsageError } from '../command-line/exit-errors.js';
import type { GlobalOptions } from '../command-line/global-options.js';
import { openTaskView } from './task-view.js';

export interface LogFlags {
  format: 'markdown' | 'jsonl';
  run?: string;
  /** Print the stored JSON lines unmasked (only with the jsonl format). */
  raw?: boolean;
}

/** What `--raw` prints on stderr before the entries, so nobody takes them for the masked form. */
export const RAW_NOTICE =
  'flower: --raw prints the transcript exactly as stored: secrets and escape sequences are NOT masked. Pipe it to a file or a tool, not to a terminal or a chat.';

/** Clock slack between flower's step stamps and the binary's entry stamps, seconds. */
const SLACK_S = 1;

/** How many runs a refusal lists (the latest ones): a task of many wakes has dozens. */
const RUNS_LISTED = 5;

/** Why `flower log` has nothing to show; `usage` when the command line left the step out (exit 2). */
export interface NotFound {
  readonly message: string;
  readonly usage: boolean;
}

/**
 * Why `flower log [step] [--run id]` has nothing to show, blaming what is actually missing: an
 * unknown run first (`--run nosuch` used to be reported as a missing step), then a step left out,
 * then a step that is not in that run (or anywhere); undefined when there is a step to show.
 */
export function notFound(
  known: readonly Pick<StepRecord, 'step' | 'run' | 'startedAt'>[],
  step: string | undefined,
  run: string | undefined,
  where: string,
  manifestCorrupt = false,
): NotFound | undefined {
  const corrupt = manifestCorrupt ? ' (manifest.json is unreadable, so only running steps are known)' : '';
  const stepsOf = (records: typeof known) => [...new Set(records.map((record) => record.step))].join(', ');
  if (run !== undefined && !known.some((record) => record.run === run)) {
    const runs = [
      ...new Set([...known].sort((a, b) => a.startedAt - b.startedAt).map((record) => record.run)),
    ].filter((id) => id !== '');
    const listed =
      runs.length === 0
        ? ''
        : `; runs here (latest last): ${runs.length > RUNS_LISTED ? '…, ' : ''}${runs.slice(-RUNS_LISTED).join(', ')}`;
    return {
      message: `No run "${run}" in ${where}${corrupt}${listed}. Leave out --run to see a step's latest run.`,
      usage: false,
    };
  }
  const inScope = run === undefined ? known : known.filter((record) => record.run === run);
  const scope = run === undefined ? 'here' : `in run ${run}`;
  const steps = stepsOf(inScope);
  if (step === undefined) {
    const example = `flower log ${inScope[0]?.step ?? 'work'}${run === undefined ? '' : ` --run ${run}`}`;
    return {
      message: `Name the step to show, e.g. ${example}${steps === '' ? '' : ` (steps ${scope}: ${steps})`}.`,
      usage: true,
    };
  }
  if (inScope.some((record) => record.step === step)) return undefined;
  const place = run === undefined ? `in ${where}` : `in run ${run}`;
  return {
    message: `No step "${step}" ${place}${corrupt}${steps === '' ? '' : `; steps ${scope}: ${steps}`}.`,
    usage: false,
  };
}

export async function runLog(
  step: string | undefined,
  flags: LogFlags,
  global: GlobalOptions,
): Promise<void> {
  if (flags.raw && flags.format !== 'jsonl')
    throw new Error('--raw applies to the stored JSON lines only: add --format jsonl, or drop --raw.');
  const view = await openTaskView(global);
  const { data } = view;
  try {
    if (data.store.state === 'missing')
      throw new Error(
        `No session store at ${view.where === global.runDir ? `${global.runDir}/sessions.db` : view.where}, so there is no transcript to show; run flower here first.`,
      );
    if (data.store.state === 'unreadable')
      throw new Error(
        `The session store ${global.runDir}/sessions.db could not be read: ${data.store.reason}`,
      );
    const records = stepRecords(data.manifest.document);
    const all = [...records, ...inferRunning(data, records)];
    const missing = notFound(all, step, flags.run, view.where, data.manifest.state === 'corrupt');
    if (missing !== undefined)
      throw missing.usage ? new UsageError(missing.message) : new Error(missing.message);
    // notFound said there is one: a step was named and it is in scope.
    const record = pickStep(all, step as string, flags.run) as StepRecord;
    const sessions = await data.transcripts(record.sessions);
    if (sessions.length === 0)
      throw new Error(
        `The session store has no transcript of step "${step}" (session ${record.sessions.join(', ') || 'unknown'}).`,
      );
    const window = {
      from: record.startedAt > 0 ? record.startedAt - SLACK_S : Number.NEGATIVE_INFINITY,
      to: record.endedAt > 0 ? record.endedAt + SLACK_S : Number.POSITIVE_INFINITY,
    };
    if (flags.format === 'jsonl') {
      if (flags.raw) {
        writeErr(`${RAW_NOTICE}\n`);
        writeOutRaw(stepJsonLines(sessions, window, { raw: true }));
      } else writeOut(stepJsonLines(sessions, window));
      return;
    }
    const outcome =
      record.outcome === 'ok' ? 'ok' : `${record.outcome}${record.detail ? `: ${record.detail}` : ''}`;
    writeOut(
      stepMarkdown(
        { step: record.step, run: record.run, outcome, costUsd: record.costUsd },
        sessions,
        window,
      ),
    );
  } finally {
    await view.close();
  }
}
