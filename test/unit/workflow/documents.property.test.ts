import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Brief } from '../../../src/workflow/brief.js';
import { Goal } from '../../../src/workflow/goal.js';

/** Plain prose lines: words of lowercase letters, never a section name at the start of a line. */
const word = fc
  .stringMatching(/^[a-z]{1,8}$/)
  .filter(
    (w) =>
      !/^(goals?|scope|assumptions|unknowns|acceptance|boundar|objective|statement|checks?|checklist|done|not|non|out|open)/.test(
        w,
      ),
  );
const line = fc.array(word, { minLength: 1, maxLength: 6 }).map((words) => words.join(' '));
const body = fc.array(line, { minLength: 1, maxLength: 4 }).map((lines) => lines.join('\n'));

describe('documents survive their own files', () => {
  it('a complete brief written to markdown parses back to the same brief', () => {
    fc.assert(
      fc.property(body, body, body, body, (goal, acceptance, boundaries, unknowns) => {
        const brief = new Brief({ goal, acceptance, boundaries, unknowns });
        const again = Brief.parse(brief.toMarkdown());
        expect(again).toEqual(brief);
        expect(Brief.parse(brief.promptBlock())).toEqual(brief);
      }),
    );
  });

  it('a goal written to markdown parses back to the same statement and checks', () => {
    fc.assert(
      fc.property(body, fc.array(line, { minLength: 1, maxLength: 8 }), (statement, checks) => {
        const goal = new Goal({ statement, checks });
        expect(Goal.parse(goal.toMarkdown())).toEqual(goal);
        expect(Goal.parse(goal.promptBlock())).toEqual(goal);
      }),
    );
  });
});
