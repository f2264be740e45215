import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { RewritingSessionStore } from '../../../src/store/rewriting-store.js';
import { createSpillWriter, type SpilledName, spillFileName } from '../../../src/store/spill.js';
import { appendSpillRecord, readSpillRecord } from '../../../src/store/spill-record.js';
import { SqliteSessionStore } from '../../../src/store/sqlite-session-store.js';
import { TranscriptBuilder } from '../../support/transcript-builder.js';

let workspace: string;
const spillDir = () => path.join(workspace, '.flower/spill');
beforeEach(() => {
  workspace = mkdtempSync(path.join(tmpdir(), 'flower-record-'));
});
afterEach(() => {
  rmSync(workspace, { recursive: true, force: true });
});

/** A spill file holding `text` under `name` (which need not be its hash, to see who decides). */
function spillFile(name: string, text: string): void {
  mkdirSync(spillDir(), { recursive: true });
  writeFileSync(path.join(spillDir(), name), text);
}

describe('spill records', () => {
  it('round-trip per store key and skip torn or foreign lines', () => {
    appendSpillRecord(spillDir(), 'p/s1', [['toolu_1', { name: 'aaaaaaaaaaaaaaaa.txt', chars: 3000 }]]);
    appendSpillRecord(spillDir(), 'p/s1', [['toolu_2', { name: 'bbbbbbbbbbbbbbbb.txt', chars: 2500 }]]);
    appendSpillRecord(spillDir(), 'p/s2', [['toolu_3', { name: 'cccccccccccccccc.txt', chars: 9 }]]);
    const [file] = readdirSync(path.join(spillDir(), 'records')).filter((name) =>
      readFileSync(path.join(spillDir(), 'records', name), 'utf8').includes('toolu_1'),
    );
    writeFileSync(
      path.join(spillDir(), 'records', file as string),
      `${readFileSync(path.join(spillDir(), 'records', file as string), 'utf8')}toolu_4\tnot-a-number\tdddddddddddddddd.txt\ntoolu_5\t12\tdd`,
    );
    expect([...readSpillRecord(spillDir(), 'p/s1')]).toEqual([
      ['toolu_1', { name: 'aaaaaaaaaaaaaaaa.txt', chars: 3000 }],
      ['toolu_2', { name: 'bbbbbbbbbbbbbbbb.txt', chars: 2500 }],
    ]);
    expect([...readSpillRecord(spillDir(), 'p/s2').keys()]).toEqual(['toolu_3']);
    expect(readSpillRecord(spillDir(), 'p/none').size).toBe(0);
  });

  it('skip a line with more fields than three, and never write an id that would break a line', () => {
    appendSpillRecord(spillDir(), 'p/s1', [
      ['x\ntoolu_6', { name: 'eeeeeeeeeeeeeeee.txt', chars: 5 }],
      ['toolu_7', { name: 'ffffffffffffffff.txt', chars: 7 }],
    ]);
    const [file] = readdirSync(path.join(spillDir(), 'records'));
    writeFileSync(
      path.join(spillDir(), 'records', file as string),
      `${readFileSync(path.join(spillDir(), 'records', file as string), 'utf8')}toolu_8\t4\tdddddddddddddddd.txt\textra\n`,
    );
    expect([...readSpillRecord(spillDir(), 'p/s1').keys()]).toEqual(['toolu_7']);
  });

  it('the writer takes a recorded name only when the length matches and the file is there', () => {
    const text = 'r'.repeat(3000);
    spillFile('0000000000000000.txt', text);
    const record = (chars: number, name = '0000000000000000.txt'): Map<string, SpilledName> =>
      new Map([['toolu_1', { name, chars }]]);
    const named: Array<[string, SpilledName]> = [];
    const write = (recorded: Map<string, SpilledName>) =>
      createSpillWriter(workspace, '.flower/spill', {
        recorded,
        onNamed: (id, spilled) => named.push([id, spilled]),
      })(text, 'toolu_1');
    // Used as recorded (no hashing: the name is not even the text's hash here).
    expect(write(record(3000))).toBe(path.join(spillDir(), '0000000000000000.txt'));
    expect(named).toEqual([]);
    // Otherwise the text is hashed and stored as usual, and the right name is reported.
    const hashed = path.join(spillDir(), spillFileName(text));
    expect(write(record(2999))).toBe(hashed);
    expect(write(record(3000, '1111111111111111.txt'))).toBe(hashed);
    expect(readFileSync(hashed, 'utf8')).toBe(text);
    expect(named).toEqual([
      ['toolu_1', { name: spillFileName(text), chars: 3000 }],
      ['toolu_1', { name: spillFileName(text), chars: 3000 }],
    ]);
  });

  it('the rewriting store records names as it spills, and a resume points where the record says', async () => {
    const file = path.join(workspace, 'runs', 'sessions.db');
    const key = { projectKey: '-ws', sessionId: 's' };
    const t = new TranscriptBuilder();
    const id = t.tool('Read', { file_path: 'log' }, 'L'.repeat(4000));
    const first = new RewritingSessionStore(new SqliteSessionStore(file), {
      workspace,
      trim: { enabled: true, keepRecent: 0 },
    });
    await first.append(key, t.entries);
    await first.close();
    expect([...readSpillRecord(spillDir(), '-ws/s')]).toEqual([
      [id, { name: spillFileName('L'.repeat(4000)), chars: 4000 }],
    ]);
    // Point the record somewhere else (same length, file present): the resume follows it.
    spillFile('2222222222222222.txt', 'L'.repeat(4000));
    appendSpillRecord(spillDir(), '-ws/s', [[id, { name: '2222222222222222.txt', chars: 4000 }]]);
    const backend = new SqliteSessionStore(file);
    const resumed = new RewritingSessionStore(backend, { workspace, trim: { enabled: true, keepRecent: 0 } });
    expect(JSON.stringify(await resumed.load(key))).toContain(path.join(spillDir(), '2222222222222222.txt'));
    backend.close();
  });
});
