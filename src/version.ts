/**
 * The package's own version, read once from the package's package.json.
 * Kept in one place so `--version`, the update notice and the manifest agree.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The package root: the nearest directory above this module with a package.json. This code runs
 * from `src/`, from tsc's `dist/`, and from a bundled chunk in `dist/chunks/` (rolldown.config.mjs),
 * each at another depth.
 */
export const packageRoot: string = nearestPackageRoot(dirname(fileURLToPath(import.meta.url)));

function nearestPackageRoot(from: string): string {
  for (let directory = from; ; directory = dirname(directory)) {
    if (existsSync(join(directory, 'package.json'))) return directory;
    if (dirname(directory) === directory) return dirname(from);
  }
}

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
