/**
 * The selection behind `flower gc`: which sessions no resume reaches (store/retention/reachability.ts).
 */
import { describe, expect, it } from 'vitest';
import {
  classifySessions,
  type StoredSessionRef,
  type TaskReferences,
} from '../../../src/store/retention/reachability.js';

const DAY = 86_400_000;
const NOW = 1_800_000_000_000;
const CUTOFF = NOW - 30 * DAY;

const session = (sessionId: string, ageDays: number): StoredSessionRef => ({
  projectKey: '-work',
  sessionId,
  mtime: NOW - ageDays * DAY,
});

const refs = (parts: Partial<Record<keyof TaskReferences, string[]>>): TaskReferences => ({
  live: new Set(parts.live ?? []),
  retired: new Set(parts.retired ?? []),
  asides: new Set(parts.asides ?? []),
  archived: new Set(parts.archived ?? []),
});

const verdicts = (sessions: StoredSessionRef[], references: TaskReferences, cutoff = CUTOFF) =>
  Object.fromEntries(
    classifySessions(sessions, references, cutoff).map((c) => [c.session.sessionId, c.verdict]),
  );

describe('classifySessions', () => {
  it('drops old sessions of each collectable kind, with their kind', () => {
    const got = verdicts(
      [session('r', 40), session('a', 40), session('x', 40)],
      refs({ retired: ['r'], asides: ['a'], archived: ['x'] }),
    );
    expect(got).toEqual({
      r: { drop: true, kind: 'retired' },
      a: { drop: true, kind: 'aside' },
      x: { drop: true, kind: 'archived' },
    });
  });

  it('never drops a session a live reference names, even when it is also retired, an aside or archived', () => {
    const got = verdicts(
      [session('s', 400)],
      refs({ live: ['s'], retired: ['s'], asides: ['s'], archived: ['s'] }),
    );
    expect(got.s).toEqual({ drop: false, reason: 'live' });
  });

  it('keeps a collectable session written at or after the cutoff', () => {
    const got = verdicts(
      [session('new', 29), { projectKey: '-work', sessionId: 'edge', mtime: CUTOFF }, session('old', 31)],
      refs({ retired: ['new', 'edge', 'old'] }),
    );
    expect(got.new).toEqual({ drop: false, reason: 'recent' });
    expect(got.edge).toEqual({ drop: false, reason: 'recent' });
    expect(got.old).toEqual({ drop: true, kind: 'retired' });
  });

  it('keeps a session nothing claims, however old', () => {
    expect(verdicts([session('stray', 1000)], refs({ retired: ['other'] })).stray).toEqual({
      drop: false,
      reason: 'unclaimed',
    });
  });

  it('keeps a session whose time is not a number', () => {
    const odd = { projectKey: '-work', sessionId: 'odd', mtime: Number.NaN };
    expect(verdicts([odd], refs({ retired: ['odd'] })).odd).toEqual({ drop: false, reason: 'recent' });
  });

  it('with a cutoff of now, drops every claimed session that is not live', () => {
    const got = verdicts(
      [session('live', 0.001), session('r', 0.001)],
      refs({ live: ['live'], retired: ['r', 'live'] }),
      NOW,
    );
    expect(got.live).toEqual({ drop: false, reason: 'live' });
    expect(got.r).toEqual({ drop: true, kind: 'retired' });
  });

  it('names an aside that a handoff retired an aside', () => {
    expect(verdicts([session('a', 40)], refs({ asides: ['a'], retired: ['a'] })).a).toEqual({
      drop: true,
      kind: 'aside',
    });
  });
});
