/**
 * The package as a user gets it: `npm pack` of this checkout, unpacked into a `node_modules` the
 * way npm installs it, with only its `dependencies` beside it (never a devDependency). Offline: each
 * dependency is a link to this checkout's installed copy.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, symlinkSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { repoRoot, tempDir } from './cli-harness.js';

/** `npm pack` the checkout as it is built (scripts off: it must not rebuild dist/); the tarball's path. */
export function packTarball(): string {
  const into = tempDir('pack');
  const output = execFileSync('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', into], {
    cwd: repoRoot,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  const [pack] = JSON.parse(output) as Array<{ filename: string }>;
  return join(into, pack!.filename);
}

/** Put `name` into the `nodeModules` directory as a link to this checkout's installed copy. */
export function linkModule(nodeModules: string, name: string): void {
  const target = join(nodeModules, name);
  mkdirSync(dirname(target), { recursive: true });
  symlinkSync(join(repoRoot, 'node_modules', name), target, 'dir');
}

/** Unpacks `tarball` as `<nodeModules>/flower-agent` with its dependencies; the package's directory. */
export function installPacked(tarball: string, nodeModules: string): string {
  const installed = join(nodeModules, 'flower-agent');
  mkdirSync(installed, { recursive: true });
  execFileSync('tar', ['-xzf', tarball, '-C', installed, '--strip-components=1']);
  const pkg = JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8')) as {
    dependencies: Record<string, string>;
  };
  for (const name of Object.keys(pkg.dependencies)) linkModule(join(installed, 'node_modules'), name);
  return installed;
}
