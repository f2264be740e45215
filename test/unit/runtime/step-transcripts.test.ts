/**
 * A step's books read only what its sessions gained during the step (issue 23): marks taken at the
 * start, then each key from its mark; a worker older than the step also from its first entries (its
 * account of itself); keys the step created whole. The ledger comes out the same as from whole
 * transcripts.
 */
import { describe, expect, it } from 'vitest';
import { StepMarks, stepReader } from '../../../src/runtime/books/step-transcripts.js';
import { ledgerForStep, readStepTranscripts, stepLedger } from '../../../src/runtime/ledger.js';
import type { Entry } from '../../../src/store/transcript.js';
import { sqliteStoresPerTest } from '../../support/sqlite-stores.js';

const openStore = sqliteStoresPerTest('flower-step-books-');
const projectKey = 'proj';
const sessionId = '5e55a1b2-0000-4000-8000-000000000001';
const worker = 'subagents/agent-a1';
const newWorker = 'subagents/agent-b2';

let counter = 0;
const at = (seconds: number) => new Date(seconds * 1000).toISOString();
function response(time: number, input: number, extra: Partial<Entry> = {}): Entry {
  counter += 1;
  return {
    type: 'assistant',
    uuid: `u-${counter}`,
    timestamp: at(time),
    message: {
      id: `msg-${counter}`,
      model: 'claude-sonnet-4-5',
      usage: { input_tokens: input, output_tokens: 1 },
    },
    ...extra,
  };
}
const metadata = (agentType: string): Entry => ({
  type: 'agent_metadata',
  agentType,
  description: `${agentType} work`,
});

describe('the books of a step', () => {
  it('read each key from where it stood at the start, a worker with its first entries, new keys whole', async () => {
    const store = openStore();
    const main = { projectKey, sessionId };
    await store.append(
      main,
      Array.from({ length: 200 }, (_, index) => response(100 + index, 10)),
    );
    await store.append({ ...main, subpath: worker }, [
      metadata('coder'),
      ...Array.from({ length: 40 }, () => response(150, 5)),
    ]);
    const marks = StepMarks.at(store, projectKey, [sessionId]);
    expect(marks.of(sessionId)).toBe(200);
    expect(marks.of(sessionId, worker)).toBe(41);
    expect(marks.of(sessionId, newWorker)).toBe(0);

    await store.append(main, [response(1000, 700), response(1001, 800)]);
    await store.append({ ...main, subpath: worker }, [response(1002, 90)]);
    await store.append({ ...main, subpath: newWorker }, [metadata('tester'), response(1003, 60)]);

    const reader = stepReader(store, marks);
    expect(await reader.load(main)).toHaveLength(2);
    // Its metadata and the next two from the start, then the one appended in the step.
    const old = (await reader.load({ ...main, subpath: worker })) ?? [];
    expect(old.map((entry) => entry.type)).toEqual(['agent_metadata', 'assistant', 'assistant', 'assistant']);
    expect(old.at(-1)?.message).toMatchObject({ usage: { input_tokens: 90 } });
    expect(await reader.load({ ...main, subpath: newWorker })).toHaveLength(2);
    expect(await reader.load({ projectKey, sessionId: '5e55a1b2-0000-4000-8000-00000000000f' })).toBeNull();

    const step = { sessionId, retired: [], startedAt: 999 };
    const fromMarks = await ledgerForStep(reader, projectKey, step, 2000);
    const whole = stepLedger(await readStepTranscripts(store, projectKey, [sessionId]), {
      from: 999,
      to: 2000,
    });
    expect(fromMarks).toEqual(whole);
    expect(fromMarks?.main).toMatchObject({ turns: 2, input_tokens: 1500 });
    expect(fromMarks?.workers.map((w) => [w.agent_type, w.turns])).toEqual([
      ['coder', 1],
      ['tester', 1],
    ]);
  });

  it('a session that had nothing at the start (a new one, or a handoff successor) is read whole', async () => {
    const store = openStore();
    const marks = StepMarks.at(store, projectKey, [sessionId]);
    await store.append({ projectKey, sessionId }, [response(10, 1), response(11, 2), response(12, 3)]);
    expect(await stepReader(store, marks).load({ projectKey, sessionId })).toHaveLength(3);
  });
});
