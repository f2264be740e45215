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
  contextOfResponse,
  entryTime,
  inWindow,
  isSyntheticTurn,
  ledgerCost,
  ledgerForStep,
  readStepTranscripts,
  reconcile,
  responsesOf,
  responseTokens,
  roundUsd,
  type SessionTranscripts,
  type StepLedger,
  stepLedger,
  stepSessions,
  type ThreadLedger,
  threadLedger,
  toolCallsOf,
  UNBOUNDED,
  windowed,
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

  it('gives no dollars when the unpriced response comes first either', () => {
    const main = new TranscriptBuilder('m');
    main.response([{ type: 'text', text: 'a' }], { model: 'some-gateway-alias', usage: usage(100, 10) });
    main.response([{ type: 'text', text: 'b' }], { model: OPUS, usage: usage(100, 10) });
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
    expect(stepSessions({ session_id: 7, retired: ['s1'] })).toEqual(['s1']);
  });

  it('only subagent subkeys are workers', () => {
    expect(agentIdOf('subagents/agent-a1')).toBe('a1');
    expect(agentIdOf('subagents/workflows/w1/agent-b2')).toBe('b2');
    expect(agentIdOf('spill/agent-a1')).toBeUndefined();
    expect(agentIdOf('agent-a1')).toBeUndefined();
    expect(agentIdOf('subagents/summary')).toBeUndefined();
    expect(agentIdOf('subagents/agent-a1/spill')).toBeUndefined();
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

/** An assistant entry of one response, written at `second` past 2026-01-01 (or with no time). */
function reply(
  fields: { id?: unknown; model?: unknown; usage?: unknown; content?: unknown; second?: number } = {},
): Entry {
  const message: Record<string, unknown> = { role: 'assistant', content: fields.content ?? [] };
  if ('id' in fields) message.id = fields.id;
  if ('model' in fields) message.model = fields.model;
  if ('usage' in fields) message.usage = fields.usage;
  return {
    type: 'assistant',
    ...(fields.second === undefined
      ? {}
      : { timestamp: new Date(Date.UTC(2026, 0, 1, 0, 0, fields.second)).toISOString() }),
    message,
  } as Entry;
}
const T0 = Date.UTC(2026, 0, 1) / 1000;

describe('time and windows', () => {
  it('an entry’s time is its timestamp in epoch seconds; none when it has none or it cannot be read', () => {
    expect(entryTime(reply({ second: 5 }))).toBe(T0 + 5);
    expect(entryTime(reply())).toBeUndefined();
    expect(entryTime({ type: 'user', timestamp: 1_767_225_600 } as unknown as Entry)).toBeUndefined();
    // A number that Date.parse would read as a year is no timestamp either.
    expect(entryTime({ type: 'user', timestamp: 2026 } as unknown as Entry)).toBeUndefined();
    expect(entryTime({ type: 'user', timestamp: 'yesterday' } as Entry)).toBeUndefined();
  });

  it('a window holds both its ends, and keeps an entry that has no time', () => {
    const window = { from: T0 + 10, to: T0 + 20 };
    expect(inWindow(reply({ second: 10 }), window)).toBe(true);
    expect(inWindow(reply({ second: 20 }), window)).toBe(true);
    expect(inWindow(reply({ second: 9 }), window)).toBe(false);
    expect(inWindow(reply({ second: 21 }), window)).toBe(false);
    expect(inWindow(reply(), window)).toBe(true);
    expect(inWindow(reply({ second: 9 }), UNBOUNDED)).toBe(true);
  });

  it('a window open at one end only still bounds the other', () => {
    expect(inWindow(reply({ second: 30 }), { from: Number.NEGATIVE_INFINITY, to: T0 + 20 })).toBe(false);
    expect(inWindow(reply({ second: 5 }), { from: T0 + 10, to: Number.POSITIVE_INFINITY })).toBe(false);
    expect(inWindow(reply({ second: 15 }), { from: T0 + 10, to: Number.POSITIVE_INFINITY })).toBe(true);
  });

  it('windowed keeps only the entries inside the window, of the main thread and of every subagent', () => {
    const inside = reply({ id: 'in', second: 15 });
    const before = reply({ id: 'before', second: 1 });
    const [trimmed] = windowed(
      [
        {
          sessionId: 's',
          main: [before, inside],
          subagents: [{ subpath: 'subagents/agent-w', agentId: 'w', entries: [inside, before] }],
        },
      ],
      { from: T0 + 10, to: T0 + 20 },
    );
    expect(trimmed).toEqual({
      sessionId: 's',
      main: [inside],
      subagents: [{ subpath: 'subagents/agent-w', agentId: 'w', entries: [inside] }],
    });
  });
});

describe('synthetic turns', () => {
  it('is an assistant turn with either harness mark, and nothing else', () => {
    expect(isSyntheticTurn(reply({ model: '<synthetic>' }))).toBe(true);
    expect(isSyntheticTurn({ ...reply({ model: OPUS }), isApiErrorMessage: true } as Entry)).toBe(true);
    expect(isSyntheticTurn({ ...reply({ model: OPUS }), is_api_error_message: true } as Entry)).toBe(true);
    expect(isSyntheticTurn({ ...reply({ model: OPUS }), isApiErrorMessage: 'yes' } as Entry)).toBe(false);
    expect(isSyntheticTurn(reply({ model: OPUS }))).toBe(false);
    expect(isSyntheticTurn(reply())).toBe(false);
    const user = { type: 'user', isApiErrorMessage: true, message: { role: 'user', model: '<synthetic>' } };
    expect(isSyntheticTurn(user as unknown as Entry)).toBe(false);
  });
});

describe('responsesOf', () => {
  it('counts each entry without a message id as a response of its own', () => {
    const responses = responsesOf([
      reply({ usage: usage(1, 0) }),
      reply({ usage: usage(8, 0) }),
      reply({ id: '', usage: usage(2, 0) }),
      reply({ id: '', usage: usage(4, 0) }),
      reply({ id: 7, usage: usage(3, 0) }),
    ]);
    expect(responses.map((response) => response.usage.input_tokens)).toEqual([1, 8, 2, 4, 3]);
    expect(new Set(responses.map((response) => response.id)).size).toBe(5);
  });

  it('keeps a response’s model and time from the entries that carried them, its usage from the last', () => {
    const [response] = responsesOf([
      reply({ id: 'r', model: OPUS, usage: usage(1, 1), second: 3 }),
      reply({ id: 'r', usage: usage(1, 9) }),
    ]);
    expect(response).toEqual({ id: 'r', model: OPUS, usage: usage(1, 9), at: T0 + 3 });
    const [later] = responsesOf([
      reply({ id: 'r', model: OPUS, usage: usage(1, 1), second: 3 }),
      reply({ id: 'r', model: 7, usage: usage(1, 2), second: 4 }),
    ]);
    expect(later).toMatchObject({ model: OPUS, at: T0 + 4 });
  });

  it('skips entries that are not assistant turns or carry no message, and reads a malformed usage as none', () => {
    const responses = responsesOf([
      { type: 'user', message: { id: 'u', usage: usage(5, 5) } } as unknown as Entry,
      { type: 'assistant' } as Entry,
      { type: 'assistant', message: 'text' } as unknown as Entry,
      reply({ id: 'a', model: OPUS, usage: [1, 2] }),
      reply({ id: 'b', model: OPUS, usage: 'lots' }),
    ]);
    expect(responses.map((response) => [response.id, response.usage])).toEqual([
      ['a', {}],
      ['b', {}],
    ]);
    expect(threadLedger(responses, 0)).toMatchObject({
      turns: 2,
      input_tokens: 0,
      output_tokens: 0,
      cost_usd: 0,
    });
  });

  it('takes only the responses inside the window', () => {
    const entries = [
      reply({ id: 'a', second: 1 }),
      reply({ id: 'b', second: 15 }),
      reply({ id: 'c', second: 30 }),
    ];
    expect(responsesOf(entries, { from: T0 + 10, to: T0 + 20 }).map((response) => response.id)).toEqual([
      'b',
    ]);
  });
});

describe('responseTokens and contextOfResponse', () => {
  it('reads every priced figure of a usage, and a count that is not a positive finite number as none', () => {
    expect(
      responseTokens({
        input_tokens: 10,
        output_tokens: 20,
        cache_read_input_tokens: 30,
        cache_creation_input_tokens: 40,
        cache_creation: { ephemeral_1h_input_tokens: 25 },
        server_tool_use: { web_search_requests: 2 },
        inference_geo: 'us',
      }),
    ).toEqual({
      input: 10,
      output: 20,
      cacheRead: 30,
      cacheCreation: 40,
      cacheCreation1h: 25,
      webSearches: 2,
      usOnly: true,
    });
    expect(
      responseTokens({
        input_tokens: -5,
        output_tokens: Number.NaN,
        cache_read_input_tokens: Number.POSITIVE_INFINITY,
        cache_creation_input_tokens: '40',
        cache_creation: [25],
        server_tool_use: null,
        inference_geo: 'global',
      }),
    ).toEqual({
      input: 0,
      output: 0,
      cacheRead: 0,
      cacheCreation: 0,
      cacheCreation1h: 0,
      webSearches: 0,
      usOnly: false,
    });
  });

  it('the context a request carried is its input, cache read and cache creation', () => {
    const [response] = responsesOf([reply({ id: 'r', usage: { ...usage(10, 500, 200, 3000) } })]);
    expect(contextOfResponse(response!)).toBe(3210);
  });

  it('prices a response’s 1-hour cache writes, web searches and US-only region', () => {
    const main = [
      reply({
        id: 'r',
        model: OPUS,
        usage: {
          ...usage(1000, 100, 0, 2000),
          cache_creation: { ephemeral_1h_input_tokens: 2000 },
          server_tool_use: { web_search_requests: 3 },
          inference_geo: 'us',
        },
      }),
    ];
    const tokens = responseTokens(responsesOf(main)[0]!.usage);
    const expected = responseCost(tokens, priceFor(OPUS)!);
    expect(expected).toBeGreaterThan(opusCost(1000, 100, 0, 2000) * 1.1);
    expect(threadLedger(responsesOf(main), 0).cost_usd).toBeCloseTo(expected, 6);
  });
});

describe('toolCallsOf', () => {
  it('takes the tool_use blocks of assistant entries inside the window, a malformed input read as none', () => {
    const entries = [
      reply({ content: [{ type: 'tool_use', id: 't1', name: 'Bash', input: 'ls' }], second: 15 }),
      reply({
        content: [{ type: 'tool_use', id: 't2', name: 'Read', input: { file_path: '/a' } }],
        second: 1,
      }),
      {
        type: 'user',
        timestamp: new Date((T0 + 15) * 1000).toISOString(),
        message: { role: 'user', content: [{ type: 'tool_use', id: 't3', name: 'Bash', input: {} }] },
      } as Entry,
    ];
    expect(toolCallsOf(entries, { from: T0 + 10, to: T0 + 20 })).toEqual([
      { id: 't1', name: 'Bash', input: {} },
    ]);
    expect(toolCallsOf(entries).map((call) => call.id)).toEqual(['t1', 't2']);
  });
});

describe('threadLedger', () => {
  it('names the model that answered most of the responses (the first to answer among equals), and none when no response named one', () => {
    const responses = responsesOf([
      reply({ id: 'a', model: 'claude-haiku-5-5' }),
      reply({ id: 'b', model: OPUS }),
      reply({ id: 'c', model: OPUS }),
      reply({ id: 'd' }),
    ]);
    expect(threadLedger(responses, 0).model).toBe(OPUS);
    const tie = responsesOf([
      reply({ id: 'a', model: 'claude-haiku-5-5' }),
      reply({ id: 'b', model: OPUS }),
      reply({ id: 'c', model: OPUS }),
      reply({ id: 'd', model: 'claude-haiku-5-5' }),
    ]);
    expect(threadLedger(tie, 0).model).toBe('claude-haiku-5-5');
    expect(threadLedger(responsesOf([reply({ id: 'a' })]), 0).model).toBeNull();
    expect(threadLedger(responsesOf([reply({ id: 'a', model: '' })]), 0).model).toBeNull();
    expect(threadLedger([], 3)).toEqual({
      model: null,
      turns: 0,
      input_tokens: 0,
      output_tokens: 0,
      cache_read_input_tokens: 0,
      cache_creation_input_tokens: 0,
      cost_usd: 0,
      tool_calls: 3,
    });
  });

  it('rounds dollars to a millionth, the precision the SDK reports', () => {
    expect(roundUsd(0.123_456_7)).toBe(0.123_457);
    expect(roundUsd(1.000_000_4)).toBe(1);
    // 1 input token of claude-opus-5-5 is 0.000004 USD; 1 cache-read token 0.0000002 USD.
    const cost = threadLedger(
      responsesOf([reply({ id: 'a', model: OPUS, usage: usage(1, 0, 3) })]),
      0,
    ).cost_usd;
    expect(cost).toBe(0.000005);
  });
});

describe('workers', () => {
  it('finds a dispatch made through the Task tool, and matches a first prompt however it is padded', () => {
    const main = new TranscriptBuilder('m');
    const call = main.toolUseBlock('Task', {
      subagent_type: 'tester',
      description: 'Test it',
      prompt: 'Test it all.  ',
    });
    main.response([call], { model: OPUS, usage: usage(10, 1) });
    const worker = new TranscriptBuilder('w');
    worker.prompt('\n Test it all.\n');
    worker.prompt('A later prompt.');
    worker.response([{ type: 'text', text: 'ok' }], { model: OPUS, usage: usage(10, 1) });
    const [tester] = stepLedger(
      [session(main.entries, [{ agentId: 't', entries: worker.entries }])],
      UNBOUNDED,
    ).workers;
    expect(tester).toMatchObject({ agent_type: 'tester', description: 'Test it' });
  });

  it('matches a worker by its first prompt only, never a later one', () => {
    const main = new TranscriptBuilder('m');
    const call = main.toolUseBlock('Agent', {
      subagent_type: 'coder',
      description: 'Second',
      prompt: 'Later.',
    });
    main.response([call], { model: OPUS, usage: usage(10, 1) });
    const worker = new TranscriptBuilder('w');
    worker.prompt('First.');
    worker.prompt('Later.');
    worker.response([{ type: 'text', text: 'ok' }], { model: OPUS, usage: usage(10, 1) });
    const [unknown] = stepLedger(
      [session(main.entries, [{ agentId: 'x', entries: worker.entries }])],
      UNBOUNDED,
    ).workers;
    expect(unknown).toMatchObject({ agent_type: null, description: '' });
  });

  it('finds a dispatch by the tool-use id in the subagent’s metadata, and ignores a malformed launch result', () => {
    const main = new TranscriptBuilder('m');
    const call = main.toolUseBlock('Agent', {
      subagent_type: 'coder',
      description: 'By metadata',
      prompt: 'p',
    });
    const odd = main.toolUseBlock('Agent', 'not an input' as unknown as Record<string, unknown>);
    main.response([call, odd], { model: OPUS, usage: usage(10, 1) });
    main.push({
      type: 'user',
      message: { role: 'user', content: [{ type: 'tool_result', tool_use_id: odd.id, content: 'launched' }] },
      toolUseResult: { agentId: 7 },
    });
    const worker = [
      { type: 'agent_metadata', toolUseId: call.id, agentType: 7, description: 7 } as unknown as Entry,
      reply({ id: 'r', model: OPUS, usage: usage(10, 1) }),
    ];
    const [found] = stepLedger(
      [session(main.entries, [{ agentId: 'md', entries: worker }])],
      UNBOUNDED,
    ).workers;
    expect(found).toMatchObject({ agent_type: 'coder', description: 'By metadata' });
  });

  it('a metadata tool-use id that is no string is none: the first prompt still finds the dispatch', () => {
    const main = new TranscriptBuilder('m');
    const call = main.toolUseBlock('Agent', {
      subagent_type: 'coder',
      description: 'By prompt',
      prompt: 'Do it.',
    });
    main.response([call], { model: OPUS, usage: usage(10, 1) });
    const worker = [
      { type: 'agent_metadata', toolUseId: 7 } as unknown as Entry,
      { type: 'user', message: { role: 'user', content: 'Do it.' } } as Entry,
      reply({ id: 'r', model: OPUS, usage: usage(10, 1) }),
    ];
    const [found] = stepLedger(
      [session(main.entries, [{ agentId: 'p', entries: worker }])],
      UNBOUNDED,
    ).workers;
    expect(found).toMatchObject({ agent_type: 'coder', description: 'By prompt' });
  });

  it('the first prompt is a user entry’s: an assistant’s text that matches a dispatch names nothing', () => {
    const main = new TranscriptBuilder('m');
    const call = main.toolUseBlock('Agent', {
      subagent_type: 'coder',
      description: 'Echoed',
      prompt: 'Do it.',
    });
    main.response([call], { model: OPUS, usage: usage(10, 1) });
    const worker = [
      { type: 'assistant', message: { role: 'assistant', content: 'Do it.' } } as Entry,
      reply({ id: 'r', model: OPUS, usage: usage(10, 1) }),
    ];
    const [found] = stepLedger(
      [session(main.entries, [{ agentId: 'e', entries: worker }])],
      UNBOUNDED,
    ).workers;
    expect(found).toMatchObject({ agent_type: null, description: '' });
  });

  it('only an Agent or Task call is a dispatch: another tool’s call named in the metadata says nothing', () => {
    const main = new TranscriptBuilder('m');
    const bash = main.toolUseBlock('Bash', { command: 'ls', description: 'List files', subagent_type: 'x' });
    main.response([bash], { model: OPUS, usage: usage(10, 1) });
    const worker = [
      { type: 'agent_metadata', toolUseId: bash.id } as Entry,
      reply({ id: 'r', model: OPUS, usage: usage(10, 1) }),
    ];
    const [found] = stepLedger(
      [session(main.entries, [{ agentId: 'b', entries: worker }])],
      UNBOUNDED,
    ).workers;
    expect(found).toMatchObject({ agent_type: null, description: '' });
  });

  it('reads the launch result from its tool_result block, whatever other blocks its entry holds', () => {
    const main = new TranscriptBuilder('m');
    const call = main.toolUseBlock('Agent', { subagent_type: 'coder', description: 'Launched', prompt: 'p' });
    main.response([call], { model: OPUS, usage: usage(10, 1) });
    main.push({
      type: 'user',
      message: {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: call.id, content: 'launched' },
          { type: 'text', text: 'A note the harness added.' },
          { type: 'web_search_tool_result', tool_use_id: 'srvtoolu-1', content: [] },
          { type: 'tool_result', content: 'a result with no call id' },
        ],
      },
      toolUseResult: { agentId: 'l1' },
    });
    const worker = [reply({ id: 'r', model: OPUS, usage: usage(10, 1) })];
    const [found] = stepLedger(
      [session(main.entries, [{ agentId: 'l1', entries: worker }])],
      UNBOUNDED,
    ).workers;
    expect(found).toMatchObject({ agent_type: 'coder', description: 'Launched' });
  });

  it('a worker whose dispatch is not found says only what of itself is text', () => {
    const worker = [
      { type: 'agent_metadata', agentType: 7, description: { text: 'no' } } as unknown as Entry,
      reply({ id: 'r', model: OPUS, usage: usage(10, 1) }),
    ];
    const [found] = stepLedger([session([], [{ agentId: 'n', entries: worker }])], UNBOUNDED).workers;
    expect(found).toMatchObject({ agent_type: null, description: '' });
  });

  it('a dispatch without a description or type falls back to what the subagent says of itself', () => {
    const main = new TranscriptBuilder('m');
    const call = main.toolUseBlock('Agent', { description: 3, subagent_type: null, prompt: 'p' });
    main.response([call], { model: OPUS, usage: usage(10, 1) });
    const worker = [
      {
        type: 'agent_metadata',
        toolUseId: call.id,
        agentType: 'critic',
        description: 'Its own words',
      } as Entry,
      reply({ id: 'r', model: OPUS, usage: usage(10, 1) }),
    ];
    const [found] = stepLedger(
      [session(main.entries, [{ agentId: 'c', entries: worker }])],
      UNBOUNDED,
    ).workers;
    expect(found).toMatchObject({ agent_type: 'critic', description: 'Its own words' });
  });

  it('leaves out a worker that answered nothing inside the window', () => {
    const worker = [reply({ id: 'r', model: OPUS, usage: usage(10, 1), second: 1 })];
    expect(
      stepLedger([session([], [{ agentId: 'w', entries: worker }])], { from: T0 + 10, to: T0 + 20 }).workers,
    ).toEqual([]);
    expect(stepLedger([session([], [{ agentId: 'w', entries: [] }])], UNBOUNDED).workers).toEqual([]);
  });

  it('a worker lasts from its first to its last entry inside the window, in hundredths of a second', () => {
    const at = (ms: number) => new Date(T0 * 1000 + ms).toISOString();
    const worker = [
      { type: 'user', timestamp: at(-5000), message: { role: 'user', content: 'early' } } as Entry,
      { type: 'user', timestamp: at(1000), message: { role: 'user', content: 'go' } } as Entry,
      { type: 'user', message: { role: 'user', content: 'no time' } } as Entry,
      { ...reply({ id: 'r', model: OPUS, usage: usage(10, 1) }), timestamp: at(3456) } as Entry,
      { type: 'user', timestamp: at(99_000), message: { role: 'user', content: 'late' } } as Entry,
    ];
    const [one] = stepLedger([session([], [{ agentId: 'w', entries: worker }])], {
      from: T0,
      to: T0 + 10,
    }).workers;
    expect(one?.duration_s).toBe(2.46);
    const single = [{ ...reply({ id: 'r', model: OPUS, usage: usage(1, 1) }), timestamp: at(1000) } as Entry];
    expect(
      stepLedger([session([], [{ agentId: 'w', entries: single }])], UNBOUNDED).workers[0]?.duration_s,
    ).toBe(0);
    const untimed = [reply({ id: 'r', model: OPUS, usage: usage(1, 1) })];
    expect(
      stepLedger([session([], [{ agentId: 'w', entries: untimed }])], UNBOUNDED).workers[0]?.duration_s,
    ).toBe(0);
  });

  it('a worker’s duration holds both ends of the window', () => {
    const at = (second: number) => new Date((T0 + second) * 1000).toISOString();
    const worker = [
      { type: 'user', timestamp: at(10), message: { role: 'user', content: 'go' } } as Entry,
      { ...reply({ id: 'r', model: OPUS, usage: usage(10, 1) }), timestamp: at(20) } as Entry,
    ];
    const [one] = stepLedger([session([], [{ agentId: 'w', entries: worker }])], {
      from: T0 + 10,
      to: T0 + 20,
    }).workers;
    expect(one?.duration_s).toBe(10);
  });

  it('adds the main threads of every session of the step, and keeps each session’s workers', () => {
    const one = session(
      [reply({ id: 'a', model: OPUS, usage: usage(10, 1) })],
      [{ agentId: 'w1', entries: [reply({ id: 'b', model: OPUS, usage: usage(20, 2) })] }],
    );
    const two = {
      ...session(
        [
          reply({
            id: 'c',
            model: OPUS,
            usage: usage(30, 3),
            content: [{ type: 'tool_use', id: 'x', name: 'Bash', input: {} }],
          }),
        ],
        [{ agentId: 'w2', entries: [reply({ id: 'd', model: OPUS, usage: usage(40, 4) })] }],
      ),
      sessionId: 'session-2',
    };
    const ledger = stepLedger([one, two], UNBOUNDED);
    expect(ledger.main).toMatchObject({ turns: 2, input_tokens: 40, output_tokens: 4, tool_calls: 1 });
    expect(ledger.workers.map((worker) => [worker.agent_id, worker.input_tokens])).toEqual([
      ['w1', 20],
      ['w2', 40],
    ]);
  });
});

