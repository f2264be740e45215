/**
 * What `flower report` does (its flags live in `report.ts`): read the run directory once (books,
 * transcripts, workbench), build the report, and print it as text, JSON, or a one-file HTML page
 * (then only a line saying where the page is).
 *
 * Read-only: the store is opened for reading, no lock is taken, a corrupt manifest is reported and
 * left for the next flower run to set aside. With a store URL the task is read from PostgreSQL too
 * (task-view.ts), so a machine without the run directory reports it. Exit 1 with one line when
 * there is nothing to show.
 */

import { writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { writeOut } from '../../output/sink.js';
import { collectReport } from '../../report/report.js';
import { reportHtml } from '../../report/report-html.js';
import { reportLines } from '../../report/report-text.js';
import type { GlobalOptions } from '../command-line/global-options.js';
import { openTaskView } from './task-view.js';

export interface ReportFlags {
  json?: boolean;
  html?: string;
  all?: boolean;
}

export async function runReport(flags: ReportFlags, global: GlobalOptions): Promise<void> {
  const view = await openTaskView(global);
  const { data } = view;
  try {
    const nothing = data.manifest.state !== 'ok' && data.store.state !== 'ok' && data.asides.state !== 'ok';
    if (nothing) {
      if (data.manifest.state === 'corrupt') {
        throw new Error(
          `${global.runDir}/manifest.json is unreadable (${data.manifest.reason}) and there is no session store to read instead; it was left as it is, and the next flower run here sets it aside.`,
        );
      }
      throw new Error(
        `No runs in ${view.where} (no manifest rows, no sessions); run flower here first, or point -w/-r (and --store) at a task that has run.`,
      );
    }
    const report = await collectReport(data, { all: flags.all ?? false });
    if (report.steps.length === 0) {
      // Nothing to lay out: the notice (an unreadable manifest) or the plain fact is the message.
      throw new Error(report.notices[0] ?? `No steps recorded in ${view.where} yet; run flower here first.`);
    }
    if (flags.html !== undefined) {
      const file = resolve(flags.html);
      const page = reportHtml(report);
      try {
        writeFileSync(file, page);
      } catch (error) {
        throw new Error(
          `Could not write ${file}: ${(error as Error).message}. Choose another path with --html.`,
        );
      }
      // The page is what was asked for: one line says where it is (the text report is `flower report`).
      if (!flags.json)
        writeOut(
          `Wrote the report page to ${file} (${Math.ceil(Buffer.byteLength(page) / 1024)} KB); open it in a browser.\n`,
        );
    }
    if (flags.json) writeOut(`${JSON.stringify(report, null, 2)}\n`);
    else if (flags.html === undefined) writeOut(`${reportLines(report).join('\n')}\n`);
  } finally {
    await view.close();
  }
}
