import { describe, expect, it } from 'vitest';
import {
  errorLine,
  SHOWN_VALUE_CHARS,
  shownMessage,
  shownSetting,
} from '../../../../src/cli/terminal/shown-text.js';
import { maskSecret } from '../../../../src/config/credentials.js';
import { rememberSecrets } from '../../../../src/output/secrets.js';

describe('shownSetting', () => {
  it('shows escape sequences and controls of a value inert', () => {
    expect(shownSetting('ANTHROPIC_MODEL', 'claude\x1b]0;title\x07\x1b[2Jx\ty')).toBe(
      'claude␛]0;title␇␛[2Jx y',
    );
  });

  it('masks a secret and cuts a long value, saying how long it was', () => {
    expect(shownSetting('ANTHROPIC_API_KEY', 'sk-0123456789')).toBe(maskSecret('sk-0123456789'));
    const long = 'a'.repeat(3000);
    expect(shownSetting('JUNK', long)).toBe(`${'a'.repeat(SHOWN_VALUE_CHARS)}... (3000 characters in all)`);
  });
});

describe('shownMessage and errorLine', () => {
  it('mask and neutralise, keeping line breaks', () => {
    rememberSecrets({ ANTHROPIC_API_KEY: 'sk-0123456789' });
    expect(shownMessage('bad key sk-0123456789\x1b[31m\nnext')).toBe(
      `bad key ${maskSecret('sk-0123456789')}␛[31m\nnext`,
    );
    expect(errorLine(new Error('a\x07b'))).toBe('flower: a␇b');
  });
});
