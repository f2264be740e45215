/**
 * What `flower gc` reads from a run directory (runtime/retention/task-references.ts) and from the
 * shared record (shared-references.ts): which sessions are live, retired, asides or archived.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { sharedReferences } from '../../../src/runtime/retention/shared-references.js';
import { gatherTaskReferences, RetentionRefused } from '../../../src/runtime/retention/task-references.js';
import type { TaskRecord } from '../../../src/store/postgres/task-records.js';

function write(path: string, value: unknown): void {
  mkdirSync(join(path, '..'), { recursive: true });
  writeFileSync(path, typeof value === 'string' ? value : JSON.stringify(value));
}

const sorted = (set: Set<string>) => [...set].sort();

describe('gatherTaskReferences', () => {
  it('reads live, retired, aside and archived sessions from the run directory and the archives', () => {
    const root = mkdtempSync(join(tmpdir(), 'flower-gc-refs-'));
    const runDir = join(root, 'runs');
    const archive = join(root, '.flower', 'notes', 'archive');
    write(join(runDir, 'lineage.json'), {
      workspace: root,
      woke: 2,
      steps: { work: 's-live', clarify: 's-c' },
    });
    write(join(runDir, 'manifest.json'), [
      { step: 'work', session_id: 's-live', retired: ['s-old1', 's-old2'], run: 'r1' },
      { step: 'work:verdict#1', session_id: 's-judge', retired: [], run: 'r1' },
    ]);
    write(join(runDir, 'in-flight', 's-flying.json'), { sessionId: 's-flying', pid: 1 });
    write(join(runDir, 'aside', 'manifest.json'), [{ step: 'aside', session_id: 's-aside', run: 'r1' }]);
    write(join(archive, '20260101-120000', 'lineage.json'), {
      workspace: root,
      woke: 1,
      steps: { work: 's-arch' },
    });
    write(join(archive, 'handoff', 'work-20260101-120000.md'), '# not a lineage');

    const { references, notes } = gatherTaskReferences(runDir, [archive, join(root, 'missing')]);
    expect(sorted(references.live)).toEqual(['s-c', 's-flying', 's-live']);
    expect(sorted(references.retired)).toEqual(['s-old1', 's-old2']);
    expect(sorted(references.asides)).toEqual(['s-aside']);
    expect(sorted(references.archived)).toEqual(['s-arch']);
    expect(sorted(references.named)).toEqual(['s-arch', 's-c', 's-judge', 's-live', 's-old1', 's-old2']);
    expect(notes).toEqual([]);
  });

  it('refuses when the lineage cannot be read, and only notes an unreadable manifest', () => {
    const root = mkdtempSync(join(tmpdir(), 'flower-gc-refs-'));
    const runDir = join(root, 'runs');
    write(join(runDir, 'manifest.json'), '{ torn');
    const gathered = gatherTaskReferences(runDir, []);
    expect(gathered.references.retired.size).toBe(0);
    expect(gathered.notes[0]).toContain('manifest.json cannot be read');
    write(join(runDir, 'lineage.json'), '{ torn');
    expect(() => gatherTaskReferences(runDir, [])).toThrow(RetentionRefused);
    expect(() => gatherTaskReferences(runDir, [])).toThrow(
      /lineage.json cannot be read .* Run flower in this workspace once/,
    );
  });

  it("counts the asides' lineage and markers live, and a damaged marker by its file name", () => {
    const root = mkdtempSync(join(tmpdir(), 'flower-gc-refs-'));
    const runDir = join(root, 'runs');
    write(join(runDir, 'aside', 'lineage.json'), {
      workspace: root,
      woke: 1,
      steps: { aside: 's-aside-live' },
    });
    write(join(runDir, 'aside', 'in-flight', 's-aside-flying.json'), { sessionId: 's-aside-flying' });
    write(join(runDir, 'in-flight', 's-torn.json'), '{ "sessionId": "s-to');
    const { references } = gatherTaskReferences(runDir, []);
    expect(sorted(references.live)).toEqual(['s-aside-flying', 's-aside-live', 's-torn']);
  });

  it('notes an archived lineage it cannot read, and claims none of its sessions', () => {
    const root = mkdtempSync(join(tmpdir(), 'flower-gc-refs-'));
    const runDir = join(root, 'runs');
    const archive = join(root, 'archive');
    write(join(archive, '20260101-120000', 'lineage.json'), '{ torn');
    const { references, notes } = gatherTaskReferences(runDir, [archive]);
    expect(references.archived.size).toBe(0);
    expect(notes).toHaveLength(1);
    expect(notes[0]).toContain("that archived task's sessions were kept");
  });
});

describe('sharedReferences', () => {
  const record = (kind: TaskRecord['kind'], key: string, value: unknown): TaskRecord => ({
    kind,
    key,
    value,
    at: 1,
    seq: 1,
  });
  it('adds the database lineage and markers to the live set, its rows to retired and asides', () => {
    const refs = sharedReferences(
      [
        record('lineage-step', 'work', { sessionId: 's-b' }),
        record('in-flight', 's-f', { sessionId: 's-f' }),
        record('manifest-run', 'r2', [{ step: 'work', session_id: 's-b', retired: ['s-r'] }]),
        record('manifest-added', 'r3/s-k/1', { step: 'work', session_id: 's-k', retired: ['s-r2'] }),
      ],
      [record('manifest-run', 'r2', [{ step: 'aside', session_id: 's-a', retired: [] }])],
    );
    expect(sorted(refs.live)).toEqual(['s-b', 's-f']);
    expect(sorted(refs.retired)).toEqual(['s-r', 's-r2']);
    expect(sorted(refs.asides)).toEqual(['s-a']);
    expect(sorted(refs.named)).toEqual(['s-b', 's-f', 's-k', 's-r', 's-r2']);
  });

  it("counts a marker by its key, and the asides' lineage and markers, live", () => {
    const refs = sharedReferences(
      [record('in-flight', 's-key', {})],
      [
        record('lineage-step', 'aside', { sessionId: 's-aside' }),
        record('in-flight', 's-af', { sessionId: 's-af' }),
      ],
    );
    expect(sorted(refs.live)).toEqual(['s-af', 's-aside', 's-key']);
    // The asides' live sessions are not the task's own books.
    expect(sorted(refs.named)).toEqual(['s-key']);
  });
});
