/**
 * Issue 10 §4 through the built CLI: `runs/` is private, credential values are masked wherever
 * flower prints them, `.env` contents are sanitised like model text, and an environment too large
 * for the agent process names the file, line and key.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { ONCE_STEP } from '../../src/cli/commands/once-action.js';
import { maskSecret } from '../../src/config/credentials.js';
import { mock } from '../../src/testing/index.js';
import { cleanUp, startMock } from '../support/scratch.js';
import { isolatedEnv, mockedEnv, runFlower, tempDir } from './cli-harness.js';

afterEach(cleanUp);

const BRIEF =
  '## Goal\nCount.\n\n## Acceptance\n- a number\n\n## Boundaries\n- none\n\n## Unknowns & assumptions\n- none';
const modeOf = (path: string) => statSync(path).mode & 0o777;
/** Anything that could drive a terminal: ESC, the C1 introducers, and control characters but newline. */
const TERMINAL_CONTROL = /[\x00-\x09\x0b-\x1f\x7f-\x9f]/;

describe('runs/ is private', () => {
  it('is 0700 with 0600 files and ignores itself in git; the workbench keeps the umask', async () => {
    const model = await startMock({ main: [], fallback: mock.text(BRIEF) });
    const workspace = tempDir('flower-private-');
    execFileSync('git', ['init', '-q', workspace]);
    const run = await runFlower(['-w', workspace, '--clarify-only', '--timeout', '0', 'count'], {
      env: mockedEnv(model),
    });
    expect(run.status).toBe(0);
    const runs = join(workspace, 'runs');
    expect(modeOf(runs)).toBe(0o700);
    const files = readdirSync(runs, { recursive: true, withFileTypes: true }).filter((entry) =>
      entry.isFile(),
    );
    expect(files.map((entry) => entry.name)).toEqual(
      expect.arrayContaining(['.gitignore', 'sessions.db', 'manifest.json', 'lineage.json']),
    );
    // Whatever else is there (a -wal or -shm left by a live process, locks, in-flight markers) too.
    for (const entry of files)
      expect([entry.name, modeOf(join(entry.parentPath, entry.name))]).toEqual([entry.name, 0o600]);
    for (const entry of readdirSync(runs, { withFileTypes: true }).filter((item) => item.isDirectory()))
      expect([entry.name, modeOf(join(runs, entry.name))]).toEqual([entry.name, 0o700]);
    // Nothing under runs/ would be committed by `git add .`.
    const status = execFileSync('git', ['-C', workspace, 'status', '--porcelain', '--untracked-files=all'], {
      encoding: 'utf8',
    });
    expect(status).not.toContain('runs/');
    expect(status).toContain('.flower/');
    const umask = process.umask();
    expect(modeOf(join(workspace, '.flower'))).toBe(0o777 & ~umask);
  });
});

