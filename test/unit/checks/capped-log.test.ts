/**
 * A check's log (checks/capped-log.ts): the head and the tail of the output with the cut said in
 * the middle, bounded memory however much is written, its text shown (secrets masked, controls
 * inert, a key block masked whole even across the cut), and privacy (0600 files whatever the umask,
 * a 0700 directory, planted symlinks replaced rather than followed). Real files; the runner's side
 * is runner.test.ts and check-logs-shown.test.ts.
 */
import {
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  CappedLog,
  cutNotice,
  defaultCheckLogPolicy,
  privateDirectory,
  writePrivateFile,
} from '../../../src/checks/capped-log.js';
import { HOSTILE_ESCAPES, HOSTILE_SECRETS, RAW_CONTROL, secretCore } from '../../support/hostile-payloads.js';

const dir = () => realpathSync(mkdtempSync(join(tmpdir(), 'flower-log-')));
const mode = (path: string) => lstatSync(path).mode & 0o777;

/** Writes `chunks` through a fresh log at a new path and returns the summary and the file's text. */
function logged(chunks: string[], policy = { headBytes: 16, tailBytes: 16 }) {
  const path = join(dir(), 'item-1.log');
  const log = CappedLog.create(path, policy);
  for (const chunk of chunks) log.write(Buffer.from(chunk));
  return { ...log.close(), text: readFileSync(path, 'utf8'), path };
}

describe('a capped check log', () => {
  it('keeps every byte when the output fits in head and tail, and cuts nothing', () => {
    const exact = 'a'.repeat(16) + 'b'.repeat(16);
    expect(logged([exact])).toMatchObject({ text: exact, cutBytes: 0, printedBytes: 32 });
    expect(logged(['one\n', 'two\n'])).toMatchObject({ text: 'one\ntwo\n', cutBytes: 0 });
    expect(logged([])).toMatchObject({ text: '', cutBytes: 0, printedBytes: 0 });
  });

  it('keeps the first and last lines and says in the middle how much was cut', () => {
    const lines = Array.from({ length: 100 }, (_, index) => `line ${String(index).padStart(3, '0')}\n`);
    const printed = lines.join('');
    const policy = { headBytes: 20, tailBytes: 20 };
    const { text, cutBytes, printedBytes } = logged(lines, policy);
    // The head is cut back to its last line break, the tail forward to its first one.
    const head = 'line 000\nline 001\n';
    const tail = 'line 098\nline 099\n';
    expect(printedBytes).toBe(printed.length);
    expect(cutBytes).toBe(printed.length - head.length - tail.length);
    expect(text).toBe(`${head}${cutNotice(cutBytes, printed.length, policy)}\n${tail}`);
    expect(text).toContain(`[flower cut ${cutBytes} bytes here: the check printed ${printed.length} bytes`);
  });

  it('puts the notice on a line of its own when the output has no line breaks', () => {
    const policy = { headBytes: 8, tailBytes: 8 };
    const { text, cutBytes } = logged(['x'.repeat(100)], policy);
    expect(cutBytes).toBe(84);
    expect(text).toBe(`${'x'.repeat(8)}\n${cutNotice(84, 100, policy)}\n${'x'.repeat(8)}`);
  });

  it('keeps what was printed around the cut, whatever the chunks (property)', () => {
    fc.assert(
      fc.property(
        fc.array(fc.string({ unit: fc.constantFrom('a', 'b', '\n'), maxLength: 40 }), { maxLength: 12 }),
        fc.nat(30),
        fc.nat(30),
        (chunks, headBytes, tailBytes) => {
          const printed = chunks.join('');
          const { text, cutBytes, printedBytes } = logged(chunks, { headBytes, tailBytes });
          expect(printedBytes).toBe(printed.length);
          if (cutBytes === 0) {
            expect(text).toBe(printed);
            return;
          }
          const notice = cutNotice(cutBytes, printed.length, { headBytes, tailBytes });
          const parts = text.split(`${notice}\n`);
          expect(parts).toHaveLength(2);
          const [before = '', tail = ''] = parts;
          // Before the notice: the kept head, and a line break of the log's own when it had none.
          const head = before.slice(0, printed.length - cutBytes - tail.length);
          expect([head, `${head}\n`]).toContain(before);
          expect(before === '' || before.endsWith('\n')).toBe(true);
          expect(printed.startsWith(head)).toBe(true);
          expect(printed.endsWith(tail)).toBe(true);
          expect(head.length).toBeLessThanOrEqual(headBytes);
          expect(tail.length).toBeLessThanOrEqual(tailBytes);
        },
      ),
    );
  });

  it('holds at most its head and its tail in memory, and nothing on disk, while 100 MB stream through', () => {
    const path = join(dir(), 'big.log');
    const log = CappedLog.create(path);
    const chunk = Buffer.alloc(64 * 1024, 'a line of output\n');
    const { headBytes, tailBytes } = defaultCheckLogPolicy;
    let mostHeld = 0;
    for (let written = 0; written < 100 * 1024 * 1024; written += chunk.length) {
      log.write(chunk);
      mostHeld = Math.max(mostHeld, log.heldBytes);
      // Nothing the check printed is on disk before it is shown (masked) at the close.
      if (written % (16 * 1024 * 1024) === 0) expect(statSync(path).size).toBe(0);
    }
    expect(mostHeld).toBeLessThanOrEqual(headBytes + tailBytes);
    const { printedBytes, cutBytes } = log.close();
    expect(printedBytes).toBe(100 * 1024 * 1024);
    expect(statSync(path).size).toBeLessThan(headBytes + tailBytes + 1024);
    expect(statSync(path).size).toBe(
      printedBytes -
        cutBytes +
        Buffer.byteLength(`${cutNotice(cutBytes, printedBytes, defaultCheckLogPolicy)}\n`),
    );
  });
});

