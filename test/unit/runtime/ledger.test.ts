/**
 * The per-worker cost ledger on transcripts built like the harness writes them: one entry per
 * content block, entries of one response sharing `message.id` and `usage`.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { priceFor, responseCost } from '../../../src/config/prices.js';
import {
  agentIdOf,
  ledgerCost,
  ledgerForStep,
  readStepTranscripts,
  reconcile,
  type SessionTranscripts,
  stepLedger,
  stepSessions,
  UNBOUNDED,
} from '../../../src/runtime/ledger.js';
import { SqliteSessionStore } from '../../../src/store/sqlite-session-store.js';
import { type Entry, TranscriptBuilder } from '../../support/transcript-builder.js';

const OPUS = 'claude-opus-5-5';
const usage = (input: number, output: number, cacheRead = 0, cacheCreation = 0) => ({
  input_tokens: input,
  output_tokens: output,
  cache_read_input_tokens: cacheRead,
  cache_creation_input_tokens: cacheCreation,
});
/** claude-opus-5-5 in USD per token: input 4, output 20, cache read 0.2, cache write 5 per million. */
const opusCost = (input: number, output: number, cacheRead = 0, cacheCreation = 0) =>
  (input * 4 + output * 20 + cacheRead * 0.2 + cacheCreation * 5) / 1_000_000;

function session(
  main: Entry[],
  subagents: Array<{ agentId: string; entries: Entry[] }> = [],
): SessionTranscripts {
  return {
    sessionId: 'session-1',
    main,
    subagents: subagents.map(({ agentId, entries }) => ({
      subpath: `subagents/agent-${agentId}`,
      agentId,
      entries,
    })),
  };
}

/** A coordinator that dispatches one worker, and that worker's transcript. */
function dispatchedWorker(agentId: string, description: string, prompt: string) {
  const main = new TranscriptBuilder('m');
  main.prompt('Do the job.');
  const call = main.toolUseBlock('Agent', { subagent_type: 'coder', description, prompt });
  main.response([{ type: 'text', text: 'Dispatching.' }, call], { model: OPUS, usage: usage(1000, 50) });
  main.push({
    type: 'user',
    message: {
      role: 'user',
      content: [{ type: 'tool_result', tool_use_id: call.id, content: 'Async agent launched' }],
    },
    toolUseResult: { status: 'async_launched', agentId, description },
  });
  const worker = new TranscriptBuilder(`w${agentId}`);
  worker.prompt(prompt);
  worker.response([{ type: 'text', text: 'Writing.' }, worker.toolUseBlock('Write', { file_path: '/x' })], {
    model: OPUS,
    usage: usage(300, 40, 1000),
  });
  worker.result('w-toolu-x', 'ok');
  worker.response([{ type: 'text', text: 'Done.' }], { model: OPUS, usage: usage(400, 30, 1200) });
  return { main, worker };
}

