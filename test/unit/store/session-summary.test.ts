/**
 * Our `foldSessionSummary` (src/store/session-summary.ts) against the SDK's own, on realistic
 * sessions and on generated entries aimed at every rule of the fold (first prompt, commands,
 * bash input, pasted blocks, truncation at a surrogate pair, tags, relocation, titles). The JSON
 * text must be identical, field order included: backends compare it to skip unchanged writes.
 * When this fails after an SDK upgrade, the SDK changed its fold: port the change.
 */
import {
  type SessionKey,
  type SessionStoreEntry,
  type SessionSummaryEntry,
  foldSessionSummary as sdkFold,
} from '@anthropic-ai/claude-agent-sdk';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { foldSessionSummary } from '../../../src/store/session-summary.js';

const key: SessionKey = { projectKey: 'p', sessionId: '00000000-0000-4000-8000-000000000001' };

type Generator = (options: Record<string, unknown>) => {
  main: SessionStoreEntry[];
  subagents: Map<string, SessionStoreEntry[]>;
};

/** The benches' realistic Claude Code 2.x session generator (a .mjs file, loaded by URL). */
async function realisticGenerator(): Promise<Generator> {
  const url = new URL('../../../bench/realistic-transcript.mjs', import.meta.url).href;
  return ((await import(url)) as { generateRealisticSession: Generator }).generateRealisticSession;
}

/** Folds `batches` one after another with `fold`, as a backend does append by append. */
function foldAll(
  fold: typeof sdkFold,
  batches: readonly SessionStoreEntry[][],
  start?: SessionSummaryEntry,
): string[] {
  const texts: string[] = [];
  let summary = start;
  batches.forEach((batch, index) => {
    summary = fold(summary, key, batch, { mtime: 1000 + index });
    texts.push(JSON.stringify(summary));
  });
  return texts;
}

const pasted = (id: string, body: string) =>
  `<pasted_content id="${id}">\n${body}\n</pasted_content id="${id}">`;

/** Text pieces that reach each rule of the first-prompt fold, and ordinary text. */
const fragment = fc.oneof(
  fc.constantFrom(
    '<command-name>/review</command-name>',
    '<command-message>review</command-message>',
    '<command-name>/init</command-name> <command-args>x</command-args>',
    '<bash-input>  ls -la </bash-input>',
    '<bash-stdout>out</bash-stdout>',
    '[Request interrupted by user]',
    '[Request interrupted by user for tool use]',
    '<system-reminder>be brief</system-reminder>',
    '  <local-command-stdout>done</local-command-stdout>',
    pasted('ab12', 'pasted body\nline two'),
    `before\n\n\n${pasted('0f9e', 'body')}\n\n\nafter`,
    `${pasted('0f9e', 'first')}\n${pasted('1234', 'second')}\ntail`,
    pasted('AB12', 'upper-case id is no paste'),
    pasted('zz12', 'not hex'),
    '<pasted_content id="ab12">\nunterminated',
    '\n\n',
    '  ',
    '\n',
    'fix the build',
    '😀',
    '\u{1F600}'.repeat(120),
    `${'a'.repeat(199)}\u{1F600}tail`,
    `${'a'.repeat(199)}\ud800 lone`,
    'é'.repeat(150),
    '<div>html-ish</div>',
  ),
  fc.string({ maxLength: 30 }),
  fc.string({ minLength: 190, maxLength: 260 }),
);
const text = fc.array(fragment, { maxLength: 4 }).map((parts) => parts.join(''));

const content = fc.oneof(
  text,
  fc.array(
    fc.oneof(
      text.map((value) => ({ type: 'text', text: value })),
      fc.constant({ type: 'tool_result', tool_use_id: 'toolu_1', content: 'r' }),
      fc.constant({ type: 'image', source: {} }),
      fc.constant({ type: 'text', text: 7 }),
      fc.constant(null),
      fc.constant('loose string'),
    ),
    { maxLength: 3 },
  ),
  fc.constant(undefined),
);

