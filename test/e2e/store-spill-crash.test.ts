/**
 * Spill behind the write, proven across a crash: a step reads a large file, the result is
 * mirrored, its spill file is written behind the append while the next model request is still
 * open (no close, no load), and the process is then killed with SIGKILL. A fresh process resumes
 * the session, the request the mock receives holds the pointer instead of the text, and the
 * resume writes no spill file of its own. (A crash before the write behind ran is the unit
 * tests': the resume writes the file from the stored entry.) Real SDK, real binary, real SQLite;
 * the processes run `dist/`.
 */
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { mock } from '../../src/testing/index.js';
import { driveStep, type Harness, startHarness } from './runtime-harness.js';

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.cleanup();
  harness = undefined;
});

const trimEverything = { store: { trim: { enabled: true, keepRecent: 0 } } };

/** Whether sessions.db holds a row containing `text` (the mirror has written it). */
function mirrored(runDir: string, text: string): boolean {
  let db: Database.Database | undefined;
  try {
    db = new Database(join(runDir, 'sessions.db'), { readonly: true, fileMustExist: true });
    return db.prepare('SELECT 1 FROM entries WHERE instr(payload, ?) > 0').get(text) !== undefined;
  } catch {
    return false; // not created yet
  } finally {
    db?.close();
  }
}

/** The spill files in `directory` (its `records/` cache of their names is not one of them). */
const listing = (directory: string): string[] => {
  try {
    return readdirSync(directory).filter((name) => name.endsWith('.txt'));
  } catch {
    return [];
  }
};

async function until(condition: () => boolean, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (condition()) return true;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return condition();
}

describe('spill files are written behind the mirror, while the model is asked (real SDK and binary)', () => {
  it('a large result mirrored during an open request gets its file without a close; after SIGKILL the resume sends the pointer', async () => {
    harness = await startHarness([
      mock.toolUse('Read', { file_path: 'build.log' }),
      mock.text('This reply never arrives.', { delayMs: 60_000 }),
    ]);
    const h = harness;
    const runDir = join(h.workspace, 'runs');
    const spillDir = join(h.workspace, '.flower', 'spill');
    const lastLine = `line 299: ${'compiler output '.repeat(4)}end`;
    const log = Array.from({ length: 300 }, (_, line) => `line ${line}: ${'compiler output '.repeat(4)}end`);
    mkdirSync(h.workspace, { recursive: true });
    writeFileSync(join(h.workspace, 'build.log'), `${log.join('\n')}\n`);
    let spilledBeforeResume: string[] = [];
    let wasMirrored = false;

    const first = await driveStep(h, 'work', 'Read build.log.', {
      runtime: trimEverything,
      onSpawn: (child) => {
        void h.model
          .waitForRequest(() => h.model.mainRequests().length >= 2, 60_000)
          .then(() => until(() => mirrored(runDir, lastLine) && listing(spillDir).length > 0, 20_000))
          .then((found) => {
            wasMirrored = found;
            spilledBeforeResume = listing(spillDir);
          })
          .finally(() => process.kill(-(child.pid ?? 0), 'SIGKILL'));
      },
    });
    expect(first.signal, first.stderr).toBe('SIGKILL');
    expect(wasMirrored).toBe(true);

    // Before any resume: exactly one spill file, holding the whole result the model saw.
    expect(spilledBeforeResume).toHaveLength(1);
    const spillFile = join(spillDir, spilledBeforeResume[0] as string);
    const spilled = readFileSync(spillFile, 'utf8');
    expect(spilled).toContain(lastLine);
    expect(spilled).toContain('line 0:');
    const writtenAt = statSync(spillFile).mtimeMs;

    h.model.setScript([mock.text('Resumed without the log.')]);
    const before = h.model.mainRequests().length;
    const second = await driveStep(h, 'work', 'Read build.log.', { runtime: trimEverything });
    expect(second.code, second.stderr).toBe(0);
    expect(second.result).toMatchObject({ ok: true, resumed: true, text: 'Resumed without the log.' });

    const sent = JSON.stringify(h.model.mainRequests()[before]?.body?.messages);
    expect(sent).toContain(
      `[tool result archived: ${spilled.length} chars. Full text at ${spillFile}; Read it when needed]`,
    );
    expect(sent).not.toContain(lastLine);
    // The resume wrote no spill file: the same single file, untouched.
    expect(listing(spillDir)).toEqual(spilledBeforeResume);
    expect(statSync(spillFile).mtimeMs).toBe(writtenAt);
    expect(second.warnings).toEqual([]);
  });
});
