/**
 * The packed package type-checks in a consumer project (issue 21, Medium 7): a strict tsconfig
 * *without* `skipLibCheck`, and in node_modules only flower-agent's own dependencies (no
 * devDependency such as @types/pg or @types/better-sqlite3), plus what any Node TypeScript project
 * has itself (typescript, @types/node). Every .d.ts reachable from the two entry points is checked.
 */
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { repoRoot, tempDir } from './cli-harness.js';
import { installPacked, linkModule, packTarball } from './packed-package.js';

/** A consumer project with the tarball installed; its `dependencies` only, never the devDependencies. */
function consumerProject(tarball: string): string {
  const project = tempDir('consumer');
  installPacked(tarball, join(project, 'node_modules'));
  // The consumer's own tools, as any Node TypeScript project has them.
  linkModule(join(project, 'node_modules'), '@types/node');
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