describe('stepLedger', () => {
  it('counts each API response once, however many block entries it was written as', () => {
    const main = new TranscriptBuilder('m');
    main.prompt('go');
    const blocks = [
      { type: 'thinking', thinking: 'hmm' },
      { type: 'text', text: 'Looking.' },
      main.toolUseBlock('Read', { file_path: '/a' }),
      main.toolUseBlock('Read', { file_path: '/b' }),
    ];
    const written = main.response(blocks, { model: OPUS, usage: usage(1000, 100, 10_000, 2000) });
    main.response([{ type: 'text', text: 'Done.' }], { model: OPUS, usage: usage(500, 10) });
    expect(written).toHaveLength(4);

    const { main: thread } = stepLedger([session(main.entries)], UNBOUNDED);
    expect(thread.turns).toBe(2);
    expect(thread).toMatchObject({
      input_tokens: 1500,
      output_tokens: 110,
      cache_read_input_tokens: 10_000,
      cache_creation_input_tokens: 2000,
      tool_calls: 2,
      model: OPUS,
    });
    expect(thread.cost_usd).toBeCloseTo(opusCost(1000, 100, 10_000, 2000) + opusCost(500, 10), 9);
  });

  it('gives tokens but no dollars for a model the price table does not know', () => {
    const main = new TranscriptBuilder('m');
    main.response([{ type: 'text', text: 'hi' }], { model: 'claude-opus-9-9', usage: usage(700, 70) });
    const { main: thread } = stepLedger([session(main.entries)], UNBOUNDED);
    expect(thread).toMatchObject({
      model: 'claude-opus-9-9',
      turns: 1,
      input_tokens: 700,
      output_tokens: 70,
    });
    expect(thread.cost_usd).toBeNull();
  });

  it('gives no dollars for a thread that mixes a priced and an unpriced model (no partial guess)', () => {
    const main = new TranscriptBuilder('m');
    main.response([{ type: 'text', text: 'a' }], { model: OPUS, usage: usage(100, 10) });
    main.response([{ type: 'text', text: 'b' }], { model: 'some-gateway-alias', usage: usage(100, 10) });
    expect(stepLedger([session(main.entries)], UNBOUNDED).main.cost_usd).toBeNull();
  });

  it('leaves the harness’s synthetic API-error turns out', () => {
    const main = new TranscriptBuilder('m');
    main.response([{ type: 'text', text: 'a' }], { model: OPUS, usage: usage(100, 10) });
    main.apiError();
    expect(stepLedger([session(main.entries)], UNBOUNDED).main.turns).toBe(1);
  });

  it('splits the workers from the main thread and names each by what it was dispatched to do', () => {
    const { main, worker } = dispatchedWorker('a1b2', 'Write hello.js and run it', 'Write hello.js.');
    const ledger = stepLedger(
      [session(main.entries, [{ agentId: 'a1b2', entries: worker.entries }])],
      UNBOUNDED,
    );
    expect(ledger.main).toMatchObject({ turns: 1, input_tokens: 1000, output_tokens: 50, tool_calls: 1 });
    expect(ledger.workers).toHaveLength(1);
    const [coder] = ledger.workers;
    expect(coder).toMatchObject({
      agent_id: 'a1b2',
      agent_type: 'coder',
      description: 'Write hello.js and run it',
      model: OPUS,
      turns: 2,
      input_tokens: 700,
      output_tokens: 70,
      cache_read_input_tokens: 2200,
      cache_creation_input_tokens: 0,
      tool_calls: 1,
    });
    expect(coder?.cost_usd).toBeCloseTo(opusCost(700, 70, 2200), 9);
    expect(coder?.duration_s).toBeGreaterThan(0);
  });

  it('finds the dispatch from the subagent’s own metadata, or from its prompt, when the launch result lacks the id', () => {
    const { main, worker } = dispatchedWorker('zz', 'Build it', 'Build the thing.');
    const withoutIds = main.entries.map((entry) => {
      const { toolUseResult: _dropped, ...rest } = entry;
      return rest as Entry;
    });
    expect(
      stepLedger([session(withoutIds, [{ agentId: 'zz', entries: worker.entries }])], UNBOUNDED).workers[0]
        ?.description,
    ).toBe('Build it');

    const metadataOnly = [
      {
        type: 'agent_metadata',
        agentType: 'tester',
        description: 'Run the tests',
        toolUseId: 'nope',
      } as Entry,
      ...worker.entries.slice(1),
    ];
    const [tester] = stepLedger([session([], [{ agentId: 'q', entries: metadataOnly }])], UNBOUNDED).workers;
    expect(tester).toMatchObject({ agent_type: 'tester', description: 'Run the tests' });
  });

  it('counts only what happened inside the step’s time window (rounds resume one session)', () => {
    const main = new TranscriptBuilder('m');
    main.response([{ type: 'text', text: 'round 1' }], { model: OPUS, usage: usage(100, 10) });
    const [second] = main.response([{ type: 'text', text: 'round 2' }], {
      model: OPUS,
      usage: usage(200, 20),
    });
    const at = Date.parse(String(second?.timestamp)) / 1000;
    const round2 = stepLedger([session(main.entries)], { from: at - 0.5, to: at + 0.5 });
    expect(round2.main).toMatchObject({ turns: 1, input_tokens: 200, output_tokens: 20 });
  });
});

