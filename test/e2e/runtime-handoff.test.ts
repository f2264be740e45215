/**
 * Acceptance 3 of the runtime: a session whose context reaches the threshold writes a handoff
 * document and a fresh session takes over; incomplete replies and overflows degrade it.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { HandoffPolicy } from '../../src/config/policies.js';
import type { AgentSpec } from '../../src/runtime/agent-spec.js';
import { DEGRADED_MARKER } from '../../src/runtime/handoff-document.js';
import {
  lastUserText,
  type MockResponse,
  type MockScript,
  messageText,
  mock,
  type RecordedRequest,
  toolResults,
} from '../../src/testing/index.js';
import { eventLog, type Harness, startHarness } from './runtime-harness.js';

const spec: AgentSpec = {
  name: 'work',
  instructions: '',
  allowedTools: ['Read', 'Glob', 'Grep'],
  permissionMode: 'default',
};
const TASK = `Port the parser to TypeScript. ${'Keep every behaviour. '.repeat(100)}`;
const FULL_HANDOFF = `## Doing
Porting the tokenizer; half of the token kinds are done.

## Decided
- Hand-written lexer, because the grammar needs lookahead the generator lacks.

## Dead ends
- A regex-only tokenizer: it cannot handle nested comments.

## Next
Port the remaining token kinds in src/lexer.ts, starting with string literals.

## Scene
src/lexer.ts, test/lexer.test.ts`;

/** A tool call whose request carried `context` tokens (what the binary reports as usage). */
const readAt = (context: number) =>
  mock.toolUse('Read', { file_path: 'README.md' }, { usage: { input_tokens: context } });

function firstUserText(request: RecordedRequest): string {
  return messageText(request.body?.messages?.find((message) => message.role === 'user'));
}

/**
 * Answers by what a request is rather than by arrival order: after flower breaks off at the
 * threshold the old agent process may already have sent its next request before it is stopped,
 * so a positional script would hand that request the reply meant for the handoff turn.
 */
function route(replies: {
  /** Context reported per turn of a working session, by turn number (the last one repeats). */
  climb: number[];
  /** The reply to the handoff-writing turn, per generation (the last one repeats). */
  handoff: MockResponse[];
  /** The successor's first reply, per generation (the last one repeats); undefined: keep climbing. */
  successor: Array<MockResponse | undefined>;
}): MockScript {
  let handoffs = 0;
  let successors = 0;
  const pick = <T>(list: T[], index: number): T => list[Math.min(index, list.length - 1)] as T;
  return {
    main: [],
    fallback: (request) => {
      if (lastUserText(request).includes('nearly full')) return pick(replies.handoff, handoffs++);
      const turn = Math.floor(((request.body?.messages?.length ?? 1) - 1) / 2);
      if (turn === 0 && firstUserText(request).includes('taking over')) {
        const reply = pick(replies.successor, successors++);
        if (reply) return reply;
      }
      // A handoff that never fires must fail the test's assertions, not climb until the worker
      // runs out of memory: every session of these scripts hands off within a few turns.
      if (turn > MAX_TURNS_PER_SESSION) return mock.text(NEVER_HANDED_OFF);
      return readAt(pick(replies.climb, turn));
    },
  };
}

/** More turns than any session of these scripts runs before it hands off. */
const MAX_TURNS_PER_SESSION = 30;
const NEVER_HANDED_OFF = 'Stopped by the test script: the handoff never came.';

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.cleanup();
  harness = undefined;
});

