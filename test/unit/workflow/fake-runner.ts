/**
 * A scripted StepRunner for orchestration tests: each call is answered by a function of the call,
 * and every call is recorded. It fakes only the runtime seam, never the documents or the workflow.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AgentSpec } from '../../../src/runtime/agent-spec.js';
import { newStepResult, type StepResult } from '../../../src/runtime/step-result.js';
import type { StepRunner, StepRunOptions } from '../../../src/workflow/runner.js';

export interface RecordedCall {
  spec: AgentSpec;
  prompt: string;
  options: StepRunOptions;
}

export type Reply = Partial<Omit<StepResult, 'step'>>;

export class FakeRunner implements StepRunner {
  readonly calls: RecordedCall[] = [];
  /** What each call returned, in order (a gate's annotations land on these). */
  readonly results: StepResult[] = [];
  readonly knownSessions = new Set<string>();
  private counter = 0;

  constructor(
    private readonly reply: (call: RecordedCall, index: number) => Reply = () => ({}),
    readonly workspace?: string,
    readonly runDir?: string,
  ) {}

  /** A runner with a temp workspace and run dir, so lineage is on. */
  static continuous(reply?: (call: RecordedCall, index: number) => Reply, root?: string): FakeRunner {
    const base = root ?? mkdtempSync(join(tmpdir(), 'flower-wf-'));
    return new FakeRunner(reply, join(base, 'ws'), join(base, 'runs'));
  }

  async run(spec: AgentSpec, prompt: string, options: StepRunOptions = {}): Promise<StepResult> {
    const call = { spec, prompt, options };
    const index = this.calls.push(call) - 1;
    const reply = this.reply(call, index);
    const sessionId =
      reply.sessionId === undefined
        ? options.resume && !options.fork
          ? options.resume
          : `s${++this.counter}`
        : reply.sessionId;
    if (sessionId) {
      this.knownSessions.add(sessionId);
      options.onSession?.(sessionId);
    }
    const result: StepResult = {
      ...newStepResult(options.stepName ?? spec.name, 'run-1'),
      ok: true,
      text: 'done',
      ...reply,
      sessionId,
    };
    this.results.push(result);
    return result;
  }

  hasSession(sessionId: string): boolean {
    return this.knownSessions.has(sessionId);
  }

  labels(): string[] {
    return this.calls.map((call) => call.options.stepName ?? '');
  }
}

export function fakeSpec(name: string): AgentSpec {
  return { name, instructions: '', allowedTools: ['Read'], permissionMode: 'default' };
}
