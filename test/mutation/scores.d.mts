// Types of scores.mjs (a plain script, so that CI runs it with node alone).
export interface MutatedModule {
  path: string;
  target: number;
}
export interface ScoreRow {
  module: string;
  target: number;
  killed: number;
  survived: number;
  noCoverage: number;
  ignored: number;
  other: number;
  score: number | undefined;
}
export interface MutationReport {
  config?: { mutate?: string[] };
  schemaVersion?: string;
  testFiles?: Record<string, { source?: string; tests?: { id: string; name: string }[] }>;
  files?: Record<
    string,
    {
      source?: string;
      mutants?: {
        status: string;
        location?: { start?: { line?: number } };
        coveredBy?: string[];
        killedBy?: string[];
      }[];
    }
  >;
}
export function parseEntry(entry: string): {
  entry: string;
  pattern: string;
  lines: [number, number] | undefined;
};
export function matchesPattern(pattern: string, file: string): boolean;
export function filesOf(pattern: string, root: string): string[];
export function scoreRows(report: MutationReport, modules: MutatedModule[], root: string): ScoreRow[];
export function belowTarget(rows: ScoreRow[]): ScoreRow[];
export function changedEntries(
  recorded: MutationReport | undefined,
  modules: MutatedModule[],
  root: string,
  readSource: (file: string) => string,
): string[];
export function formatRows(rows: ScoreRow[]): string;
export const RECORD: string;
