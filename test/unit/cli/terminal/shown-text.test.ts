import { describe, expect, it } from 'vitest';
import {
  errorLine,
  SHOWN_VALUE_CHARS,
  shownMessage,
  shownSetting,
} from '../../../../src/cli/terminal/shown-text.js';
import { maskSecret } from '../../../../src/config/credentials.js';
import { secretMask } from '../../../../src/config/secret-mask.js';

describe('shownSetting', () => {
  it('removes escape sequences and controls from a value', () => {
    expect(shownSetting('ANTHROPIC_MODEL', 'claude\x1b]0;title\x07\x1b[2Jx\ty')).toBe('claudex y');
  });

  it('masks a secret and cuts a long value, saying how long it was', () => {
    expect(shownSetting('ANTHROPIC_API_KEY', 'sk-0123456789')).toBe(maskSecret('sk-0123456789'));
    const long = 'a'.repeat(3000);
    expect(shownSetting('JUNK', long)).toBe(`${'a'.repeat(SHOWN_VALUE_CHARS)}... (3000 characters in all)`);
  });
});

describe('shownMessage and errorLine', () => {
  it('mask and sanitise, keeping line breaks', () => {
    const mask = secretMask({ ANTHROPIC_API_KEY: 'sk-0123456789' });
    expect(shownMessage('bad key sk-0123456789\x1b[31m\nnext', mask)).toBe(
      `bad key ${maskSecret('sk-0123456789')}\nnext`,
    );
    expect(errorLine(new Error('a\x07b'))).toBe('flower: ab');
  });
});
