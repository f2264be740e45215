/**
 * Every human-facing byte passes through the output sink (src/output/sink.ts): this test fails when
 * a new output path writes to stdout/stderr, or a new module writes files, without it.
 *
 * - stdout/stderr: only src/output/ writes to them (src/testing/ is the scripted model server, not
 *   flower's output). Handing the raw stream to something else is allowed only where listed below,
 *   each with the reason it is safe.
 * - Files: a module that writes files either imports the sink or is listed as a writer of flower's
 *   own state (books, stores, locks, sandbox settings …), which people do not read as text.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '../../..');
const SRC = join(ROOT, 'src');

function sources(directory: string): string[] {
  return readdirSync(directory, { withFileTypes: true }).flatMap((entry) => {
    const path = join(directory, entry.name);
    if (entry.isDirectory()) return sources(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

const files = sources(SRC)
  .map((path) => ({ path: relative(ROOT, path), text: readFileSync(path, 'utf8') }))
  .filter(({ path }) => !path.startsWith('src/output/') && !path.startsWith('src/testing/'));

/** Where the raw process stream may be handed on, and why that is safe. */
const RAW_STREAM_USES: Record<string, string> = {
  // A Terminal wraps its output in the sink's last pass (`guarded`) in its constructor.
  'src/cli/commands/demo-action.ts': 'new Terminal(…), which guards its output',
  // go, run and once get theirs through runWithOutput, and hand them to their Terminal.
  'src/cli/machine-output/machine-output.ts':
    'handed to the command’s new Terminal(…), which guards its output',
  // readline echoes the user's own typing and moves the cursor over it: no run text reaches it.
  'src/cli/interaction/sandbox-gate.ts': 'readline prompt echoing the user',
  'src/cli/commands/setup-action.ts': 'readline prompt echoing the user (the key hidden by MaskableOutput)',
  // Only listens for the stream's close, writes nothing.
  'src/cli/terminal/closed-output.ts': 'listens for EPIPE, writes nothing',
  // Only read isTTY for the colour decision.
  'src/cli/terminal/colors.ts': 'reads isTTY',
  'src/cli/update-notice.ts': 'reads isTTY for the colour decision',
};

/** Modules that write files people do not read as text: flower's own state. */
const STATE_WRITERS: Record<string, string> = {
  'src/agents/guards/spill.ts': 'spilled tool results the model reads back, in the private workbench',
  'src/config/atomic-file.ts': 'the atomic write primitive itself',
  'src/config/user-env-file.ts': 'the user’s own .env, written by `flower setup` with what they typed',
  'src/config/window.ts': 'cached context-window sizes',
  'src/runtime/in-flight.ts': 'in-flight markers (JSON)',
  'src/runtime/locked-json-file.ts': 'the locked JSON books (manifest, lineage)',
  'src/runtime/ownership/run-instance.ts': 'the run-instance record',
  'src/runtime/resume-files.ts':
    'the transcripts of a resume, in the copy the SDK made (must stay exactly as stored)',
  'src/runtime/run-directory.ts': 'creates runs/ and its private files',
  'src/runtime/sandbox/bubblewrap.ts': 'sandbox settings for the binary',
  'src/runtime/sandbox/walled-run.ts': 'sandbox settings for a check',
  'src/runtime/shared/outbox.ts': 'the PostgreSQL outbox (JSON lines)',
  'src/runtime/shared/pull.ts': 'transcripts pulled from PostgreSQL (must stay exactly as stored)',
  'src/runtime/task-lock.ts': 'the task lock file',
  'src/runtime/task-spend.ts': 'task-start.json, when --new archived the previous task',
  'src/store/spill-record.ts': 'spill files of the session store',
  'src/store/spill.ts': 'spill files of the session store',
  'src/store/sqlite-integrity.ts': 'the quarantine copy of a corrupt database',
  'src/store/transcript-recovery.ts': 'transcripts kept for recovery (must stay exactly as stored)',
  'src/workflow/frozen-checks.ts': 'the frozen copy of the confirmed checks',
  'src/workflow/starter.ts':
    'pending-remark.md: the user’s own words from --clarify-only, kept for the next run',
  'src/cli/commands/demo-action.ts': 'the demo workspace’s seed files',
};

const importsSink = (text: string) => /from '[^']*\/output\/sink\.js'/.test(text);
const WRITES_FILES =
  /\b(?:writeFileSync|appendFileSync|createWriteStream|writeFile|appendFile|writeSync|writeFileAtomic)\(/;

describe('every output path goes through the output sink', () => {
  it('no module writes to stdout or stderr, or logs to the console, but src/output/', () => {
    const offenders = files.flatMap(({ path, text }) =>
      [...text.matchAll(/process\.std(?:out|err)\.write\(|\bconsole\.(?:log|error|warn|info|debug)\(/g)].map(
        (match) => `${path}: ${match[0]}`,
      ),
    );
    expect(offenders).toEqual([]);
  });

  it('the raw process streams are handed on only where the use is known to be safe', () => {
    const offenders = files
      .filter(({ text }) => /process\.std(?:out|err)\b(?!\.(?:isTTY|columns|on\(|off\(|once\())/.test(text))
      .map(({ path }) => path)
      .filter((path) => !(path in RAW_STREAM_USES));
    expect(offenders).toEqual([]);
  });

  it('every module that writes files either goes through the sink or writes flower’s own state', () => {
    const offenders = files
      .filter(({ text }) => WRITES_FILES.test(text))
      .map(({ path, text }) => ({ path, sink: importsSink(text) }))
      .filter(({ path, sink }) => !sink && !(path in STATE_WRITERS))
      .map(({ path }) => path);
    expect(offenders).toEqual([]);
  });

  it('the lists name only modules that exist and still need the exception', () => {
    const byPath = new Map(files.map((file) => [file.path, file.text]));
    for (const path of [...Object.keys(RAW_STREAM_USES), ...Object.keys(STATE_WRITERS)])
      expect(byPath.has(path), `${path} is listed but does not exist`).toBe(true);
    for (const path of Object.keys(STATE_WRITERS))
      expect(WRITES_FILES.test(byPath.get(path) ?? ''), `${path} no longer writes files`).toBe(true);
    for (const path of Object.keys(RAW_STREAM_USES))
      expect(byPath.get(path), `${path} no longer uses the raw stream`).toMatch(/process\.std(?:out|err)\b/);
  });
});
