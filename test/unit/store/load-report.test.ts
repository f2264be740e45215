import { describe, expect, it } from 'vitest';
import { describeLoadReport, emptyLoadReport } from '../../../src/store/load-report.js';

describe('describeLoadReport', () => {
  it('says when nothing changed', () => {
    expect(describeLoadReport(emptyLoadReport)).toBe('history unchanged');
  });

  it('names each kind of change, with tokens estimated at four characters', () => {
    expect(describeLoadReport({ ...emptyLoadReport, expired: 1 })).toBe(
      '1 stale glance result marked expired',
    );
    expect(
      describeLoadReport({
        ...emptyLoadReport,
        trimmed: 3,
        kept: 20,
        charsSaved: 10_003,
        expired: 4,
        pruned: 2,
        denialsDropped: 1,
        orphansHealed: 1,
        interruptsNeutralised: 1,
        spillFailures: 2,
      }),
    ).toBe(
      'trimmed 3 tool results (kept the newest 20), saving ~2500 tokens; 4 stale glance results marked expired; dropped 1 old denied call; removed 2 error or emptied entries; neutralised 1 interrupted result; answered 1 interrupted tool call; 2 large results left untrimmed: the spill directory is not writable',
    );
  });
});
