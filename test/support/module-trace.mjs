// Preloaded with `node --import <this file>`: records the URL of every module the process resolves
// (one per line) in the file named by FLOWER_MODULE_TRACE, so a test can see what a command loaded.
// The recording happens in the resolve hook of module-trace-hooks.mjs (module.register, Node 20.6+).
import { register } from 'node:module';

const file = process.env.FLOWER_MODULE_TRACE;
if (!file) throw new Error('module-trace.mjs needs FLOWER_MODULE_TRACE: the file to record module URLs in');
register('./module-trace-hooks.mjs', import.meta.url, { data: { file } });
