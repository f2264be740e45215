/**
 * Runs `manifest-writer.mjs` (a plain Node child importing the built `dist/` modules, since Node 20
 * cannot run TypeScript directly) for the manifest and lineage e2e tests.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';

const repoRoot = join(import.meta.dirname, '..', '..');
const script = join(import.meta.dirname, 'manifest-writer.mjs');

export interface WriterOutcome {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Starts the writer; fails loudly when `dist/` has not been built. */
export function startWriter(args: readonly string[]): ChildProcess {
  if (!existsSync(join(repoRoot, 'dist', 'runtime', 'manifest.js'))) {
    throw new Error('dist/runtime is missing: run `npm run build` before the e2e tests (`npm test` does).');
  }
  return spawn(process.execPath, [script, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
}

/** Resolves when the child has ended, with everything it printed. */
export function finished(child: ChildProcess): Promise<WriterOutcome> {
  return new Promise((done, fail) => {
    let stdout = '';
    let stderr = '';
    child.stdout?.on('data', (chunk) => {
      stdout += chunk;
    });
    child.stderr?.on('data', (chunk) => {
      stderr += chunk;
    });
    child.on('error', fail);
    child.on('close', (code, signal) => done({ code, signal, stdout, stderr }));
  });
}

/** Runs the writer to completion. */
export function runWriter(args: readonly string[]): Promise<WriterOutcome> {
  return finished(startWriter(args));
}
