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

describe('every form of each shape', () => {
  // Each alternative of a shape, so that dropping one from its pattern fails here.
  const forms: Record<string, string> = {
    'Anthropic admin key': 'sk-ant-admin01-Zx8Kq2Lm4Np6Rt8Vw0Yb2Dc4Fg6',
    'OpenAI service-account key': 'sk-svcacct-Qw3Er5Ty7Ui9Op1As3Df5Gh7Jk9',
    'OpenAI admin key': 'sk-admin-Qw3Er5Ty7Ui9Op1As3Df5Gh7Jk9',
    'OpenAI legacy key': 'sk-Qw3Er5Ty7Ui9Op1As3Df5Gh7Jk9Lz1Xc3Vb5',
    'GitHub OAuth token': `gho_${'A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8'}`,
    'GitHub user-to-server token': `ghu_${'A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8'}`,
    'GitHub server-to-server token': `ghs_${'A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8'}`,
    'GitHub refresh token': `ghr_${'A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8'}`,
    'GitHub fine-grained token': `github_pat_${'11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz'}`,
    'GitLab deploy token': `gldt-${'xY7zQ2wE4rT6yU8iO0pA'}`,
    'GitLab runner token': `glrt-${'xY7zQ2wE4rT6yU8iO0pA'}`,
    'GitLab pipeline trigger token': `glptt-${'xY7zQ2wE4rT6yU8iO0pA'}`,
    'GitLab feed token': `glft-${'xY7zQ2wE4rT6yU8iO0pA'}`,
    'GitLab CI build token': `glcbt-${'xY7zQ2wE4rT6yU8iO0pA'}`,
    'GitLab incoming mail token': `glimt-${'xY7zQ2wE4rT6yU8iO0pA'}`,
    'GitLab OAuth secret': `gloas-${'xY7zQ2wE4rT6yU8iO0pA'}`,
    'GitLab SCIM token': `glsoat-${'xY7zQ2wE4rT6yU8iO0pA'}`,
    'AWS temporary key id': `ASIA${'QXZ3J7K2M4N6P2R5'}`,
    'AWS role key id': `ABIA${'QXZ3J7K2M4N6P2R5'}`,
    'AWS context key id': `ACCA${'QXZ3J7K2M4N6P2R5'}`,
    'AWS A3T key id': `A3TX${'QXZ3J7K2M4N6P2R5'}`,
    'Slack app-level token': `xapp-1-${'A0123456789-0123456789-abcdef'}`,
    'Slack user token': `xoxp-${'123456789012-1234567890123-AbCd'}`,
    'Slack webhook': `https://hooks.slack.com/services/${'T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX'}`,
    'Slack workflow webhook': `https://hooks.slack.com/workflows/${'T00000000/A00000000/123456789/abcdefgh'}`,
    'Stripe restricted test key': `rk_test_${'51HxYzAbCdEfGhIjKlMn'}`,
    'Stripe publishable key': `pk_live_${'51HxYzAbCdEfGhIjKlMn'}`,
    'EC private key': [
      `-----BEGIN ${'EC PRIVATE'} KEY-----`,
      'MHcCAQEEIAbCdEfGhIjKlMnOpQrStUvWxYz0123456789abcdefghijk',
      `-----END ${'EC PRIVATE'} KEY-----`,
    ].join('\n'),
    'a private key block cut short': `-----BEGIN ${'OPENSSH PRIVATE'} KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ`,
  };

  it.each(Object.entries(forms))('masks a %s', (_name, secret) => {
    const body = secret.startsWith('-----') ? secret.split('\n')[1]! : secret.slice(10);
    expect(maskTokenShapes(`see ${secret} here`)).not.toContain(body);
  });

  it('masks a private key block up to its end line only: the text after it stays', () => {
    const masked = maskTokenShapes(`${HOSTILE_SECRETS.pem}\nafter the key`);
    expect(masked).toMatch(/^\[private key block: \d+ chars masked\]\nafter the key$/);
  });

  it('masks the value of assignments of every secret-like name, quoted or not', () => {
    for (const name of [
      'password',
      'passwd',
      'client_secret',
      'auth_token',
      'api_key',
      'api-key',
      'apikey',
      'access_key',
      'private_key',
    ])
      for (const text of [`${name}=Abcdef123456`, `"${name}": "Abcdef123456"`, `${name}: Abcdef123456`]) {
        expect(maskTokenShapes(text), text).not.toContain('Abcdef123456');
        expect(maskTokenShapes(text), text).toContain(name);
      }
  });

  it('masks a URL password whatever the scheme, keeping user and host', () => {
    expect(maskTokenShapes('https://deploy:t0ps3cr3t@git.example.com/x.git')).toBe(
      'https://deploy:***@git.example.com/x.git',
    );
    expect(maskTokenShapes('redis://:hunter2pw@cache:6379')).toBe('redis://:***@cache:6379');
  });
});
