// The bundled entries of the package (`npm run build`, after tsc): one module graph for the CLI,
// the library and its testing kit, in a few files instead of ~40 on `flower --version`'s cold
// path. Node 20 resolves, opens and links each ES module on its own (it has no compile cache);
// measured in bench/startup.bench.mjs, bundling took `--version` from +101 ms to +64 ms CPU over
// `node -e 0` on a loaded machine (BENCHMARKS.md, Start-up).
//
// Invariants:
// - The entries replace tsc's files of the same names (dist/cli/bin.js, dist/index.js,
//   dist/testing/index.js), so the package's bin and exports are unchanged; the declaration files
//   stay tsc's. The three entries share their chunks (dist/chunks/): a workflow file run by
//   `flower run` that imports 'flower-agent' gets the CLI's own modules, not a second copy.
// - Packages stay external: the SDK finds its Claude Code binary beside itself, better-sqlite3
//   loads a native addon, and chart.js is read from node_modules by the report.
// - Code that finds a file beside itself (`new URL('./x.js', import.meta.url)`) finds it: the
//   TypeScript hooks are an entry in the chunks' directory, and the build fails when an output file
//   names './typescript-hooks.js' without it beside it.
// - dist/chunks/modules.json says which of tsc's modules each output file holds (paths relative
//   to dist/): what a test of the cold path reads to tell which modules a command loaded.
import { existsSync, rmSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { defineConfig } from 'rolldown';

const HOOKS = './typescript-hooks.js';

/** A rebuild leaves no chunk of an earlier build behind (their names carry a hash). */
const cleanChunks = {
  name: 'clean-chunks',
  buildStart() {
    rmSync('dist/chunks', { recursive: true, force: true });
  },
};

/** dist/chunks/modules.json: output file → the modules it holds, both relative to dist/. */
const moduleList = {
  name: 'module-list',
  generateBundle(_options, bundle) {
    const list = {};
    for (const [fileName, output] of Object.entries(bundle)) {
      if (output.type === 'chunk') list[fileName] = output.moduleIds.map((id) => relative('dist', id));
    }
    this.emitFile({
      type: 'asset',
      fileName: 'chunks/modules.json',
      source: `${JSON.stringify(list, null, 1)}\n`,
    });
  },
};

/** Fails the build when code that registers the TypeScript hooks has no hooks file beside it. */
const hooksBesideTheirUser = {
  name: 'hooks-beside-their-user',
  writeBundle(options, bundle) {
    for (const [fileName, output] of Object.entries(bundle)) {
      if (output.type !== 'chunk' || !output.code.includes(HOOKS)) continue;
      const beside = join(options.dir, dirname(fileName), HOOKS);
      if (!existsSync(beside)) this.error(`${fileName} registers ${HOOKS}, and ${beside} does not exist`);
    }
  },
};

export default defineConfig({
  input: {
    'cli/bin': 'dist/cli/bin.js',
    index: 'dist/index.js',
    'testing/index': 'dist/testing/index.js',
    'chunks/typescript-hooks': 'dist/cli/commands/typescript-hooks.js',
  },
  platform: 'node',
  external: (id) => !id.startsWith('.') && !id.startsWith('/'),
  plugins: [cleanChunks, moduleList, hooksBesideTheirUser],
  output: {
    dir: 'dist',
    format: 'esm',
    entryFileNames: '[name].js',
    chunkFileNames: 'chunks/[name]-[hash].js',
    // Replaces tsc's maps of the entries' files, which no longer describe them.
    sourcemap: true,
  },
});
