import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { credentialStores } from '../../../../src/config/credential-stores.js';
import { isSecretVariable, sandboxPlaces } from '../../../../src/runtime/sandbox/places.js';

// A credential key whose name says nothing secret, as a future one might be called.
vi.mock('../../../../src/config/credentials.js', async (importOriginal) => {
  const original = await importOriginal<typeof import('../../../../src/config/credentials.js')>();
  return { ...original, CREDENTIAL_KEYS: [...original.CREDENTIAL_KEYS, 'CLAUDE_SESSION_LOGIN'] };
});

const home = '/home/ada';

describe("a sandbox's places", () => {
  it('reach the workspace and every extra directory, and nothing else', () => {
    expect(sandboxPlaces({ env: { HOME: home }, workspace: '/ws' }).reachable).toEqual(['/ws']);
    expect(
      sandboxPlaces({ env: { HOME: home }, workspace: '/ws', extraDirs: ['/data', '/shared/lib'] }).reachable,
    ).toEqual(['/ws', '/data', '/shared/lib']);
  });

  it("let a build write the package caches in the user's home (XDG and pip, npm, yarn, cargo, go)", () => {
    expect(sandboxPlaces({ env: { HOME: home }, workspace: '/ws' }).caches).toEqual([
      join(home, '.cache'),
      join(home, '.npm'),
      join(home, '.yarn'),
      join(home, '.cargo/registry'),
      join(home, 'go/pkg/mod'),
    ]);
  });

  it('hide the credential stores, the one list', () => {
    const context = { env: { HOME: home }, workspace: '/ws', runDir: '/ws/runs' };
    expect(sandboxPlaces(context).hidden).toEqual(credentialStores(context));
  });
});

describe('secret variables', () => {
  it('include every credential key by being on the list, whatever its name', () => {
    expect(isSecretVariable('CLAUDE_SESSION_LOGIN')).toBe(true);
    expect(isSecretVariable('claude_session_login')).toBe(true);
    expect(isSecretVariable('CLAUDE_SESSION')).toBe(false);
  });
});