describe('Runtime handoff (real SDK and binary against the mock model)', () => {
  it('hands off at the threshold: document written by the session, fresh successor, old session retired', async () => {
    harness = await startHarness(
      route({
        climb: [40_000, 135_000, 152_000],
        handoff: [mock.text(FULL_HANDOFF, { usage: { input_tokens: 2_000 } })],
        successor: [mock.text('Finished in the new session.', { usage: { input_tokens: 20_000 } })],
      }),
    );
    const notesDir = join(harness.root, 'notes');
    const runtime = harness.runtime({ handoff: new HandoffPolicy({ window: 200_000 }), notesDir });
    const log = eventLog();
    const result = await runtime.run(spec, TASK, { onEvent: log.sink, continuous: true });

    expect(result.ok).toBe(true);
    expect(result.attempts).toBe(1);
    expect(result.retired).toHaveLength(1);
    expect(result.sessionId).not.toBeNull();
    expect(result.retired[0]).not.toBe(result.sessionId);
    expect(result.text).toBe('Finished in the new session.');
    expect(result.context).toBe(20_000);

    const phases = log.events.flatMap((event) => (event.kind === 'handoff' ? [event.payload.phase] : []));
    expect(phases).toEqual(['near', 'writing', 'done']);
    const done = log.events.find((event) => event.kind === 'handoff' && event.payload.phase === 'done');
    expect(done?.payload).toMatchObject({ degraded: false, context: 152_000, window: 200_000 });

    const file = join(notesDir, 'handoff-work.md');
    expect(done?.payload).toMatchObject({ path: file });
    const document = readFileSync(file, 'utf8');
    for (const heading of ['## Doing', '## Decided', '## Dead ends', '## Next', '## Scene'])
      expect(document).toContain(heading);
    expect(document).toContain('string literals');

    const main = harness.model.mainRequests();
    // The handoff turn ran in the old session and was not cut by the threshold itself.
    const handoffTurns = main.filter((request) =>
      lastUserText(request).includes('Your context window is nearly full'),
    );
    expect(handoffTurns).toHaveLength(1);
    expect(lastUserText(handoffTurns[0]!)).toContain('152.0K of 200K');
    expect(firstUserText(handoffTurns[0]!)).toContain('Port the parser');
    // The successor starts from the document, with none of the old history.
    const successor = main[main.length - 1]!;
    const history = JSON.stringify(successor.body?.messages ?? []);
    expect(history).not.toContain('tool_use');
    expect(history).not.toContain('nearly full');
    expect(firstUserText(successor)).toContain('You are taking over unfinished work');
    expect(firstUserText(successor)).toContain('Port the remaining token kinds');

    const lineage = JSON.parse(readFileSync(join(runtime.runDir, 'lineage.json'), 'utf8'));
    expect(lineage.steps.work).toBe(result.sessionId);
    const [row] = JSON.parse(readFileSync(runtime.manifestPath, 'utf8'));
    expect(row).toMatchObject({
      ok: true,
      attempts: 1,
      retired: result.retired,
      session_id: result.sessionId,
    });
  });

  it('hands off at exactly the threshold, not only past it', async () => {
    const policy = new HandoffPolicy({ window: 200_000 });
    harness = await startHarness(
      route({
        climb: [40_000, policy.at],
        handoff: [mock.text(FULL_HANDOFF)],
        successor: [mock.text('Finished in the new session.')],
      }),
    );
    const runtime = harness.runtime({ handoff: policy });
    const result = await runtime.run(spec, TASK);
    expect(result.ok).toBe(true);
    expect(result.retired).toHaveLength(1);
    expect(result.text).toBe('Finished in the new session.');
    const handoffTurn = harness.model
      .mainRequests()
      .find((request) => lastUserText(request).includes('nearly full'));
    expect(lastUserText(handoffTurn!)).toContain('150.0K of 200K');
  });

  it('counts the main thread only: a worker at 170K does not hand off a coordinator at 12K', async () => {
    harness = await startHarness({
      main: [
        mock.toolUse(
          'Agent',
          {
            subagent_type: 'worker',
            description: 'read',
            prompt: 'Read the readme.',
            run_in_background: false,
          },
          { usage: { input_tokens: 12_000 } },
        ),
        mock.text('The worker is done.', { usage: { input_tokens: 12_000 } }),
      ],
      agents: {
        worker: [
          mock.toolUse('Read', { file_path: 'README.md' }, { usage: { input_tokens: 170_000 } }),
          mock.text('Read it.', { usage: { input_tokens: 170_000 } }),
        ],
      },
    });
    const runtime = harness.runtime({ handoff: new HandoffPolicy({ window: 200_000 }) });
    const log = eventLog();
    const coordinator: AgentSpec = {
      ...spec,
      allowedTools: ['Read', 'Agent'],
      agents: { worker: { description: 'Reads files.', prompt: 'You read files.', tools: ['Read'] } },
    };
    const result = await runtime.run(coordinator, TASK, { onEvent: log.sink });

    // The worker's big context really was in the stream the runtime watches.
    const workerContexts = log.events.flatMap((event) =>
      event.kind === 'tool_call' && event.payload.subagent ? [event.payload.context] : [],
    );
    expect(workerContexts).toContain(170_000);
    expect(result).toMatchObject({ ok: true, retired: [], context: 12_000, text: 'The worker is done.' });
    expect(log.events.filter((event) => event.kind === 'handoff')).toEqual([]);
    expect(
      harness.model.mainRequests().some((request) => lastUserText(request).includes('nearly full')),
    ).toBe(false);
  });

  it('archives the previous generation when a step hands off twice', async () => {
    harness = await startHarness(
      route({
        climb: [152_000],
        handoff: [mock.text(FULL_HANDOFF), mock.text(FULL_HANDOFF.replace('string literals', 'numbers'))],
        successor: [undefined, mock.text('Done.')],
      }),
    );
    const notesDir = join(harness.root, 'notes');
    const runtime = harness.runtime({ handoff: new HandoffPolicy({ window: 200_000 }), notesDir });
    const result = await runtime.run(spec, TASK);
    expect(result.ok).toBe(true);
    expect(result.retired).toHaveLength(2);
    expect(readFileSync(join(notesDir, 'handoff-work.md'), 'utf8')).toContain('numbers');
    const archived = readdirSync(join(notesDir, 'archive', 'handoff'));
    expect(archived).toHaveLength(1);
    expect(readFileSync(join(notesDir, 'archive', 'handoff', archived[0]!), 'utf8')).toContain(
      'string literals',
    );
  });

  it('degrades an incomplete handoff reply: marker, the start of the task, a note in errors', async () => {
    harness = await startHarness(
      route({
        climb: [152_000],
        handoff: [mock.text('## Doing\nPorting the tokenizer.\n\n## Decided\nNothing yet.')],
        successor: [mock.text('Done anyway.')],
      }),
    );
    const notesDir = join(harness.root, 'notes');
    const runtime = harness.runtime({ handoff: new HandoffPolicy({ window: 200_000 }), notesDir });
    const log = eventLog();
    const result = await runtime.run(spec, TASK, { onEvent: log.sink });

    expect(result.ok).toBe(true);
    expect(result.retired).toHaveLength(1);
    expect(result.errors).toContain('handoff degraded (missing Next)');
    const done = log.events.find((event) => event.kind === 'handoff' && event.payload.phase === 'done');
    expect(done?.payload).toMatchObject({ degraded: true });
    expect(readFileSync(join(notesDir, 'handoff-work.md'), 'utf8')).toContain(DEGRADED_MARKER);
    const main = harness.model.mainRequests();
    const successor = firstUserText(main[main.length - 1]!);
    expect(successor).toContain(DEGRADED_MARKER);
    expect(successor).toContain(TASK.trim().slice(0, 1200));
    expect(successor).not.toContain(TASK.trim().slice(0, 1300));
  });

  it('stops right after the second degraded handoff in a row, without starting a third session', async () => {
    harness = await startHarness(
      route({
        climb: [152_000],
        handoff: [mock.text('## Doing\nPorting the tokenizer.')],
        successor: [undefined],
      }),
    );
    const notesDir = join(harness.root, 'notes');
    const runtime = harness.runtime({ handoff: new HandoffPolicy({ window: 200_000 }), notesDir });
    const result = await runtime.run(spec, TASK);

    expect(result.ok).toBe(false);
    expect(result.retired).toHaveLength(2);
    expect(result.error).toContain('2 handoffs in a row');
    const handoffTurns = harness.model
      .mainRequests()
      .filter((request) => lastUserText(request).includes('nearly full'));
    expect(handoffTurns).toHaveLength(2);
    // Exactly one successor was started (after the first handoff); none after the second. A
    // successor's opening request is its first turn (as `route` counts turns) on the handoff document.
    const successorStarts = harness.model
      .mainRequests()
      .filter(
        (request) =>
          (request.body?.messages?.length ?? 0) <= 2 && firstUserText(request).includes('taking over'),
      );
    expect(successorStarts).toHaveLength(1);
  });

  it('forces a degraded handoff when the prompt is too long, and records the real window', async () => {
    harness = await startHarness([
      readAt(60_000),
      mock.error(400, { message: 'prompt is too long: 210000 tokens > 200000 maximum' }),
      mock.text('Done in the successor.'),
    ]);
    const notesDir = join(harness.root, 'notes');
    const runtime = harness.runtime({ handoff: new HandoffPolicy({ window: 1_000_000 }), notesDir });
    const result = await runtime.run(spec, TASK);

    expect(result.ok).toBe(true);
    expect(result.attempts).toBe(1);
    expect(result.retired).toHaveLength(1);
    expect(
      result.errors.some((error) => error.startsWith('handoff degraded (the context could not fit')),
    ).toBe(true);
    // No handoff-writing turn was attempted: there was no room for it.
    expect(
      harness.model.mainRequests().some((request) => lastUserText(request).includes('nearly full')),
    ).toBe(false);
    expect(readFileSync(join(notesDir, 'handoff-work.md'), 'utf8')).toContain(DEGRADED_MARKER);
    const calibration = join(harness.env.XDG_CONFIG_HOME!, 'flower', '.windows');
    expect(existsSync(calibration)).toBe(true);
    expect(Object.values(JSON.parse(readFileSync(calibration, 'utf8')))).toContain(60_000);
  });

  it.each([
    [true, '1'],
    [false, ''],
  ])('with handoff %s, the agent process gets DISABLE_AUTO_COMPACT="%s"', async (handoff, expected) => {
    harness = await startHarness([
      mock.toolUse('Bash', { command: 'echo "compact=$DISABLE_AUTO_COMPACT"' }),
      mock.text('Checked.'),
    ]);
    const runtime = harness.runtime({ handoff });
    const result = await runtime.run({ ...spec, allowedTools: ['Bash'] }, 'Check the setting.');
    expect(result.ok).toBe(true);
    const toolResult = toolResults(harness.model.mainRequests()[1]!)[0];
    // A line of its own: the sandboxed shell may print the user's shell start-up noise around it
    // (pyenv cannot rehash its read-only shims, on this machine).
    expect(toolResult?.text).toMatch(new RegExp(`^compact=${expected}$`, 'm'));
  });

  it('stops a step that crosses the threshold in every new session, with the explanation', async () => {
    // Every new session starts above the threshold; each is asked for a handoff and writes one.
    harness = await startHarness({
      main: [],
      fallback: (request) =>
        lastUserText(request).includes('nearly full') ? mock.text(FULL_HANDOFF) : readAt(40_000),
    });
    const runtime = harness.runtime({ handoff: new HandoffPolicy({ window: 30_000, maxGenerations: 2 }) });
    const result = await runtime.run(spec, TASK);
    expect(result.ok).toBe(false);
    expect(result.retired).toHaveLength(2);
    expect(result.error).toMatch(/handed off to a fresh session 2 times/);
    expect(result.error).toMatch(/--window|FLOWER_WINDOW/);
  });
});
