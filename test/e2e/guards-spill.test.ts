/**
 * The spill guard with the real binary: a worker's long Read result reaches the model as a pointer
 * plus the first 400 characters, the spill file holds the full text, and a Read of that spill file
 * comes back whole (it is not spilled again).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { spillName } from '../../src/agents/guards/spill.js';
import { coordinator, worker } from '../../src/agents/roles.js';
import { Workbench } from '../../src/agents/workbench.js';
import { cleanUp, dispatch, resultFor, runSpec, startMock, tempDir } from './agents-harness.js';

afterEach(cleanUp);

/** 100 numbered lines of 100 characters each (newline included): exactly 10,000 characters. */
function bigText(): string {
  return Array.from({ length: 100 }, (_, index) =>
    `line-${String(index + 1).padStart(3, '0')} `.padEnd(99, 'x'),
  )
    .map((line) => `${line}\n`)
    .join('');
}

describe('spill guard (real binary)', () => {
  it("spills a worker's 10,000-character Read and lets a Read of the spill file through whole", async () => {
    const workspace = tempDir('flower-ws-');
    const text = bigText();
    expect(text).toHaveLength(10_000);
    writeFileSync(join(workspace, 'big.txt'), text);
    const workbench = new Workbench(workspace);
    const spillFile = join(workbench.spill, spillName(text));

    const server = await startMock({
      main: [dispatch('reader', 'Read big.txt and report.', 'toolu_agent_1'), { text: 'All done.' }],
      agents: {
        reader: [
          {
            toolUses: [
              { name: 'Read', id: 'toolu_read_big', input: { file_path: join(workspace, 'big.txt') } },
            ],
          },
          { toolUses: [{ name: 'Read', id: 'toolu_read_spill', input: { file_path: spillFile } }] },
          { text: 'Conclusion: read it.' },
        ],
      },
    });
    const spec = coordinator({
      workers: { reader: worker({ description: 'reads files', prompt: 'You read files.' }) },
      workbench,
    });

    const { thrown } = await runSpec(server, spec, workspace);
    expect(thrown).toBeUndefined();

    const spilled = resultFor(server, 'toolu_read_big') ?? '';
    expect(spilled).toContain(`[tool result archived: 10000 chars. Full text at ${spillFile};`);
    expect(spilled).toContain(`First 400 characters: ${text.slice(0, 400).replace(/\n/g, ' ')}`);
    expect(spilled).not.toContain('line-005');
    expect(spilled.length).toBeLessThan(1000);
    expect(readFileSync(spillFile, 'utf8')).toBe(text);

    const reread = resultFor(server, 'toolu_read_spill') ?? '';
    expect(reread).not.toContain('tool result archived');
    for (const line of text.trimEnd().split('\n')) expect(reread).toContain(line);
  });

  it("spills a worker's long Bash output (the stdout field) and keeps short results as they are", async () => {
    const workspace = tempDir('flower-ws-');
    const workbench = new Workbench(workspace);
    const server = await startMock({
      main: [dispatch('runner', 'Count to 2000.', 'toolu_agent_2'), { text: 'All done.' }],
      agents: {
        runner: [
          { toolUses: [{ name: 'Bash', id: 'toolu_seq_long', input: { command: 'seq 1 2000' } }] },
          { toolUses: [{ name: 'Bash', id: 'toolu_seq_short', input: { command: 'seq 1 5' } }] },
          { text: 'Conclusion: counted.' },
        ],
      },
    });
    const spec = coordinator({
      workers: { runner: worker({ description: 'runs commands', prompt: 'You run commands.' }) },
      workbench,
    });

    const { thrown } = await runSpec(server, spec, workspace);
    expect(thrown).toBeUndefined();

    const full = `${Array.from({ length: 2000 }, (_, index) => index + 1).join('\n')}`;
    const spilled = resultFor(server, 'toolu_seq_long') ?? '';
    expect(spilled).toContain('[tool result archived: ');
    expect(spilled).toContain('First 400 characters: 1 2 3 4 5');
    expect(spilled).not.toContain('1999');
    const [, path] = /Full text at (\S+);/.exec(spilled) ?? [];
    expect(path?.startsWith(workbench.spill)).toBe(true);
    expect(readFileSync(path ?? 'missing', 'utf8').trim()).toBe(full);
    expect(resultFor(server, 'toolu_seq_short')).toBe('1\n2\n3\n4\n5');
  });

  it("spills the coordinator's own long Read on the main thread too", async () => {
    const workspace = tempDir('flower-ws-');
    const text = bigText();
    writeFileSync(join(workspace, 'big.txt'), text);
    const workbench = new Workbench(workspace);
    const server = await startMock([
      {
        toolUses: [{ name: 'Read', id: 'toolu_main_read', input: { file_path: join(workspace, 'big.txt') } }],
      },
      { text: 'Read it.' },
    ]);

    const { thrown } = await runSpec(server, coordinator({ workers: {}, workbench }), workspace);
    expect(thrown).toBeUndefined();

    expect(resultFor(server, 'toolu_main_read')).toContain(
      `[tool result archived: 10000 chars. Full text at ${join(workbench.spill, spillName(text))};`,
    );
  });
});
