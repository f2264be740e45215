/**
 * What `flower log <step>` does (its flags live in `log.ts`): print a step's transcripts — the
 * main thread of each of its sessions, then each worker — as Markdown or as the stored JSON lines.
 * Read-only (with a store URL, the transcripts come from PostgreSQL too: task-view.ts); exit 1 with
 * one line when the step or its transcripts cannot be found.
 */
import { writeErr, writeOut, writeOutRaw } from '../../output/sink.js';
import { inferRunning } from '../../report/report.js';
import { pickStep, stepRecords } from '../../report/steps.js';
import { stepJsonLines, stepMarkdown } from '../../report/transcript-markdown.js';
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

export async function runLog(step: string, flags: LogFlags, global: GlobalOptions): Promise<void> {
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
    const record = pickStep(all, step, flags.run);
    if (record === undefined) {
      const labels = [...new Set(all.map((candidate) => candidate.step))];
      const corrupt =
        data.manifest.state === 'corrupt'
          ? ' (manifest.json is unreadable, so only running steps are known)'
          : '';
      const known = labels.length > 0 ? `; steps here: ${labels.join(', ')}` : '';
      const run = flags.run ? ` in run ${flags.run}` : '';
      throw new Error(`No step "${step}"${run} in ${view.where}${corrupt}${known}.`);
    }
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
