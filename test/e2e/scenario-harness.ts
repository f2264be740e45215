/**
 * Shared set-up for the workflow scenario tests (flower-guides §15): a fresh workspace, the mock
 * model, and the real Runtime + SDK + Claude Code binary pointed at it. Only the model is scripted.
 *
 * Every role runs on the main thread of its own session, so the mock sees clarifier, judge and
 * coordinator requests in one queue. `mainRouter` answers each request by the role its system
 * prompt names and by how far that session has got (tool results already in the conversation),
 * which keeps scripts readable and independent of how many turns the binary takes.
 *
 * `startFrozen` begins with the brief and goal already on disk (a wake that goes straight to work),
 * and `scenario.flower(args)` runs the built CLI in the scenario's workspace against the same mock.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { HumanChannel } from '../../src/agents/human/channel.js';
import { ORACLE_RULES } from '../../src/agents/rules.js';
import type { FlowerEvent } from '../../src/runtime/events.js';
import { Runtime } from '../../src/runtime/runtime.js';
import type { ManifestRow } from '../../src/runtime/step-result.js';
import {
  contentText,
  lastUserText,
  type MockModel,
  type MockResponse,
  type MockScript,
  type MockStep,
  mockModelEnv,
  type RecordedRequest,
  startMockModel,
  systemText,
} from '../../src/testing/index.js';
import { Brief } from '../../src/workflow/brief.js';
import { Goal } from '../../src/workflow/goal.js';
import { type FlowerRun, type FlowerRunOptions, mockedEnv, runFlower } from './cli-harness.js';

export type Role = 'clarifier' | 'set-goal' | 'verdict' | 'coordinator' | 'bequest' | 'other';

const ORACLE = ORACLE_RULES.split('\n')[0] ?? ORACLE_RULES;

/** Which role sent a main-thread request, read from its system prompt and task. */
export function roleOf(request: RecordedRequest): Role {
  const system = systemText(request.body);
  if (system.includes('Your role: clarifier')) return 'clarifier';
  if (system.includes('Your role: coordinator')) return 'coordinator';
  if (
    system.includes(ORACLE) &&
    JSON.stringify(request.body?.messages?.[0] ?? '').includes('The task in this workspace has ended')
  )
    return 'bequest';
  if (system.includes('Your role: judge')) {
    const task = JSON.stringify(request.body?.messages?.[0] ?? '');
    return task.includes('Set the goal for the requirement') ? 'set-goal' : 'verdict';
  }
  return 'other';
}

/**
 * A clarifier's brief that echoes the request, so a test can tell which request reached the
 * clarifier; any other role's request is 'not scripted'. The request is the last line of the first
 * user message (the binary puts reminders before it).
 */
export function echoBrief(request: RecordedRequest): MockResponse {
  if (roleOf(request) !== 'clarifier') return { text: 'not scripted' };
  const firstUser = contentText(request.body?.messages?.[0]?.content ?? '').trim();
  const asked = firstUser.split('\n').at(-1)?.slice(0, 80) ?? '';
  return {
    text: `## Goal\nDo this: ${asked}\n\n## Acceptance\n- it is done\n\n## Boundaries\n- nothing else\n\n## Unknowns & assumptions\n- none`,
  };
}

/** How many tool results the session has received so far (its progress through a script). */
export function toolResultCount(request: RecordedRequest): number {
  let count = 0;
  for (const message of request.body?.messages ?? []) {
    if (typeof message.content === 'string') continue;
    for (const block of message.content) if (block.type === 'tool_result') count++;
  }
  return count;
}

/** The text of every tool result the session has received, joined (for asserting denials). */
export function toolResultTexts(request: RecordedRequest): string {
  const texts: string[] = [];
  for (const message of request.body?.messages ?? []) {
    if (typeof message.content === 'string') continue;
    for (const block of message.content) {
      if (block.type !== 'tool_result') continue;
      texts.push(typeof block.content === 'string' ? block.content : JSON.stringify(block.content));
    }
  }
  return texts.join('\n');
}

