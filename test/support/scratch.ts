/**
 * Per-test scratch resources for e2e tests: temporary directories and mock model servers that are
 * released by one `cleanUp()` call in `afterEach`, newest first.
 *
 * Removal retries: a killed or just-finished Claude Code process can still be writing into its
 * config or workspace directory for a moment, and a plain recursive rm then fails with ENOTEMPTY
 * (seen in CI).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type MockModel, startMockModel } from '../../src/testing/index.js';

const cleanups: Array<() => Promise<void> | void> = [];

/** Call from `afterEach`: closes servers and removes temporary directories. */
export async function cleanUp(): Promise<void> {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
}

/** Registers any other release step (closing a store, say) to run with the rest. */
export function onCleanUp(release: () => Promise<void> | void): void {
  cleanups.push(release);
}

export function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 }));
  return dir;
}

export async function startMock(...args: Parameters<typeof startMockModel>): Promise<MockModel> {
  const server = await startMockModel(...args);
  cleanups.push(() => server.close());
  return server;
}
