/**
 * The package's public API is a list chosen on purpose (issue 24; src/index.ts says how): its
 * names and their kinds are held in public-api.snapshot.txt, so a name added, dropped or changed
 * in kind (a class turned into an interface) fails here until the snapshot is updated on purpose
 * (`npx vitest run test/unit/architecture/public-api.test.ts -u`) and the change is reviewed with it.
 * Both entry points are read through TypeScript's checker, types included, as a user's compiler
 * sees them.
 */
import { resolve } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const root = resolve(import.meta.dirname, '../../..');
const ENTRIES = { 'flower-agent': 'src/index.ts', 'flower-agent/testing': 'src/testing/index.ts' };

/** The kind a user sees of an exported symbol, after following re-exports. */
function kindOf(symbol: ts.Symbol): string {
  const flags = symbol.flags;
  if (flags & ts.SymbolFlags.Class) return 'class';
  if (flags & ts.SymbolFlags.Function) return 'function';
  if (flags & ts.SymbolFlags.Enum) return 'enum';
  if (flags & ts.SymbolFlags.Variable) return 'const';
  if (flags & ts.SymbolFlags.Interface) return 'interface';
  if (flags & ts.SymbolFlags.TypeAlias) return 'type';
  return `flags ${flags}`;
}

/** One line per exported name of each entry: `<entry> <kind> <name>`, sorted. */
function exportedNames(entries: Record<string, string>): string {
  const files = Object.values(entries).map((file) => resolve(root, file));
  const program = ts.createProgram(files, {
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    target: ts.ScriptTarget.ES2022,
    strict: true,
    skipLibCheck: true,
    noEmit: true,
  });
  const checker = program.getTypeChecker();
  const lines: string[] = [];
  for (const [entry, file] of Object.entries(entries)) {
    const source = program.getSourceFile(resolve(root, file));
    const module = source && checker.getSymbolAtLocation(source);
    if (!module) throw new Error(`${file} is not a module TypeScript can read`);
    for (const exported of checker.getExportsOfModule(module)) {
      const target = exported.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(exported) : exported;
      lines.push(`${entry} ${kindOf(target)} ${exported.name}`);
    }
  }
  return `${lines.sort().join('\n')}\n`;
}

describe('public API', () => {
  it('exports exactly the names and kinds the snapshot holds', async () => {
    const names = exportedNames(ENTRIES);
    expect(names).toContain('flower-agent class Runtime\n');
    expect(names).toContain('flower-agent interface RuntimeOptions\n');
    await expect(names).toMatchFileSnapshot('./public-api.snapshot.txt');
  }, 60_000);
});
