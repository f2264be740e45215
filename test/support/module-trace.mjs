// Preloaded with `node --import <this file>`: records the URL of every module the process resolves
// (one per line) in the file named by FLOWER_MODULE_TRACE, so a test can see what a command loaded.
// ES imports are recorded in the resolve hook of module-trace-hooks.mjs (module.register, Node
// 20.6+); modules loaded with `require` (flower loads string-width that way, on first use) do not
// pass through those hooks on Node 20, so CommonJS's own loader is wrapped here for them.
import { appendFileSync } from 'node:fs';
import Module, { register } from 'node:module';
import { pathToFileURL } from 'node:url';

const file = process.env.FLOWER_MODULE_TRACE;
if (!file) throw new Error('module-trace.mjs needs FLOWER_MODULE_TRACE: the file to record module URLs in');
register('./module-trace-hooks.mjs', import.meta.url, { data: { file } });

const load = Module._load;
Module._load = function traced(request, parent, isMain, ...rest) {
  try {
    const resolved = Module._resolveFilename(request, parent, isMain);
    // Written as the ES hooks write them: a file URL, or `node:<name>` for a built-in.
    const url = resolved.startsWith('/')
      ? pathToFileURL(resolved).href
      : `node:${resolved.replace(/^node:/, '')}`;
    appendFileSync(file, `${url}\n`);
  } catch {
    // not resolvable: the load below throws the error the program expects
  }
  return load.call(this, request, parent, isMain, ...rest);
};
