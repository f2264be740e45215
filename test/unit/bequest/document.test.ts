import { describe, expect, it } from 'vitest';
import {
  BEQUEST_TITLE,
  Bequest,
  bequestPrompt,
  DEGRADED_MARK,
  mechanicalBequest,
} from '../../../src/bequest/document.js';

const REPLY = [
  '## What this is',
  'A word counter, wc.py.',
  '## Acceptance: met and not met',
  '- counts words: met (tests pass)',
  '## Generated files and what makes them',
  '- dist/wc: built by `make`',
  '## Dead ends',
  '- a regex tokenizer was too slow',
  '## The workbench and how to read it',
  '.flower/notes/brief.md first.',
].join('\n');

describe('Bequest', () => {
  it("reads the five sections and writes them under flower's title, with flower's facts first in acceptance", () => {
    const bequest = Bequest.parse(REPLY);
    expect(bequest.complete).toBe(true);
    const body = bequest.body('flower: the judge ruled the goal achieved.');
    expect(body.startsWith(`${BEQUEST_TITLE}\n\n> You were not part of the run`)).toBe(true);
    expect(body).toContain(
      '### Acceptance: met and not met\n\nflower: the judge ruled the goal achieved.\n\n- counts words: met (tests pass)',
    );
    expect(body.indexOf('### What this is')).toBeLessThan(body.indexOf('### Dead ends'));
    expect(body).toContain('### Generated files and what makes them\n\n- dist/wc: built by `make`');
  });

  it('needs "what this is" and "the workbench"; headings from the reference\'s language are read too', () => {
    expect(Bequest.parse('## Dead ends\nnone').missing()).toEqual(['what', 'workbench']);
    expect(Bequest.parse('## 这是什么\n一个计数器\n## 工作台在哪\n.flower').complete).toBe(true);
  });

  it('assembles a degraded one mechanically, marked and saying why', () => {
    const bequest = mechanicalBequest({
      what: 'hello.py greets.',
      workbench: '.flower',
      why: 'the turn failed: 500',
    });
    expect(bequest.degraded).toBe(true);
    const body = bequest.body('flower: stopped.');
    expect(body).toContain(
      `${DEGRADED_MARK} The closing turn could not write the handoff (the turn failed: 500). hello.py greets.`,
    );
    expect(body).toContain("flower's workbench is .flower: notes/ holds the brief");
    expect(mechanicalBequest({ workbench: '.flower', why: 'x' }).sections.what).toContain('notes/brief.md');
  });

  it('asks for the five sections and never to write the files itself', () => {
    const prompt = bequestPrompt('# How it ended\nachieved');
    expect(prompt).toContain('## What this is');
    expect(prompt).toContain('## The workbench and how to read it');
    expect(prompt).toContain('Do not create or edit CLAUDE.md or AGENTS.md yourself');
    expect(prompt).toContain('# How it ended\nachieved');
  });
});
