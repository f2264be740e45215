import { describe, expect, it } from 'vitest';
import { asideQuestion, routeLine } from '../../../../src/cli/interaction/input-routing.js';

const idle = { interruptArmed: false, pendingAskId: undefined };
const asking = { interruptArmed: false, pendingAskId: 'q1' };
const armed = { interruptArmed: true, pendingAskId: 'q1' };

describe('routeLine', () => {
  it('gives the line to an armed interrupt first, even when empty or a question', () => {
    expect(routeLine("don't touch the Makefile", armed)).toEqual({
      kind: 'interrupt',
      message: "don't touch the Makefile",
    });
    expect(routeLine('', armed)).toEqual({ kind: 'interrupt', message: '' });
    expect(routeLine('? where are we', armed)).toEqual({ kind: 'interrupt', message: '? where are we' });
  });

  it('sends a line starting with ? or the full-width ？ to the oracle, question pending or not', () => {
    expect(routeLine('? where are we', idle)).toEqual({ kind: 'aside', question: 'where are we' });
    expect(routeLine('？现在到哪了', asking)).toEqual({ kind: 'aside', question: '现在到哪了' });
    expect(routeLine('  ?why', idle)).toEqual({ kind: 'aside', question: 'why' });
  });

  it('ignores an empty side question', () => {
    expect(routeLine('?', idle)).toEqual({ kind: 'nothing' });
    expect(routeLine('？  ', asking)).toEqual({ kind: 'nothing' });
  });

  it('skips a pending question on an empty line', () => {
    expect(routeLine('', asking)).toEqual({ kind: 'skip', askId: 'q1' });
    expect(routeLine('   ', asking)).toEqual({ kind: 'skip', askId: 'q1' });
  });

  it('answers a pending question with the text or an option number', () => {
    expect(routeLine(' Python 3 ', asking)).toEqual({ kind: 'answer', askId: 'q1', text: 'Python 3' });
    expect(routeLine('2', asking)).toEqual({ kind: 'answer', askId: 'q1', text: '2' });
    expect(routeLine('２', asking)).toEqual({ kind: 'answer', askId: 'q1', text: '2' });
    expect(routeLine('ＡＢＣ', asking)).toEqual({ kind: 'answer', askId: 'q1', text: 'ＡＢＣ' });
  });

  it('asks again for a number that is no option of the pending question', () => {
    const twoOptions = { ...asking, pendingOptions: 2 };
    expect(routeLine('2', twoOptions)).toEqual({ kind: 'answer', askId: 'q1', text: '2' });
    expect(routeLine('3', twoOptions)).toEqual({ kind: 'reask', askId: 'q1', options: 2, typed: '3' });
    expect(routeLine('0', twoOptions)).toEqual({ kind: 'reask', askId: 'q1', options: 2, typed: '0' });
    expect(routeLine('７', twoOptions)).toEqual({ kind: 'reask', askId: 'q1', options: 2, typed: '7' });
    // Words are an answer, whatever they say; a question without options takes any number.
    expect(routeLine('3 of them', twoOptions)).toEqual({ kind: 'answer', askId: 'q1', text: '3 of them' });
    expect(routeLine('42', { ...asking, pendingOptions: 0 })).toEqual({
      kind: 'answer',
      askId: 'q1',
      text: '42',
    });
  });

  it('does nothing with an empty line when nothing is pending', () => {
    expect(routeLine('', idle)).toEqual({ kind: 'nothing' });
  });

  it('sends other text, numbers included, to the inbox when nothing is pending', () => {
    expect(routeLine('also report total bytes', idle)).toEqual({
      kind: 'mail',
      text: 'also report total bytes',
    });
    expect(routeLine('2', idle)).toEqual({ kind: 'mail', text: '2' });
  });
});

describe('asideQuestion', () => {
  it('is undefined for lines that are not side questions', () => {
    expect(asideQuestion('why?')).toBeUndefined();
    expect(asideQuestion('')).toBeUndefined();
  });
});
