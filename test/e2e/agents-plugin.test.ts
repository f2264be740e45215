/**
 * The shipped plugin directory with the real binary: its skill reaches the model of a flower
 * session even though host and project settings are ignored. (A worker with an explicit tool list
 * has no Skill tool, so skills are offered on the main thread; see WORKER_RULES for the worker's
 * share of the conventions.)
 */
import { afterEach, describe, expect, it } from 'vitest';
import { coordinator, worker } from '../../src/agents/roles.js';
import { cleanUp, dispatch, runSpec, startMock, tempDir } from './agents-harness.js';

afterEach(cleanUp);

describe('plugin/ (real binary)', () => {
  it('offers the workbench skill to the coordinator', async () => {
    const workspace = tempDir('flower-ws-');
    const server = await startMock({
      main: [dispatch('helper', 'Say hello.', 'toolu_dispatch'), { text: 'Done.' }],
      agents: { helper: [{ text: 'Conclusion: hello.' }] },
    });
    const spec = coordinator({ workers: { helper: worker({ description: 'helps', prompt: 'You help.' }) } });

    const { thrown } = await runSpec(server, spec, workspace, 'Go.', { usePlugin: true });
    expect(thrown).toBeUndefined();

    const [main] = server.mainRequests();
    expect(JSON.stringify(main?.body)).toContain('Explains the .flower/ workbench');
  });
});
