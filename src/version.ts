/**
 * The package's own version, read once from package.json next to the build output.
 * Kept in one place so `--version`, the update notice and the manifest agree.
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The package root: `dist/..` when built, `src/..` when run from source. */
export const packageRoot: string = join(dirname(fileURLToPath(import.meta.url)), '..');

function readVersion(): string {
  try {
    const manifest = JSON.parse(readFileSync(join(packageRoot, 'package.json'), 'utf8')) as {
      version?: string;
    };
    return manifest.version ?? '0.0.0';
  } catch {
    return '0.0.0';
  }
}

export const packageVersion: string = readVersion();