describe('a check log people read', () => {
  const printed = [
    ...Object.values(HOSTILE_SECRETS).map((secret) => `leaked: ${secret}`),
    ...Object.entries(HOSTILE_ESCAPES).map(([name, payload]) => `${name}: ${payload}`),
  ].join('\n');

  it('holds no secret in clear and no raw control; the raw text stays in memory for the runner', () => {
    const { text, raw } = logged([printed], { headBytes: 1 << 20, tailBytes: 1 << 20 });
    for (const secret of Object.values(HOSTILE_SECRETS)) expect(text).not.toContain(secretCore(secret));
    expect(text).not.toMatch(RAW_CONTROL);
    // Visible, not dropped: a reader sees that a title sequence was there, and what it said.
    expect(text).toContain('\u241b]0;PWNED-TITLE\u2407');
    expect(text).toContain('[U+202E]txt.exe');
    expect(raw).toBe(printed);
  });

  it('masks a secret that arrived split between two chunks', () => {
    const secret = HOSTILE_SECRETS.github!;
    const { text } = logged([`token ${secret.slice(0, 10)}`, `${secret.slice(10)} done\n`], {
      headBytes: 1024,
      tailBytes: 1024,
    });
    expect(text).not.toContain(secret);
    expect(text).toContain('done');
  });

  it('masks a private key block the cut runs through: its lines after the cut too', () => {
    // A long key (a 4096-bit one is about fifty lines): the head ends inside it, the tail starts inside it.
    const body = Array.from(
      { length: 50 },
      (_, line) => `K${String(line).padStart(2, '0')}${'Qw3Er5Ty7Ui9Op1A'.repeat(4)}`,
    );
    const pem = [`-----BEGIN ${'RSA PRIVATE'} KEY-----`, ...body, `-----END ${'RSA PRIVATE'} KEY-----`];
    const chunks = [
      `${HOSTILE_SECRETS.anthropic}\n`,
      ...pem.map((line) => `${line}\n`),
      `${HOSTILE_SECRETS.stripe}\n`,
    ];
    const lineBytes = body[0]!.length + 1;
    const policy = { headBytes: chunks[0]!.length + 32 + 5 * lineBytes, tailBytes: 10 * lineBytes };
    const { text, cutBytes, raw } = logged(chunks, policy);
    expect(cutBytes).toBeGreaterThan(0);
    // The raw text does hold key lines from both sides of the cut, so the mask had work to do.
    expect(raw).toContain(body[1]);
    expect(raw).toContain(body[45]);
    for (const line of body) expect(text).not.toContain(line);
    expect(text).toContain('[private key block');
    expect(text).not.toContain(secretCore(HOSTILE_SECRETS.anthropic!));
    expect(text).not.toContain(secretCore(HOSTILE_SECRETS.stripe!));
  });
});

describe('a private check log', () => {
  it('is created 0600, replacing an old readable log', () => {
    const path = join(dir(), 'item-1.log');
    writeFileSync(path, 'old', { mode: 0o644 });
    const log = CappedLog.create(path);
    log.write(Buffer.from('new\n'));
    log.close();
    expect(mode(path)).toBe(0o600);
    expect(readFileSync(path, 'utf8')).toBe('new\n');
    writePrivateFile(join(dirname(path), 'why.log'), 'it could not start\n');
    expect(mode(join(dirname(path), 'why.log'))).toBe(0o600);
  });

  it('is 0600 whatever the umask: a loose one does not open it, a strict one does not lock its owner out', () => {
    const root = dir();
    for (const umask of [0o000, 0o022, 0o277]) {
      const previous = process.umask(umask);
      try {
        const path = join(root, `umask-${umask.toString(8)}.log`);
        writePrivateFile(path, 'why it did not run\n');
        expect([umask, mode(path)]).toEqual([umask, 0o600]);
      } finally {
        process.umask(previous);
      }
    }
  });

  it('replaces a symlink planted at its path instead of writing through it', () => {
    const root = dir();
    const victim = join(root, 'victim.txt');
    writeFileSync(victim, 'keep me\n');
    const path = join(root, 'item-1.log');
    symlinkSync(victim, path);
    const log = CappedLog.create(path);
    log.write(Buffer.from('check output\n'));
    log.close();
    expect(readFileSync(victim, 'utf8')).toBe('keep me\n');
    expect(lstatSync(path).isSymbolicLink()).toBe(false);
    expect(readFileSync(path, 'utf8')).toBe('check output\n');
  });

  it('makes its round directory 0700, even one that existed readable or as a symlink', () => {
    const root = dir();
    const open = join(root, 'checks', '1');
    mkdirSync(open, { recursive: true, mode: 0o755 });
    privateDirectory(open);
    expect(mode(open)).toBe(0o700);
    const elsewhere = join(root, 'elsewhere');
    mkdirSync(elsewhere, { mode: 0o755 });
    const planted = join(root, 'checks', '2');
    symlinkSync(elsewhere, planted);
    privateDirectory(planted);
    expect(lstatSync(planted).isDirectory()).toBe(true);
    expect(mode(planted)).toBe(0o700);
    expect(mode(elsewhere)).toBe(0o755);
    const fresh = join(root, 'new', 'checks', '3');
    privateDirectory(fresh);
    expect(mode(fresh)).toBe(0o700);
  });
});
