/**
 * Start-up stays cheap: `flower --version`, `--help`, a subcommand's `--help` and `flower doctor`
 * must not load the SDK, the MCP server code, the native SQLite binding, the workflow layer or
 * the mock model. Each command's implementation is imported by its action (commands/<name>-action.ts);
 * an eager import of one of them in a registration module fails this test.
 *
 * The built CLI runs as a real process with `--import test/support/module-trace.mjs`, which records
 * every module URL the process resolves. The CLI is bundled (rolldown.config.mjs): a file of dist/
 * holds several of tsc's modules, and the build's list (dist/chunks/modules.json) says which, so
 * the test reads the modules loaded, not only the files. A control run (`once` with an empty prompt, which fails
 * after its action was imported) shows the trace does see the SDK when it is loaded, and `status` of
 * a task asked for in Chinese that it sees string-width, which is loaded with `require`.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

const repoRoot = join(import.meta.dirname, '..', '..');
const bin = join(repoRoot, 'dist', 'cli', 'bin.js');
const tracer = join(repoRoot, 'test', 'support', 'module-trace.mjs');
const distUrl = `${pathToFileURL(join(repoRoot, 'dist')).href}/`;

/** A loaded file of dist/ as the modules the bundle put in it (dist/chunks/modules.json). */
function modulesIn(urls: readonly string[]): string[] {
  const held = JSON.parse(readFileSync(join(repoRoot, 'dist', 'chunks', 'modules.json'), 'utf8')) as Record<
    string,
    string[]
  >;
  return urls.flatMap((url) => {
    const file = url.startsWith(distUrl) ? url.slice(distUrl.length) : undefined;
    const modules = file === undefined ? undefined : held[file];
    return modules === undefined ? [url] : modules.map((module) => distUrl + module);
  });
}

/** Module URL fragments that only a running command may load. */
const HEAVY_MODULES = [
  '/node_modules/@anthropic-ai/claude-agent-sdk/',
  '/node_modules/@modelcontextprotocol/sdk/',
  '/node_modules/better-sqlite3/',
  '/node_modules/pg/',
  '/dist/testing/',
  '/dist/workflow/',
  // The update check's HTTP client (with TLS): about 6 ms of CPU at every start for a request
  // made at most once a day (issue 23).
  'node:https',
  'node:http',
  // Display widths (an Intl.Segmenter and an RGI-emoji pattern built as it loads: 40-75 ms of
  // CPU): loaded on the first text that is not plain ASCII, and these commands print none.
  '/node_modules/string-width/',
];

let root: string;

beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'flower-lazy-'));
  mkdirSync(join(root, 'home'));
  mkdirSync(join(root, 'project'));
});

afterEach(() => {
  rmSync(root, { recursive: true, force: true });
});

/** Runs the built CLI in a temporary world and returns its result and the modules it resolved. */
function tracedFlower(...args: string[]) {
  const trace = join(root, 'modules.txt');
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (!/^(ANTHROPIC_|CLAUDE_|FLOWER_|NODE_OPTIONS$)/.test(key)) env[key] = value;
  }
  const result = spawnSync(process.execPath, ['--import', tracer, bin, ...args], {
    cwd: join(root, 'project'),
    encoding: 'utf8',
    env: {
      ...env,
      HOME: join(root, 'home'),
      XDG_CONFIG_HOME: '',
      FLOWER_NO_UPDATE: '1',
      FLOWER_MODULE_TRACE: trace,
      ANTHROPIC_API_KEY: 'test-key',
      // doctor's reachability check: a closed port on loopback answers at once, and nothing leaves the machine.
      ANTHROPIC_BASE_URL: 'http://127.0.0.1:9',
    },
  });
  const modules = modulesIn(readFileSync(trace, 'utf8').split('\n').filter(Boolean));
  return { ...result, modules };
}

function heavyIn(modules: readonly string[]): string[] {
  const heavy = (url: string) =>
    HEAVY_MODULES.some((fragment) =>
      fragment.startsWith('node:') ? url === fragment : url.includes(fragment),
    );
  return [...new Set(modules.filter(heavy))];
}

describe('flower start-up loads only what the command needs', () => {
  it.each([
    [['--version']],
    [['--help']],
    [['go', '--help']],
    [['once', '--help']],
    [['demo', '--help']],
    [['status', '--help']],
    [['report', '--help']],
    [['log', '--help']],
  ])('flower %j loads no heavy module', (args) => {
    const result = tracedFlower(...args);
    expect(result.status).toBe(0);
    expect(result.modules).toContainEqual(expect.stringContaining('/dist/cli/main.js'));
    expect(heavyIn(result.modules)).toEqual([]);
  });

  it('flower doctor loads its implementation but no heavy module', () => {
    const result = tracedFlower('doctor');
    // The closed port fails doctor (exit 1), after every section was shown.
    expect(result.status).toBe(1);
    expect(result.stderr).toContain('the endpoint does not answer');
    expect(result.stdout).toContain('Credentials:');
    expect(result.modules).toContainEqual(expect.stringContaining('/dist/cli/commands/doctor-action.js'));
    expect(heavyIn(result.modules)).toEqual([]);
  });

  it('flower status reads the books without the SDK, the MCP code or the model (it is a command, not a task)', () => {
    const result = tracedFlower('status');
    expect(result.status).toBe(1);
    expect(result.stderr).toMatch(/^flower: No task in /);
    expect(result.modules).toContainEqual(expect.stringContaining('/dist/cli/commands/status-action.js'));
    const loaded = heavyIn(result.modules);
    expect(loaded.filter((url) => !url.includes('/dist/workflow/'))).toEqual([]);
  });

  it('status measures the width of text that is not plain ASCII (the trace sees what `require` loads)', () => {
    const notes = join(root, 'project', '.flower', 'notes');
    mkdirSync(notes, { recursive: true });
    writeFileSync(join(notes, 'brief.md'), `## Goal\n\n${'把菜单翻译成日语，保留原来的版式。'.repeat(8)}\n`);
    const result = tracedFlower('status');
    expect(result.status).toBe(0);
    // Wrapped to 100 columns, each of these characters two wide: 47 of them after 'Task: ' (6 columns).
    const first = result.stdout.split('\n')[0] as string;
    expect(first.startsWith('Task: ')).toBe(true);
    expect([...first.slice('Task: '.length)]).toHaveLength(47);
    const loaded = heavyIn(result.modules).filter((url) => !url.includes('/dist/workflow/'));
    expect(loaded).toEqual([expect.stringContaining('/node_modules/string-width/')]);
  });

  it('the trace does see the SDK once a command that needs it runs (control)', () => {
    // An empty prompt is refused after credentials are checked, i.e. after the action was imported.
    const result = tracedFlower('once', '');
    expect(result.status).toBe(1);
    expect(result.stderr).toContain('give the agent something to do');
    expect(heavyIn(result.modules)).toEqual(
      expect.arrayContaining([
        expect.stringContaining('/node_modules/@anthropic-ai/claude-agent-sdk/'),
        expect.stringContaining('/node_modules/better-sqlite3/'),
      ]),
    );
  });
});
