/**
 * Tombstones as rules (store/retention/tombstones.ts): what shape one has, that merging keeps one
 * per session with the earliest drop, what one side lacks of the other, and which session ids of
 * a workspace they rule out.
 */
import { describe, expect, it } from 'vitest';
import {
  decodeTombstone,
  droppedIds,
  mergeTombstones,
  missingTombstones,
  type Tombstone,
} from '../../../src/store/retention/tombstones.js';

const stone = (sessionId: string, droppedAt: number, projectKey = '-work'): Tombstone => ({
  projectKey,
  sessionId,
  droppedAt,
  kind: 'retired',
  lastWrite: droppedAt - 1000,
  host: 'a',
});

describe('tombstones', () => {
  it('merge to one per session, the earliest drop kept, in drop order', () => {
    const merged = mergeTombstones(
      [stone('b', 20), { ...stone('a', 10), host: 'first' }],
      [stone('a', 30), stone('c', 5)],
    );
    expect(merged.map((t) => [t.sessionId, t.droppedAt, t.host])).toEqual([
      ['c', 5, 'a'],
      ['a', 10, 'first'],
      ['b', 20, 'a'],
    ]);
    expect(mergeTombstones([stone('a', 30)], [{ ...stone('a', 10), host: 'first' }])[0]?.host).toBe('first');
    // The same session id under another workspace is another session.
    expect(mergeTombstones([stone('a', 1)], [stone('a', 1, '-other')])).toHaveLength(2);
  });

  it('say what one side lacks of the other, by session', () => {
    const here = [stone('a', 1), stone('b', 2)];
    const there = [stone('b', 9), stone('c', 3)];
    expect(missingTombstones(here, there).map((t) => t.sessionId)).toEqual(['a']);
    expect(missingTombstones(there, here).map((t) => t.sessionId)).toEqual(['c']);
    expect(missingTombstones(here, here)).toEqual([]);
  });

  it("rule out only their own workspace's session ids", () => {
    expect(droppedIds([stone('a', 1), stone('b', 1, '-other')], '-work')).toEqual(new Set(['a']));
  });

  it('are read only from the right shape; missing extras default, anything else is left out', () => {
    expect(decodeTombstone(stone('a', 1))).toEqual(stone('a', 1));
    expect(decodeTombstone({ projectKey: '-w', sessionId: 's', droppedAt: 1, kind: 'aside' })).toEqual({
      projectKey: '-w',
      sessionId: 's',
      droppedAt: 1,
      kind: 'aside',
      lastWrite: 0,
      host: '',
    });
    for (const bad of [
      null,
      'a',
      { ...stone('a', 1), projectKey: '' },
      { ...stone('a', 1), sessionId: 7 },
      { ...stone('a', 1), droppedAt: '1' },
      { ...stone('a', 1), droppedAt: Number.NaN },
      { ...stone('a', 1), kind: 'live' },
    ])
      expect(decodeTombstone(bad)).toBeUndefined();
  });
});
