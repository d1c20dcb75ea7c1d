/**
 * The secret detector's rules: one regular expression per kind of credential, each matching exactly the secret (the
 * context that identifies it — `aws_secret_access_key =`, `scheme://user:` … `@` — sits in look-behinds and
 * look-aheads), so that redaction replaces the secret and nothing around it.
 *
 * Written for text as abridge holds it (message text, tool output, tool-call arguments) and for that text serialized as
 * JSON: no rule's secret may contain a quote or a backslash, so replacing a match inside a JSON string keeps it valid.
 * Patterns follow the public formats of each issuer (and the rule sets of gitleaks and secretlint, which were read, not
 * copied); each has positive and negative cases in rules.test.ts.
 */

export interface SecretRule {
  /** The kind, as redacted text shows it: `[REDACTED:<id>]`. */
  readonly id: string;
  readonly description: string;
  /** Global regex matching exactly the secret. */
  readonly pattern: RegExp;
  /** Further check on a match (entropy, placeholders); a match it rejects is left alone. */
  readonly accept?: (secret: string) => boolean;
  /** The secret is this capture group of the match (the pattern has the `d` flag); default: the whole match. */
  readonly group?: number;
  /**
   * A character the match may not follow (a word boundary of the rule's own alphabet); the letter of a JSON escape
   * (`\n`, `\t`, `\r`) counts as a boundary, so a secret at the start of a line is found in serialized JSON too.
   * Checked in code rather than by a look-behind, which would stop the regex engine from scanning for the literal prefix.
   */
  readonly notAfter?: RegExp;
  /** Skip the rule on text that does not contain this (a cheap test before the regex). */
  readonly hint?: string;
}

/** Whether the match at `start` follows an allowed character (see SecretRule.notAfter). */
export function boundaryOk(text: string, start: number, notAfter: RegExp | undefined): boolean {
  if (!notAfter || start === 0) return true;
  const prev = text[start - 1]!;
  if (!notAfter.test(prev)) return true;
  return (prev === 'n' || prev === 'r' || prev === 't') && text[start - 2] === '\\';
}

/** Shannon entropy of a string, in bits per character. */
export function entropy(s: string): number {
  const counts = new Map<string, number>();
  for (const ch of s) counts.set(ch, (counts.get(ch) ?? 0) + 1);
  const n = [...s].length;
  let h = 0;
  for (const c of counts.values()) {
    const p = c / n;
    h -= p * Math.log2(p);
  }
  return h;
}