describe('ledgerCost and reconcile: rounding and unpriced threads', () => {
  const thread = (cost: number | null): ThreadLedger => ({
    model: OPUS,
    turns: 1,
    input_tokens: 0,
    output_tokens: 0,
    cache_read_input_tokens: 0,
    cache_creation_input_tokens: 0,
    cost_usd: cost,
    tool_calls: 0,
  });
  const ledger = (main: number | null, ...workers: Array<number | null>): StepLedger => ({
    main: thread(main),
    workers: workers.map((cost, index) => ({
      ...thread(cost),
      agent_id: `w${index}`,
      agent_type: null,
      description: '',
      duration_s: 0,
    })),
  });

  it('sums to a millionth of a dollar, and has no sum when the main thread or any worker is unpriced', () => {
    expect(ledgerCost(ledger(0.1, 0.2))).toBe(0.3);
    expect(ledgerCost(ledger(0.000_000_4))).toBe(0);
    expect(ledgerCost(ledger(null, 0.2))).toBeNull();
    expect(ledgerCost(ledger(0.1, null, 0.2))).toBeNull();
    expect(ledgerCost(ledger(0.1, 0.2, null))).toBeNull();
  });

  it('shows the difference from the SDK’s figure to a millionth of a dollar', () => {
    expect(reconcile(0.3, ledger(0.1, 0.2))).toEqual({ sdk_usd: 0.3, ledger_usd: 0.3, difference_usd: 0 });
    expect(reconcile(0.25, ledger(0.3))).toEqual({ sdk_usd: 0.25, ledger_usd: 0.3, difference_usd: 0.05 });
  });
});

