/**
 * The dispatch guard with the real binary: a scripted coordinator that dispatches `fork`,
 * `general-purpose` and an Agent call without `subagent_type` is refused each time, with the
 * declared workers named in the tool result, and none of those subagents writes anything; the
 * declared worker in the same turn still runs and writes.
 *
 * Every refused dispatch is scripted to write a file if it ever ran (the fork is attributed as
 * `unknown` by the mock: its first user message is the coordinator's own conversation, not the
 * Agent prompt), so a guard that lets one through leaves a file and fails the listing below.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { dispatchRefusal } from '../../src/agents/guards/dispatch.js';
import { coordinator, worker } from '../../src/agents/roles.js';
import { cleanUp, resultFor, runSpec, startMock, tempDir } from './agents-harness.js';

afterEach(cleanUp);

/** A foreground Agent call (one result per query); `subagentType` undefined leaves the field out. */
const agentCall = (id: string, subagentType: string | undefined, prompt: string) => ({
  name: 'Agent',
  id,
  input: {
    description: 'run a worker',
    prompt,
    run_in_background: false,
    ...(subagentType === undefined ? {} : { subagent_type: subagentType }),
  },
});

const write = (id: string, path: string, content = 'must not exist\n') => ({
  toolUses: [{ name: 'Write', id, input: { file_path: path, content } }],
});

describe('dispatch guard on a scripted coordinator (real binary)', () => {
  it('refuses fork, general-purpose and an untyped Agent call; the declared worker still writes', async () => {
    const workspace = tempDir('flower-ws-');
    const declared = ['builder'];
    const server = await startMock({
      main: [
        {
          toolUses: [
            agentCall('toolu_fork', 'fork', 'Write the fork file.'),
            agentCall('toolu_general', 'general-purpose', 'Write the general file.'),
            agentCall('toolu_untyped', undefined, 'Write the untyped file.'),
            agentCall('toolu_builder', 'builder', 'Write the builder file.'),
          ],
        },
        { text: 'Done.' },
      ],
      agents: {
        builder: [
          write('toolu_builder_write', join(workspace, 'by-builder.txt'), 'built\n'),
          { text: 'Conclusion: written.' },
        ],
        'general-purpose': [
          write('toolu_gp_write1', join(workspace, 'by-general-1.txt')),
          { text: 'Wrote.' },
          write('toolu_gp_write2', join(workspace, 'by-general-2.txt')),
          { text: 'Wrote.' },
        ],
        unknown: [write('toolu_fork_write', join(workspace, 'by-fork.txt')), { text: 'Wrote.' }],
      },
    });
    const spec = coordinator({
      workers: { builder: worker({ description: 'builds things', prompt: 'You build things.' }) },
    });

    const { thrown } = await runSpec(server, spec, workspace);
    expect(thrown).toBeUndefined();

    expect(resultFor(server, 'toolu_fork')).toContain(dispatchRefusal('fork', declared));
    expect(resultFor(server, 'toolu_general')).toContain(dispatchRefusal('general-purpose', declared));
    expect(resultFor(server, 'toolu_untyped')).toContain(dispatchRefusal(undefined, declared));
    expect(resultFor(server, 'toolu_fork')).toContain('"builder"');

    expect(readdirSync(workspace)).toEqual(['by-builder.txt']);
    expect(readFileSync(join(workspace, 'by-builder.txt'), 'utf8')).toBe('built\n');
    expect(server.agentRequests('general-purpose')).toHaveLength(0);
    expect(server.agentRequests('unknown')).toHaveLength(0);
  });
});