/** Values that stand for a secret rather than being one: `${VAR}`, `$VAR`, `<password>`, `****`, `process.env.X`, `{{ x }}`. */
function isPlaceholder(v: string): boolean {
  return (
    /^(?:\$|%|<|\{|\*+$|x+$|X+$|\.\.\.|…)/.test(v) ||
    /^(?:process\.env|os\.environ|env\.|getenv|secrets\.|vars\.)/i.test(v) ||
    /^(?:null|none|undefined|true|false|pass|passwd|password|secret|changeme|example|redacted|placeholder)$/i.test(v)
  );
}

/** A random-looking credential value: long enough, mixed characters, high entropy, not a placeholder nor a plain identifier. */
function looksRandom(v: string, minEntropy: number): boolean {
  if (isPlaceholder(v)) return false;
  if (/^[a-z]+(?:[_.-][a-z]+)*$/i.test(v)) return false; // words: some_setting_name, localhost, my-password
  if (/^[A-Za-z_$][\w$]*(?:\??\.[A-Za-z_$][\w$]*)+$/.test(v)) return false; // code: options?.apiKey, Base64.url_encode64, self.config.token
  if (!/\d/.test(v) && !/[^A-Za-z0-9]/.test(v) && !(/[a-z]/.test(v) && /[A-Z]/.test(v))) return false;
  if (/^\d+$/.test(v) || /^\d{4}-\d{2}-\d{2}/.test(v)) return false; // numbers, dates
  if (/^(?:[./~]|[A-Za-z]:\\)/.test(v) && v.includes('/')) return false; // paths
  return entropy(v) >= minEntropy;
}

/** Chars a secret in an assignment may use: anything but space, quotes, backslash and the punctuation that ends a value. */
const VALUE = String.raw`[^\s"'\x60\\,;{}()<>\[\]]`;
/** An optional quote, possibly escaped (the text may itself be JSON inside JSON). */
const Q = String.raw`(?:\\*["'\x60])?`;

const rules: SecretRule[] = [
  {
    id: 'private-key',
    description:
      'PEM private key block (RSA, EC, DSA, OPENSSH, PGP, encrypted): from BEGIN to END, or to where the text stops',
    pattern: new RegExp(
      String.raw`-----BEGIN[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----(?:(?:[A-Za-z0-9+/=:,.\s-]|\\+[nrt]){0,20000}?-----END[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----|(?:[A-Za-z0-9+/=:,.\s]|\\+[nrt]){0,20000})`,
      'g',
    ),
  },
  {
    id: 'anthropic-api-key',
    description: 'Anthropic API or admin key: sk-ant-api03-…, sk-ant-admin01-…',
    pattern: /sk-ant-[A-Za-z0-9_-]{20,}/g,
    notAfter: /[A-Za-z0-9_-]/,
    hint: 'sk-ant-',
  },
  {
    id: 'openai-api-key',
    description: 'OpenAI key: sk-proj-…, sk-svcacct-…, sk-admin-…, legacy sk-… (48 characters, with T3BlbkFJ)',
    pattern:
      /sk-(?:(?:proj|svcacct|admin|None)-[A-Za-z0-9_-]{20,}|[A-Za-z0-9]{20}T3BlbkFJ[A-Za-z0-9]{20}|[A-Za-z0-9]{32,}(?![A-Za-z0-9_-]))/g,
    notAfter: /[A-Za-z0-9_-]/,
    hint: 'sk-',
  },
  {
    id: 'github-token',
    description: 'GitHub token: ghp_, gho_, ghu_, ghs_, ghr_ (36+ characters) or github_pat_ fine-grained token',
    pattern: /(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})(?![A-Za-z0-9_])/g,
    notAfter: /[A-Za-z0-9_]/,
  },
  {
    id: 'slack-token',
    description: 'Slack token: xoxb-, xoxa-, xoxp-, xoxr-, xoxs-, xoxo-',
    pattern: /xox[abposr]-(?:[0-9]+-)?[A-Za-z0-9-]{10,}/g,
    notAfter: /[A-Za-z0-9]/,
    hint: 'xox',
  },
  {
    id: 'slack-webhook',
    description: 'Slack incoming-webhook URL (hooks.slack.com/services/T…/B…/…)',
    pattern: /https:\/\/hooks\.slack\.com\/(?:services|workflows)\/[A-Za-z0-9_/-]{20,}/g,
  },
  {
    id: 'stripe-key',
    description: 'Stripe secret or restricted key: sk_live_, rk_live_, sk_test_, rk_test_',
    pattern: /(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}(?![A-Za-z0-9_])/g,
    notAfter: /[A-Za-z0-9_]/,
    hint: 'k_',
  },
  {
    id: 'google-api-key',
    description: 'Google API key: AIza followed by 35 characters',
    pattern: /AIza[0-9A-Za-z_-]{35}(?![0-9A-Za-z_-])/g,
    notAfter: /[A-Za-z0-9_-]/,
    hint: 'AIza',
  },
  {
    id: 'aws-access-key-id',
    description: 'AWS access key id: AKIA…, ASIA…, ABIA…, ACCA… (20 characters)',
    pattern: /A(?:KIA|SIA|BIA|CCA|3T[A-Z0-9])[A-Z0-9]{16}(?![A-Za-z0-9])/g,
    notAfter: /[A-Za-z0-9]/,
  },
  {
    id: 'aws-secret-access-key',
    description:
      'AWS secret access key (40 characters) after a name saying so: aws_secret_access_key=…, "SecretAccessKey": …',
    pattern: new RegExp(
      String.raw`secret[_\-. ]?(?:access[_\-. ]?)?key${Q}\s*(?::=|=>|[:=])\s*${Q}([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])`,
      'gid',
    ),
    group: 1,
    accept: (v) => entropy(v) >= 3.5,
  },
  {
    id: 'jwt',
    description: 'JSON Web Token: three base64url parts, the first two starting with eyJ',
    pattern: /eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/g,
    notAfter: /[A-Za-z0-9_-]/,
    hint: 'eyJ',
  },
  {
    id: 'url-password',
    description: 'The password of a URL with credentials: scheme://user:PASSWORD@host',
    pattern: /:\/\/[^\s:/?#@"'\\]{1,128}:([^\s/?#@"'\\]{3,256})@/dg,
    group: 1,
    hint: '://',
    accept: (v) => !isPlaceholder(v),
  },
  {
    id: 'bearer-token',
    description: 'A bearer token in an Authorization header or a command: Bearer <token>',
    pattern: /earer\s{1,4}([A-Za-z0-9._~+/-]{20,}=*)/dg,
    group: 1,
    hint: 'earer',
    accept: (v) => looksRandom(v, 3.5),
  },
  {
    id: 'generic-secret',
    description:
      'A high-entropy value assigned to a name like password, secret, token, api_key, access_key, client_secret',
    pattern: new RegExp(
      String.raw`(?:password|passwd|pwd|secret|token|api[_-]?key|apikey|access[_-]?key|auth[_-]?key|private[_-]?key|client[_-]?secret|credentials?)${Q}\s*(?::=|=>|[:=])\s*${Q}(${VALUE}{8,256})(?!${VALUE})`,
      'gid',
    ),
    group: 1,
    notAfter: /[A-Za-z0-9]/,
    accept: (v) => looksRandom(v, 3.0),
  },
];

/** The built-in rules, in the order they run (specific kinds first, so a key is named by its issuer). */
export const SECRET_RULES: readonly SecretRule[] = Object.freeze(rules);

/** The ids of the built-in rules. */
export const SECRET_KINDS: readonly string[] = Object.freeze(rules.map((r) => r.id));
