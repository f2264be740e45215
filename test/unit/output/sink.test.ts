import { mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { forgetSecrets, rememberSecrets } from '../../../src/output/secrets.js';
import {
  guarded,
  guardTerminalText,
  shown,
  shownFields,
  shownJsonLine,
  shownLine,
  writeErr,
  writeOut,
  writeOutRaw,
  writeShownFile,
} from '../../../src/output/sink.js';
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
    // Arrays stay arrays, null stays null, numbers and booleans pass as they are.
    expect(shownFields({ list: ['a', ['b']], none: null, yes: true })).toEqual({
      list: ['a', ['b']],
      none: null,
      yes: true,
    });
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

describe('the sink’s writers', () => {
  it('guarded keeps the stream’s isTTY and columns and passes every write through the last pass', () => {
    const written: string[] = [];
    const stream = guarded({ isTTY: true, columns: 93, write: (chunk: string) => written.push(chunk) });
    expect(stream.isTTY).toBe(true);
    expect(stream.columns).toBe(93);
    stream.write(`x${HOSTILE_ESCAPES.clear}${HOSTILE_SECRETS.stripe}`);
    expect(written).toHaveLength(1);
    expect(written[0]).not.toMatch(RAW_CONTROL);
    expect(written[0]).not.toContain(secretCore(HOSTILE_SECRETS.stripe));
  });

  it('lets each of flower’s own controls through by itself, and a carriage return only before one', () => {
    for (const own of ['\x1b[1;32m', '\x1b[K', '\x1b[1A', '\x1b[12D', '\x1b[0m'])
      expect(guardTerminalText(`a${own}b`)).toBe(`a${own}b`);
    for (const foreign of ['\x1b[2J', '\x1b[H', '\x1b[5B', '\x1b[?25l'])
      expect(guardTerminalText(foreign)).not.toContain('\x1b');
    expect(guardTerminalText('a\r\x1b[Kb')).toBe('a\r\x1b[Kb');
    expect(guardTerminalText('a\rb')).toBe('a␍b');
  });

  it('writeOut and writeErr send the guarded text to stdout and stderr; writeOutRaw sends it as is', () => {
    const out: string[] = [];
    const err: string[] = [];
    const stdout = vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => {
      out.push(String(chunk));
      return true;
    });
    const stderr = vi.spyOn(process.stderr, 'write').mockImplementation((chunk) => {
      err.push(String(chunk));
      return true;
    });
    try {
      writeOut(`o${HOSTILE_ESCAPES.title}`);
      writeErr(`e${HOSTILE_ESCAPES.bell}`);
      writeOutRaw(`r${HOSTILE_ESCAPES.bell}`);
    } finally {
      stdout.mockRestore();
      stderr.mockRestore();
    }
    expect(out).toEqual(['o␛]0;PWNED-TITLE␇', `r${HOSTILE_ESCAPES.bell}`]);
    expect(err).toEqual(['e␇']);
  });

  it('writeShownFile writes the shown text 0600 in a directory it creates 0700', () => {
    const root = mkdtempSync(join(tmpdir(), 'flower-sink-'));
    const path = join(root, 'notes', 'deeper', 'note.md');
    writeShownFile(path, `k ${HOSTILE_SECRETS.jwt} ${HOSTILE_ESCAPES.rlo}`);
    const text = readFileSync(path, 'utf8');
    expect(text).not.toContain(secretCore(HOSTILE_SECRETS.jwt));
    expect(text).not.toMatch(RAW_CONTROL);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(statSync(join(root, 'notes', 'deeper')).mode & 0o777).toBe(0o700);
  });
});

describe('the process mask', () => {
  it('masks a longer remembered value whole, before a shorter one it contains, whatever the order told', () => {
    rememberSecrets({ A_TOKEN: 'abcdefgh1234' });
    rememberSecrets({ B_TOKEN: 'abcdefgh1234-and-more-9876' });
    expect(shown('abcdefgh1234-and-more-9876')).toBe('abcd***(26 chars)');
    expect(shown('abcdefgh1234 alone')).toBe('abcd***(12 chars) alone');
  });

  it('masks a secret of a .env file of the lookup chain that is not in the environment', () => {
    const root = mkdtempSync(join(tmpdir(), 'flower-chain-'));
    const file = join(root, 'flower.env');
    writeFileSync(file, 'DEPLOY_TOKEN=chainonlyvalue-0123456789\n');
    const saved = process.env.FLOWER_ENV;
    process.env.FLOWER_ENV = file;
    try {
      forgetSecrets();
      expect(shown('token chainonlyvalue-0123456789 here')).toBe('token chai***(25 chars) here');
    } finally {
      if (saved === undefined) delete process.env.FLOWER_ENV;
      else process.env.FLOWER_ENV = saved;
    }
  });

  it('forgets what it was told once asked to, and reads the environment again', () => {
    rememberSecrets({ SOME_TOKEN: 'rememberedvalue123' });
    expect(shown('rememberedvalue123')).not.toContain('rememberedvalue123');
    forgetSecrets();
    expect(shown('rememberedvalue123')).toBe('rememberedvalue123');
  });
});
