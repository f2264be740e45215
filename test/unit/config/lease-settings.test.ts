/** The lease's timing from the environment: defaults when unset, whole seconds in range, one line otherwise. */
import { describe, expect, it } from 'vitest';
import { LeaseSettingError, leaseSettingsFrom } from '../../../src/config/lease-settings.js';

describe('lease settings', () => {
  it('are empty when unset or empty, so the policy keeps its defaults', () => {
    expect(leaseSettingsFrom({})).toEqual({});
    expect(leaseSettingsFrom({ FLOWER_LEASE_SECONDS: ' ', FLOWER_LEASE_WAIT_SECONDS: '' })).toEqual({});
  });

  it('read whole seconds', () => {
    expect(leaseSettingsFrom({ FLOWER_LEASE_SECONDS: '6', FLOWER_LEASE_WAIT_SECONDS: '0' })).toEqual({
      leaseMs: 6000,
      regainWaitMs: 0,
    });
    expect(leaseSettingsFrom({ FLOWER_LEASE_SECONDS: '3600' })).toEqual({ leaseMs: 3_600_000 });
  });

  it.each(['2', '3601', '1.5', '60s', '-5', 'abc'])(
    'refuse FLOWER_LEASE_SECONDS=%s with one line',
    (value) => {
      expect(() => leaseSettingsFrom({ FLOWER_LEASE_SECONDS: value })).toThrow(LeaseSettingError);
      expect(() => leaseSettingsFrom({ FLOWER_LEASE_SECONDS: value })).toThrow(
        `FLOWER_LEASE_SECONDS=${value} is not a number of seconds from 3 to 3600: fix or unset it.`,
      );
    },
  );

  it('refuse a wait past a day', () => {
    expect(() => leaseSettingsFrom({ FLOWER_LEASE_WAIT_SECONDS: '86401' })).toThrow(
      /FLOWER_LEASE_WAIT_SECONDS/,
    );
  });
});
