/**
 * The hooks a session gets because a workbench exists: the index guard always, the spill guard
 * unless spilling is switched off (threshold 0). Role walls (delegate / whitelist) are NOT here —
 * they belong to the role and are installed whether or not there is a workbench.
 */
import type { HookTable } from '../../runtime/agent-spec.js';
import type { Workbench } from '../workbench.js';
import { indexGuard } from './index-refresh.js';
import { type SpillPolicy, spillGuard } from './spill.js';

export function workbenchHooks(workbench: Workbench, spill: Partial<SpillPolicy> = {}): HookTable {
  const postToolUse = [indexGuard(workbench)];
  if (spill.threshold !== 0) postToolUse.push(spillGuard(workbench, spill));
  return { PostToolUse: postToolUse };
}
