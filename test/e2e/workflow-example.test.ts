/**
 * The example user workflow (examples/my-flow.ts) runs end to end on the real Runtime, SDK and
 * binary against the mock model: the hard gate rejects a wrong program, the rejected session is
 * told what is wrong and fixes it (`write#round2`), and the forked `usage` step hands on its note.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { checkWordcount, main } from '../../examples/my-flow.js';
import { lastUserText } from '../../src/testing/index.js';
import { mainRouter, type Scenario, startScenario } from './scenario-harness.js';

let scenario: Scenario | undefined;
afterEach(async () => {
  await scenario?.close();
  scenario = undefined;
});

const dispatch = (prompt: string) => ({
  toolUses: [{ name: 'Agent', input: { subagent_type: 'coder', description: 'wordcount.py', prompt } }],
});

describe('examples/my-flow.ts', () => {
  it('gates on the real program, sends the rejection back into the same session, and forks for the usage note', async () => {
    scenario = await startScenario((workspace) => {
      const write = (content: string) => ({
        toolUses: [{ name: 'Write', input: { file_path: join(workspace, 'wordcount.py'), content } }],
      });
      return {
        main: mainRouter({
          coordinator: (request, turn) => {
            const said = lastUserText(request);
            if (said.includes('usage note'))
              return { text: 'Run: python3 wordcount.py < file.txt\nPrints the word count.' };
            if (said.includes('Not done yet'))
              return dispatch('Fix wordcount.py: it must count words, not lines.');
            return turn === 0
              ? dispatch('Write wordcount.py that counts words on stdin.')
              : { text: 'wordcount.py is ready.' };
          },
        }),
        agents: {
          coder: [
            write('import sys\nprint(len(sys.stdin.read().splitlines()))\n'),
            { text: 'Conclusion: written. Output: wordcount.py' },
            write('import sys\nprint(len(sys.stdin.read().split()))\n'),
            { text: 'Conclusion: fixed. Output: wordcount.py' },
          ],
        },
      };
    });
    const { workspace } = scenario;
    const flow = main({ workspace, runDir: join(workspace, 'runs') });
    const ctx = await flow.run(scenario.runtime({ notesDir: flow.workbench!.notes }), {
      onEvent: scenario.sink,
    });

    expect(ctx.failedAt).toBeUndefined();
    expect(checkWordcount(workspace)).toBeUndefined();
    expect(readFileSync(join(workspace, 'wordcount.py'), 'utf8')).toContain('split()');
    const rows = scenario.manifest();
    expect(rows.map((row) => row.step)).toEqual(['write', 'write#round2', 'usage']);
    expect(rows[1]?.session_id).toBe(rows[0]?.session_id);
    expect(rows[2]?.session_id).not.toBe(rows[0]?.session_id);
    expect(ctx.outputs.usage).toBe('Run: python3 wordcount.py < file.txt\nPrints the word count.');
    expect(scenario.lineage().steps).toEqual({ write: rows[0]?.session_id, usage: rows[2]?.session_id });
  });
});