describe('readStepTranscripts and ledgerForStep: what is read', () => {
  const reader = (
    sessions: Record<string, Record<string, Entry[] | null>>,
    subkeys: Record<string, string[]>,
  ) => {
    const loads: string[] = [];
    return {
      loads,
      load: async (key: { projectKey: string; sessionId: string; subpath?: string }) => {
        loads.push(`${key.projectKey}:${key.sessionId}:${key.subpath ?? ''}`);
        return sessions[key.sessionId]?.[key.subpath ?? ''] ?? null;
      },
      listSubkeys: async (key: { projectKey: string; sessionId: string }) => subkeys[key.sessionId] ?? [],
    };
  };

  it('reads each session once, only subagent subkeys, and leaves out a subagent the store lost', async () => {
    const entries = [reply({ id: 'a', model: OPUS, usage: usage(1, 1) })];
    const store = reader(
      { s1: { '': entries, 'subagents/agent-w1': entries, 'subagents/agent-gone': null, spill: entries } },
      { s1: ['subagents/agent-w1', 'spill', 'subagents/agent-gone'] },
    );
    const sessions = await readStepTranscripts(store, '-ws', ['s1', 's1']);
    expect(sessions).toEqual([
      {
        sessionId: 's1',
        main: entries,
        subagents: [{ subpath: 'subagents/agent-w1', agentId: 'w1', entries }],
      },
    ]);
    expect(store.loads).toEqual(['-ws:s1:', '-ws:s1:subagents/agent-w1', '-ws:s1:subagents/agent-gone']);
  });

  it('a step’s ledger covers its retired sessions and its current one, inside its start and end', async () => {
    const main = (input: number) => [
      reply({ id: `early-${input}`, model: OPUS, usage: usage(1000, 0), second: 1 }),
      reply({ id: `r-${input}`, model: OPUS, usage: usage(input, 0), second: 15 }),
    ];
    const store = reader({ s1: { '': main(10) }, s2: { '': main(20) }, other: { '': main(40) } }, {});
    const step = { sessionId: 's2', retired: ['s1'], startedAt: T0 + 10 };
    const ledger = await ledgerForStep(store, '-ws', step, T0 + 20);
    expect(ledger?.main).toMatchObject({ turns: 2, input_tokens: 30 });
    expect(store.loads).toEqual(['-ws:s1:', '-ws:s2:']);
  });
});
