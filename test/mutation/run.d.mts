// Types of run.mjs (a plain script, so that CI runs it with node alone).
import type { MutationReport } from './scores.mjs';
export function mergeResults(recorded: MutationReport | undefined, run: MutationReport): MutationReport;
export function withStableTestIds(report: MutationReport): MutationReport;
