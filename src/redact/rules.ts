/**
 * The secret detector's rules: one or more regular expressions per kind of credential, each matching exactly the
 * secret (the context that identifies it — `aws_secret_access_key =`, `scheme://user:` … `@`, a name like `password`
 * — sits around a capture group), so that redaction replaces the secret and nothing around it.
 *
 * Written for text as abridge holds it (message text, tool output, tool-call arguments) and for that text serialized as
 * JSON: no rule's secret may contain a quote or a backslash, so replacing a match inside a JSON string keeps it valid.
 *
 * The issuers' rules follow each issuer's documented key format as the gitleaks rule set (config/gitleaks.toml, MIT,
 * read at b58d3f1, 2026-07) writes it, where gitleaks has one, with a literal prefix first so that every pattern runs
 * in time linear in the text (a literal, then bounded character classes; no nested quantifiers). Each has a positive
 * and a near-miss negative case in rules.test.ts.
 */

export interface SecretRule {
  /** The kind, as redacted text shows it: `[REDACTED:<id>]`. Several rules may share a kind. */
  readonly id: string;
  readonly description: string;
  /** Global regex matching exactly the secret (or, with `group`, containing it). */
  readonly pattern: RegExp;
  /**
   * Further check on a match (entropy, placeholders, the name it is assigned to); a match it rejects is left alone. A
   * number keeps only that many characters from the start of the secret (0 rejects).
   */
  readonly accept?: (secret: string, match: RegExpExecArray) => boolean | number;
  /**
   * The secret is this capture group of the match; default: the whole match. Where the group is not the end of the
   * match, the pattern has the `d` flag (indices); without it, the group is taken to end the match (cheaper: no
   * indices are made for every match).
   */
  readonly group?: number;
  /**
   * A character the match may not follow (a word boundary of the rule's own alphabet); the letter of a JSON escape
   * (`\n`, `\t`, `\r`) counts as a boundary, so a secret at the start of a line is found in serialized JSON too.
   * Checked in code rather than by a look-behind, which would stop the regex engine from scanning for the literal prefix.
   */
  readonly notAfter?: RegExp;
  /** Skip the rule on text that contains none of these (a cheap test before the regex). */
  readonly hints?: readonly string[];
  /**
   * The literal every match starts with: `findSecrets` looks for all the rules' heads in one pass over the text and
   * runs a rule only when its head is there (one scan instead of one per issuer).
   */
  readonly head?: string;
  /**
   * Characters that continue the secret past the pattern's bounded length: the match is extended over them (so a value
   * longer than the bound is still redacted whole, while the pattern itself stays bounded).
   */
  readonly extend?: RegExp;
  /** The secret starts this many characters before the match (a pattern led by a literal from the secret's middle). */
  readonly back?: number;
}

/** Where the last line of `text` starts: after its last newline, raw or JSON-escaped (`\n`). */
export function lineStart(text: string): number {
  const escaped = text.lastIndexOf('\\n');
  return Math.max(text.lastIndexOf('\n') + 1, escaped === -1 ? 0 : escaped + 2);
}

/** Whether the match at `start` follows an allowed character (see SecretRule.notAfter). */
export function boundaryOk(text: string, start: number, notAfter: RegExp | undefined): boolean {
  if (!notAfter || start === 0) return true;
  const prev = text[start - 1]!;
  if (!notAfter.test(prev)) return true;
  return (prev === 'n' || prev === 'r' || prev === 't') && text[start - 2] === '\\';
}

/** Counts of ASCII characters, reused by entropy() (reset after each use). */
const ASCII_COUNTS = new Uint32Array(128);

/** Shannon entropy of a string, in bits per character (of UTF-16 code units beyond ASCII, counted per code point). */
export function entropy(s: string): number {
  let other: Map<string, number> | undefined;
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    n++;
    if (c < 128) ASCII_COUNTS[c]!++;
    else {
      // A surrogate pair is one character.
      const ch = c >= 0xd800 && c < 0xdc00 && i + 1 < s.length ? s.slice(i, ++i + 1) : s[i]!;
      (other ??= new Map()).set(ch, (other.get(ch) ?? 0) + 1);
    }
  }
  let h = 0;
  for (let c = 0; c < 128; c++) {
    const count = ASCII_COUNTS[c]!;
    if (count === 0) continue;
    ASCII_COUNTS[c] = 0;
    const p = count / n;
    h -= p * Math.log2(p);
  }
  if (other)
    for (const count of other.values()) {
      const p = count / n;
      h -= p * Math.log2(p);
    }
  return h;
}

// ---------------------------------------------------------------------------------------------------------------------
// What a value that stands for a secret looks like (placeholders, expansions, code, types)

/** Words that stand for a value rather than being one. */
const PLACEHOLDER_WORDS =
  /^(?:null|nil|none|undefined|true|false|yes|no|on|off|empty|string|str|text|bytes|number|int|bool|boolean|object|any|unknown|secret|secrets|password|passwd|passphrase|pass|pwd|token|tokens|key|apikey|api_key|value|changeme|change_me|example|sample|redacted|placeholder|dummy|fake|test|testing|required|optional|hidden|masked|default|xxx+|todo|tbd|foo|bar|baz|foobar|mysecret|mypassword|yourpassword|yoursecret|yourtoken)$/i;

/** The first word of a phrase standing for a value (`your-api-key`, `example_token`). */
const PLACEHOLDER_FIRST =
  /^(?:your|yours|my|the|some|an?|example|sample|dummy|fake|insert|enter|put|replace|paste|fill|add|generated|random|changeme|change|test)$/i;

/**
 * Values that stand for a secret rather than being one: shell and template expansions (`$VAR`, `${VAR}`, `$(cmd)`,
 * `{{ x }}`, `{token}`, `%s`, `%(name)s`, `%VAR%`), angle-bracket placeholders (`<your-key>`), masks (`****`, `xxxx`,
 * `...`), redaction markers, "your-api-key-here" and the like. A value that merely starts with `$ % < {` and goes on
 * like a secret (`$ecr3t!x`, `%Qz8…`, `{Zq9…`) is not a placeholder.
 */
export function isPlaceholder(v: string): boolean {
  return isExpansion(v) || isPlaceholderWord(v);
}

