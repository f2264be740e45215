/**
 * What a scripted endpoint actually served, and what that cost: the other side of the books in
 * the tests that compare them (issue 18 §8, the partition chaos test).
 *
 * A request counts as served when its reply went out: the mock answered it (`reply`) and the
 * request was still open when the scripted delay had passed. One the client gave up first (its
 * process was killed, or its agent stopped for the lease) ended before that and got nothing; the
 * mock still marks it `reply`, since it decides before the delay and writes into a closed socket.
 *
 * Every reply is priced from the usage the script gave it, at the model its request named, with
 * the price table the ledger uses (config/prices.ts), so both sides use one rule.
 */
import { priceFor, responseCost } from '../../src/config/prices.js';
import { responseTokens } from '../../src/runtime/ledger.js';
import type { MockUsage, RecordedRequest } from '../../src/testing/index.js';

/** The main-thread and subagent requests that got their reply (see the module header). */
export function servedReplies(
  requests: readonly RecordedRequest[],
  replyDelayMs: (request: RecordedRequest) => number,
): RecordedRequest[] {
  return requests.filter(
    (request) =>
      request.outcome.kind === 'reply' &&
      (request.agent.kind === 'main' || request.agent.kind === 'subagent') &&
      request.endedAt !== undefined &&
      request.endedAt.getTime() - request.receivedAt.getTime() >= replyDelayMs(request),
  );
}

/** What one reply with `usage` costs at the model `request` named. Throws for a model the table lacks. */
export function replyCost(request: RecordedRequest, usage: MockUsage): number {
  const prices = priceFor(request.body?.model);
  if (prices === undefined) throw new Error(`the price table lacks ${request.body?.model}`);
  return responseCost(responseTokens(usage as Record<string, unknown>), prices);
}

/** What the replies cost in all, each with the same scripted usage. */
export function servedCost(requests: readonly RecordedRequest[], usage: MockUsage): number {
  return requests.reduce((sum, request) => sum + replyCost(request, usage), 0);
}
