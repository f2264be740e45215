/**
 * What a task's shared record in PostgreSQL (store/postgres/task-records.ts) says about its
 * sessions, in the shape `flower gc` merges with what the run directory says (task-references.ts).
 *
 * Red line: the database's record is read for what it adds, never to overrule the files. Another
 * machine may have resumed a step in a session this run directory has never heard of; that
 * session is live here too. So the lineage steps and in-flight markers of the database are added
 * to the live set, its manifest rows to the retired and aside sets, whatever the files say.
 */

import type { TaskRecord } from '../../store/postgres/task-records.js';
import { manifestRowsOf } from '../shared/merge.js';
import { addRowSessions, emptyReferences, type ReferenceSets } from './task-references.js';

function liveOf(records: readonly TaskRecord[], into: Set<string>): void {
  for (const record of records) {
    if (record.kind === 'in-flight' && record.key !== '') into.add(record.key);
    if (record.kind !== 'lineage-step' && record.kind !== 'in-flight') continue;
    const id = (record.value as { sessionId?: unknown } | undefined)?.sessionId;
    if (typeof id === 'string' && id !== '') into.add(id);
  }
}

/** The references in the records of the task itself (`main`) and of its asides' run directory. */
export function sharedReferences(main: readonly TaskRecord[], asides: readonly TaskRecord[]): ReferenceSets {
  const references = emptyReferences();
  liveOf(main, references.live);
  for (const id of references.live) references.named.add(id);
  liveOf(asides, references.live);
  addRowSessions(manifestRowsOf(main), references.retired, references.named);
  addRowSessions(manifestRowsOf(asides), new Set(), references.asides);
  return references;
}
