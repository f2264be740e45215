/**
 * A structural validator for transcripts fed back on resume, checking the rules the Messages API
 * and the harness enforce:
 * - the `parentUuid` chain from the leaf (the newest entry with a uuid) reaches a root without a
 *   missing link;
 * - along that chain, every tool_use is answered by exactly one tool_result in the next user
 *   message, and every tool_result answers a tool_use of the assistant message just before it
 *   (consecutive entries of one role form one API message, as the harness sends them);
 * - with `original`: protected entries (compact summaries, meta) are all still there and unchanged
 *   apart from a re-pointed `parentUuid`, and no tool_result block disappeared without its tool_use;
 * - with `singleChain`: every user/assistant entry lies on the leaf's chain (nothing orphaned).
 * Returns a list of problems; empty means valid.
 */
import { isDeepStrictEqual } from 'node:util';
import type { Entry } from './transcript-builder.js';

type Block = { type?: string; id?: string; tool_use_id?: string };

const blocksOf = (entry: Entry): Block[] => {
  const content = (entry.message as { content?: unknown } | undefined)?.content;
  return Array.isArray(content) ? (content as Block[]) : [];
};

const isConversation = (entry: Entry): boolean => entry.type === 'user' || entry.type === 'assistant';

const isProtected = (entry: Entry): boolean => entry.isCompactSummary === true || entry.isMeta === true;

export interface ValidateOptions {
  original?: readonly Entry[];
  singleChain?: boolean;
}

export function validateTranscript(entries: readonly Entry[], options: ValidateOptions = {}): string[] {
  const problems: string[] = [];
  const byUuid = new Map<string, Entry>();
  for (const entry of entries) {
    if (typeof entry.uuid !== 'string') continue;
    if (byUuid.has(entry.uuid)) problems.push(`duplicate uuid ${entry.uuid}`);
    byUuid.set(entry.uuid, entry);
  }

  // The harness resumes from the newest entry with a uuid, whatever its type (attachments link the chain too).
  const leaf = [...entries].reverse().find((entry) => typeof entry.uuid === 'string');
  const chain: Entry[] = [];
  const seen = new Set<string>();
  let cursor: Entry | undefined = leaf;
  while (cursor !== undefined) {
    const uuid = cursor.uuid as string;
    if (seen.has(uuid)) {
      problems.push(`parentUuid cycle at ${uuid}`);
      break;
    }
    seen.add(uuid);
    chain.push(cursor);
    const parent = cursor.parentUuid;
    if (parent === null || parent === undefined) break;
    cursor = byUuid.get(parent as string);
    if (cursor === undefined)
      problems.push(`chain broken: ${uuid} points to missing parent ${String(parent)}`);
  }
  chain.reverse();

  // Group the chain into API messages: consecutive entries of one role are one message.
  const messages: Array<{ role: string; blocks: Block[] }> = [];
  for (const entry of chain.filter(isConversation)) {
    const last = messages[messages.length - 1];
    if (last !== undefined && last.role === entry.type) last.blocks.push(...blocksOf(entry));
    else messages.push({ role: entry.type, blocks: [...blocksOf(entry)] });
  }
  messages.forEach((message, index) => {
    if (message.role === 'assistant') {
      const uses = message.blocks.filter((block) => block.type === 'tool_use').map((block) => block.id);
      const next = messages[index + 1];
      for (const id of uses) {
        const answers =
          next?.role === 'user'
            ? next.blocks.filter((block) => block.type === 'tool_result' && block.tool_use_id === id)
            : [];
        if (answers.length !== 1)
          problems.push(`tool_use ${id} answered ${answers.length} times in the next user message`);
      }
    } else {
      const previous = messages[index - 1];
      const uses = new Set(
        previous?.role === 'assistant'
          ? previous.blocks.filter((block) => block.type === 'tool_use').map((block) => block.id)
          : [],
      );
      for (const block of message.blocks) {
        if (block.type === 'tool_result' && !uses.has(block.tool_use_id)) {
          problems.push(`tool_result for ${block.tool_use_id} does not follow its tool_use`);
        }
      }
    }
  });

  if (options.singleChain) {
    const onChain = new Set(chain.map((entry) => entry.uuid));
    for (const entry of entries) {
      if (isConversation(entry) && typeof entry.uuid === 'string' && !onChain.has(entry.uuid)) {
        problems.push(`entry ${entry.uuid} is not reachable from the leaf`);
      }
    }
  }

  if (options.original !== undefined) {
    for (const before of options.original) {
      if (!isProtected(before)) continue;
      const after = byUuid.get(before.uuid as string);
      if (after === undefined) {
        problems.push(`protected entry ${before.uuid} was removed`);
        continue;
      }
      const { parentUuid: _before, ...restBefore } = before;
      const { parentUuid: _after, ...restAfter } = after;
      if (!isDeepStrictEqual(restBefore, restAfter))
        problems.push(`protected entry ${before.uuid} was changed`);
    }
    const usesAfter = new Set(
      entries.flatMap((entry) =>
        blocksOf(entry)
          .filter((block) => block.type === 'tool_use')
          .map((block) => block.id),
      ),
    );
    const resultsAfter = new Set(
      entries.flatMap((entry) =>
        blocksOf(entry)
          .filter((block) => block.type === 'tool_result')
          .map((block) => block.tool_use_id),
      ),
    );
    for (const before of options.original) {
      for (const block of blocksOf(before)) {
        if (
          block.type === 'tool_result' &&
          usesAfter.has(block.tool_use_id) &&
          !resultsAfter.has(block.tool_use_id)
        ) {
          problems.push(`tool_result for ${block.tool_use_id} disappeared while its tool_use stayed`);
        }
      }
    }
  }
  return problems;
}
