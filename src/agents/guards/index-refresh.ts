/**
 * Index guard: after a Write or Edit lands inside the workbench, INDEX.md is rewritten so the next
 * session's index (and any human looking) sees the new file. It never changes the call's outcome.
 */
import { resolve } from 'node:path';
import type { HookCallbackMatcher } from '@anthropic-ai/claude-agent-sdk';
import { toolMatcher, WRITE_ONLY } from '../tools.js';
import type { Workbench } from '../workbench.js';
import { PASS, toolUse } from './hook-io.js';

export function indexGuard(workbench: Workbench): HookCallbackMatcher {
  return {
    matcher: toolMatcher(WRITE_ONLY),
    hooks: [
      async (input) => {
        const call = toolUse(input);
        const path = call?.toolInput.file_path ?? call?.toolInput.notebook_path;
        if (typeof path === 'string' && workbench.contains(resolve(input.cwd || workbench.workspace, path))) {
          workbench.refresh();
        }
        return PASS;
      },
    ],
  };
}