export type RoleHandler = (request: RecordedRequest, turn: number) => MockResponse;

/** Enough main-thread steps for any scenario, each answering by role. */
export function mainRouter(handlers: Partial<Record<Role, RoleHandler>>, count = 80): MockStep[] {
  const step = (request: RecordedRequest): MockResponse => {
    const role = roleOf(request);
    const handler = handlers[role];
    if (!handler) return { text: `(nothing scripted for the ${role} role)` };
    return handler(request, toolResultCount(request));
  };
  return Array.from({ length: count }, () => step);
}

/** Hands out the given replies in order, then repeats the last one. */
export function inOrder(...replies: MockResponse[]): () => MockResponse {
  let next = 0;
  return () => replies[Math.min(next++, replies.length - 1)] as MockResponse;
}

export const HELLO_BRIEF = [
  '## Goal',
  'A script hello.py that prints "hello world".',
  '## Acceptance',
  '- `python3 hello.py` prints hello world',
  '## Boundaries',
  'No packaging, no tests framework.',
  '## Unknowns & assumptions',
  'python3 is on the PATH.',
].join('\n');

export const HELLO_GOAL = [
  '## Statement',
  'hello.py exists and prints hello world.',
  '## Checklist',
  '- hello.py exists in the workspace',
  '- `python3 hello.py` prints "hello world"',
  '- the exit code is 0',
].join('\n');

/** A goal with one host-run check (the frozen-checks and goal-edits scenarios). */
export const HELLO_TXT_GOAL = [
  '## Statement',
  'hello.txt greets.',
  '## Checklist',
  '- hello.txt is there — check: `test -f hello.txt`',
].join('\n');

export const ACHIEVED = '## Conclusion\nachieved\n## Reason\nhello.py prints hello world.\n## Not passed\n';

/** A "not yet" ruling with one open item. */
export function notYet(gap: string): string {
  return `## Conclusion\nnot yet\n## Reason\n${gap}\n## Not passed\n- ${gap}`;
}

/** A complete bequest reply for the closing turn. */
export const BEQUEST_REPLY = [
  '## What this is',
  'hello.py, a script that prints hello world.',
  '## Acceptance: met and not met',
  '- prints hello world: met',
  '## Generated files and what makes them',
  'None: hello.py is a source file.',
  '## Dead ends',
  'None.',
  '## The workbench and how to read it',
  'Read .flower/notes/brief.md, then goal.md.',
].join('\n');

/**
 * Writes the brief and the goal (default: hello.py's) into the workspace, as a finished clarify and
 * set-goal would; `goal: null` freezes the brief only, so the set-goal step runs.
 */
export function freeze(
  workspace: string,
  goal: string | null = HELLO_GOAL,
  brief: string = HELLO_BRIEF,
): void {
  Brief.parse(brief).write(join(workspace, '.flower/notes/brief.md'));
  if (goal !== null) Goal.parse(goal).write(join(workspace, '.flower/notes/goal.md'));
}

/** A model for rounds of work on a frozen goal: the coordinator's replies and the judge's rulings, in order. */
export function roundsScript(
  verdicts: readonly string[],
  work: readonly string[] = ['Round one: wrote hello.py.', 'Round two: fixed the gaps.'],
): MockScript {
  return {
    main: mainRouter({
      coordinator: inOrder(...work.map((text) => ({ text }))),
      verdict: inOrder(...verdicts.map((text) => ({ text }))),
      bequest: () => ({ text: BEQUEST_REPLY }),
    }),
  };
}

