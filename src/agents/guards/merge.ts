/**
 * Combining hook tables: matchers are concatenated per event, in argument order, without removing
 * duplicates (two identical guards both run; order is the caller's decision).
 */
import type { HookTable } from '../../runtime/agent-spec.js';

export function mergeHooks(...tables: (HookTable | undefined)[]): HookTable {
  const merged: HookTable = {};
  for (const table of tables) {
    if (!table) continue;
    for (const [event, matchers] of Object.entries(table) as [
      keyof HookTable,
      HookTable[keyof HookTable],
    ][]) {
      if (!matchers || matchers.length === 0) continue;
      merged[event] = [...(merged[event] ?? []), ...matchers];
    }
  }
  return merged;
}
