/**
 * Small number formats shared by everything that prints a run's progress: turns, elapsed time and
 * context size read the same in `go`, `run`, `demo` and `once`.
 */

/** "1 turn", "3 turns". */
export function formatTurns(count: number): string {
  return count === 1 ? '1 turn' : `${count} turns`;
}

/** `m:ss`, or `h:mm:ss` from an hour on. */
export function formatElapsed(milliseconds: number): string {
  const total = Math.max(0, Math.floor(milliseconds / 1000));
  const hours = Math.floor(total / 3600);
  const minutes = Math.floor((total % 3600) / 60);
  const seconds = String(total % 60).padStart(2, '0');
  return hours > 0 ? `${hours}:${String(minutes).padStart(2, '0')}:${seconds}` : `${minutes}:${seconds}`;
}

/** Tokens as `36.8K`. */
export function formatTokens(tokens: number): string {
  return `${(tokens / 1000).toFixed(1)}K`;
}
