/**
 * The pg module, loaded without the cost of its Cloudflare check on Node 20.
 *
 * When pg loads (pg/lib/stream.js), it asks whether it runs in a Cloudflare Worker: by
 * `navigator.userAgent`, and where there is no `navigator` (Node 20 has none) by constructing a
 * `Response`. On Node 20 `Response` is a lazy global whose first touch loads the whole fetch
 * implementation (undici): about 24 ms of CPU on every start with `--store` (measured: `node -e
 * 'require("pg")'` took 104 ms against 80 ms with `Response` hidden, `node -e 0` 54 ms, on the
 * same loaded machine). A level start with `--store` has 30 ms for everything it adds (issue 23).
 *
 * Invariants:
 * - Only the load is affected: `Response` is hidden for the synchronous `require('pg')` alone,
 *   and its own property descriptor is put back unchanged (still lazy, so undici still loads
 *   only when something uses fetch). Nothing else runs in between.
 * - Where `navigator` exists (Node 21+) pg never looks at `Response`, and nothing is hidden.
 * - pg still finds it is not on Cloudflare: that answer is the same either way here.
 */
import { createRequire } from 'node:module';
import type pgModule from 'pg';

const requireFromHere = createRequire(import.meta.url);

/** pg itself (what `import pg from 'pg'` gives). */
export const pg: typeof pgModule = loadPg();

function loadPg(): typeof pgModule {
  const response = Object.getOwnPropertyDescriptor(globalThis, 'Response');
  const hasNavigator = typeof (globalThis as { navigator?: unknown }).navigator === 'object';
  if (hasNavigator || response === undefined || !response.configurable) return requireFromHere('pg');
  Object.defineProperty(globalThis, 'Response', { value: undefined, configurable: true, writable: true });
  try {
    return requireFromHere('pg');
  } finally {
    Object.defineProperty(globalThis, 'Response', response);
  }
}
