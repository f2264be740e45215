/**
 * The lease's timing from the environment, for a task kept in PostgreSQL
 * (store/postgres/task-lease.ts): `FLOWER_LEASE_SECONDS` (default 60) and
 * `FLOWER_LEASE_WAIT_SECONDS` (how long a holder that lost touch with the database waits before it
 * exits; default 300). Pure: the caller reads the environment.
 *
 * Invariants:
 * - Unset or empty means the default; anything but a whole number of seconds in range is refused
 *   with one line naming the variable and what it accepts (never a silent default).
 */

export interface LeaseSettings {
  leaseMs?: number;
  regainWaitMs?: number;
}

export class LeaseSettingError extends Error {
  override name = 'LeaseSettingError';
}

function seconds(
  env: Record<string, string | undefined>,
  name: string,
  min: number,
  max: number,
): number | undefined {
  const text = env[name]?.trim();
  if (text === undefined || text === '') return undefined;
  if (!/^\d+$/.test(text) || Number(text) < min || Number(text) > max)
    throw new LeaseSettingError(
      `${name}=${text} is not a number of seconds from ${min} to ${max}: fix or unset it.`,
    );
  return Number(text) * 1000;
}

export function leaseSettingsFrom(env: Record<string, string | undefined>): LeaseSettings {
  // Below 3 s the renewal period (a sixth) would be shorter than a round trip to a distant server.
  const leaseMs = seconds(env, 'FLOWER_LEASE_SECONDS', 3, 3600);
  const regainWaitMs = seconds(env, 'FLOWER_LEASE_WAIT_SECONDS', 0, 86_400);
  return {
    ...(leaseMs === undefined ? {} : { leaseMs }),
    ...(regainWaitMs === undefined ? {} : { regainWaitMs }),
  };
}
