/**
 * The whitelist guard with the real binary: the clarifier cannot Write or run Bash, the judge cannot
 * run Bash unless it may run things, and even then it cannot Write. Each denial says the
 * restriction is intentional.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { whitelistDenial } from '../../src/agents/guards/whitelist.js';
import { HumanChannel } from '../../src/agents/human/channel.js';
import { clarifier, judge } from '../../src/agents/roles.js';
import { cleanUp, resultFor, runSpec, startMock, tempDir } from './agents-harness.js';

afterEach(cleanUp);

const call = (name: string, id: string, input: Record<string, unknown>) => ({
  toolUses: [{ name, id, input }],
});

describe('whitelist guard (real binary)', () => {
  it("denies the clarifier's Write and Bash with the intentional-restriction message", async () => {
    const workspace = tempDir('flower-ws-');
    const server = await startMock([
      call('Write', 'toolu_write', { file_path: join(workspace, 'code.py'), content: 'print(1)' }),
      call('Bash', 'toolu_bash', { command: 'touch touched.txt' }),
      { text: '## Goal\nx\n## Acceptance\ny\n## Boundaries\nz\n## Unknowns & assumptions\nnone' },
    ]);
    const spec = clarifier({ channel: new HumanChannel({ timeoutSeconds: 0 }) });

    const { thrown } = await runSpec(server, spec, workspace);
    expect(thrown).toBeUndefined();
    expect(resultFor(server, 'toolu_write')).toContain(whitelistDenial('clarify', 'Write'));
    expect(resultFor(server, 'toolu_write')).toContain('This is intentional');
    expect(resultFor(server, 'toolu_bash')).toContain(whitelistDenial('clarify', 'Bash'));
    expect(existsSync(join(workspace, 'code.py'))).toBe(false);
    expect(existsSync(join(workspace, 'touched.txt'))).toBe(false);
  });

  it("denies the judge's Bash when it may not run things", async () => {
    const workspace = tempDir('flower-ws-');
    const server = await startMock([
      call('Bash', 'toolu_bash', { command: 'touch touched.txt' }),
      { text: '## Conclusion\ncannot verify here' },
    ]);

    const { thrown } = await runSpec(server, judge({}), workspace);
    expect(thrown).toBeUndefined();
    expect(resultFor(server, 'toolu_bash')).toContain(whitelistDenial('judge', 'Bash'));
    expect(existsSync(join(workspace, 'touched.txt'))).toBe(false);
  });

  it('lets a can-run judge run Bash but still denies its Write', async () => {
    const workspace = tempDir('flower-ws-');
    const server = await startMock([
      call('Bash', 'toolu_bash', { command: 'echo ran > ran.txt && cat ran.txt' }),
      call('Write', 'toolu_write', { file_path: join(workspace, 'fix.py'), content: 'print(1)' }),
      { text: '## Conclusion\nachieved' },
    ]);

    const { thrown } = await runSpec(server, judge({ canRun: true }), workspace);
    expect(thrown).toBeUndefined();
    expect(resultFor(server, 'toolu_bash')).toBe('ran');
    expect(readFileSync(join(workspace, 'ran.txt'), 'utf8')).toBe('ran\n');
    expect(resultFor(server, 'toolu_write')).toContain(whitelistDenial('judge', 'Write'));
    expect(existsSync(join(workspace, 'fix.py'))).toBe(false);
  });
});
