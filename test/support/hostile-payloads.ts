/**
 * Hostile payloads for the output sink's tests: secrets in the formats the sink must recognise by
 * shape (they look real and are not), and escape payloads a model could emit. One list, so the unit
 * tests and the hostile end-to-end run check the same things.
 */

/** One made-up secret per recognised format (built from pieces so no scanner flags this file). */
export const HOSTILE_SECRETS = {
  anthropic: ['sk-ant-api03', 'Zx8Kq2Lm4Np6Rt8Vw0Yb2Dc4Fg6Hj8Kl0Mn2Pq4Rs6Tu8Vw0Xy2Za4Bc6De8Fg0-AAAA'].join(
    '-',
  ),
  openai: ['sk-proj', 'Qw3Er5Ty7Ui9Op1As3Df5Gh7Jk9Lz1Xc3Vb5Nm7Qw9Er1Ty3Ui5'].join('-'),
  github: `${'ghp'}_${'R4nd0mT0k3nV4lu3F0rT3st1ngOnlyXyZ12'}34`,
  gitlab: `${'glpat'}-${'xY7zQ2wE4rT6yU8iO0pA'}`,
  awsKeyId: `${'AKIA'}${'QXZ3J7K2M4N6P2R5'}`,
  awsSecret: `aws_secret_access_key=${'wJalrXUtnFEMI/K7MDENG/bPxRfiCYz9q8w7e6r5'}`,
  google: `${'AIza'}${'SyD-3x4mpl3K3yF0rT3st1ng0nly_abcdef'}`,
  slack: `${'xoxb'}-${'123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx'}`,
  stripe: `${'sk_live'}_${'51HxYzAbCdEfGhIjKlMnOpQr'}`,
  jwt: `${'eyJhbGciOiJIUzI1NiJ9'}.${'eyJzdWIiOiJmbG93ZXItdGVzdCJ9'}.${'c2lnbmF0dXJlLXRoYXQtaXMtbm90LXJlYWw'}`,
  pem: [
    `-----BEGIN ${'RSA PRIVATE'} KEY-----`,
    'MIIEowIBAAKCAQEA7m9x2Qw3Er5Ty7Ui9Op1As3Df5Gh7Jk9Lz1Xc3Vb5Nm7Qw9E',
    'r1Ty3Ui5Op7As9Df1Gh3Jk5Lz7Xc9Vb1Nm3Qw5Er7Ty9Ui1Op3As5Df7Gh9Jk1L',
    `-----END ${'RSA PRIVATE'} KEY-----`,
  ].join('\n'),
  urlPassword: `postgres://app:${'Pr0dDbP4ssw0rd'}@db.internal:5432/prod`,
  dbPassword: `DB_PASSWORD=${'Sup3rS3cr3tFromFile'}`,
} satisfies Record<string, string>;

/** The part of each secret that must never be printed (for an assignment or a URL, the value). */
export function secretCore(secret: string): string {
  if (secret.startsWith('postgres://')) return secret.slice(15, 29);
  if (secret.includes('=')) return secret.slice(secret.indexOf('=') + 1);
  if (secret.startsWith('-----BEGIN')) return secret.split('\n')[1]!;
  return secret;
}

export const HOSTILE_SECRET_CORES: string[] = Object.values(HOSTILE_SECRETS).map(secretCore);

/** Escape payloads: window title, clear screen, clipboard write, hyperlink, 8-bit CSI, BEL, RLO, NUL. */
export const HOSTILE_ESCAPES = {
  title: '\x1b]0;PWNED-TITLE\x07',
  clear: '\x1b[2J\x1b[H',
  clipboard: '\x1b]52;c;cm0gLXJmIH4=\x07',
  hyperlink: '\x1b]8;;https://evil.test/\x1b\\click\x1b]8;;\x1b\\',
  csi8bit: '\x9b31m',
  bell: '\x07',
  rlo: '\u202etxt.exe',
  nul: '\x00',
} satisfies Record<string, string>;

/** Every raw byte a terminal could act on (outside flower's own SGR colours). */
export const RAW_CONTROL = /[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/;
