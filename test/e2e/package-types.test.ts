/**
 * The packed package type-checks in a consumer project (issue 21, Medium 7): a strict tsconfig
 * *without* `skipLibCheck`, and in node_modules only flower-agent's own dependencies (no
 * devDependency such as @types/pg or @types/better-sqlite3), plus what any Node TypeScript project
 * has itself (typescript, @types/node). Every .d.ts reachable from the two entry points is checked.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { repoRoot, tempDir } from './cli-harness.js';

/** `npm pack` the checkout as it is built (scripts off: it must not rebuild dist/); the tarball's path. */
function packTarball(): string {
  const into = tempDir('pack');
  const output = execFileSync('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', into], {
    cwd: repoRoot,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  const [pack] = JSON.parse(output) as Array<{ filename: string }>;
  return join(into, pack!.filename);
}

/** Put `name` into `project`'s node_modules as a link to this checkout's installed copy (offline). */
function linkModule(project: string, name: string): void {
  const target = join(project, 'node_modules', name);
  mkdirSync(dirname(target), { recursive: true });
  symlinkSync(join(repoRoot, 'node_modules', name), target, 'dir');
}

/** A consumer project with the tarball installed; its `dependencies` only, never the devDependencies. */
function consumerProject(tarball: string): string {
  const project = tempDir('consumer');
  const installed = join(project, 'node_modules', 'flower-agent');
  mkdirSync(installed, { recursive: true });
  execFileSync('tar', ['-xzf', tarball, '-C', installed, '--strip-components=1']);
  const pkg = JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8')) as {
    dependencies: Record<string, string>;
  };
  for (const name of Object.keys(pkg.dependencies)) linkModule(project, name);
  // The consumer's own tools, as any Node TypeScript project has them.
  linkModule(project, '@types/node');
  writeFileSync(
    join(project, 'package.json'),
    JSON.stringify({ name: 'consumer', private: true, type: 'module' }, null, 2),
  );
  writeFileSync(
    join(project, 'tsconfig.json'),
    JSON.stringify(
      {
        compilerOptions: {
          target: 'ES2022',
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          strict: true,
          noEmit: true,
          types: ['node'],
        },
        include: ['main.ts'],
      },
      null,
      2,
    ),
  );
  writeFileSync(
    join(project, 'main.ts'),
    [
      "import { describeEvent, openSessionStore, type PostgresSessionStore, Runtime, Workflow } from 'flower-agent';",
      "import { mockModelEnv, startMockModel } from 'flower-agent/testing';",
      '',
      'export const used = [describeEvent, openSessionStore, Runtime, Workflow, mockModelEnv, startMockModel];',
      'export type Store = PostgresSessionStore;',
      '',
    ].join('\n'),
  );
  return project;
}

describe('the packed package in a strict consumer project', () => {
  it('type-checks without skipLibCheck and without flower-agent devDependencies', () => {
    const project = consumerProject(packTarball());
    const tsc = spawnSync(
      process.execPath,
      [join(repoRoot, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', project],
      {
        cwd: project,
        encoding: 'utf8',
      },
    );
    expect(tsc.stdout + tsc.stderr).toBe('');
    expect(tsc.status).toBe(0);
  }, 120_000);
});