describe('credential values are masked wherever flower prints them', () => {
  it('a key a worker printed: masked under -v, on screen and in the manifest; the stored transcript keeps it', async () => {
    const KEY = 'sk-ant-api03-Zq8vX2mN4pL7rT1wY6uE9oI3aS5dF0gH';
    // The sandbox keeps the variable itself from the worker's shell (printenv prints nothing, see
    // sandbox-walls), so the value reaches the output the other way a project leaks one: a file
    // in the workspace that holds it. It is still the value of a credential variable.
    const model = await startMock([
      mock.toolUse('Bash', { command: 'cat deploy-notes.txt', description: 'show the notes' }),
      mock.text(`Your key is ${KEY}.`),
    ]);
    const workspace = tempDir('flower-masked-');
    writeFileSync(join(workspace, 'deploy-notes.txt'), `${KEY}\n`);
    const run = await runFlower(['-v', 'once', '-w', workspace, '-t', 'Bash', 'Show me the key.'], {
      env: mockedEnv(model, { ANTHROPIC_API_KEY: KEY }),
    });
    expect(run.status).toBe(0);
    // The tool really printed it (the model saw it), so there was something to mask.
    expect(JSON.stringify(model.mainRequests()[1]?.body?.messages)).toContain(KEY);
    expect(run.stdout + run.stderr).not.toContain(KEY);
    expect(run.stdout).toContain(`Your key is ${maskSecret(KEY)}.`);
    // The -v line of the tool's result: the printed value, masked, alone on its line.
    const masked = maskSecret(KEY).replace(/[*()]/g, (char) => `\\${char}`);
    expect(run.stdout).toMatch(new RegExp(`^\\s+${masked}$`, 'm'));
    const manifest = readFileSync(join(workspace, 'runs', 'manifest.json'), 'utf8');
    expect(manifest).not.toContain(KEY);
    expect(manifest).toContain(maskSecret(KEY));
    // Deliberately not masked: the transcript a resume is built from (see config/secret-mask.ts).
    const db = new Database(join(workspace, 'runs', 'sessions.db'), { readonly: true });
    const stored = db.prepare('SELECT count(*) AS n FROM entries WHERE payload LIKE ?').get(`%${KEY}%`) as {
      n: number;
    };
    db.close();
    expect(stored.n).toBeGreaterThan(0);

    // The read-only views mask it too, also when the key is only in a .env file of the lookup
    // chain (what `flower setup` saves) and not in the shell's environment.
    const viewer = isolatedEnv();
    mkdirSync(join(viewer.HOME as string, '.config', 'flower'), { recursive: true });
    writeFileSync(join(viewer.HOME as string, '.config', 'flower', '.env'), `ANTHROPIC_API_KEY=${KEY}\n`);
    for (const view of [
      ['log', ONCE_STEP],
      ['log', ONCE_STEP, '--format', 'jsonl'],
      ['report'],
      ['report', '--json'],
    ]) {
      const shown = await runFlower(['-w', workspace, ...view], { env: viewer });
      expect(shown.status, `${view.join(' ')}: ${shown.stderr}`).toBe(0);
      expect(shown.stdout + shown.stderr, view.join(' ')).not.toContain(KEY);
    }
    const log = await runFlower(['-w', workspace, 'log', ONCE_STEP], { env: viewer });
    expect(log.stdout).toContain(maskSecret(KEY));
  });
});

describe('.env contents on the terminal', () => {
  const hostileModel = 'claude\x1b]0;pwned\x07\x1b[2J\x1b]8;;https://evil.example\x1b\\click\x1b]8;;\x1b\\';
  const junk = () =>
    randomBytes(3072)
      .toString('latin1')
      .replace(/[\n\r#'"]/g, 'x');

  it('doctor sanitises values, cuts long ones, and drives nothing', async () => {
    const project = tempDir('flower-env-doctor-');
    writeFileSync(
      join(project, '.env'),
      `ANTHROPIC_MODEL=${hostileModel}\nJUNK=${junk()}\nANTHROPIC_API_KEY=sk-test-1234567890\n`,
    );
    const run = await runFlower(['doctor'], {
      cwd: project,
      env: isolatedEnv({ ANTHROPIC_BASE_URL: 'http://127.0.0.1:9' }),
    });
    expect(run.stdout).toContain('ANTHROPIC_MODEL');
    expect(run.stdout).toContain('characters in all');
    expect(run.stdout).not.toMatch(TERMINAL_CONTROL);
    expect(run.stdout).not.toContain('sk-test-1234567890');
  });

  it('-v sanitises the settings it shows', async () => {
    const model = await startMock([mock.text('Hello.')]);
    const project = tempDir('flower-env-verbose-');
    writeFileSync(join(project, '.env'), `ANTHROPIC_MODEL=${hostileModel}\n`);
    const env = mockedEnv(model);
    delete env.ANTHROPIC_MODEL;
    const run = await runFlower(['-v', 'once', '-w', project, 'Say hello.'], { cwd: project, env });
    expect(run.stderr).toContain('ANTHROPIC_MODEL = claude');
    expect(run.stdout + run.stderr).not.toMatch(TERMINAL_CONTROL);
  });
});

describe('a .env value too large for the agent process', () => {
  it('names the file, the line and the key instead of "spawn E2BIG"', async () => {
    const model = await startMock([mock.text('never asked')]);
    const project = tempDir('flower-env-e2big-');
    writeFileSync(join(project, '.env'), `# notes\nHUGE_NOTES=${'x'.repeat(2 * 1024 * 1024)}\n`);
    const run = await runFlower(['once', '-w', project, 'Say hello.'], {
      cwd: project,
      env: mockedEnv(model),
    });
    expect(run.status).toBe(1);
    expect(run.stderr.trim()).toBe(
      `flower: HUGE_NOTES (set in ${join(project, '.env')}:2) is 2.0 MB; the agent process cannot start with one environment variable over 128 KB (the system refuses it: E2BIG). Shorten that line or remove it.`,
    );
    expect(model.mainRequests()).toHaveLength(0);
  });
});
