import { describe, expect, it } from 'vitest';
import { maskTokenShapes, TOKEN_SHAPES } from '../../../src/output/token-shapes.js';
import { HOSTILE_SECRETS, secretCore } from '../../support/hostile-payloads.js';

describe('maskTokenShapes', () => {
  it.each(Object.entries(HOSTILE_SECRETS))('masks a %s wherever it sits in a line', (_name, secret) => {
    for (const text of [secret, `before ${secret} after`, `"${secret}"`, `x=${secret};`]) {
      const masked = maskTokenShapes(text);
      expect(masked).not.toContain(secretCore(secret));
      // Only a masked form's first characters show: the rest of the secret never survives.
      expect(masked).not.toContain(secretCore(secret).slice(4));
    }
  });

  it('keeps what is not secret: a URL keeps its user and host, an assignment its name', () => {
    expect(maskTokenShapes('postgres://app:hunter2pass@db.internal:5432/prod')).toBe(
      'postgres://app:***@db.internal:5432/prod',
    );
    expect(maskTokenShapes('DB_PASSWORD=S3cretPa55word!')).toBe('DB_PASSWORD=S3cr***(15 chars)');
    expect(maskTokenShapes('aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY')).toBe(
      'aws_secret_access_key = wJal***(40 chars)',
    );
  });

  it('is idempotent: a masked form matches no shape again', () => {
    for (const secret of Object.values(HOSTILE_SECRETS)) {
      const once = maskTokenShapes(`value ${secret} end`);
      expect(maskTokenShapes(once)).toBe(once);
    }
  });

  it('leaves ordinary text alone: hashes, uuids, prose about tokens, short assignments', () => {
    const ordinary = [
      'commit 3f9c2a1b7d4e5f60718293a4b5c6d7e8f9012345',
      'session 0b8e4a52-1c3d-4e5f-9a6b-7c8d9e0f1a2b',
      'the token: see README',
      'password=short',
      'const token = await getToken();',
      'sk-learn is a library; skip-ant-tests',
      'https://example.com/path?q=1',
      'user@example.com',
    ];
    for (const text of ordinary) expect(maskTokenShapes(text)).toBe(text);
  });

  it('names every shape', () => {
    expect(new Set(TOKEN_SHAPES.map((shape) => shape.name)).size).toBe(TOKEN_SHAPES.length);
  });
});

describe('a token glued to the text before it', () => {
  it.each(
    Object.entries(HOSTILE_SECRETS).filter(
      ([name]) => !['urlPassword', 'dbPassword', 'awsSecret', 'pem'].includes(name),
    ),
  )('masks a %s right after a letter, a digit, a shown escape or a JSON \\n', (_name, secret) => {
    for (const before of ['txt.exe', 'x9', '␛[H', '\\n']) {
      expect(maskTokenShapes(`${before}${secret}`)).not.toContain(secretCore(secret).slice(4));
    }
  });

  it('keeps the word boundary for the bare sk- form, which ordinary words end in', () => {
    expect(maskTokenShapes('risk-assessment-document-version-two')).toBe(
      'risk-assessment-document-version-two',
    );
  });
});

describe('cost', () => {
  // Ratio of two sizes measured in the same process (no absolute time): linear work grows 8× from
  // 16 KiB to 128 KiB, quadratic 64×. An unbounded name prefix in the assignment shape was quadratic
  // on runs such as `a.a.a.` (observed: 297 s on 128 KiB).
  function fastest(text: string): number {
    let best = Number.POSITIVE_INFINITY;
    for (let round = 0; round < 3; round += 1) {
      const started = process.cpuUsage();
      maskTokenShapes(text);
      const used = process.cpuUsage(started);
      best = Math.min(best, used.user + used.system + 1);
    }
    return best;
  }

  it.each(['a.', 'a-', 'ab', 'a_'])(
    'grows linearly with a long run of %s (no backtracking blow-up)',
    (unit) => {
      const small = fastest(unit.repeat(8 * 1024));
      const large = fastest(unit.repeat(64 * 1024));
      expect(large / small).toBeLessThan(32);
    },
  );
});
