/**
 * The index guard with the real binary: when a worker writes a script into the workbench, INDEX.md
 * is rewritten at once with the script's `# desc:` line, and the next new session's workbench
 * index names it.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { coordinator, worker } from '../../src/agents/roles.js';
import { Workbench } from '../../src/agents/workbench.js';
import { cleanUp, dispatch, runSpec, startMock, tempDir } from './agents-harness.js';

afterEach(cleanUp);

describe('index guard (real binary)', () => {
  it('refreshes INDEX.md after a worker writes a script into the workbench', async () => {
    const workspace = tempDir('flower-ws-');
    const workbench = new Workbench(workspace);
    const script = join(workbench.scripts, 'check.sh');
    const server = await startMock({
      main: [dispatch('builder', 'Write the check script.', 'toolu_dispatch'), { text: 'Done.' }],
      agents: {
        builder: [
          {
            toolUses: [
              {
                name: 'Write',
                id: 'toolu_write',
                input: { file_path: script, content: '#!/bin/sh\n# desc: run every check\nnpm test\n' },
              },
            ],
          },
          { text: 'Conclusion: script written.' },
        ],
      },
    });
    const spec = coordinator({
      workers: { builder: worker({ description: 'builds', prompt: 'You build.' }) },
      workbench,
    });

    const { thrown } = await runSpec(server, spec, workspace);
    expect(thrown).toBeUndefined();

    expect(readFileSync(workbench.indexPath, 'utf8')).toContain(
      '- `.flower/scripts/check.sh` — run every check (',
    );
    expect(spec.sessionPreamble?.()).toContain('`.flower/scripts/check.sh` — run every check');
  });
});
