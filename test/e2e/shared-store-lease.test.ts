/**
 * Issue 18, the lease seen from one machine whose path to PostgreSQL fails (black-holed through a
 * proxy), with a nine-second lease (renewed every 1.5 s, the agent stopped after six seconds
 * without a renewal):
 * - a blip well under the lease costs nothing: no pause, no extra turn;
 * - a longer outage stops the agent before the lease can run out; when the database answers again
 *   and nobody took the task, the same epoch renews and the same session continues;
 * - an outage longer than the wait: the process exits 1 saying what stays in runs/, and the next
 *   start sends it (nobody else worked meanwhile, so nothing is kept aside) and continues.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { defaultResiliencePolicy } from '../../src/runtime/resilience.js';
import { lastUserText, type RecordedRequest } from '../../src/testing/index.js';
import { CLARIFY_RESUME } from '../../src/workflow/clarify-step.js';
import { cleanUp, startMock } from '../support/scratch.js';
import { mockedEnv, runFlower, tempDir } from './cli-harness.js';
import { HELLO_BRIEF, mainRouter, roleOf, toolResultCount } from './scenario-harness.js';
import { dropSchemas, FaultProxy, sharedSchema, until, viaPort } from './shared-store-harness.js';

const proxies: FaultProxy[] = [];
afterEach(async () => {
  for (const proxy of proxies.splice(0)) await proxy.close();
  await dropSchemas();
  await cleanUp();
});

const QUESTION = 'Which greeting should hello.py print, exactly?';
/** How the runtime continues a session it stopped (resilience.ts). */
const RESUMED = defaultResiliencePolicy.resumePrompt;
const PAUSED = /has not confirmed this process's lease for 6 s: the agent is stopped/;

const clarifier = (requests: RecordedRequest[]) =>
  requests.filter((request) => roleOf(request) === 'clarifier');

/** A clarifier that asks, then answers its second turn after `secondTurnMs`, then writes the brief. */
async function scriptedTask(secondTurnMs: number) {
  const schema = await sharedSchema('lease');
  const proxy = await FaultProxy.start(schema.url);
  proxies.push(proxy);
  const model = await startMock({
    main: mainRouter({
      clarifier: (request) => {
        const last = lastUserText(request);
        if (last.includes(CLARIFY_RESUME) || last.includes(RESUMED)) return { text: HELLO_BRIEF };
        return toolResultCount(request) === 0
          ? { toolUses: [{ name: 'mcp__human__ask', input: { question: QUESTION } }] }
          : { text: HELLO_BRIEF, delayMs: secondTurnMs };
      },
    }),
  });
  const workspace = tempDir('store-lease');
  const args = ['-w', workspace, '--clarify-only', '--timeout', '0', 'write hello.py'];
  const env = (waitSeconds: string) =>
    mockedEnv(model, {
      FLOWER_STORE_URL: viaPort(schema.url, proxy.port),
      FLOWER_LEASE_SECONDS: '9',
      FLOWER_LEASE_WAIT_SECONDS: waitSeconds,
    });
  const secondTurn = () =>
    until(() => clarifier(model.mainRequests()).length >= 2, 'the second clarifier turn');
  return { schema, proxy, model, args, env, secondTurn };
}

describe('the lease through an unreliable path to PostgreSQL', () => {
  it('a blip well under the lease costs nothing', async () => {
    const { proxy, model, args, env, secondTurn } = await scriptedTask(4000);
    const run = runFlower(args, { env: env('60') });
    await secondTurn();
    proxy.blackHole(1500);
    const done = await run;
    expect(done.status, done.stderr).toBe(0);
    expect(done.stderr).not.toMatch(PAUSED);
    expect(clarifier(model.mainRequests())).toHaveLength(2);
  });

  it('an outage past the stop point pauses the agent; the same epoch renews and the same session continues', async () => {
    const { schema, proxy, model, args, env, secondTurn } = await scriptedTask(30_000);
    const run = runFlower(args, { env: env('60') });
    await secondTurn();
    proxy.blackHole();
    const waiting = clarifier(model.mainRequests())[1] as RecordedRequest;
    // The agent is stopped: the request it waited on ends long before its 30 s reply.
    await until(() => waiting.endedAt !== undefined, 'the paused request to end', 20_000);
    proxy.restore();
    const done = await run;
    expect(done.status, done.stderr).toBe(0);
    expect(done.stderr).toMatch(PAUSED);
    expect(done.stdout + done.stderr).toContain('The task store answers again: continuing');
    const requests = clarifier(model.mainRequests());
    expect(requests).toHaveLength(3);
    // The same session: the history of the first two turns, continued with the resume prompt.
    expect(JSON.stringify(requests[2]?.body?.messages)).toContain(QUESTION);
    expect(lastUserText(requests[2] as RecordedRequest)).toContain(RESUMED);
    expect(await schema.query('SELECT epoch FROM task_lease_epochs')).toHaveLength(1);
    expect(await schema.query('SELECT 1 FROM fenced_entries')).toHaveLength(0);
  });

  it('an outage past the wait exits 1 keeping everything; the next start sends it and continues', async () => {
    const { schema, proxy, model, args, env, secondTurn } = await scriptedTask(60_000);
    const run = runFlower(args, { env: env('2') });
    await secondTurn();
    proxy.blackHole();
    const gaveUp = await run;
    expect(gaveUp.status, gaveUp.stderr).toBe(1);
    expect(gaveUp.stderr).toMatch(PAUSED);
    expect(gaveUp.stderr).toMatch(
      /did not answer for 2 s, so this process stopped; everything stays in \S+runs and the next flower start here sends it/,
    );
    expect(gaveUp.stderr).not.toMatch(/\n\s+at /);

    proxy.restore();
    const again = await runFlower(args, { env: env('60') });
    expect(again.status, again.stderr).toBe(0);
    expect(again.stderr).not.toMatch(/kept aside/);
    const requests = clarifier(model.mainRequests());
    expect(JSON.stringify(requests.at(-1)?.body?.messages)).toContain(QUESTION);
    expect(await schema.query('SELECT 1 FROM fenced_entries')).toHaveLength(0);
    expect(await schema.query('SELECT 1 FROM fenced_writes')).toHaveLength(0);
  });
});
