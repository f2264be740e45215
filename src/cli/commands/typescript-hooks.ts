/**
 * Module hooks that let `flower run ./flow.ts:main` import TypeScript on Node 20, which cannot.
 * Registered with `module.register` (they run on Node's loader thread) only when a `.ts` target is
 * given; every other import goes through Node untouched.
 *
 * Invariants:
 * - Only files ending in `.ts` / `.mts` are transpiled, each on its own (`transpileModule`: types are
 *   erased, never checked; type-only imports are dropped), always as ES modules.
 * - A file with a syntax error is never handed to Node: the import fails with `file:line:column` and
 *   the parser's message.
 * - A path import (`./x.js`, `/abs/x.js`, `file:`) of a `.js` file that does not exist, made from a
 *   TypeScript file, resolves to the `.ts` beside it: that is how NodeNext TypeScript spells
 *   imports of TypeScript sources.
 * - The TypeScript compiler is the user's (resolved next to their file) or flower's own; which one is
 *   decided by the caller and handed over in `initialize`.
 */
import { readFile } from 'node:fs/promises';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type * as TypeScript from 'typescript';

export interface TypeScriptHooksData {
  /** Absolute path of the `typescript` package's main file. */
  readonly typescriptPath: string;
}

type ResolveResult = { url: string; format?: string | null; shortCircuit?: boolean };
type ResolveContext = { parentURL?: string; conditions: string[]; importAttributes?: Record<string, string> };
type LoadResult = { format: string; source?: string | ArrayBuffer | Uint8Array; shortCircuit?: boolean };
type LoadContext = {
  format?: string | null;
  conditions: string[];
  importAttributes?: Record<string, string>;
};

let compiler: typeof TypeScript | undefined;

const TYPESCRIPT_FILE = /\.m?ts$/;

export async function initialize(data: TypeScriptHooksData): Promise<void> {
  const loaded = (await import(pathToFileURL(data.typescriptPath).href)) as { default?: typeof TypeScript };
  compiler = loaded.default ?? (loaded as unknown as typeof TypeScript);
}

export async function resolve(
  specifier: string,
  context: ResolveContext,
  nextResolve: (specifier: string, context: ResolveContext) => Promise<ResolveResult>,
): Promise<ResolveResult> {
  try {
    return await nextResolve(specifier, context);
  } catch (error) {
    const fromTypeScript =
      context.parentURL !== undefined && TYPESCRIPT_FILE.test(new URL(context.parentURL).pathname);
    const pathLike = /^(?:\.{1,2}\/|\/|file:)/.test(specifier);
    if (fromTypeScript && pathLike && /\.m?js$/.test(specifier)) {
      return nextResolve(specifier.replace(/js$/, 'ts'), context);
    }
    throw error;
  }
}

export async function load(
  url: string,
  context: LoadContext,
  nextLoad: (url: string, context: LoadContext) => Promise<LoadResult>,
): Promise<LoadResult> {
  if (!url.startsWith('file:') || !TYPESCRIPT_FILE.test(new URL(url).pathname) || !compiler) {
    return nextLoad(url, context);
  }
  const fileName = fileURLToPath(url);
  const source = await readFile(fileName, 'utf8');
  const output = compiler.transpileModule(source, {
    fileName,
    reportDiagnostics: true,
    compilerOptions: {
      module: compiler.ModuleKind.ESNext,
      target: compiler.ScriptTarget.ES2022,
      inlineSourceMap: true,
      inlineSources: true,
    },
  });
  const problem = firstSyntaxError(compiler, output.diagnostics ?? []);
  if (problem !== undefined) throw new SyntaxError(problem);
  return { format: 'module', source: output.outputText, shortCircuit: true };
}

/**
 * `file:line:column message` for the first syntax error, or undefined. `transpileModule` writes
 * *something* for any input, and Node then fails on the mangled JavaScript with no location at all,
 * so the TypeScript parser's own diagnostic is the only place the line is known.
 */
export function firstSyntaxError(
  ts: typeof TypeScript,
  diagnostics: readonly TypeScript.Diagnostic[],
): string | undefined {
  const error = diagnostics.find((diagnostic) => diagnostic.category === ts.DiagnosticCategory.Error);
  if (error === undefined) return undefined;
  const message = ts.flattenDiagnosticMessageText(error.messageText, ' ');
  if (error.file === undefined || error.start === undefined) return message;
  const { line, character } = error.file.getLineAndCharacterOfPosition(error.start);
  return `${error.file.fileName}:${line + 1}:${character + 1} ${message}`;
}
