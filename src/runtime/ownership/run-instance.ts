/**
 * Which copy of a run directory this is, and under which lease epoch it last worked: what lets the
 * database tell a replay of this copy's own unsent work (accepted) from work another machine has
 * overtaken (kept aside, never merged; store/postgres/lease-tables.ts `task_fence_ok`).
 *
 * `runs/lease.json` holds `{ instance, epoch }`: `instance` is made once per run directory (two
 * machines' copies of one task differ; a run directory moved or restored from a backup keeps its
 * own), `epoch` is the lease this copy last held.
 *
 * Invariants:
 * - Reading never throws: a missing or damaged file is a new instance with no earlier epoch (its
 *   unsent work then counts as made under the current lease, as before leases existed).
 * - Written atomically and privately (0600), like every file in runs/.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { writeFileAtomic } from '../../config/atomic-file.js';
import { PRIVATE_DIRECTORY_MODE, PRIVATE_FILE_MODE } from '../../config/private-files.js';
import type { LeasePolicy, TaskLeaseOptions } from '../../store/postgres/task-lease.js';
import { holderIsGone, ownIdentity } from '../process-liveness.js';

export const LEASE_FILE = 'lease.json';

export interface RunInstance {
  readonly instance: string;
  /** The epoch this copy last held, if it ever held one. */
  readonly epoch: number | undefined;
}

export function readRunInstance(runDir: string): RunInstance {
  try {
    const value = JSON.parse(readFileSync(join(runDir, LEASE_FILE), 'utf8')) as Partial<RunInstance>;
    if (typeof value.instance === 'string' && /^[0-9a-f]{16,64}$/.test(value.instance))
      return {
        instance: value.instance,
        epoch: typeof value.epoch === 'number' && Number.isSafeInteger(value.epoch) ? value.epoch : undefined,
      };
  } catch {
    // New, or damaged: a fresh identity.
  }
  return { instance: randomBytes(12).toString('hex'), epoch: undefined };
}

/** Records that this copy now holds `epoch`. Returns false when the file could not be written. */
export function recordRunEpoch(runDir: string, instance: string, epoch: number): boolean {
  try {
    writeFileAtomic(join(runDir, LEASE_FILE), `${JSON.stringify({ instance, epoch })}\n`, {
      mode: PRIVATE_FILE_MODE,
      directoryMode: PRIVATE_DIRECTORY_MODE,
    });
    return true;
  } catch {
    return false;
  }
}

/** The lease options of a process working on the run directory `runDir`: who it is, which copy. */
export function leaseOptionsFor(runDir: string, policy?: Partial<LeasePolicy>): TaskLeaseOptions {
  const me = ownIdentity();
  return {
    identity: {
      bootId: me.bootId,
      processStart: me.processStart,
      instance: readRunInstance(runDir).instance,
    },
    isDeadHere: (holder) => holderIsGone(holder),
    ...(policy === undefined ? {} : { policy }),
  };
}
