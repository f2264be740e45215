/**
 * Acceptance 7: `flower once` (the built binary, `dist/cli/bin.js`) against the mock model.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { mock, systemText } from '../../src/testing/index.js';
import { distRoot, type Harness, runNode, startHarness } from './runtime-harness.js';

const bin = join(distRoot, 'cli', 'bin.js');

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.cleanup();
  harness = undefined;
});

function once(h: Harness, ...args: string[]) {
  return runNode([bin, ...args], h.env, { cwd: h.root });
}

describe('flower once (real binary against the mock model)', () => {
  it('prints the scripted reply and the summary, and writes a correct manifest row', async () => {
    harness = await startHarness([
      mock.toolUse(
        'Glob',
        { pattern: '**/*.md' },
        { thinking: 'Looking for the docs first.', usage: { input_tokens: 2_000 } },
      ),
      mock.text('There are no markdown files here.', { usage: { input_tokens: 3_000 } }),
    ]);
    const run = await once(harness, 'once', 'Find the docs.', '-w', 'ws', '-i', 'Answer in one sentence.');
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain('~ Looking for the docs first.');
    expect(run.stdout).toContain('* Glob **/*.md');
    expect(run.stdout).toContain('There are no markdown files here.');
    expect(run.stdout).toMatch(/\+ finished · 2 turns · \$\d+\.\d{4} · \d+:\d\d/);

    // -r is relative to the workspace, so runs/ sits inside ws/.
    const manifest = join(harness.workspace, 'runs', 'manifest.json');
    const rows = JSON.parse(readFileSync(manifest, 'utf8')) as Array<Record<string, unknown>>;
    expect(rows).toHaveLength(1);
    const [row] = rows;
    expect(row).toMatchObject({
      step: 'ad-hoc',
      ok: true,
      num_turns: 2,
      text: 'There are no markdown files here.',
      error: null,
      attempts: 1,
      errors: [],
      resumed: false,
      retired: [],
      context: 3_000,
    });
    expect(typeof row?.session_id).toBe('string');
    expect(row?.cost_usd).toBeGreaterThan(0);
    expect(String(row?.run)).toMatch(/^\d{8}-\d{6}-[0-9a-f]{6}$/);
    expect(Number(row?.duration_s)).toBeGreaterThan(0);
    // No lineage for once: continuing is explicit with --resume.
    expect(existsSync(join(harness.workspace, 'runs', 'lineage.json'))).toBe(false);

    const request = harness.model.mainRequests()[0]!;
    expect(systemText(request.body)).toContain('Answer in one sentence.');
    const tools = (request.body?.tools ?? []).map((tool) => tool.name);
    expect(tools).toContain('Glob');
  });

  it("prints one end line, not the step's and its own (issue 21, polish)", async () => {
    harness = await startHarness([mock.text('All done.')]);
    const run = await once(harness, 'once', 'Say done.', '-w', 'ws');
    expect(run.code, run.stderr).toBe(0);
    const output = `${run.stdout}${run.stderr}`;
    expect(output.match(/^ {2}[+x] (done|finished|failed) /gm), output).toEqual(['  + finished ']);
    expect(output.match(/continue it with: /g)).toHaveLength(1);
  });

  it('prints one end line when the step fails', async () => {
    // Over its budget after the first turn: the binary stops the session as an error.
    harness = await startHarness([mock.toolUse('Glob', { pattern: '*' }), mock.text('Never reached.')]);
    const run = await once(harness, 'once', 'Look.', '-w', 'ws', '-b', '0.001');
    const output = `${run.stdout}${run.stderr}`;
    expect(run.code, output).toBe(1);
    expect(output.match(/^ {2}[+x] (done|finished|failed) /gm), output).toEqual(['  x failed ']);
  });

  it('continues a session with --resume', async () => {
    harness = await startHarness([mock.text('First answer.'), mock.text('Second answer.')]);
    const first = await once(harness, 'once', 'Question one.', '-w', 'ws');
    expect(first.code, first.stderr).toBe(0);
    const manifest = join(harness.workspace, 'runs', 'manifest.json');
    const sessionId = String(
      (JSON.parse(readFileSync(manifest, 'utf8')) as Array<Record<string, unknown>>)[0]?.session_id,
    );
    const second = await once(harness, '-w', 'ws', 'once', 'Question two.', '--resume', sessionId);
    expect(second.code, second.stderr).toBe(0);
    expect(second.stdout).toContain('Second answer.');
    expect(JSON.stringify(harness.model.mainRequests()[1]?.body?.messages)).toContain('First answer.');
  });

  it('trims the old large tool results of a resumed session by default; --no-trim keeps them (issue 23)', async () => {
    // 22 large results: the newest 20 stay verbatim (the trim policy's keepRecent), the 2 oldest
    // reach the model as pointers to files.
    const files = Array.from({ length: 22 }, (_, index) => `log-${String(index).padStart(2, '0')}.txt`);
    harness = await startHarness([
      mock.text('', { toolUses: files.map((file) => ({ name: 'Read', input: { file_path: file } })) }),
      mock.text('Read them all.'),
      mock.text('Resumed, trimmed.'),
      mock.text('Resumed, whole.'),
    ]);
    mkdirSync(harness.workspace, { recursive: true });
    for (const [index, file] of files.entries())
      writeFileSync(join(harness.workspace, file), `${`line ${index} of a long build log `.repeat(120)}\n`);
    const first = await once(harness, 'once', 'Read every log.', '-w', 'ws');
    expect(first.code, first.stderr).toBe(0);
    const sessionId = String(
      (
        JSON.parse(readFileSync(join(harness.workspace, 'runs', 'manifest.json'), 'utf8')) as Array<
          Record<string, unknown>
        >
      )[0]?.session_id,
    );
    const sent = () => JSON.stringify(harness?.model.mainRequests().at(-1)?.body?.messages);

    const trimmed = await once(harness, '-w', 'ws', 'once', 'Go on.', '--resume', sessionId);
    expect(trimmed.code, trimmed.stderr).toBe(0);
    // Which two are the oldest depends on the order the parallel reads finished in.
    const verbatim = () => files.filter((_, index) => sent().includes(`line ${index} of a long build log`));
    expect(sent().match(/\[tool result archived: \d+ chars/g)).toHaveLength(2);
    expect(verbatim()).toHaveLength(20);

    const whole = await once(harness, '-w', 'ws', 'once', 'Go on.', '--resume', sessionId, '--no-trim');
    expect(whole.code, whole.stderr).toBe(0);
    expect(sent()).not.toContain('[tool result archived');
    expect(verbatim()).toHaveLength(22);
  });

  it('with -W gives the agent a workbench under the run directory and shows it its index', async () => {
    harness = await startHarness([mock.text('Looked around.')]);
    const run = await once(harness, 'once', 'Look around.', '-w', 'ws', '-W', '-v');
    expect(run.code, run.stderr).toBe(0);
    const workbench = join(harness.workspace, 'runs', 'workbench');
    expect(existsSync(join(workbench, 'INDEX.md'))).toBe(true);
    const first = harness.model.mainRequests()[0]!;
    // Inside the workspace (the run directory is relative to it), so shown by its relative path.
    expect(JSON.stringify(first.body?.messages?.[0])).toContain('# Workbench runs/workbench/');
    // -v shows the effective settings, the key masked.
    expect(run.stderr).toContain('ANTHROPIC_BASE_URL = ');
    expect(run.stderr).toMatch(/ANTHROPIC_API_KEY = \S*\*\*\*/);
    expect(run.stderr).not.toContain('test-key');
  });

  it('exits 1 with the setup hint when the key is rejected', async () => {
    harness = await startHarness([mock.error(401)]);
    const run = await once(harness, 'once', 'Anything.', '-w', 'ws');
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('flower setup');
  });

  it('exits 2 on bad arguments without calling the model', async () => {
    harness = await startHarness([]);
    expect((await once(harness, 'once', 'x', '-p', 'yolo')).code).toBe(2);
    expect((await once(harness, 'once', 'x', '-b', 'lots')).code).toBe(2);
    expect((await once(harness, 'once')).code).toBe(2);
    expect(harness.model.requests).toHaveLength(0);
  });
});
