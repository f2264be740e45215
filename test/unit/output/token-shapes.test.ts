import { describe, expect, it } from 'vitest';
import { maskTokenShapes } from '../../../src/output/token-shapes.js';
import { HOSTILE_SECRETS, secretCore } from '../../support/hostile-payloads.js';

describe('maskTokenShapes', () => {
  it.each(Object.entries(HOSTILE_SECRETS))('masks a %s wherever it sits in a line', (_name, secret) => {
    for (const text of [secret, `before ${secret} after`, `"${secret}"`, `x=${secret};`]) {
      const masked = maskTokenShapes(text);
      expect(masked).not.toContain(secretCore(secret));
      // Only a masked form's first characters show: the rest of the secret never survives, nor
      // its end (a shape cut short would mask a prefix and print the rest).
      expect(masked).not.toContain(secretCore(secret).slice(4));
      expect(masked).not.toContain(secretCore(secret).slice(-8));
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

  it.each(Object.entries(forms))('masks a %s, to its end', (_name, secret) => {
    const body = secret.startsWith('-----') ? secret.split('\n')[1]! : secret.slice(10);
    const masked = maskTokenShapes(`see ${secret} here`);
    expect(masked).not.toContain(body);
    expect(masked).not.toContain(secret.slice(-8));
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
      'accesskey',
      'private_key',
      'privatekey',
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

describe('an AWS secret access key, recognised by the name it is given', () => {
  // Made up, in the shape of AWS's documented example (40 characters of base64).
  const secret = `${'wJalrXUtnFEMI/K7MDENG'}/${'bPxRfiCYz9q8w7e6r5'}`;
  const masked = 'wJal***(40 chars)';

  it.each([
    ['the environment variable', 'export AWS_SECRET_ACCESS_KEY=', ''],
    ['~/.aws/credentials', 'aws_secret_access_key = ', ''],
    ['the legacy credential file', 'AWSSecretKey=', ''],
    ['terraform.tfvars', 'aws_secret_key = "', '"'],
    ["Ansible's parameter in YAML", 'aws_secret_key: "', '"'],
    ['a PHP config array', "'aws_secret_key' => '", "',"],
    ['compact JSON', '{"AWSSecretKey":"', '"}'],
    ["a Ruby hash's inspect", '{"aws_secret_key"=>"', '"}'],
  ])('masks its value in %s, keeping the name', (_where, before, after) => {
    expect(maskTokenShapes(`${before}${secret}${after}`)).toBe(`${before}${masked}${after}`);
  });

  it('masks the 40 characters of the key only, not the text glued after it', () => {
    // A Java object's toString (Lombok's form) in a log line.
    const line = `AwsCredentials(awsAccessKeyId=${'AKIA'}IOSFODNN7EXAMPLE, awsSecretAccessKey=${secret})`;
    expect(maskTokenShapes(line)).toBe(
      `AwsCredentials(awsAccessKeyId=AKIA***(20 chars), awsSecretAccessKey=${masked})`,
    );
    expect(maskTokenShapes(`AWS_SECRET_ACCESS_KEY=${secret}&region=eu-west-1`)).toBe(
      `AWS_SECRET_ACCESS_KEY=${masked}&region=eu-west-1`,
    );
  });
});

describe('secret assignments in the formats tools print them', () => {
  it('masks the secrets of temporary AWS credentials (aws sts assume-role), keeping the key id shape', () => {
    const output = `"AccessKeyId": "${'ASIA'}QXZ3J7K2M4N6P2R5", "SecretAccessKey": "${'9drTJvcXLB89EXAMPLE'}LB8xEtdVk2n"`;
    expect(maskTokenShapes(output)).toBe(
      '"AccessKeyId": "ASIA***(20 chars)", "SecretAccessKey": "9drT***(30 chars)"',
    );
  });

  it('masks a password in a PHP, Perl or Ruby array, spaced around `=>` or not', () => {
    expect(maskTokenShapes(`'password' => '${'Sup3rS3cr3t'}Db',`)).toBe("'password' => 'Sup3***(13 chars)',");
    expect(maskTokenShapes(`{"db_password"=>"${'Sup3rS3cr3t'}Db"}`)).toBe(
      '{"db_password"=>"Sup3***(13 chars)"}',
    );
  });

  it('leaves a JavaScript arrow function alone, even with a secret-like parameter', () => {
    for (const code of [
      'tokens.map(token => token.trim())',
      'const check = (password) => hashPassword(password);',
    ])
      expect(maskTokenShapes(code)).toBe(code);
  });

  it("masks a WireGuard interface's private key", () => {
    expect(maskTokenShapes(`PrivateKey = ${'yAnz5TF+lXXJte14tji3zlMNq'}+hd2rYUIgJBgB3fBmk=`)).toBe(
      'PrivateKey = yAnz***(44 chars)',
    );
  });
});
