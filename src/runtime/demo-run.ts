/**
 * How a run directory says it was written by `flower demo`: the demo writes `<run dir>/demo.json`
 * when it starts, so that a stopped demo may be continued as one and so that `flower report` can
 * say its dollar figures are simulated (the scripted model reports token usage that is priced
 * like real usage, but nobody paid for it).
 *
 * Lives below the CLI because both the demo (writer) and the report (reader) need the name.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** The marker's file name inside the run directory. */
export const DEMO_MARKER = 'demo.json';

/** Whether `runDir` holds a demo's marker (`{"demo": true, ...}`); anything unreadable is "no". */
export function isDemoRun(runDir: string): boolean {
  try {
    return (JSON.parse(readFileSync(join(runDir, DEMO_MARKER), 'utf8')) as { demo?: unknown }).demo === true;
  } catch {
    return false;
  }
}