describe('stepLedger: the rest of its promises', () => {
  it('an API-error turn flagged by the harness is no response, whatever model it names', () => {
    const main = new TranscriptBuilder('m');
    main.response([{ type: 'text', text: 'a' }], { model: OPUS, usage: usage(100, 10) });
    main.apiError('API Error: 500', 'flag');
    expect(stepLedger([session(main.entries)], UNBOUNDED).main).toMatchObject({
      turns: 1,
      input_tokens: 100,
    });
  });

  it('counts a tool call once when its block is written in two entries', () => {
    const main = new TranscriptBuilder('m');
    const call = main.toolUseBlock('Bash', { command: 'ls' });
    main.response([call], { model: OPUS, id: 'msg-a', usage: usage(10, 1) });
    // The harness rewrites the block's entry as more of the response streams in.
    main.response([call], { model: OPUS, id: 'msg-a', usage: usage(10, 1) });
    expect(stepLedger([session(main.entries)], UNBOUNDED).main).toMatchObject({ turns: 1, tool_calls: 1 });
  });

  it('names a worker by the launch result that carries its agent id, whatever its first prompt says', () => {
    const { main } = dispatchedWorker('k9', 'Review the patch', 'Review it.');
    const worker = new TranscriptBuilder('w');
    worker.prompt('A preamble the harness added, then: Review it.');
    worker.response([{ type: 'text', text: 'Looks fine.' }], { model: OPUS, usage: usage(10, 1) });
    const [reviewer] = stepLedger(
      [session(main.entries, [{ agentId: 'k9', entries: worker.entries }])],
      UNBOUNDED,
    ).workers;
    expect(reviewer).toMatchObject({ description: 'Review the patch', agent_type: 'coder' });
  });

  it('measures a worker’s duration inside the step’s window only', () => {
    const worker = new TranscriptBuilder('w');
    worker.prompt('Round one.');
    worker.response([{ type: 'text', text: 'one' }], { model: OPUS, usage: usage(10, 1) });
    const roundOne = worker.entries.length;
    worker.prompt('Round two.');
    worker.response([{ type: 'text', text: 'two' }], { model: OPUS, usage: usage(10, 1) });
    // Round two came an hour after round one.
    const entries = worker.entries.map((entry, index) =>
      index < roundOne
        ? entry
        : { ...entry, timestamp: new Date(Date.parse(String(entry.timestamp)) + 3_600_000).toISOString() },
    );
    const from = Date.parse(String(entries[roundOne]?.timestamp)) / 1000;
    const [round2] = stepLedger([session([], [{ agentId: 'w', entries }])], { from, to: from + 60 }).workers;
    expect(round2?.turns).toBe(1);
    expect(round2?.duration_s).toBeLessThan(60);
  });
});

describe('stepSessions, agentIdOf and ledgerForStep', () => {
  it('a step ran in the sessions its handoffs retired, oldest first, then its current one, each once', () => {
    expect(stepSessions({ session_id: 's3', retired: ['s1', 's2', 7, 's3'] })).toEqual(['s1', 's2', 's3']);
    expect(stepSessions({ session_id: '', retired: 'no' })).toEqual([]);
  });

  it('only subagent subkeys are workers', () => {
    expect(agentIdOf('subagents/agent-a1')).toBe('a1');
    expect(agentIdOf('subagents/workflows/w1/agent-b2')).toBe('b2');
    expect(agentIdOf('spill/agent-a1')).toBeUndefined();
    expect(agentIdOf('agent-a1')).toBeUndefined();
  });

  it('never fails the step: a store that cannot be read gives no ledger', async () => {
    const reader = {
      load: async () => {
        throw new Error('SQLITE_CORRUPT: database disk image is malformed');
      },
      listSubkeys: async () => [],
    };
    const step = { sessionId: 's1', retired: [], startedAt: 0 };
    await expect(ledgerForStep(reader, '-ws', step, 10)).resolves.toBeUndefined();
  });
});

