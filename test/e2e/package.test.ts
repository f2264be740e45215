/**
 * What the npm package ships (issue 9, §5): its LICENSE, source maps that carry their sources, the
 * examples, and a README that says how to put `flower` on PATH; and the shipped library example
 * runs offline against `flower-agent/testing`, showing the gate's rejection on screen.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { isolatedEnv, repoRoot, runNodeScript, tempDir } from './cli-harness.js';

interface PackedFile {
  path: string;
}

/** The file list `npm pack` would put in the tarball (scripts off: it must not rebuild dist/). */
function packedFiles(): string[] {
  const output = execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], {
    cwd: repoRoot,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  const [pack] = JSON.parse(output) as Array<{ files: PackedFile[] }>;
  return pack!.files.map((file) => file.path);
}

/** What the binary sends and how the mock model answers: the guide to `flower-agent/testing`. */
const TESTING_README = 'src/testing/README.md';

describe('the npm package', () => {
  const files = packedFiles();

  it('ships the LICENSE its package.json names, the README, the examples and the binary', () => {
    const pkg = JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as { license: string };
    expect(pkg.license).toBe('MIT');
    expect(readFileSync(join(repoRoot, 'LICENSE'), 'utf8')).toMatch(/^MIT License\n/);
    for (const path of [
      'LICENSE',
      'README.md',
      'examples/my-flow.ts',
      'examples/offline.mjs',
      'dist/cli/bin.js',
    ])
      expect(files).toContain(path);
    expect(readFileSync(join(repoRoot, 'dist', 'cli', 'bin.js'), 'utf8')).toMatch(
      /^#!\/usr\/bin\/env node\n/,
    );
  });

  it('ships no source map without its sources (of src/ only the mock model README is in the package)', () => {
    const maps = files.filter((path) => path.endsWith('.map'));
    expect(maps.length).toBeGreaterThan(0);
    expect(files.filter((path) => path.startsWith('src/'))).toEqual([TESTING_README]);
    for (const path of maps) {
      const map = JSON.parse(readFileSync(join(repoRoot, path), 'utf8')) as {
        sources: string[];
        sourcesContent?: Array<string | null>;
      };
      expect(map.sourcesContent?.length, path).toBe(map.sources.length);
      expect(
        map.sourcesContent?.every((text) => typeof text === 'string' && text.length > 0),
        path,
      ).toBe(true);
    }
  });

  it('ships the README that the declarations of flower-agent/testing point at (issue 21)', () => {
    expect(files).toContain(TESTING_README);
    const declarations = files.filter((path) => /^dist\/testing\/.*\.d\.ts$/.test(path));
    const pointers = declarations.flatMap((path) =>
      [...readFileSync(join(repoRoot, path), 'utf8').matchAll(/[\w./-]*README\.md/g)].map(
        (match) => match[0],
      ),
    );
    expect(pointers.length).toBeGreaterThan(0);
    // Every mention names the shipped file: "README.md next to this file" was not in the package.
    expect(new Set(pointers)).toEqual(
      new Set([TESTING_README, `node_modules/flower-agent/${TESTING_README}`]),
    );
  });

  it('bundles the CLI, the library and its testing kit as one module graph: no module is in two files', () => {
    // rolldown.config.mjs: a workflow file that `flower run` loads imports 'flower-agent' and must
    // get the CLI's own modules (one sink, one set of signal handlers), not a copy of them.
    const held = JSON.parse(readFileSync(join(repoRoot, 'dist', 'chunks', 'modules.json'), 'utf8')) as Record<
      string,
      string[]
    >;
    for (const entry of ['cli/bin.js', 'index.js', 'testing/index.js']) {
      expect(held[entry], entry).toBeDefined();
      expect(files).toContain(`dist/${entry}`);
    }
    const owners = new Map<string, string[]>();
    for (const [file, modules] of Object.entries(held))
      for (const module of modules) owners.set(module, [...(owners.get(module) ?? []), file]);
    expect(owners.get('output/sink.js')).toHaveLength(1);
    expect([...owners].filter(([, where]) => where.length > 1)).toEqual([]);
    for (const file of Object.keys(held)) expect(files).toContain(`dist/${file}`);
  });

  it('has a README that says how to put flower on PATH and keeps its two set-up commands', () => {
    const readme = readFileSync(join(repoRoot, 'README.md'), 'utf8');
    expect(readme).toContain('npm ci && npm run build && node dist/cli/bin.js demo');
    expect(readme).toContain('npm ci && npm test');
    expect(readme).toContain('npm install -g flower-agent');
    expect(readme).toContain('npm link');
    expect(readme).toContain('node examples/offline.mjs');
  });
});

describe('examples/offline.mjs', () => {
  it('runs the example workflow against the scripted model: the gate rejects, the session fixes it', async () => {
    const cwd = tempDir('offline-cwd');
    const workspace = join(tempDir('offline'), 'ws');
    const { status, stdout, stderr } = await runNodeScript(
      join(repoRoot, 'examples', 'offline.mjs'),
      [workspace],
      {
        cwd,
        env: isolatedEnv(),
      },
    );
    expect(stderr).toBe('');
    expect(status).toBe(0);
    // The gate's rejection text is on screen, then the same session's fix passes.
    expect(stdout).toContain('! gate rejected write (attempt 1/3): Not done yet: for a 9-word input');
    expect(stdout).toMatch(/== usage =+ 2\/2/);
    expect(stdout).toMatch(/^ {2}coordinator: Run: python3 wordcount\.py/m);
    expect(
      execFileSync('python3', [join(workspace, 'wordcount.py')], { input: 'a b c\nd\n' })
        .toString()
        .trim(),
    ).toBe('4');
    // -w decided where everything went; the directory it was started from stays empty.
    expect(existsSync(join(workspace, '.flower'))).toBe(true);
    expect(existsSync(join(workspace, 'runs', 'manifest.json'))).toBe(true);
    expect(readdirSync(cwd)).toEqual([]);
  }, 120_000);
});
