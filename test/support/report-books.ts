/**
 * The run directory's books as the report and `status` read them, built in memory: a manifest row
 * with every field a real row has, and the `RunData` around a list of them.
 */
import type { RunData } from '../../src/report/run-data.js';
import type { StoredManifestRow } from '../../src/runtime/manifest.js';

/** 2026-01-01 00:00 UTC, in seconds: where the rows' clocks start. */
export const T0 = Date.UTC(2026, 0, 1) / 1000;

/** A finished, successful row of `step` in run `run-1`, 100 s from T0; `fields` override. */
export function manifestRow(fields: Partial<StoredManifestRow> & { step: string }): StoredManifestRow {
  return {
    session_id: null,
    ok: true,
    cost_usd: 0,
    num_turns: 1,
    text: '',
    error: null,
    started_at: T0,
    ended_at: T0 + 100,
    attempts: 1,
    errors: [],
    resumed: false,
    retired: [],
    context: 0,
    duration_s: 100,
    run: 'run-1',
    ...fields,
  };
}

export type Books = Pick<
  RunData,
  'location' | 'manifest' | 'setAside' | 'asides' | 'lineage' | 'store' | 'workbench'
> &
  Partial<RunData>;

/** A readable manifest of `rows` in `/ws/runs`, nothing else on disk; `extra` overrides. */
export function books(rows: StoredManifestRow[], extra: Partial<RunData> = {}): Books {
  return {
    location: { workspace: '/ws', runDir: '/ws/runs' },
    manifest: { state: 'ok', document: rows },
    setAside: [],
    asides: { state: 'missing', document: [] },
    lineage: { state: 'ok', document: { workspace: '/ws', woke: 1, steps: {} } },
    store: { state: 'ok', sessions: new Map() },
    workbench: undefined,
    ...extra,
  };
}
