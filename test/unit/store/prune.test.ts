import { describe, expect, it } from 'vitest';
import { defaultPrunePolicy, healOrphans, pruneNoise, relink } from '../../../src/store/prune.js';
import { type Entry, TranscriptBuilder } from '../../support/transcript-builder.js';
import { validateTranscript } from '../../support/transcript-validator.js';

type Block = Record<string, unknown>;
const blocks = (entries: readonly Record<string, unknown>[]): Block[] =>
  entries
    .flatMap((entry) => ((entry.message as { content?: unknown })?.content as Block[]) ?? [])
    .filter((block) => typeof block === 'object');
const resultFor = (entries: readonly Record<string, unknown>[], id: string): Block | undefined =>
  blocks(entries).find((block) => block.type === 'tool_result' && block.tool_use_id === id);
const entryAnswering = (entries: readonly Entry[], id: string): Entry | undefined =>
  entries.find((entry) => resultFor([entry], id) !== undefined);
const useFor = (entries: readonly Record<string, unknown>[], id: string): Block | undefined =>
  blocks(entries).find((block) => block.type === 'tool_use' && block.id === id);

describe('prune layer', () => {
  it('drops synthetic API-error turns and relinks their children', () => {
    const t = new TranscriptBuilder();
    t.prompt('build it');
    const error = t.apiError();
    const next = t.prompt('try again');
    t.say('done');
    const result = pruneNoise(t.entries);
    expect(result.pruned).toBe(1);
    expect(result.entries.some((entry) => entry.uuid === error.uuid)).toBe(false);
    expect(result.entries.find((entry) => entry.uuid === next.uuid)?.parentUuid).toBe(error.parentUuid);
    expect(JSON.stringify(result.entries)).not.toContain('API Error');
    expect(validateTranscript(result.entries, { original: t.entries, singleChain: true })).toEqual([]);
  });

  it('recognises an error turn by either mark alone: model <synthetic>, or the isApiErrorMessage flag', () => {
    for (const marks of ['model', 'flag'] as const) {
      const t = new TranscriptBuilder();
      t.prompt('x');
      const error = t.apiError('API Error: Connection error.', marks);
      if (marks === 'model') expect(error.isApiErrorMessage).toBeUndefined();
      else expect(error.message).toMatchObject({ model: 'claude-test' });
      t.prompt('y');
      const result = pruneNoise(t.entries);
      expect(result.pruned, marks).toBe(1);
      expect(result.entries.some((entry) => entry.uuid === error.uuid)).toBe(false);
    }
  });

  it('keeps the binary\'s own "No response requested." filler: a <synthetic> turn, not an API error', () => {
    for (const shape of ['block', 'string'] as const) {
      const t = new TranscriptBuilder();
      t.prompt('/compact done, carry on');
      const filler = t.apiError('No response requested.', 'model');
      if (shape === 'string') (filler.message as { content: unknown }).content = 'No response requested.';
      const next = t.prompt('now build it');
      t.say('done');
      const result = pruneNoise(t.entries);
      expect(result.pruned, shape).toBe(0);
      expect(result.entries.map((entry) => entry.uuid)).toEqual(t.entries.map((entry) => entry.uuid));
      expect(result.entries.find((entry) => entry.uuid === next.uuid)?.parentUuid).toBe(filler.uuid);
    }
  });

  it('still drops a turn that only looks like the filler: flagged as an API error, or with other text', () => {
    for (const [text, marks] of [
      ['No response requested.', 'both'],
      ['No response requested.', 'flag'],
      ['No response requested. API Error: Connection error.', 'model'],
      ['No response requested', 'model'],
    ] as const) {
      const t = new TranscriptBuilder();
      t.prompt('x');
      const error = t.apiError(text, marks);
      t.prompt('y');
      const result = pruneNoise(t.entries);
      expect(result.pruned, `${marks}: ${text}`).toBe(1);
      expect(result.entries.some((entry) => entry.uuid === error.uuid)).toBe(false);
    }
  });

  it('removes a result nothing asked for (its call was lost) and keeps the chain', () => {
    const t = new TranscriptBuilder();
    t.prompt('go');
    const kept = t.bash('ls', 'a b');
    const stray = t.result('toolu-never-called', 'output of a call that is gone');
    const next = t.prompt('continue');
    const result = pruneNoise(t.entries);
    expect(result).toMatchObject({ strayResults: 1, pruned: 1 });
    expect(resultFor(result.entries, 'toolu-never-called')).toBeUndefined();
    expect(resultFor(result.entries, kept)).toBeDefined();
    expect(result.entries.find((entry) => entry.uuid === next.uuid)?.parentUuid).toBe(stray.parentUuid);
    expect(validateTranscript(result.entries, { original: t.entries, singleChain: true })).toEqual([]);
  });

  it('keeps only the newest denial (tool_use and result go together) by default', () => {
    const t = new TranscriptBuilder();
    t.prompt('look around');
    const first = t.denied('rm -rf build');
    const second = t.denied('make');
    const third = t.denied('npm install');
    t.say('I will delegate instead.');
    const result = pruneNoise(t.entries);
    expect(result.denialsDropped).toBe(2);
    expect(result.pruned).toBe(4); // two emptied assistant entries, two emptied result entries
    for (const id of [first, second]) {
      expect(useFor(result.entries, id)).toBeUndefined();
      expect(resultFor(result.entries, id)).toBeUndefined();
    }
    expect(useFor(result.entries, third)).toBeDefined();
    expect(resultFor(result.entries, third)).toBeDefined();
    expect(validateTranscript(result.entries, { original: t.entries, singleChain: true })).toEqual([]);
  });

  it('drops every denial when keepDenials <= 0, and none when it covers them all', () => {
    const t = new TranscriptBuilder();
    t.prompt('go');
    t.denied('a');
    t.denied('b');
    expect(pruneNoise(t.entries, { ...defaultPrunePolicy, keepDenials: 0 }).denialsDropped).toBe(2);
    expect(pruneNoise(t.entries, { ...defaultPrunePolicy, keepDenials: 5 }).denialsDropped).toBe(0);
  });

  it('removes only the denied block from a message that holds other blocks, and its toolUseResult copy', () => {
    const t = new TranscriptBuilder();
    t.prompt('go');
    const mixed = t.push({
      type: 'assistant',
      message: {
        role: 'assistant',
        model: 'claude-test',
        content: [
          { type: 'text', text: 'Two things at once.' },
          { type: 'tool_use', id: 'dead', name: 'Bash', input: { command: 'rm x' } },
          { type: 'tool_use', id: 'alive', name: 'Bash', input: { command: 'ls' } },
        ],
      },
    });
    const answers = t.push({
      type: 'user',
      toolDenialKind: 'permission-rule',
      toolUseResult: 'Permission denied: rm x',
      message: {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'dead', content: 'denied', is_error: true },
          { type: 'tool_result', tool_use_id: 'alive', content: 'a b' },
        ],
      },
    });
    t.denied('make'); // the newest denial, kept
    const result = pruneNoise(t.entries);
    const keptAssistant = result.entries.find((entry) => entry.uuid === mixed.uuid);
    expect(
      (keptAssistant as unknown as { message: { content: Block[] } }).message.content.map(
        (block) => block.type,
      ),
    ).toEqual(['text', 'tool_use']);
    const keptAnswers = result.entries.find((entry) => entry.uuid === answers.uuid);
    expect((keptAnswers as unknown as { message: { content: Block[] } }).message.content).toEqual([
      { type: 'tool_result', tool_use_id: 'alive', content: 'a b' },
    ]);
    expect(keptAnswers).not.toHaveProperty('toolUseResult');
    expect(validateTranscript(result.entries, { original: t.entries, singleChain: true })).toEqual([]);
  });

  it('neutralises interrupt residue but keeps the entry and block', () => {
    const t = new TranscriptBuilder();
    t.prompt('go');
    const id = t.interrupted('sleep 100');
    const result = pruneNoise(t.entries);
    expect(result.interruptsNeutralised).toBe(1);
    expect(resultFor(result.entries, id)).toMatchObject({
      content: defaultPrunePolicy.interruptText,
      is_error: false,
    });
    expect(result.entries).toHaveLength(t.entries.length);
  });

  it('heals an orphaned tool_use with one inserted result entry under the uuid the assistant entry was stored with', () => {
    const t = new TranscriptBuilder();
    t.prompt('go');
    const orphan = t.orphan('npm test');
    const assistant = t.entries[t.entries.length - 1] as Entry;
    const resumed = t.prompt('continue');
    t.say('ok');
    const result = pruneNoise(t.entries);
    expect(result.orphansHealed).toBe(1);
    expect(result.entries).toHaveLength(t.entries.length + 1);
    const at = result.entries.findIndex((entry) => entry.uuid === assistant.uuid);
    const heal = result.entries[at];
    const renamed = result.entries[at - 1];
    // The assistant entry, under a new uuid, then the stand-in under its stored one: the next
    // entry's stored parent is the stand-in without being re-pointed.
    expect(renamed).toEqual({ ...assistant, uuid: heal?.parentUuid });
    expect(renamed?.uuid).not.toBe(assistant.uuid);
    expect(heal).toMatchObject({
      type: 'user',
      uuid: assistant.uuid,
      sessionId: assistant.sessionId,
      cwd: '/work/project',
    });
    expect(resultFor([heal as never], orphan)).toMatchObject({
      content: defaultPrunePolicy.orphanText,
      is_error: false,
    });
    expect(result.entries.find((entry) => entry.uuid === resumed.uuid)).toBe(resumed);
    expect(validateTranscript(result.entries, { original: t.entries, singleChain: true })).toEqual([]);
    // The input is not changed.
    expect(t.entries.filter((entry) => entry.uuid === assistant.uuid)).toHaveLength(1);
    // Loading twice gives the same transcript: the new id is derived, not random.
    expect(pruneNoise(t.entries).entries).toEqual(result.entries);
  });

  it('a protected entry at the end of the message keeps its uuid: the stand-in gets a new one and the next entry is re-pointed', () => {
    const t = new TranscriptBuilder();
    t.prompt('go');
    const orphan = t.orphan('npm test');
    const meta = t.push({
      type: 'assistant',
      isMeta: true,
      message: { role: 'assistant', content: [{ type: 'text', text: 'bookkeeping' }] },
    });
    const next = t.prompt('continue');
    const { entries, healed } = healOrphans(t.entries, 'cut');
    expect(healed).toBe(1);
    const at = entries.indexOf(meta);
    expect(at).toBeGreaterThan(0);
    const heal = entries[at + 1];
    expect(resultFor([heal as never], orphan)?.content).toBe('cut');
    expect(heal?.parentUuid).toBe(meta.uuid);
    expect(heal?.uuid).not.toBe(meta.uuid);
    expect(entries.find((entry) => entry.uuid === next.uuid)?.parentUuid).toBe(heal?.uuid);
    expect(validateTranscript(entries, { original: t.entries, singleChain: true })).toEqual([]);
  });

  it('answers all orphans of one entry with a single inserted entry, also when the orphan is the leaf', () => {
    const t = new TranscriptBuilder();
    t.prompt('go');
    t.push({
      type: 'assistant',
      message: {
        role: 'assistant',
        content: [
          { type: 'tool_use', id: 'one', name: 'Bash', input: { command: 'a' } },
          { type: 'tool_use', id: 'two', name: 'Read', input: { file_path: 'b' } },
        ],
      },
    });
    const { entries, healed } = healOrphans(t.entries, 'cut');
    expect(healed).toBe(1);
    expect(entries).toHaveLength(3);
    expect(blocks([entries[2] as never]).map((block) => block.tool_use_id)).toEqual(['one', 'two']);
    expect(validateTranscript(entries, { singleChain: true })).toEqual([]);
  });

  it('answers a parallel call that lost its result after the last call of that message, not in its middle', () => {
    const t = new TranscriptBuilder();
    t.prompt('go');
    const ids = ['ls', 'pwd', 'date'].map((command) => t.call('Bash', { command }));
    const lastCall = t.entries[t.entries.length - 1];
    t.result(ids[0] as string, 'a b', { extra: { sourceToolAssistantUUID: t.entries[1]?.uuid } });
    t.result(ids[2] as string, 'today', { extra: { sourceToolAssistantUUID: lastCall?.uuid } }); // `pwd`'s never came
    t.say('done');
    const { entries, orphansHealed } = pruneNoise(t.entries);
    expect(orphansHealed).toBe(1);
    const at = entries.findIndex((entry) => entry.uuid === lastCall?.uuid);
    const heal = entries[at];
    expect(resultFor([heal as never], ids[1] as string)?.content).toBe(defaultPrunePolicy.orphanText);
    expect(heal?.parentUuid).toBe(entries[at - 1]?.uuid);
    expect(entries[at - 1]).toEqual({ ...lastCall, uuid: heal?.parentUuid });
    // Each result still names the assistant entry that made its call, under that entry's new uuid.
    expect(entryAnswering(entries, ids[2] as string)?.sourceToolAssistantUUID).toBe(entries[at - 1]?.uuid);
    expect(entryAnswering(entries, ids[0] as string)?.sourceToolAssistantUUID).toBe(t.entries[1]?.uuid);
    expect(validateTranscript(entries, { original: t.entries, singleChain: true })).toEqual([]);
  });

  it('relinks across several consecutive dropped entries and survives a parent cycle', () => {
    const entries = [
      { type: 'user', uuid: 'a', parentUuid: null },
      { type: 'assistant', uuid: 'b', parentUuid: 'a' },
      { type: 'assistant', uuid: 'c', parentUuid: 'b' },
      { type: 'user', uuid: 'd', parentUuid: 'c' },
    ];
    expect(relink(entries, new Set(['b', 'c'])).map((entry) => [entry.uuid, entry.parentUuid])).toEqual([
      ['a', null],
      ['d', 'a'],
    ]);
    const cyclic = [
      { type: 'user', uuid: 'x', parentUuid: 'y' },
      { type: 'user', uuid: 'y', parentUuid: 'x' },
      { type: 'user', uuid: 'z', parentUuid: 'x' },
    ];
    expect(relink(cyclic, new Set(['x', 'y']))).toEqual([{ type: 'user', uuid: 'z', parentUuid: null }]);
  });

  it('never drops or edits protected entries, only re-points their parent', () => {
    const t = new TranscriptBuilder();
    t.prompt('go');
    const error = t.apiError();
    const meta = t.meta('<local-command-caveat>');
    t.compactSummary('summary of earlier work');
    t.say('hi');
    const result = pruneNoise(t.entries);
    const keptMeta = result.entries.find((entry) => entry.uuid === meta.uuid);
    expect(keptMeta).toEqual({ ...meta, parentUuid: error.parentUuid });
    expect(validateTranscript(result.entries, { original: t.entries, singleChain: true })).toEqual([]);
  });

  it('passes unknown entry types through and never mutates its input', () => {
    const t = new TranscriptBuilder();
    t.marker('queue-operation', { operation: 'enqueue' });
    t.prompt('go');
    t.apiError();
    t.denied('a');
    t.denied('b');
    t.interrupted('c');
    t.orphan('d');
    t.marker('last-prompt', { lastPrompt: 'go' });
    const frozen = structuredClone(t.entries);
    const result = pruneNoise(t.entries);
    expect(t.entries).toEqual(frozen);
    expect(
      result.entries.filter((entry) => entry.type === 'queue-operation' || entry.type === 'last-prompt'),
    ).toHaveLength(2);
  });
});
