/**
 * `flower run <file-or-module>:<export>`: find the user's workflow.
 *
 * Invariants:
 * - Every way a target can be wrong ends in a one-line message that says what was wrong and what to
 *   type instead: a `TargetError` (a usage error, exit 2) when the target names something that is not
 *   there or not a workflow, a `TargetLoadError` (exit 1) when the user's code fails to load or to
 *   build the workflow. Nothing is imported before the target's shape is checked.
 * - A target that looks like a path (starts with `.` or `/`, or ends in a script extension) is a
 *   file relative to the current directory and must exist; anything else is a module name resolved
 *   from the current directory the way Node would (a package, or `package/subpath`).
 * - `.ts` files are compiled on the fly (see typescript-hooks.ts), so Node 20 can run them.
 * - An export that is a function is a factory: it is called with the resolved `{ workspace, runDir }`
 *   (so a workflow honours `-w`/`-r`; it may be async) and must return the workflow. A workflow is
 *   recognised by shape (a `run` method and a `steps` list), not by class identity: the user's file
 *   may import a different copy of flower-agent than the one running.
 * - A syntax error in a TypeScript target is reported with its `file:line:column`.
 */
import { existsSync, statSync } from 'node:fs';
import { createRequire, register } from 'node:module';
import { isAbsolute, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Workflow, WorkflowLocation } from '../../workflow/workflow.js';
import { UsageError } from '../command-line/exit-errors.js';
import type { TypeScriptHooksData } from './typescript-hooks.js';

/** A target the user got wrong (exit 2); the message is the whole explanation. */
export class TargetError extends UsageError {
  override name = 'TargetError';
}

/** The target exists, but its code failed to load or to build the workflow (exit 1). */
export class TargetLoadError extends Error {
  override name = 'TargetLoadError';
}

export interface ParsedTarget {
  /** The file path or module name, as typed. */
  readonly module: string;
  /** The export to use. */
  readonly exportName: string;
  /** True when `module` is a file path rather than a module name. */
  readonly isFile: boolean;
}

const SCRIPT_EXTENSION = /\.(?:[cm]?js|m?ts)$/;
const TYPESCRIPT_EXTENSION = /\.m?ts$/;
const EXAMPLE = 'for example ./flows.ts:main or my-package/flows:main';

/** Split `module:export`, checking its shape only. The last colon splits, so `C:\x.ts:main` works. */
export function parseTarget(target: string): ParsedTarget {
  const colon = target.lastIndexOf(':');
  if (colon < 0) {
    throw new TargetError(`"${target}" needs the form <file-or-module>:<export>, ${EXAMPLE}.`);
  }
  const module = target.slice(0, colon).trim();
  const exportName = target.slice(colon + 1).trim();
  if (module === '')
    throw new TargetError(`"${target}" names no file or module before the colon, ${EXAMPLE}.`);
  if (exportName === '') throw new TargetError(`"${target}" names no export after the colon, ${EXAMPLE}.`);
  if (!/^[A-Za-z_$][\w$]*$/.test(exportName)) {
    throw new TargetError(
      `"${exportName}" is not an export name; after the colon put the name your file exports.`,
    );
  }
  const isFile = module.startsWith('.') || isAbsolute(module) || SCRIPT_EXTENSION.test(module);
  return { module, exportName, isFile };
}

/** Whether `value` looks like a flower Workflow. */
export function isWorkflow(value: unknown): value is Workflow {
  if (typeof value !== 'object' || value === null) return false;
  const candidate = value as { run?: unknown; steps?: unknown };
  return typeof candidate.run === 'function' && Array.isArray(candidate.steps);
}

function describeValue(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'object')
    return `an object with keys ${Object.keys(value).slice(0, 5).join(', ') || '(none)'}`;
  return `a ${typeof value}`;
}

let typescriptHooksRegistered = false;

/** Make `.ts` importable in this process, using the user's TypeScript if they have one. */
function enableTypeScript(file: string): void {
  if (typescriptHooksRegistered) return;
  let typescriptPath: string | undefined;
  for (const base of [file, import.meta.url]) {
    try {
      typescriptPath = createRequire(base).resolve('typescript');
      break;
    } catch {
      // Not installed there; try the next place.
    }
  }
  if (typescriptPath === undefined) {
    throw new TargetLoadError(
      `${file} is TypeScript, and flower compiles it with the "typescript" package, which is not installed. ` +
        'Run `npm i -D typescript` in your project, or compile the file and point flower at the .js.',
    );
  }
  const data: TypeScriptHooksData = { typescriptPath };
  register('./typescript-hooks.js', { parentURL: import.meta.url, data });
  typescriptHooksRegistered = true;
}

/** Whether importing failed because the named module itself does not exist (the user mistyped it). */
function isModuleNotFound(error: unknown, module: string): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return code === 'ERR_MODULE_NOT_FOUND' && error instanceof Error && error.message.includes(`'${module}'`);
}

/** The URL to import for a parsed target, checking that a file target exists. */
function moduleUrl(target: ParsedTarget, cwd: string): string {
  if (target.isFile) {
    const file = resolve(cwd, target.module);
    if (!existsSync(file) || !statSync(file).isFile()) {
      throw new TargetError(
        `Cannot find ${file} (current directory ${cwd}). A file path must point at an existing file; ` +
          'to import a module by name, leave out the ./ and the extension.',
      );
    }
    if (TYPESCRIPT_EXTENSION.test(file)) enableTypeScript(file);
    return pathToFileURL(file).href;
  }
  try {
    return pathToFileURL(createRequire(resolve(cwd, 'package.json')).resolve(target.module)).href;
  } catch {
    // ESM-only packages cannot be resolved with require's conditions; let import() resolve it.
    return target.module;
  }
}

/**
 * Import the target and produce its workflow, calling a factory with `location`; throws a
 * TargetError or TargetLoadError saying what is wrong.
 */
export async function loadWorkflow(
  target: string,
  location: WorkflowLocation,
  cwd: string = process.cwd(),
): Promise<Workflow> {
  const parsed = parseTarget(target);
  const url = moduleUrl(parsed, cwd);
  let namespace: Record<string, unknown>;
  try {
    namespace = (await import(url)) as Record<string, unknown>;
  } catch (error) {
    const reason = error instanceof Error ? error.message.split('\n')[0] : String(error);
    if (!parsed.isFile && isModuleNotFound(error, parsed.module)) {
      throw new TargetError(`Importing "${parsed.module}" failed: ${reason}`);
    }
    throw new TargetLoadError(`Importing "${parsed.module}" failed: ${reason}`);
  }
  if (!(parsed.exportName in namespace)) {
    const available = Object.keys(namespace)
      .filter((name) => name !== '__esModule')
      .sort();
    throw new TargetError(
      `"${parsed.module}" has no export "${parsed.exportName}"` +
        (available.length > 0 ? ` (it exports: ${available.join(', ')}).` : ' (it exports nothing).'),
    );
  }
  let value = namespace[parsed.exportName];
  if (typeof value === 'function') {
    try {
      value = await (value as (location: WorkflowLocation) => unknown)({ ...location });
    } catch (error) {
      const reason = error instanceof Error ? error.message.split('\n')[0] : String(error);
      throw new TargetLoadError(
        `${parsed.module}:${parsed.exportName}() failed while building the workflow: ${reason}`,
      );
    }
  }
  if (!isWorkflow(value)) {
    throw new TargetError(
      `${parsed.module}:${parsed.exportName} is ${describeValue(value)}, not a Workflow. ` +
        'Export a Workflow, or a function that takes { workspace, runDir } and returns one.',
    );
  }
  return value;
}
