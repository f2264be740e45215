// Resolve hook registered by module-trace.mjs: appends each resolved module URL to the trace file.
// Hooks see every ESM `import` (static or dynamic) and each module's first CommonJS entry point
// imported from ESM; that is where the heavy dependencies (the SDK, better-sqlite3) come in.
import { appendFileSync } from 'node:fs';

let traceFile = '';

export function initialize(data) {
  traceFile = data.file;
}

export async function resolve(specifier, context, nextResolve) {
  const resolved = await nextResolve(specifier, context);
  appendFileSync(traceFile, `${resolved.url}\n`);
  return resolved;
}
