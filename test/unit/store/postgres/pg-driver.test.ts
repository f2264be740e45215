/**
 * pg-driver.ts: pg loads without touching Node 20's lazy `Response` global (whose first touch
 * loads the fetch implementation), and the global is left exactly as it was.
 */
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';

describe('the pg driver', () => {
  it('loads pg without touching the Response global, and leaves its property as it was', async () => {
    // A fresh process (vitest forks per file): pg is not loaded yet, so its load check runs below.
    const require = createRequire(import.meta.url);
    expect(Object.keys(require.cache).some((file) => file.includes('/node_modules/pg/'))).toBe(false);
    const original = Object.getOwnPropertyDescriptor(globalThis, 'Response');
    let touched = 0;
    const watched: PropertyDescriptor = {
      configurable: true,
      enumerable: false,
      get() {
        touched += 1;
        return original?.get?.call(globalThis) ?? original?.value;
      },
      set() {},
    };
    Object.defineProperty(globalThis, 'Response', watched);
    try {
      const { pg } = await import('../../../../src/store/postgres/pg-driver.js');
      expect(Object.keys(require.cache).some((file) => file.endsWith('/node_modules/pg/lib/stream.js'))).toBe(
        true,
      );
      expect(touched).toBe(0);
      expect(Object.getOwnPropertyDescriptor(globalThis, 'Response')).toEqual(watched);
      // pg itself, usable: a client with its Node socket.
      const client = new pg.Client({ host: '127.0.0.1', port: 1 });
      expect(typeof client.connect).toBe('function');
    } finally {
      if (original) Object.defineProperty(globalThis, 'Response', original);
    }
  });
});
