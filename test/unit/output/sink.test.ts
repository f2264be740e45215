import { afterEach, describe, expect, it } from 'vitest';
import { forgetSecrets, rememberSecrets } from '../../../src/output/secrets.js';
import { guardTerminalText, shown, shownFields, shownJsonLine, shownLine } from '../../../src/output/sink.js';
import { HOSTILE_ESCAPES, HOSTILE_SECRETS, RAW_CONTROL, secretCore } from '../../support/hostile-payloads.js';

const KEY = 'sk-ant-api03-flowerSinkTestKeyValue0123456789';
const everything = [...Object.values(HOSTILE_SECRETS), ...Object.values(HOSTILE_ESCAPES)].join('\n');
const cores = Object.values(HOSTILE_SECRETS).map(secretCore);

afterEach(() => forgetSecrets());

function expectClean(text: string): void {
  for (const core of cores) expect(text).not.toContain(core);
  expect(text).not.toMatch(RAW_CONTROL);
}

describe('the output sink', () => {
  it('shown: no secret core and no raw control out of every payload at once', () => {
    expectClean(shown(everything));
    expectClean(shownLine(everything));
  });

  it('masks the values of credential variables it was told about, even of no known shape', () => {
    rememberSecrets({ MY_SERVICE_TOKEN: 'plainvalue-without-any-shape-42' });
    expect(shown('got plainvalue-without-any-shape-42 back')).toBe('got plai***(31 chars) back');
  });

  it('shownFields masks and neutralises every string of a JSON value, keys included', () => {
    const value = {
      [`tool${HOSTILE_ESCAPES.title}`]: [HOSTILE_SECRETS.github, { deep: HOSTILE_ESCAPES.rlo }],
      n: 3,
    };
    const text = JSON.stringify(shownFields(value));
    expectClean(JSON.parse(text) === null ? '' : text);
    expect(shownFields(value).n).toBe(3);
  });

  it('shownJsonLine: one line, valid JSON, no secret even right after an escape, C1 and bidi escaped', () => {
    rememberSecrets({ ANTHROPIC_API_KEY: KEY });
    const entry = { text: `notes:\n${HOSTILE_SECRETS.github}`, key: `"${KEY}"`, bidi: '\u202e\x9b' };
    const line = shownJsonLine(entry);
    expect(line).not.toContain('\n');
    expect(line).not.toContain(secretCore(HOSTILE_SECRETS.github));
    expect(line).not.toContain(KEY);
    expect(line).not.toMatch(RAW_CONTROL);
    expect(JSON.parse(line).bidi).toBe('\u202e\x9b');
  });

  it('the last pass lets flower’s own colours and footer controls through and nothing else', () => {
    const own = '\x1b[32mok\x1b[39m\r\x1b[K\x1b[1A\x1b[3D';
    expect(guardTerminalText(own)).toBe(own);
    expect(guardTerminalText(`a${HOSTILE_ESCAPES.title}b\rc`)).toBe('a␛]0;PWNED-TITLE␇b␍c');
    expect(guardTerminalText(HOSTILE_SECRETS.slack)).not.toContain(secretCore(HOSTILE_SECRETS.slack));
  });
});