/** Shell and template expansions, angle-bracket placeholders, masks and redaction markers (see isPlaceholder). */
export function isExpansion(v: string): boolean {
  if (v === '') return true;
  const c = v[0]!;
  if (c === '$') {
    if (/^\$\{[^}]{0,200}\}/.test(v) || v.startsWith('$(') || v.startsWith('$[')) return true;
    if (/^\$(?:\d{1,2}|\{\d{1,3}\})$/.test(v)) return true;
    if (/^\$[A-Za-z_]\w{0,100}$/.test(v)) return true; // $VAR
    if (/^\$[A-Z_][A-Z0-9_]{0,100}(?:[/:.@-]|$)/.test(v)) return true; // $HOME/.netrc, $USER:$PASS
  }
  if (c === '%') {
    if (/^%[-+# 0-9.]{0,6}[a-zA-Z]$/.test(v)) return true; // %s, %-10d
    if (/^%\([\w.]{1,60}\)[a-z]$/.test(v)) return true; // %(password)s
    if (/^%[A-Za-z_]\w{0,60}%/.test(v)) return true; // %PASSWORD%
    if (/^%\{[^}]{0,200}\}$/.test(v)) return true;
  }
  if (c === '<' && /^<[^<>]{0,120}>$/.test(v)) return true;
  if (c === '{' && /^\{{1,3}[^{}]{0,200}\}{1,3}$/.test(v)) return true;
  if (c === '[' && /^\[(?:REDACTED|redacted|MASKED|masked|HIDDEN|hidden)/.test(v)) return true;
  // A template with an expansion inside (`~${home}`, `pre$(cmd)`, `{{ .Values.x }}`): built, not written.
  if (/\$\{|\$\(|\{\{/.test(v)) return true;
  if (/^(?:\*+|x+|X+|#+|\.{3,}|…|-+|_+)$/.test(v)) return true;
  if (/^(?:[*xX#•]{3,}|\.{3})/.test(v) || /(?:\*{3,}|x{6,}|X{6,}|\.{3}|…)$/.test(v)) return true; // sk-****, abc...
  return /REDACTED|redacted|PLACEHOLDER|placeholder/.test(v);
}

/** Words and phrases that stand for a value: `changeme`, `string`, `your-api-key`, `TOKEN_GOES_HERE`. */
function isPlaceholderWord(v: string): boolean {
  if (PLACEHOLDER_WORDS.test(v)) return true;
  // your-api-key, YOUR_TOKEN_HERE, my_secret_value, replace-me: a few words, the first saying so
  const ws = v.split(/[-_ ]/);
  if (ws.length <= 6 && ws.every((w) => /^[a-z]{0,12}$/i.test(w)) && PLACEHOLDER_FIRST.test(ws[0]!)) return true;
  return /[-_](?:here|goes[-_]here|me)$/i.test(v);
}

/**
 * Code, not a value: a reference (`process.env.X`, `os.environ["X"]`, `self.token`, `options?.apiKey`,
 * `Base64.url_encode64`), a call (`getpass()`, `load_key(path)`), a type (`Optional[str]`, `SecretStr`,
 * `Option<String>`, `&str`).
 */
function isCode(v: string): boolean {
  if (/^(?:process\.env|import\.meta|os\.(?:environ|getenv)|env[.[(:]|ENV\[|getenv|Deno\.env|System\.getenv)/i.test(v))
    return true;
  if (/^(?:secrets|vars|inputs|steps|needs|github|matrix|runner)\./.test(v)) return true;
  if (isMemberChain(v)) return true;
  if (/^[A-Za-z_$][\w$.]{0,80}[([<]/.test(v) && /[)\]>]$/.test(v)) return true; // f(x), a[b], Option<String>
  if (/^&(?:'[a-z]+ )?(?:mut )?[A-Za-z]/.test(v)) return true; // &str, &'static str
  if (/^(?:new|await|function|lambda|async|yield|typeof|keyof)\b/.test(v)) return true;
  return false;
}

/** `a.b`, `a?.b.c`, `A::b`, `a->b`, optionally called or indexed at the end: `config.get("x")`, `self.keys[0]`. */
function isMemberChain(v: string): boolean {
  const call = v.search(/[([]/);
  const chain = call === -1 ? v : v.slice(0, call);
  const parts = chain.split(/\??\.|::|->/);
  // Names, not random runs: `gebXyWiZjSpiTq.atlasv1.E4yx…` (a key with dots in it) is no member chain.
  return (
    parts.length >= 2 &&
    parts.length <= 9 &&
    parts.every((p) => /^[A-Za-z_$][\w$]{0,80}$/.test(p) && (p.length <= 12 || isWordy(p)))
  );
}

/** Split into its words: non-alphanumerics, camel humps and digit runs separate them. */
function words(v: string): string[] {
  return v.match(/[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+/g) ?? [];
}

/**
 * A name rather than a random value: made of words (`some_setting_name`, `getAccessToken`, `my-password`,
 * `Optional[str]`, `DB_PASSWORD`), each of 3+ letters but for a few short ones and a short number at most.
 */
export function isWordy(v: string): boolean {
  const ws = words(v);
  if (ws.length === 0) return false;
  let letters = 0;
  let short = 0;
  let digits = 0;
  for (const w of ws) {
    if (/^\d/.test(w)) digits += w.length;
    else {
      letters += w.length;
      if (w.length < 3) short++;
    }
  }
  if (digits > 4 || letters === 0) return false;
  if (short > Math.max(1, Math.floor(ws.length / 4))) return false;
  // Mostly letters in a few words: identifiers and prose; random strings have many short pieces.
  return letters >= v.replace(/[^A-Za-z0-9]/g, '').length * 0.7 && ws.length <= Math.max(2, v.length / 3);
}

/** A random-looking credential value: long enough, mixed characters, high entropy, not a placeholder nor code nor words. */
function looksRandom(v: string, minEntropy: number, minLength = 8): boolean {
  if (v.length < minLength) return false;
  // snake_case, kebab-case and CONSTANT_CASE names: decided at once (they are most of what a name is assigned).
  if (/^[a-z]+(?:[_-][a-z]+)*$/.test(v) || /^[A-Z]+(?:_[A-Z]+)*$/.test(v)) return false;
  if (isPlaceholder(v) || isCode(v) || isWordy(v)) return false;
  if (!/\d/.test(v) && !/[^A-Za-z0-9]/.test(v) && !(/[a-z]/.test(v) && /[A-Z]/.test(v))) return false;
  if (/^-?\d+(?:\.\d+)?(?:e[+-]?\d+)?$/i.test(v) || /^\d{4}-\d{2}-\d{2}/.test(v)) return false; // numbers, dates
  if (/^v?\d+(?:\.\d+){1,3}(?:[-+][\w.]{1,40})?$/.test(v)) return false; // versions
  if (/^(?:[./~]|[A-Za-z]:\\)/.test(v) && v.includes('/')) return false; // paths
  if (/^\/[\w.-]{1,80}\//.test(v)) return false; // /usr/local/…
  if (/^[a-z][a-z0-9+.-]{1,20}:\/\//i.test(v) && !/:\/\/[^/@]{1,200}:[^/@]{1,200}@/.test(v)) return false; // URLs
  if (/^[\w.+-]{1,64}@[\w-]{1,63}(?:\.[\w-]{1,63})+$/.test(v)) return false; // e-mail addresses
  if (/^#?[0-9a-f]{3,8}$/i.test(v) && v.length <= 9) return false; // colours, short hex
  return entropy(v) >= minEntropy;
}

// ---------------------------------------------------------------------------------------------------------------------
// Issuers: keys recognizable by their own shape

interface IssuerSpec {
  readonly id: string;
  readonly description: string;
  /** Regex source: a literal prefix, then bounded character classes. */
  readonly pattern: string;
  /** The secret's own alphabet: a secret may not follow nor be followed by one of these (default `A-Za-z0-9_-`). */
  readonly chars?: string;
  /** Literal substrings, one of which every match contains (default: the literal prefix of the pattern). */
  readonly hints?: readonly string[];
  /** Least Shannon entropy of a match, where the prefix alone does not make it certain. */
  readonly entropy?: number;
  /** The secret starts this many characters before the match (see SecretRule.back). */
  readonly back?: number;
}

/**
 * A look-behind: the text starts here, or the character before is not of `chars`, or is the letter of a JSON escape
 * (`\n`, `\t`, `\r`), so that a secret at the start of a line is found in serialized JSON too.
 */
const BOUNDARY_BEFORE_INNER = (chars: string) => String.raw`(?:^|[^${chars.replace('=', '')}]|\\[nrt])`;

/**
 * A pattern that starts with a group of alternatives (`(?:sbp_…|sb_secret_…)`) as one pattern per alternative, each
 * starting with its own literal (the rest of the pattern after the group follows each); other patterns as they are.
 */
function alternatives(pattern: string): string[] {
  if (!pattern.startsWith('(?:')) return [pattern];
  const out: string[] = [];
  let depth = 0;
  let inClass = false;
  let from = 3;
  for (let i = 3; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (c === '\\') {
      i++;
      continue;
    }
    if (inClass) {
      if (c === ']') inClass = false;
      continue;
    }
    if (c === '[') inClass = true;
    else if (c === '(') depth++;
    else if (c === ')') {
      if (depth === 0) {
        out.push(pattern.slice(from, i));
        const rest = pattern.slice(i + 1);
        // A quantifier on the whole group: keep the pattern whole.
        if (/^[?*+{]/.test(rest)) return [pattern];
        return out.map((alt) => alt + rest);
      }
      depth--;
    } else if (c === '|' && depth === 0) {
      out.push(pattern.slice(from, i));
      from = i + 1;
    }
  }
  return [pattern];
}

function issuers(spec: IssuerSpec): SecretRule[] {
  return alternatives(spec.pattern).map((pattern) => issuer({ ...spec, pattern, ...(spec.hints ? {} : {}) }));
}

function issuer(spec: IssuerSpec): SecretRule {
  const chars = spec.chars ?? 'A-Za-z0-9_-';
  const min = spec.entropy;
  const literal = /^[^\\[(]+/.exec(spec.pattern)?.[0];
  // The literal that starts every match (none when the pattern starts with a class or a group), without a last
  // character a quantifier applies to.
  let lead = /^[A-Za-z0-9_~-]+/.exec(spec.pattern)?.[0] ?? '';
  if (/^[?*+{]/.test(spec.pattern.slice(lead.length))) lead = lead.slice(0, -1);
  const head = lead.length >= 2 && spec.back === undefined ? lead : '';
  // A pattern led by a literal needs no hint: the engine's own scan for the literal is faster than a search for the
  // hint would be (String.prototype.includes over the whole text, once per rule). Others get their literal as a hint.
  const hints = head || spec.back !== undefined ? undefined : (spec.hints ?? (literal ? [literal] : undefined));
  return {
    id: spec.id,
    description: spec.description,
    // The boundary before the secret is a look-behind placed after the literal the pattern starts with: the engine
    // still scans for that literal, and tries the rest only where a token starts, so a run of prefixes (`AKIAAKIA…`,
    // `EAACEAAC…`) is read once, not once per prefix. A pattern without such a literal checks its boundary in code.
    pattern: new RegExp(
      head
        ? `${head}(?<=${BOUNDARY_BEFORE_INNER(chars)}${head})(?:${spec.pattern.slice(head.length)})(?![${chars}])`
        : `(?:${spec.pattern})(?![${chars}])`,
      'g',
    ),
    ...(head || spec.back !== undefined ? {} : { notAfter: new RegExp(`[${chars.replace('=', '')}]`) }),
    ...(spec.back !== undefined ? { back: spec.back } : {}),
    ...(head ? { head } : {}),
    ...(hints ? { hints } : {}),
    ...(min !== undefined ? { accept: (s: string) => entropy(s) >= min } : {}),
  };
}

const ISSUERS: IssuerSpec[] = [
  {
    id: 'anthropic-api-key',
    description: 'Anthropic API or admin key: sk-ant-api03-…, sk-ant-admin01-…',
    pattern: 'sk-ant-[A-Za-z0-9_-]{20,300}',
  },
  {
    id: 'openai-api-key',
    description: 'OpenAI key: sk-proj-…, sk-svcacct-…, sk-admin-…, legacy sk-… (48 characters, with T3BlbkFJ)',
    pattern: 'sk-(?:(?:proj|svcacct|admin|None)-[A-Za-z0-9_-]{20,300}|[A-Za-z0-9]{20}T3BlbkFJ[A-Za-z0-9]{20})',
    hints: ['sk-'],
  },
  {
    id: 'openai-api-key',
    description: 'An sk- key of 32 or more letters and digits (OpenAI legacy, DeepSeek, and others of the same shape)',
    pattern: 'sk-[A-Za-z0-9]{32,300}',
    entropy: 3.5,
  },
  {
    id: 'github-token',
    description: 'GitHub token: ghp_, gho_, ghu_, ghs_, ghr_ (36+ characters)',
    pattern: 'gh[pousr]_[A-Za-z0-9]{36,255}',
    chars: 'A-Za-z0-9_',
  },
  {
    id: 'github-token',
    description: 'GitHub fine-grained personal access token: github_pat_…',
    pattern: 'github_pat_[A-Za-z0-9_]{22,255}',
    chars: 'A-Za-z0-9_',
  },
  {
    id: 'gitlab-token',
    description:
      'GitLab token: glpat-, gldt-, glft-, glrt-, glptt-, glsoat-, gloas-, glagent-, glimt-, glffct-, glcbt-, GR1348941',
    pattern:
      '(?:gl(?:pat|dt|ft|rt|ptt|soat|oas|agent|imt|ffct|cbt)-[A-Za-z0-9_-]{20,300}|GR1348941[A-Za-z0-9_-]{20,80})',
    hints: ['gl', 'GR1348941'],
    entropy: 3,
  },
  {
    id: 'slack-token',
    description: 'Slack token: xoxb-, xoxa-, xoxp-, xoxr-, xoxs-, xoxo-, xoxe-, xapp-',
    pattern: '(?:xox[abposre](?:\\.xox[bp])?|xapp)-[A-Za-z0-9-]{10,300}',
    chars: 'A-Za-z0-9',
    hints: ['xox', 'xapp-'],
  },
  {
    id: 'slack-webhook',
    description: 'Slack incoming-webhook or workflow URL (hooks.slack.com/services/T…/B…/…)',
    pattern: 'https://hooks\\.slack\\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/+-]{20,200}',
    chars: 'A-Za-z0-9_/+-',
  },
  {
    id: 'discord-webhook',
    description: 'Discord webhook URL (discord.com/api/webhooks/<id>/<token>)',
    pattern: 'https://(?:ptb\\.|canary\\.)?discord(?:app)?\\.com/api/webhooks/[0-9]{10,25}/[A-Za-z0-9_-]{40,100}',
    hints: ['/api/webhooks/'],
  },
  {
    id: 'stripe-key',
    description: 'Stripe secret or restricted key: sk_live_, rk_live_, sk_test_, rk_test_, sk_prod_',
    pattern: '(?:sk|rk)_(?:live|test|prod)_[A-Za-z0-9]{16,255}',
    chars: 'A-Za-z0-9_',
    hints: ['k_live_', 'k_test_', 'k_prod_'],
  },
  {
    id: 'google-api-key',
    description: 'Google API key: AIza followed by 35 characters',
    pattern: 'AIza[0-9A-Za-z_-]{35}',
  },
  {
    id: 'google-oauth',
    description: 'Google OAuth client secret (GOCSPX-…) or access token (ya29.…)',
    pattern: '(?:GOCSPX-[A-Za-z0-9_-]{28}|ya29\\.[A-Za-z0-9_-]{30,2000})',
    hints: ['GOCSPX-', 'ya29.'],
  },
  {
    id: 'aws-access-key-id',
    description: 'AWS access key id: AKIA…, ASIA…, ABIA…, ACCA…, A3T… (20 characters)',
    pattern: 'A(?:KIA|SIA|BIA|CCA|3T[A-Z0-9])[A-Z0-9]{16}',
    chars: 'A-Za-z0-9',
    hints: ['AKIA', 'ASIA', 'ABIA', 'ACCA', 'A3T'],
  },
  {
    id: 'aws-bedrock-key',
    description: 'Amazon Bedrock API key: ABSK… (long-lived)',
    pattern: 'ABSK[A-Za-z0-9+/]{109,269}={0,2}',
    chars: 'A-Za-z0-9+/=',
  },
  {
    id: 'azure-storage-key',
    description: 'Azure storage account key in a connection string: AccountKey=<88 characters>',
    pattern: '(?<=AccountKey=)[A-Za-z0-9+/]{86}==',
    chars: 'A-Za-z0-9+/',
    hints: ['AccountKey='],
  },
  {
    id: 'azure-client-secret',
    description: 'Azure AD (Entra) client secret: three characters, a digit, Q~, then 31 to 34',
    pattern: '[A-Za-z0-9_~.]{3}[0-9]Q~[A-Za-z0-9_~.-]{31,34}',
    chars: 'A-Za-z0-9_~.-',
    hints: ['Q~'],
    entropy: 3,
  },
  {
    id: 'alibaba-access-key-id',
    description: 'Alibaba Cloud access key id: LTAI + 20 characters',
    pattern: 'LTAI[A-Za-z0-9]{20}',
    entropy: 2,
  },
  {
    id: 'npm-token',
    description: 'npm access token: npm_ + 36 characters',
    pattern: 'npm_[A-Za-z0-9]{36}',
    entropy: 2,
  },
  {
    id: 'pypi-token',
    description: 'PyPI upload token: pypi-AgEIcHlwaS5vcmc… (or TestPyPI pypi-AgENdGVzdC5weXBpLm9yZw…)',
    pattern: 'pypi-AgE(?:IcHlwaS5vcmc|NdGVzdC5weXBpLm9yZw)[A-Za-z0-9_-]{50,1000}',
  },
  {
    id: 'rubygems-key',
    description: 'RubyGems API key: rubygems_ + 48 hex digits',
    pattern: 'rubygems_[a-f0-9]{48}',
  },
  {
    id: 'clojars-token',
    description: 'Clojars deploy token: CLOJARS_ + 60 characters',
    pattern: 'CLOJARS_[a-z0-9]{60}',
  },
  {
    id: 'docker-token',
    description: 'Docker Hub personal or organization access token: dckr_pat_…, dckr_oat_…',
    pattern: 'dckr_(?:pat|oat)_[A-Za-z0-9_-]{27,80}',
    hints: ['dckr_'],
  },
  {
    id: 'huggingface-token',
    description: 'Hugging Face token: hf_ + 34 letters, or api_org_ + 34 letters',
    pattern: '(?:hf|api_org)_[A-Za-z0-9]{34,40}',
    hints: ['hf_', 'api_org_'],
    entropy: 3.5,
  },
  {
    id: 'groq-key',
    description: 'Groq API key: gsk_ + 52 characters',
    pattern: 'gsk_[A-Za-z0-9]{52}',
  },
  {
    id: 'xai-key',
    description: 'xAI API key: xai- + 80 characters',
    pattern: 'xai-[A-Za-z0-9]{80}',
  },
  {
    id: 'perplexity-key',
    description: 'Perplexity API key: pplx- + 48 characters',
    pattern: 'pplx-[A-Za-z0-9]{48}',
  },
  {
    id: 'replicate-token',
    description: 'Replicate API token: r8_ + 37 characters',
    pattern: 'r8_[A-Za-z0-9]{37}',
    entropy: 3,
  },
  {
    id: 'langsmith-key',
    description: 'LangSmith API key: lsv2_pt_ or lsv2_sk_, 32 hex, _, 10 hex',
    pattern: 'lsv2_(?:pt|sk)_[a-f0-9]{32}_[a-f0-9]{10}',
    hints: ['lsv2_'],
  },
  {
    id: 'sendgrid-key',
    description: 'SendGrid API key: SG.<22>.<43>',
    pattern: 'SG\\.[A-Za-z0-9_-]{22}\\.[A-Za-z0-9_-]{43}',
  },
  {
    id: 'sendinblue-key',
    description: 'Brevo (Sendinblue) API key: xkeysib-<64 hex>-<16>',
    pattern: 'xkeysib-[a-f0-9]{64}-[A-Za-z0-9]{16}',
  },
  {
    id: 'twilio-key',
    description: 'Twilio API key SID with its secret shape: SK + 32 hex digits',
    pattern: 'SK[0-9a-fA-F]{32}',
    chars: 'A-Za-z0-9',
    entropy: 3,
  },
  {
    id: 'mailchimp-key',
    description: 'Mailchimp API key: 32 hex digits then -us and the datacenter number',
    // Led by the literal `-us` (the 32 hex digits before it checked by a look-behind), so the engine scans for it.
    pattern: String.raw`-us(?<=(?:^|[^A-Za-z0-9_-]|\\[nrt])[a-f0-9]{32}-us)[0-9]{1,2}`,
    back: 32,
    entropy: 3,
  },
  {
    id: 'shopify-token',
    description: 'Shopify access token or shared secret: shpat_, shpca_, shppa_, shpss_ + 32 hex',
    pattern: 'shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}',
    hints: ['shp'],
  },
  {
    id: 'square-token',
    description: 'Square access token or application secret: EAAA…, sq0atp-…, sq0csp-…',
    pattern: '(?:EAAA[A-Za-z0-9_-]{22,60}|sq0(?:atp|csp)-[A-Za-z0-9_-]{22,60})',
    hints: ['EAAA', 'sq0'],
    entropy: 3,
  },
  {
    id: 'shippo-token',
    description: 'Shippo API token: shippo_live_ or shippo_test_ + 40 hex',
    pattern: 'shippo_(?:live|test)_[a-fA-F0-9]{40}',
  },
  {
    id: 'easypost-key',
    description: 'EasyPost API key: EZAK or EZTK + 54 characters',
    pattern: 'EZ[AT]K[A-Za-z0-9]{54}',
    hints: ['EZAK', 'EZTK'],
  },
  {
    id: 'duffel-token',
    description: 'Duffel API token: duffel_test_ or duffel_live_ + 43 characters',
    pattern: 'duffel_(?:test|live)_[A-Za-z0-9_=-]{43}',
    chars: 'A-Za-z0-9_=-',
  },
  {
    id: 'flutterwave-key',
    description: 'Flutterwave secret or encryption key: FLWSECK_TEST-…',
    pattern: 'FLWSECK(?:_TEST)?-[a-hA-H0-9]{12,32}(?:-X)?',
  },
  {
    id: 'digitalocean-token',
    description: 'DigitalOcean token: dop_v1_, doo_v1_, dor_v1_ + 64 hex',
    pattern: 'do[opr]_v1_[a-f0-9]{64}',
    hints: ['_v1_'],
  },
  {
    id: 'cloudflare-origin-ca-key',
    description: 'Cloudflare Origin CA key: v1.0-<24 hex>-<146 hex>',
    pattern: 'v1\\.0-[a-f0-9]{24}-[a-f0-9]{146}',
  },
  {
    id: 'flyio-token',
    description: 'Fly.io token: fo1_…, fm1a_…, fm1r_…, fm2_…',
    pattern: '(?:fo1_[A-Za-z0-9_-]{43}|fm(?:1[ar]|2)_[A-Za-z0-9+/]{100,4000}={0,3})',
    chars: 'A-Za-z0-9_+/=-',
    hints: ['fo1_', 'fm1', 'fm2_'],
  },
  {
    id: 'heroku-key',
    description: 'Heroku API key (v2): HRKU-AA + 58 characters',
    pattern: 'HRKU-AA[A-Za-z0-9_-]{58}',
  },
  {
    id: 'vercel-token',
    description: 'Vercel token: vcp_, vci_, vca_, vcr_, vck_ + 20 to 60 characters',
    pattern: 'vc[pikar]_[A-Za-z0-9]{20,60}',
    hints: ['vcp_', 'vci_', 'vca_', 'vcr_', 'vck_'],
    entropy: 3.5,
  },
  {
    id: 'supabase-key',
    description: 'Supabase personal access token or secret key: sbp_ + 40 hex, sb_secret_…',
    pattern: '(?:sbp_[a-f0-9]{40}|sb_secret_[A-Za-z0-9_-]{20,80})',
    hints: ['sbp_', 'sb_secret_'],
  },
  {
    id: 'planetscale-token',
    description: 'PlanetScale token or password: pscale_tkn_, pscale_oauth_, pscale_pw_',
    pattern: 'pscale_(?:tkn|oauth|pw)_[A-Za-z0-9_=.-]{32,64}',
    chars: 'A-Za-z0-9_=.-',
    hints: ['pscale_'],
  },
  {
    id: 'databricks-token',
    description: 'Databricks API token: dapi + 32 hex',
    pattern: 'dapi[a-f0-9]{32}(?:-[0-9])?',
    entropy: 3,
  },
  {
    id: 'doppler-token',
    description: 'Doppler token: dp.pt., dp.st., dp.ct., dp.sa., dp.scim., dp.audit. + 40 to 44 characters',
    pattern: 'dp\\.(?:pt|st|ct|sa|scim|audit)\\.[A-Za-z0-9]{40,44}',
    hints: ['dp.'],
  },
  {
    id: 'vault-token',
    description: 'HashiCorp Vault token: hvs., hvb., hvr.',
    pattern: 'hv[sbr]\\.[A-Za-z0-9_-]{90,300}',
    hints: ['hvs.', 'hvb.', 'hvr.'],
  },
  {
    id: 'terraform-token',
    description: 'HashiCorp Terraform Cloud API token: <14>.atlasv1.<60 to 70>',
    pattern: '[A-Za-z0-9]{14}\\.atlasv1\\.[A-Za-z0-9_=-]{60,70}',
    chars: 'A-Za-z0-9_=-',
    hints: ['.atlasv1.'],
  },
  {
    id: 'pulumi-token',
    description: 'Pulumi access token: pul- + 40 hex',
    pattern: 'pul-[a-f0-9]{40}',
  },
  {
    id: 'postman-key',
    description: 'Postman API key: PMAK-<24 hex>-<34 hex>',
    pattern: 'PMAK-[a-fA-F0-9]{24}-[a-fA-F0-9]{34}',
  },
  {
    id: 'prefect-key',
    description: 'Prefect API key: pnu_ + 36 characters',
    pattern: 'pnu_[A-Za-z0-9]{36}',
    entropy: 3,
  },
  {
    id: 'readme-key',
    description: 'ReadMe API key: rdme_ + 70 characters',
    pattern: 'rdme_[a-z0-9]{70}',
  },
  {
    id: 'linear-key',
    description: 'Linear API key: lin_api_ + 40 characters',
    pattern: 'lin_api_[A-Za-z0-9]{32,128}',
  },
  {
    id: 'notion-token',
    description: 'Notion integration token: ntn_ + 11 digits + 35 characters, or legacy secret_ + 43',
    pattern: '(?:ntn_[0-9]{11}[A-Za-z0-9]{35}|secret_[A-Za-z0-9]{43})',
    hints: ['ntn_', 'secret_'],
    entropy: 3.5,
  },
  {
    id: 'figma-token',
    description: 'Figma personal access token: figd_ + 40 or more characters',
    pattern: 'figd_[A-Za-z0-9_-]{40,200}',
  },
  {
    id: 'sentry-token',
    description: 'Sentry user token (sntryu_ + 64 hex) or organization token (sntrys_eyJ…)',
    pattern: '(?:sntryu_[a-f0-9]{64}|sntrys_eyJ[A-Za-z0-9+/=_]{40,600})',
    chars: 'A-Za-z0-9_+/=-',
    hints: ['sntryu_', 'sntrys_'],
  },
  {
    id: 'grafana-token',
    description: 'Grafana Cloud token (glc_…), service account token (glsa_…), API key (eyJrIjoi…)',
    pattern:
      '(?:glc_[A-Za-z0-9+/]{32,400}={0,3}|glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}|eyJrIjoi[A-Za-z0-9]{70,400}={0,3})',
    chars: 'A-Za-z0-9_+/=-',
    hints: ['glc_', 'glsa_', 'eyJrIjoi'],
  },
  {
    id: 'new-relic-key',
    description: 'New Relic key: NRAK- (user API key), NRII- (insert key), NRJS- (browser key)',
    pattern: '(?:NRAK-[A-Z0-9]{27}|NRII-[A-Za-z0-9-]{32}|NRJS-[a-f0-9]{19})',
    hints: ['NRAK-', 'NRII-', 'NRJS-'],
  },
  {
    id: 'dynatrace-token',
    description: 'Dynatrace API token: dt0c01.<24>.<64>',
    pattern: 'dt0c01\\.[A-Za-z0-9]{24}\\.[A-Za-z0-9]{64}',
  },
  {
    id: 'atlassian-token',
    description: 'Atlassian API token: ATATT3 + about 186 characters',
    pattern: 'ATATT3[A-Za-z0-9_=-]{150,300}',
    chars: 'A-Za-z0-9_=-',
  },
  {
    id: 'artifactory-key',
    description: 'JFrog Artifactory API key (AKCp + 69) or reference token (cmVmd + 59)',
    pattern: '(?:AKCp[A-Za-z0-9]{69}|cmVmd[A-Za-z0-9]{59})',
    hints: ['AKCp', 'cmVmd'],
    entropy: 4,
  },
  {
    id: 'onepassword-token',
    description: '1Password service account token (ops_eyJ…) or secret key (A3-…)',
    pattern:
      '(?:ops_eyJ[A-Za-z0-9+/]{250,4000}={0,3}|A3-[A-Z0-9]{6}-(?:[A-Z0-9]{11}|[A-Z0-9]{6}-[A-Z0-9]{5})-[A-Z0-9]{5}-[A-Z0-9]{5}-[A-Z0-9]{5})',
    chars: 'A-Za-z0-9_+/=-',
    hints: ['ops_eyJ', 'A3-'],
  },
  {
    id: 'age-secret-key',
    description: 'age encryption secret key: AGE-SECRET-KEY-1 + 58 bech32 characters',
    pattern: 'AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}',
  },
  {
    id: 'telegram-bot-token',
    description: 'Telegram bot token: the bot id, a colon, AA and 33 characters',
    pattern: '[0-9]{8,10}:AA[A-Za-z0-9_-]{33}',
    hints: [':AA'],
  },
  {
    id: 'facebook-token',
    description: 'Facebook (Meta) page or user access token: EAAC…, EAAM… of 100 or more characters',
    pattern: 'EAA[CMG][A-Za-z0-9]{100,500}',
    hints: ['EAA'],
    entropy: 4,
  },
  {
    id: 'openshift-token',
    description: 'OpenShift user token: sha256~ + 43 characters',
    pattern: 'sha256~[A-Za-z0-9_-]{43}',
  },
  {
    id: 'infracost-key',
    description: 'Infracost API key: ico- + 32 characters',
    pattern: 'ico-[A-Za-z0-9]{32}',
    entropy: 3,
  },
  {
    id: 'harness-key',
    description: 'Harness personal or service account token: pat.<22>.<24>.<20>, sat.…',
    pattern: '(?:pat|sat)\\.[A-Za-z0-9_-]{22}\\.[A-Za-z0-9]{24}\\.[A-Za-z0-9]{20}',
    hints: ['pat.', 'sat.'],
  },
  {
    id: 'frameio-token',
    description: 'Frame.io API token: fio-u- + 64 characters',
    pattern: 'fio-u-[A-Za-z0-9_=-]{64}',
    chars: 'A-Za-z0-9_=-',
  },
  {
    id: 'typeform-token',
    description: 'Typeform personal access token: tfp_ + 59 characters',
    pattern: 'tfp_[A-Za-z0-9_.=-]{59}',
    chars: 'A-Za-z0-9_.=-',
  },
  {
    id: 'scalingo-token',
    description: 'Scalingo API token: tk-us- + 48 characters',
    pattern: 'tk-us-[A-Za-z0-9_-]{48}',
  },
  {
    id: 'octopus-key',
    description: 'Octopus Deploy API key: API- + 26 capitals and digits',
    pattern: 'API-[A-Z0-9]{26}',
    entropy: 3,
  },
];

// ---------------------------------------------------------------------------------------------------------------------
// Secrets known by what names them

/** An optional quote, possibly escaped (the text may itself be JSON inside JSON). */
const Q = String.raw`\\{0,7}["'\x60]?`;

/** The characters of an assigned value: anything but space, quotes, backslash and `,` `;` (which end a value). */
const VALUE_CHARS = String.raw`[^\s"'\x60\\,;]`;
const VALUE_CHAR = new RegExp(VALUE_CHARS);

/**
 * The names that assign a secret, without their prefix (`accessToken`, `PGPASSWORD`, `DJANGO_SECRET_KEY`): a password,
 * a passphrase, a secret, a token, credentials, or a key qualified as an API, access, secret, private, signing… key.
 * What may follow the word in the name (`SECRET_KEY_BASE`, `TOKEN_VALUE`, `PASSWORD_HASH`); anything else (`_FILE`,
 * `_URL`, `_NAME`, `_TYPE`, `s`, `izer`) makes another name.
 */
const PASSWORD_WORDS = String.raw`passw(?:or)?d|passphrase|pwd|pass`;
const TOKEN_WORDS = String.raw`secret|token|credentials?|api[_-]?key|apikey|(?:access|private|auth|master|signing|encryption|license|client|app|consumer|account|service|webhook|admin|root|bot|deploy|cookie)[_-]?key`;
const NAME_SUFFIX = String.raw`(?:[_.-]?(?:key(?:[_.-]?base)?|value|hash|str|string|b64|base64|hex|plain(?:text)?))?`;

/** The name ends here (a quote, `]`, space or the connector follows). */
const NAME_END = String.raw`(?![A-Za-z0-9_])`;

/** `name = value`, `name: value`, `"name": "value"`, `name := value`, `name => value`, `--name value`, `--name=value`. */
const ASSIGNMENT = String.raw`(${PASSWORD_WORDS}|${TOKEN_WORDS})${NAME_SUFFIX}${NAME_END}(${Q}\]?)(\s{0,4}(?::=|=>|[:=])\s{0,4}|[ \t]{1,4})(${Q})(${VALUE_CHARS}{1,4096})`;

/**
 * The name the keyword at `at` ends (back over name characters, bounded): its prefix (`PG` of `PGPASSWORD`, `access`
 * of `accessToken`), whether it is a command's flag (`--password`), and whether it is written like an environment
 * variable (`DB_PASSWORD`).
 */
function nameAround(text: string, at: number, keyword: string): { prefix: string; flag: boolean; envLike: boolean } {
  let s = at;
  while (s > 0 && at - s < 64 && /[\w.-]/.test(text[s - 1]!)) s--;
  // The letter of a JSON escape before the name (`\n`, `\t`) is not part of it.
  const escaped = s < at && text[s - 1] === '\\' && /[nrt]/.test(text[s]!);
  if (escaped) s++;
  let prefix = text.slice(s, at);
  const before = s === 0 || escaped ? ' ' : text[s - 1]!;
  const flag = /^--?(?:[A-Za-z][\w.-]*)?$/.test(prefix) && prefix.startsWith('-') && /[\s"'=\\`([]/.test(before);
  if (flag) prefix = prefix.replace(/^-+/, '');
  const envLike = /^[A-Z0-9_]*$/.test(prefix) && keyword === keyword.toUpperCase();
  return { prefix, flag, envLike };
}

/** How many characters of the unquoted value `v` belong to it: trailing sentence punctuation and closers are not. */
function valueLength(v: string): number {
  let end = v.length;
  while (end > 0) {
    const c = v[end - 1]!;
    if (c === '.' || c === ':' || c === '!' || c === '?') {
      end--;
      continue;
    }
    const open = ({ ')': '(', ']': '[', '}': '{', '>': '<' } as Record<string, string>)[c];
    if (open === undefined) break;
    const body = v.slice(0, end - 1);
    if (body.split(open).length - 1 >= body.split(c).length) break; // balanced: part of the value
    end--;
  }
  return end;
}

/**
 * A secret assigned to a name that says so, judged by how it is written: a literal (quoted, a flag's value, or
 * `NAME=value` without spaces) assigned to a password is redacted unless it is a placeholder, code or a variable's
 * name; any other value must look random (not words, not code, high entropy). Returns the length kept (0: rejected).
 */
function acceptAssignment(secret: string, m: RegExpExecArray): number {
  const keyword = m[1]!;
  const sep = m[3]!;
  const quoted = (m[4] ?? '') !== '';
  const { prefix, flag, envLike } = nameAround(m.input, m.index, keyword);
  // `pwd` alone is as often the working directory (`PWD=/home/x`, `pwd = os.getcwd()`): a password only as part of a
  // longer name (`DB_PWD`, `mysql_pwd`); alone, its value must look random.
  const password = /^pass/i.test(keyword) || (/^pwd$/i.test(keyword) && prefix !== '');
  // `pass` alone is a word of its own only at the start of a name or after a separator (DB_PASS, --pass; not bypass).
  if (/^pass$/i.test(keyword) && prefix !== '' && !/[_.-]$/.test(prefix) && !envLike) return 0;
  if (sep.trim() === '' && !flag) return 0; // "the token is …": prose, not an assignment
  const len = quoted ? secret.length : valueLength(secret);
  const v = secret.slice(0, len);
  if (v.length < 6) return 0;
  const envValue = envLike && sep.trim() === '=';
  // Decided at once, the commonest case: an unquoted name (`token = access_token`, `secret_key = secret_key`).
  if (!quoted && !envValue && /^[A-Za-z_]+$/.test(v) && isWordy(v)) return 0;
  if (isPlaceholder(v) || isCode(v)) return 0;
  if (v.toLowerCase() === `${prefix}${keyword}`.toLowerCase()) return 0; // PASSWORD=password
  const literal = quoted || flag || sep === '=' || (envLike && sep.trim() === '=');
  if (password) {
    if (!literal) return !isWordy(v) && entropy(v) >= 2.5 ? len : 0; // password: s3cr3tP4ss (YAML), not: string
    // An environment variable's value is the password (PGPASSWORD=…, DB_PASSWORD=…), placeholders aside.
    if (envValue) return len;
    // Unquoted words (`password=pw_var`) and identifiers (`db_password`, `dbPass`) are code, not a password; random
    // letters (`xoekBqcrSc09trwL8z`, `ngnjiQbYMkvipvmWIX`) are not words.
    if (!quoted && /^[A-Za-z_]+$/.test(v) && isWordy(v)) return 0;
    if ((/^[a-z]+(?:_[a-z0-9]+)+$/.test(v) || /^[a-z]+(?:[A-Z][a-z0-9]+)+$/.test(v)) && isWordy(v)) return 0;
    return len;
  }
  return looksRandom(v, literal ? 3 : 3.2) ? len : 0;
}

/** The user part of a URL's credentials, then the password (before `@`). */
const URL_USERINFO = String.raw`:\/\/[^\s:/?#@"'\\]{1,128}:([^\s/?#@"'\\]{1,256})@`;
/** A password in a connection URL's query or a libpq keyword string: `?password=…`, `&sslpassword=…`, `password=…` after a space. */
const URL_QUERY = String.raw`[?&;](password|passwd|pwd|pass|sslpassword|sslkey_password|secret|client_secret|access_token|auth_token|api_key|apikey|token|sig|X-Amz-Signature|X-Goog-Signature|X-Amz-Security-Token)=([^&#\s"'\\]{1,4096})`;

/** What a URL's password may be in documentation: `user:pass@`, `:password@`. */
const URL_PLACEHOLDERS = /^(?:pass|passwd|password|pwd|secret|token|user|x)$/i;

const rules: SecretRule[] = [
  {
    id: 'private-key',
    description:
      'PEM private key block (RSA, EC, DSA, OPENSSH, PGP, encrypted): from BEGIN to END, or to where the text stops',
    pattern: new RegExp(
      String.raw`-----BEGIN[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----(?:[A-Za-z0-9+/=:,.\s\\]|-(?!----)){0,20000}(?:-----END[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----)?`,
      'g',
    ),
    hints: ['-----BEGIN'],
    // The body may hold JSON escapes (\n); the block never ends inside one (a backslash of `\"` stays with its quote).
    accept: (key) => key.length - (/\\+$/.exec(key)?.[0].length ?? 0),
  },
  ...ISSUERS.flatMap(issuers),
  {
    id: 'aws-secret-access-key',
    description:
      'AWS secret access key (40 characters) after a name saying so: aws_secret_access_key=…, "SecretAccessKey": …',
    pattern: new RegExp(
      String.raw`secret[_\-. ]?(?:access[_\-. ]?)?key${Q}\s{0,4}(?::=|=>|[:=])\s{0,4}${Q}([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])`,
      'gid',
    ),
    group: 1,
    accept: (v) => entropy(v) >= 3.5,
  },
  {
    id: 'jwt',
    description: 'JSON Web Token: three base64url parts, the first two starting with eyJ',
    pattern: new RegExp(
      String.raw`eyJ(?<=${BOUNDARY_BEFORE_INNER('A-Za-z0-9_-')}eyJ)[A-Za-z0-9_-]{8,8000}\.eyJ[A-Za-z0-9_-]{8,8000}\.[A-Za-z0-9_-]{8,8000}`,
      'g',
    ),
    hints: ['eyJ'],
  },
  {
    id: 'url-password',
    description:
      'The password of a URL or connection string: scheme://user:PASSWORD@host, ?password=…, &sslpassword=…, ?token=…',
    pattern: new RegExp(URL_USERINFO, 'dg'),
    group: 1,
    hints: ['://'],
    accept: (v) => !isExpansion(v) && !URL_PLACEHOLDERS.test(v),
  },
  {
    id: 'url-password',
    description: 'A password, token or signature in a URL query: ?password=…, &access_token=…, &X-Amz-Signature=…',
    pattern: new RegExp(URL_QUERY, 'gi'),
    group: 2,
    hints: ['='],
    accept: (v, m) => !isExpansion(v) && !URL_PLACEHOLDERS.test(v) && (/pass|pwd/i.test(m[1]!) || looksRandom(v, 3, 8)),
  },
  {
    id: 'bearer-token',
    description: 'A bearer token in an Authorization header or a command: Bearer <token>',
    pattern: /earer\s{1,4}([A-Za-z0-9._~+/-]{20,4096}=*)/dg,
    group: 1,
    hints: ['earer'],
    accept: (v) => looksRandom(v, 3.5),
  },
  {
    id: 'basic-auth',
    description: 'HTTP basic credentials: Basic <base64 of user:password>, curl -u user:password',
    pattern: /asic\s{1,4}([A-Za-z0-9+/]{8,4096}={0,2})(?![A-Za-z0-9+/=])/dg,
    group: 1,
    hints: ['asic '],
    accept: (v) => /^[\x20-\x7e]{1,200}:[\x20-\x7e]{1,1000}$/.test(Buffer.from(v, 'base64').toString('latin1')),
  },
  {
    id: 'basic-auth',
    description: 'curl -u user:password, --user user:password (curl, wget, httpie on the same line before it)',
    pattern:
      /(?:^|\s)(?:-u|--user|--http-user|--auth|-a)[ =]{1,4}["']?[^\s:"'\\+%][^\s:"'\\]{0,63}:([^\s"'\\]{3,256})/dg,
    group: 1,
    hints: ['curl', 'wget', 'http', 'xh'],
    // The command is one that takes user:password (not `date -u +%H:%M`): looked for in the 200 characters before,
    // on the same line.
    accept: (v, m) => {
      const before = m.input.slice(Math.max(0, m.index - 200), m.index);
      const line = before.slice(lineStart(before));
      return /(?:^|[\s;&|("'`])(?:curl|wget|http|xh)(?:\s|$)/.test(line) && !isPlaceholder(v);
    },
  },
  {
    id: 'generic-secret',
    description:
      'A value assigned to a name that says it is a secret — password, passwd, pwd, passphrase, secret, token, credentials, api_key, access_key, private_key, client_secret … — in code (accessToken = "…"), env files (PGPASSWORD=…, SECRET_KEY=…), JSON ("api_key": "…"), YAML and command flags (--password …); placeholders, expansions, code and type names are left alone',
    pattern: new RegExp(ASSIGNMENT, 'gi'),
    group: 5,
    hints: ['ass', 'ASS', 'wd', 'WD', 'ecret', 'ECRET', 'oken', 'OKEN', 'redential', 'REDENTIAL', 'ey', 'EY', 'phrase'],
    extend: VALUE_CHAR,
    accept: acceptAssignment,
  },
  {
    id: 'generic-secret',
    description: 'A password attached to mysql/mariadb -p (-pSECRET; a separate word after -p is a database name)',
    pattern: /\s-p([^\s"'\\|;&]{1,256})/dg,
    group: 1,
    hints: ['mysql', 'mariadb'],
    accept: (v, m) => {
      const before = m.input.slice(Math.max(0, m.index - 200), m.index);
      const line = before.slice(lineStart(before));
      return (
        /(?:^|[\s;&|(/"'`])(?:mysql|mysqldump|mysqladmin|mariadb)(?:\s|$)/.test(line) && !isPlaceholder(v) && !isCode(v)
      );
    },
  },
  {
    id: 'generic-secret',
    description: 'A password given to sshpass -p',
    pattern: /sshpass\s{1,4}-p\s{0,4}([^\s"'\\|;&]{1,256})/dg,
    group: 1,
    hints: ['sshpass'],
    accept: (v) => !isPlaceholder(v) && !isCode(v),
  },
  {
    id: 'generic-secret',
    description: 'An env-file or shell variable named …_KEY with a random-looking value: STRIPE_KEY=…, MY_APP_KEY=…',
    pattern: new RegExp(String.raw`[A-Z0-9]_KEY=(${Q})(${VALUE_CHARS}{8,4096})`, 'g'),
    group: 2,
    hints: ['_KEY='],
    extend: VALUE_CHAR,
    accept: (v, m) => {
      const quoted = (m[1] ?? '') !== '';
      const len = quoted ? v.length : valueLength(v);
      return looksRandom(v.slice(0, len), 3) ? len : 0;
    },
  },
];

/** The built-in rules, in the order they run (specific kinds first, so a key is named by its issuer). */
export const SECRET_RULES: readonly SecretRule[] = Object.freeze(rules);

/** The kinds of the built-in rules (each once). */
export const SECRET_KINDS: readonly string[] = Object.freeze([...new Set(rules.map((r) => r.id))]);
