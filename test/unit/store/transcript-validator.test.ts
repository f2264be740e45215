import { describe, expect, it } from 'vitest';
import { TranscriptBuilder } from '../../support/transcript-builder.js';
import { validateTranscript } from '../../support/transcript-validator.js';

// The property tests are only as good as the validator, so it must reject what the API rejects.
describe('structural validator', () => {
  it('accepts a well-formed transcript', () => {
    const t = new TranscriptBuilder();
    t.prompt('go');
    t.bash('ls', 'a');
    t.say('done');
    expect(validateTranscript(t.entries, { singleChain: true })).toEqual([]);
  });

  it('rejects an unanswered tool_use (an orphan)', () => {
    const t = new TranscriptBuilder();
    t.prompt('go');
    t.orphan('npm test');
    t.prompt('continue');
    expect(validateTranscript(t.entries)).toEqual([expect.stringMatching(/answered 0 times/)]);
  });

  it('rejects a tool_result without its tool_use and a result answered twice', () => {
    const t = new TranscriptBuilder();
    t.prompt('go');
    const id = t.bash('ls', 'a');
    t.result(id, 'again');
    expect(validateTranscript(t.entries).join('\n')).toMatch(/answered 2 times/);
    const u = new TranscriptBuilder();
    u.prompt('go');
    u.result('ghost', 'x');
    expect(validateTranscript(u.entries).join('\n')).toMatch(/does not follow its tool_use/);
  });

  it('rejects a broken chain and entries unreachable from the leaf', () => {
    const t = new TranscriptBuilder();
    t.prompt('go');
    const middle = t.say('hi');
    t.prompt('more');
    const broken = t.entries.filter((entry) => entry !== middle);
    expect(validateTranscript(broken).join('\n')).toMatch(/chain broken/);
    const side = [
      ...t.entries,
      { type: 'user', uuid: 'stray', parentUuid: null, message: { role: 'user', content: 'x' } },
    ];
    side.push({
      ...(t.entries[2] as Record<string, unknown>),
      type: 'user',
      uuid: 'leaf',
      parentUuid: t.entries[2]?.uuid,
    });
    expect(validateTranscript(side, { singleChain: true }).join('\n')).toMatch(/stray is not reachable/);
  });

  it('rejects a changed or removed protected entry and a lost tool_result', () => {
    const t = new TranscriptBuilder();
    t.prompt('go');
    const meta = t.meta('caveat');
    const id = t.bash('ls', 'a');
    const changed = t.entries.map((entry) =>
      entry === meta ? { ...entry, message: { role: 'user', content: 'edited' } } : entry,
    );
    expect(validateTranscript(changed, { original: t.entries }).join('\n')).toMatch(/was changed/);
    expect(
      validateTranscript(
        t.entries.filter((entry) => entry !== meta),
        { original: t.entries },
      ).join('\n'),
    ).toMatch(/was removed/);
    const lost = t.entries.filter((entry) => !JSON.stringify(entry).includes(`"tool_use_id":"${id}"`));
    expect(validateTranscript(lost, { original: t.entries }).join('\n')).toMatch(
      /disappeared while its tool_use stayed/,
    );
  });
});
