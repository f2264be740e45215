/**
 * Handing a step over to a fresh session when the current one's context is nearly full.
 *
 * The session that is full writes the document itself, in one extra turn on the same session:
 * only it knows what it was doing. That turn is silent (its events are not streamed), exempt from
 * the handoff threshold (otherwise it would be cut at its first message and every handoff would
 * come out degraded, which happened in a real run), and free of the step's budget cap (a handoff
 * that cannot be written because of the budget helps nobody). Its cost and turns count for the step.
 *
 * When the context overflowed outright there is no room for that turn, so the document is
 * assembled mechanically (degraded) without trying.
 */
import type { HandoffPolicy } from '../config/policies.js';
import type { EventSink } from './events.js';
import {
  degradedHandoff,
  degradedHandoffNote,
  formatUsedTokens,
  formatWindowTokens,
  HandoffDocument,
  handoffWritingPrompt,
  incompleteReason,
  OVERFLOW_REASON,
  saveHandoff,
} from './handoff-document.js';
import { newStepResult, type StepResult } from './step-result.js';

export interface HandoffRequest {
  step: string;
  /** The step's own result: the handoff turn's cost and turns are added to it, a degradation noted. */
  result: StepResult;
  /** The task the step was originally given (the degraded document carries its beginning). */
  originalPrompt: string;
  /** Main-thread context when the handoff became due. */
  context: number;
  policy: HandoffPolicy;
  /** Where to keep the document; undefined means it only travels in the successor's prompt. */
  notesDir: string | undefined;
  /** True when the context overflowed: no turn is attempted, the document is degraded at once. */
  forced: boolean;
  emit: EventSink;
  /** Runs one silent, threshold-exempt turn on the current session and records it in `probe`. */
  runTurn: (prompt: string, probe: StepResult) => Promise<void>;
}

export interface HandoffOutcome {
  document: HandoffDocument;
  /** The first prompt of the successor session. */
  prompt: string;
  degraded: boolean;
  /** Where the document was written; empty when there was nowhere to write it. */
  path: string;
}

function describeError(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : String(error);
}

/** Has the current session write its handoff (or assembles a degraded one) and saves it. */
export async function writeHandoff(request: HandoffRequest): Promise<HandoffOutcome> {
  const { step, result, policy, context } = request;
  const gauge = `${formatUsedTokens(context)}/${formatWindowTokens(policy.window)}`;
  request.emit({
    kind: 'handoff',
    text: `context ${gauge}: writing the handoff`,
    payload: { phase: 'writing', step, context, window: policy.window },
  });

  let document = new HandoffDocument();
  let why = request.forced ? OVERFLOW_REASON : '';
  if (!request.forced) {
    const probe = newStepResult(step, result.run);
    probe.sessionId = result.sessionId;
    try {
      await request.runTurn(handoffWritingPrompt(context, policy.window), probe);
      document = HandoffDocument.parse(probe.text);
      if (!document.complete)
        why = probe.ok ? incompleteReason(document) : (probe.error ?? incompleteReason(document));
    } catch (error) {
      why = describeError(error);
    }
    result.costUsd += probe.costUsd;
    result.numTurns += probe.numTurns;
  }
  if (why) {
    document = degradedHandoff(step, request.originalPrompt, why);
    result.errors.push(degradedHandoffNote(why));
  }

  let path = '';
  if (request.notesDir) {
    try {
      path = saveHandoff(request.notesDir, step, document);
    } catch (error) {
      result.errors.push(`handoff not saved (${describeError(error)})`);
    }
  }
  const summary = document.summary();
  request.emit({
    kind: 'handoff',
    text: `context full: handing ${step} over to a new session`,
    payload: {
      phase: 'done',
      step,
      context,
      window: policy.window,
      degraded: document.degraded,
      path,
      sections: {
        doing: summary.doing,
        decided: summary.decided,
        deadends: summary.deadEnds,
        next: summary.next,
      },
    },
  });
  return { document, prompt: document.successorPrompt(), degraded: document.degraded, path };
}
