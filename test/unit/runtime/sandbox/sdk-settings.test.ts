import { describe, expect, it } from 'vitest';
import { type NetworkReach, REGISTRY_DOMAINS } from '../../../../src/runtime/sandbox/policy.js';
import { sdkSandbox } from '../../../../src/runtime/sandbox/sdk-settings.js';

describe("the SDK sandbox's network", () => {
  const places = { reachable: ['/ws'], caches: [], hidden: ['/home/u/.ssh'] };
  const reaches: NetworkReach[] = [
    { kind: 'none' },
    { kind: 'domains', domains: REGISTRY_DOMAINS },
    { kind: 'any' },
  ];

  it('is a strict allowlist for every role and every reach, `any` included: a host is never prompted for', () => {
    for (const role of ['read-only', 'worker'] as const)
      for (const workerNetwork of reaches) {
        const settings = sdkSandbox(role, { enabled: true, workerNetwork }, places, {});
        expect(settings.network?.strictAllowlist, `${role}, ${workerNetwork.kind}`).toBe(true);
      }
  });
});