export interface Scenario {
  root: string;
  workspace: string;
  mock: MockModel;
  events: FlowerEvent[];
  /** A Runtime on this workspace talking to the mock (a new one per call: a new process, in effect). */
  runtime(options?: { notesDir?: string; runDir?: string }): Runtime;
  manifest(runDir?: string): ManifestRow[];
  lineage(runDir?: string): { workspace: string; woke: number; steps: Record<string, string> };
  /** Sink that records every event. */
  sink: (event: FlowerEvent) => void;
  /** Runs the built `flower` CLI with `args` in this workspace against this mock (no terminal). */
  flower(args: string[], options?: FlowerRunOptions): Promise<FlowerRun>;
  close(): Promise<void>;
}

/** Starts the mock with `script` (or the script built for the new workspace's path). */
export async function startScenario(
  script: MockScript | ((workspace: string) => MockScript),
): Promise<Scenario> {
  const root = mkdtempSync(join(tmpdir(), 'flower-scenario-'));
  const workspace = join(root, 'proj');
  mkdirSync(workspace, { recursive: true });
  const mock = await startMockModel(typeof script === 'function' ? script(workspace) : script);
  const events: FlowerEvent[] = [];
  const runtimes: Runtime[] = [];
  const runDirOf = (runDir?: string) => join(workspace, runDir ?? 'runs');
  return {
    root,
    workspace,
    mock,
    events,
    sink: (event) => events.push(event),
    runtime: (options = {}) => {
      const runtime = new Runtime({
        workspace,
        ...(options.runDir ? { runDir: options.runDir } : {}),
        ...(options.notesDir ? { notesDir: options.notesDir } : {}),
        env: mockModelEnv(mock, { configDir: join(root, `config-${runtimes.length}`) }),
        // Scenarios script the model exactly; an unexpected failure should show at once, not after backoff.
        resilience: false,
      });
      runtimes.push(runtime);
      return runtime;
    },
    manifest: (runDir) => {
      const path = join(runDirOf(runDir), 'manifest.json');
      return existsSync(path) ? (JSON.parse(readFileSync(path, 'utf8')) as ManifestRow[]) : [];
    },
    lineage: (runDir) => JSON.parse(readFileSync(join(runDirOf(runDir), 'lineage.json'), 'utf8')),
    flower: (args, options = {}) =>
      runFlower(['-w', workspace, ...args], { env: mockedEnv(mock), timeoutMs: 150_000, ...options }),
    close: async () => {
      for (const runtime of runtimes) runtime.close();
      await mock.close();
      rmSync(root, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
    },
  };
}

/** `startScenario` with the brief and goal already frozen (`freeze`), so a run goes straight to work. */
export async function startFrozen(
  script: MockScript | ((workspace: string) => MockScript),
  goal: string | null = HELLO_GOAL,
): Promise<Scenario> {
  const scenario = await startScenario(script);
  freeze(scenario.workspace, goal);
  return scenario;
}

/**
 * Answers the channel's questions as they are asked: `answer(question, options)` returns the reply
 * (a number picks an option), or undefined to skip. Answers arrive asynchronously, the way a
 * terminal thread delivers them.
 */
export function answerQuestions(
  channel: HumanChannel,
  events: FlowerEvent[],
  answer: (question: string, options: string[]) => string | undefined,
): (event: FlowerEvent) => void {
  return (event) => {
    events.push(event);
    if (event.kind !== 'ask') return;
    const payload = event.payload as { kind?: string; state?: string; id?: string; options?: string[] };
    if (payload.kind !== 'question' || payload.state !== 'asked' || !payload.id) return;
    const id = payload.id;
    const reply = answer(event.text, payload.options ?? []);
    setTimeout(() => (reply === undefined ? channel.decline(id) : channel.answer(id, reply)), 20);
  };
}

/** The last user text of the first main-thread request of `role` after request index `after`. */
export function firstPromptOf(mock: MockModel, role: Role, after = -1): string {
  const request = mock
    .mainRequests()
    .find((candidate) => candidate.index > after && roleOf(candidate) === role);
  return request ? lastUserText(request) : '';
}
