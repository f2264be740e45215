/**
 * Marking a worker definition for isolation (its own git worktree per dispatch).
 *
 * The mark is kept beside the definition, not in it: an `AgentDefinition` is serialised to the
 * Claude Code process, which must not see unknown fields. Consequence, by design: a copy of the
 * definition (`{ ...worker }`) is a new object and does not carry the mark.
 */
import type { AgentDefinition } from '@anthropic-ai/claude-agent-sdk';

const marked = new WeakSet<AgentDefinition>();

/** Marks (or unmarks) `agent` for isolation and returns the same object. */
export function markIsolated<T extends AgentDefinition>(agent: T, isolate = true): T {
  if (isolate) marked.add(agent);
  else marked.delete(agent);
  return agent;
}

/** True when `agent` was marked with `markIsolated`. */
export function wantsIsolation(agent: AgentDefinition | undefined): boolean {
  return agent !== undefined && marked.has(agent);
}
