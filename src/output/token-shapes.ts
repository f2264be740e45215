/**
 * Secrets recognised by their shape, whatever environment flower runs in: a project's database
 * password or a GitHub token a worker read from a file was never in flower's environment, so the
 * credential-value mask (config/secret-mask.ts) cannot know it, and `flower log` run from another
 * shell does not know the run's key either (both observed printing in clear).
 *
 * Why hand-written: the shapes follow gitleaks' rule set (the de-facto maintained catalogue; the
 * rule ids are named below), but gitleaks is a Go program whose TOML rules use RE2 syntax and
 * keyword prefilters, and the maintained npm option, secretlint's recommended preset, runs its rules
 * through an asynchronous lint engine over whole files with some thirty dependencies. flower masks
 * every line it prints, synchronously, so it needs plain regular expressions; these are few, and
 * each has a test with a real-looking token.
 *
 * Invariants:
 * - Each shape is anchored on a vendor prefix or an explicit assignment, never on "long random
 *   text" alone: masking a commit hash or a uuid would make logs useless.
 * - A distinctive prefix (`ghp_`, `sk-ant-`, `xoxb-`, `AKIA` …) matches wherever it starts, glued to
 *   the text before it or not: a token right after `\n` in JSON, after a shown `␛[H`, or after any
 *   letter printed in clear when the shapes required a word boundary (observed). Only the bare
 *   `sk-` form, which ordinary words end in (`risk-`, `task-`), keeps its boundary.
 * - A masked form never matches any shape again, so masking is idempotent.
 * - Linear in the text: no pattern has two unbounded repetitions that can both match one run of
 *   characters (an unbounded name prefix before `password=` took 297 s on 128 KiB of `a.a.a.`).
 * - Only the secret part is masked: a URL keeps its scheme, user and host, an assignment its name.
 */
import { maskSecret } from '../config/credentials.js';

// A shape is named by the comment above it (the gitleaks rule it follows), not by a field: nothing
// but a reader would read one.
export interface TokenShape {
  readonly pattern: RegExp;
  /** The replacement of one match; default: the whole match through `maskSecret`. */
  readonly mask?: (match: string, ...groups: string[]) => string;
}

const keepName = (_match: string, name: string, secret: string) => `${name}${maskSecret(secret)}`;

export const TOKEN_SHAPES: readonly TokenShape[] = [
  // gitleaks private-key: the whole PEM block, or from its header to the end when output was cut.
  {
    pattern:
      /-----BEGIN[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----[\s\S]*?(?:-----END[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----|$)/g,
    mask: (match) => `[private key block: ${match.length} chars masked]`,
  },
  // gitleaks anthropic-api-key / anthropic-admin-api-key (sk-ant-api03-…, sk-ant-admin01-…).
  { pattern: /sk-ant-[A-Za-z0-9_-]{20,}/g },
  // gitleaks openai-api-key, with the newer project and service-account forms.
  { pattern: /sk-(?:proj|svcacct|admin)-[A-Za-z0-9_-]{20,}|\bsk-[A-Za-z0-9_-]{20,}/g },
  // gitleaks github-pat, github-oauth, github-app-token, github-refresh-token, github-fine-grained-pat.
  { pattern: /(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})\b/g },
  // gitleaks gitlab-pat and its kin (deploy, runner, pipeline-trigger, feed, CI-build tokens …).
  { pattern: /gl(?:pat|dt|rt|ptt|ft|cbt|imt|oas|soat)-[A-Za-z0-9_-]{20,}/g },
  // gitleaks aws-access-token: the key id of a pair.
  { pattern: /(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{16}\b/g },
  // The pair's secret has no prefix: recognised by the name it is given (env, config, CLI output;
  // `=>` after a quoted name, as in a PHP or Perl array).
  {
    pattern:
      /(\baws_?secret_?(?:access_?)?key(?:["']\s*=>|["']?\s*[:=])\s*["']?)([A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])/gi,
    mask: keepName,
  },
  // gitleaks gcp-api-key.
  { pattern: /AIza[0-9A-Za-z_-]{35}/g },
  // gitleaks slack-bot-token, slack-user-token, slack-app-token, slack-webhook-url.
  { pattern: /xox[abeoprs]-[A-Za-z0-9-]{10,}|xapp-\d-[A-Za-z0-9-]{10,}/g },
  { pattern: /https:\/\/hooks\.slack\.com\/(?:services|workflows)\/[A-Za-z0-9/_-]{20,}/g },
  // gitleaks stripe-access-token (secret, restricted and publishable; live and test).
  { pattern: /(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}/g },
  // gitleaks jwt: three base64url parts, the first two JSON objects ("eyJ" is `{"`).
  { pattern: /eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/g },
  // A password inside a connection URL (postgres://user:password@host, https://user:token@host).
  {
    pattern: /(\b[a-z][a-z0-9+.-]{1,20}:\/\/[^\s:/@'"`]*:)([^\s@/'"`]{3,})(?=@)/gi,
    mask: (_match, before) => `${before}***`,
  },
  // An assignment whose name says it holds a secret (DB_PASSWORD=…, "api_key": "…", token: …,
  // 'password' => '…'; `=>` after a quoted name only, so a JavaScript arrow `token => …` is code).
  {
    pattern:
      /(\b[A-Za-z0-9_.-]{0,64}(?:passw(?:or)?d|secret|token|api[_-]?key|access[_-]?key|private[_-]?key)(?:["']\s*=>|["']?\s*[:=])\s*["']?)([^\s"'`,;*]{8,})/gi,
    mask: keepName,
  },
];

/** `text` with every token of a known shape masked. */
export function maskTokenShapes(text: string): string {
  let masked = text;
  for (const shape of TOKEN_SHAPES) {
    const mask = shape.mask;
    masked = masked.replace(shape.pattern, mask ? (match, ...rest) => mask(match, ...rest) : maskSecret);
  }
  return masked;
}
