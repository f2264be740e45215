/**
 * What each worker has consumed so far, tallied from the event stream, for the line the terminal
 * shows when its task ends: `coder: 14 turns · 120.3K tokens · $0.31`.
 *
 * Invariants:
 * - The same accounting as the manifest's ledger (`runtime/ledger.ts`): a response counts once,
 *   however many content-block messages the SDK streams for it, and a model the price table does
 *   not know gives no dollar figure rather than a guess.
 * - Pure bookkeeping, no I/O: the renderer feeds it events and asks for a line.
 */
import type { FlowerEvent } from '../../runtime/events.js';
import { type Response, responsesOf, type ThreadLedger, threadLedger } from '../../runtime/ledger.js';
import type { Entry } from '../../store/transcript.js';
import { formatTokens, formatTurns } from './format.js';

interface Worker {
  name: string | undefined;
  responses: Map<string, Response>;
  toolCalls: Set<string>;
}

export class WorkerTally {
  private readonly workers = new Map<string, Worker>();

  private worker(toolUseId: string): Worker {
    let worker = this.workers.get(toolUseId);
    if (worker === undefined) {
      worker = { name: undefined, responses: new Map(), toolCalls: new Set() };
      this.workers.set(toolUseId, worker);
    }
    return worker;
  }

  /** Takes note of a dispatch (the worker's name) and of every subagent message. */
  observe(event: FlowerEvent): void {
    if (event.kind === 'dispatch' && !event.payload.subagent) {
      this.worker(event.payload.id).name = event.payload.subagentType;
      return;
    }
    if (event.kind !== 'text' && event.kind !== 'thinking' && event.kind !== 'tool_call') return;
    const parent = event.payload.parentToolUseId;
    if (!event.payload.subagent || parent === undefined) return;
    const worker = this.worker(parent);
    if (event.kind === 'tool_call') worker.toolCalls.add(event.payload.id);
    const raw = event.raw as { message?: unknown } | undefined;
    for (const response of responsesOf([{ type: 'assistant', message: raw?.message } as Entry])) {
      // An SDK message without an id still belongs to one response per message object.
      worker.responses.set(response.id.startsWith('#') ? `#${worker.responses.size}` : response.id, response);
    }
  }

  /** The worker started by `toolUseId`, as the ledger would count it so far. */
  ledgerOf(toolUseId: string): (ThreadLedger & { name: string | undefined }) | undefined {
    const worker = this.workers.get(toolUseId);
    if (worker === undefined || worker.responses.size === 0) return undefined;
    return { name: worker.name, ...threadLedger([...worker.responses.values()], worker.toolCalls.size) };
  }

  /**
   * `coder: 14 turns · 120.3K tokens · $0.31`, or undefined when nothing was seen of it. `costNote`
   * follows the dollar figure (the demo marks it as simulated).
   */
  line(toolUseId: string, costNote = ''): string | undefined {
    const ledger = this.ledgerOf(toolUseId);
    if (ledger === undefined) return undefined;
    const tokens =
      ledger.input_tokens +
      ledger.output_tokens +
      ledger.cache_read_input_tokens +
      ledger.cache_creation_input_tokens;
    const cost =
      ledger.cost_usd === null
        ? `no price for ${ledger.model ?? 'its model'}`
        : `$${ledger.cost_usd.toFixed(2)}${costNote}`;
    return `${ledger.name ?? 'worker'}: ${formatTurns(ledger.turns)} · ${formatTokens(tokens)} tokens · ${cost}`;
  }
}