const maybe = <T>(arbitrary: fc.Arbitrary<T>) => fc.option(arbitrary, { nil: undefined });

const entry: fc.Arbitrary<SessionStoreEntry> = fc
  .record({
    type: fc.constantFrom('user', 'user', 'user', 'assistant', 'tag', 'relocated', 'summary', 'system'),
    uuid: fc.uuid(),
    timestamp: maybe(fc.constantFrom('2026-01-02T03:04:05.678Z', 'not a date', '', '2026-05-01')),
    isSidechain: maybe(fc.constantFrom(true, false, 'yes')),
    isMeta: maybe(fc.boolean()),
    isCompactSummary: maybe(fc.boolean()),
    cwd: maybe(fc.constantFrom('/work/a', '', 3)),
    message: fc.oneof(
      content.map((value) => ({ role: 'user', content: value })),
      fc.constant(undefined),
      fc.constant(null),
    ),
    customTitle: maybe(fc.constantFrom('My title', '', 5)),
    aiTitle: maybe(fc.constantFrom('AI title', '')),
    lastPrompt: maybe(fc.constantFrom('last thing', '')),
    summary: maybe(fc.constantFrom('a summary', 1)),
    gitBranch: maybe(fc.constantFrom('main', 'feature/x')),
    tag: maybe(fc.constantFrom('urgent', '', 4)),
    relocatedCwd: maybe(fc.constantFrom('/moved', '')),
  })
  .map((fields) => {
    // Absent fields are left out, as in a parsed JSONL line.
    const present = Object.entries(fields).filter(([, value]) => value !== undefined);
    return Object.fromEntries(present) as SessionStoreEntry;
  });

describe('foldSessionSummary (ours, without loading the SDK)', () => {
  it('folds realistic sessions exactly as the SDK does, whole and append by append', async () => {
    const generate = await realisticGenerator();
    for (const seed of [1, 2, 3]) {
      const session = generate({ entries: 1500, subagents: 2, seed, sessionId: key.sessionId, cwd: '/w' });
      for (const transcript of [session.main, ...session.subagents.values()]) {
        expect(foldAll(foldSessionSummary, [transcript])).toEqual(foldAll(sdkFold, [transcript]));
        const batches = Array.from({ length: Math.ceil(transcript.length / 7) }, (_, at) =>
          transcript.slice(at * 7, at * 7 + 7),
        );
        expect(foldAll(foldSessionSummary, batches)).toEqual(foldAll(sdkFold, batches));
      }
    }
  });

  it('folds generated entries exactly as the SDK does, onto no summary or a stored one', () => {
    fc.assert(
      fc.property(
        fc.array(fc.array(entry, { maxLength: 6 }), { minLength: 1, maxLength: 4 }),
        fc.option(
          fc.record({
            sessionId: fc.constantFrom('other-id', key.sessionId),
            mtime: fc.nat(),
            data: fc.constantFrom(
              {},
              { firstPrompt: 'kept', firstPromptLocked: true, cwd: '/old' },
              { commandFallback: '/old', tag: 'old', isSidechain: true },
            ),
          }),
          { nil: undefined },
        ),
        (batches, start) => {
          expect(foldAll(foldSessionSummary, batches, start)).toEqual(foldAll(sdkFold, batches, start));
        },
      ),
      { numRuns: 2000 },
    );
  });

  it('sets the mtime as the SDK does and leaves the previous summary unchanged', () => {
    const previous: SessionSummaryEntry = { sessionId: 'x', mtime: 5, data: { cwd: '/a' } };
    const entries = [{ type: 'tag', tag: 't', cwd: '/b' }] as SessionStoreEntry[];
    for (const options of [undefined, {}, { mtime: 9 }]) {
      expect(foldSessionSummary(previous, key, entries, options)).toEqual(
        sdkFold(previous, key, entries, options),
      );
      expect(foldSessionSummary(undefined, key, entries, options)).toEqual(
        sdkFold(undefined, key, entries, options),
      );
    }
    expect(previous).toEqual({ sessionId: 'x', mtime: 5, data: { cwd: '/a' } });
  });
});