describe('ledgerCost and reconcile', () => {
  it('adds the main thread and the workers, and shows how far that is from the SDK’s figure', () => {
    const { main, worker } = dispatchedWorker('a', 'd', 'p');
    const ledger = stepLedger(
      [session(main.entries, [{ agentId: 'a', entries: worker.entries }])],
      UNBOUNDED,
    );
    const expected = opusCost(1000, 50) + opusCost(700, 70, 2200);
    expect(ledgerCost(ledger)).toBeCloseTo(expected, 6);
    const books = reconcile(0.05, ledger);
    expect(books.ledger_usd).toBeCloseTo(expected, 6);
    expect(books.sdk_usd).toBe(0.05);
    expect(books.difference_usd).toBeCloseTo(expected - 0.05, 6);
  });

  it('has no ledger sum and no difference when a worker could not be priced', () => {
    const main = new TranscriptBuilder('m');
    main.response([{ type: 'text', text: 'a' }], { model: OPUS, usage: usage(100, 10) });
    const worker = new TranscriptBuilder('w');
    worker.response([{ type: 'text', text: 'b' }], { model: 'unknown-model', usage: usage(100, 10) });
    const ledger = stepLedger(
      [session(main.entries, [{ agentId: 'w', entries: worker.entries }])],
      UNBOUNDED,
    );
    expect(ledgerCost(ledger)).toBeNull();
    expect(reconcile(0.01, ledger)).toEqual({ sdk_usd: 0.01, ledger_usd: null, difference_usd: null });
  });
});

describe('readStepTranscripts over the SQLite store', () => {
  let dir: string | undefined;
  afterEach(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
    dir = undefined;
  });

  it('reads a session’s main transcript and its subagents under their subpaths', async () => {
    dir = mkdtempSync(join(tmpdir(), 'flower-ledger-'));
    const store = new SqliteSessionStore(join(dir, 'sessions.db'));
    const { main, worker } = dispatchedWorker('a1', 'Write it', 'Write hello.js.');
    const key = { projectKey: '-ws', sessionId: 'session-1' };
    store.appendNow(key, main.entries);
    store.appendNow({ ...key, subpath: 'subagents/agent-a1' }, worker.entries);
    const reader = {
      load: async (k: typeof key) => store.loadRaw(k),
      listSubkeys: (k: typeof key) => store.listSubkeys(k),
    };
    const sessions = await readStepTranscripts(reader, '-ws', ['session-1', 'missing']);
    store.close();
    expect(sessions.map((s) => s.sessionId)).toEqual(['session-1']);
    expect(sessions[0]?.subagents.map((s) => s.agentId)).toEqual(['a1']);
    expect(stepLedger(sessions, UNBOUNDED).workers[0]).toMatchObject({
      agent_id: 'a1',
      description: 'Write it',
      turns: 2,
    });
  });
});

describe('the price table', () => {
  it('prices known ids with a date, a provider prefix or suffix, or a window tag', () => {
    for (const model of [
      'claude-sonnet-4-5-20250929',
      'claude-3-5-haiku-20241022',
      'us.anthropic.claude-opus-5-5',
      'anthropic.claude-opus-4-1-20250805-v1:0',
      'claude-opus-4-6[1m]',
      'claude-opus-4-20250514',
    ]) {
      expect(priceFor(model), model).toBeDefined();
    }
    expect(priceFor('claude-opus-4-20250514')).toBe(priceFor('claude-opus-4-0'));
    expect(priceFor('claude-opus-4-1-20250805')?.input).toBe(15);
  });

  it('does not guess: a new version, an alias or the synthetic model is unpriced', () => {
    for (const model of [
      'claude-opus-5-7',
      'claude-opus-4-9',
      'opus',
      '<synthetic>',
      'gpt-4o',
      '',
      'my-claude-opus-5-5',
    ])
      expect(priceFor(model), model).toBeUndefined();
  });

  it('charges 1-hour cache writes, long prompts and the US-only region as the binary does', () => {
    const opus = priceFor(OPUS)!;
    const base = { input: 1000, output: 100, cacheRead: 0, cacheCreation: 2000 };
    expect(responseCost(base, opus)).toBeCloseTo(opusCost(1000, 100, 0, 2000), 12);
    expect(responseCost({ ...base, cacheCreation1h: 2000 }, opus)).toBeCloseTo(
      (4000 + 2000 + 2000 * 8) / 1e6,
      12,
    );
    expect(responseCost({ ...base, usOnly: true }, opus)).toBeCloseTo(opusCost(1000, 100, 0, 2000) * 1.1, 12);
    const haiku = priceFor('claude-haiku-5-5')!;
    expect(responseCost({ input: 200_000, output: 0, cacheRead: 0, cacheCreation: 0 }, haiku)).toBeCloseTo(
      0.1,
      12,
    );
    expect(responseCost({ input: 50_000, output: 0, cacheRead: 0, cacheCreation: 0 }, haiku)).toBeCloseTo(
      0.005,
      12,
    );
  });
});
