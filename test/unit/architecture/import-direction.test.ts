/**
 * Dependencies point one way (DESIGN.md §4, issue 24): a module imports from its own room or
 * from a room below it, never from one above. The order, top first:
 *
 *   entry points (index.ts, cli/) → report/ → workflow/ → agents/, bequest/ → checks/ → runtime/
 *   → store/ → output/ → config/ → version.ts; testing/ (the mock model) stands alone
 *
 * The real tree is read with TypeScript's own pre-processor (every static `import`, `export …
 * from` and dynamic `import()`), so a type-only import counts as well: it couples the rooms just
 * the same.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

/** Rooms from the top down; rooms on one line may not import each other either. */
const ROOMS_TOP_DOWN: readonly (readonly string[])[] = [
  ['index.ts', 'cli'],
  ['report'],
  ['workflow'],
  ['agents', 'bequest'],
  ['checks'],
  ['runtime'],
  ['store'],
  ['output'],
  ['config'],
  ['version.ts'],
];
/** Rooms outside the order: they import nothing of flower's, and anything may import them. */
const STANDALONE = new Set(['testing']);

/** The room of a path relative to src/: its first segment. */
const roomOf = (path: string): string => path.split('/')[0] ?? path;

function rankOf(room: string): number | undefined {
  const rank = ROOMS_TOP_DOWN.findIndex((rooms) => rooms.includes(room));
  return rank === -1 ? undefined : rank;
}

interface Violation {
  from: string;
  to: string;
  reason: string;
}

/**
 * Every import of `files` (paths relative to src/ → their text) that points up the order, across
 * rooms of one rank, out of a standalone room, or into a room the order does not know.
 */
function importViolations(files: ReadonlyMap<string, string>): Violation[] {
  const violations: Violation[] = [];
  for (const [from, text] of files) {
    for (const imported of ts.preProcessFile(text, true, true).importedFiles) {
      if (!imported.fileName.startsWith('.')) continue;
      const to = relative('/src', resolve('/src', dirname(from), imported.fileName)).replace(/\.js$/, '.ts');
      const source = roomOf(from);
      const target = roomOf(to);
      if (source === target || STANDALONE.has(target)) continue;
      const reason = reasonAgainst(source, target);
      if (reason) violations.push({ from, to, reason });
    }
  }
  return violations;
}

function reasonAgainst(source: string, target: string): string | undefined {
  if (STANDALONE.has(source)) return `${source}/ stands alone and imports nothing of flower's`;
  const sourceRank = rankOf(source);
  const targetRank = rankOf(target);
  if (sourceRank === undefined || targetRank === undefined)
    return `${sourceRank === undefined ? source : target} has no place in the order; add it to ROOMS_TOP_DOWN`;
  if (targetRank < sourceRank) return `${target} is above ${source}`;
  if (targetRank === sourceRank) return `${source} and ${target} stand side by side`;
  return undefined;
}

function sourceTree(root: string): Map<string, string> {
  const files = new Map<string, string>();
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.ts')) files.set(relative(root, path), readFileSync(path, 'utf8'));
    }
  };
  walk(root);
  return files;
}

describe('import direction', () => {
  it('no module of src/ imports from a room above its own', () => {
    const files = sourceTree(resolve(import.meta.dirname, '../../../src'));
    expect(files.has('runtime/runtime.ts')).toBe(true);
    expect(importViolations(files)).toEqual([]);
  });

  it('an import up the order, sideways, out of testing/ or into an unknown room is named', () => {
    const files = new Map([
      ['store/a.ts', "import { run } from '../runtime/runtime.js';\nimport type { X } from './b.js';"],
      [
        'runtime/deep/b.ts',
        "export { c } from '../../store/c.js';\nconst d = await import('../../cli/d.js');",
      ],
      ['agents/e.ts', "import { f } from '../bequest/f.js';"],
      ['testing/g.ts', "import { h } from '../config/h.js';"],
      ['lab/i.ts', "import { j } from '../config/j.js';"],
      ['cli/k.ts', "import { l } from '../testing/l.js';\nimport { m } from 'node:fs';"],
    ]);
    expect(importViolations(files)).toEqual([
      { from: 'store/a.ts', to: 'runtime/runtime.ts', reason: 'runtime is above store' },
      { from: 'runtime/deep/b.ts', to: 'cli/d.ts', reason: 'cli is above runtime' },
      { from: 'agents/e.ts', to: 'bequest/f.ts', reason: 'agents and bequest stand side by side' },
      {
        from: 'testing/g.ts',
        to: 'config/h.ts',
        reason: "testing/ stands alone and imports nothing of flower's",
      },
      {
        from: 'lab/i.ts',
        to: 'config/j.ts',
        reason: 'lab has no place in the order; add it to ROOMS_TOP_DOWN',
      },
    ]);
  });
});
