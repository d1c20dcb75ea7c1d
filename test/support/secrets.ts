/**
 * Fake but well-formed secrets of every kind the redactor knows, generated from a seed (never real credentials), and
 * a canary inside each so a test can tell whether any part of one leaked.
 */

import { prng } from './random-session.js';

export { prng };

const ALNUM = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';
const UPPER_NUM = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
const B64URL = `${ALNUM}-_`;
const B64 = `${ALNUM}+/`;

export interface PlantedSecret {
  kind: string;
  /** The secret as it would appear in text. */
  secret: string;
  /** A distinctive substring of the secret: if it appears in an output, the secret leaked. */
  probe: string;
  /** A line of text carrying it, as a person or a command would write it. */
  inContext: string;
  /** Recognizable on its own (by its prefix or shape); false for secrets known only by context (a password, an AWS secret key). */
  selfEvident: boolean;
}

const CONTEXTUAL = new Set([
  'aws-secret-access-key',
  'url-password',
  'generic-secret',
  'bearer-token',
  'basic-auth',
  'azure-storage-key',
]);

/** One fake secret of every kind, from `seed`. */
export function fakeSecrets(seed: number): PlantedSecret[] {
  const rnd = prng(seed);
  const pick = (alphabet: string, n: number) =>
    Array.from({ length: n }, () => alphabet[Math.floor(rnd() * alphabet.length)]!).join('');
  const b64url = (s: string) => Buffer.from(s).toString('base64url');
  const out: PlantedSecret[] = [];
  const add = (kind: string, secret: string, inContext: (s: string) => string, probe = secret.slice(-16)) =>
    out.push({ kind, secret, probe, inContext: inContext(secret), selfEvident: !CONTEXTUAL.has(kind) });

  add('anthropic-api-key', `sk-ant-api03-${pick(B64URL, 93)}AA`, (s) => `export ANTHROPIC_API_KEY=${s}`);
  add('openai-api-key', `sk-proj-${pick(B64URL, 156)}`, (s) => `OPENAI_API_KEY="${s}" python run.py`);
  add('openai-api-key', `sk-${pick(ALNUM, 20)}T3BlbkFJ${pick(ALNUM, 20)}`, (s) => `openai.api_key = '${s}'`);
  add(
    'google-api-key',
    `AIza${pick(B64URL.replace(/[-_]/g, ''), 35)}`,
    (s) => `curl "https://generativelanguage.googleapis.com/v1/models?key=${s}"`,
  );
  add('aws-access-key-id', `AKIA${pick(UPPER_NUM, 16)}`, (s) => `aws_access_key_id = ${s}`);
  add('aws-secret-access-key', pick(B64, 40), (s) => `aws_secret_access_key = ${s}`);
  add('github-token', `ghp_${pick(ALNUM, 36)}`, (s) => `git clone https://github.com/acme/app.git # token ${s}`);
  add('github-token', `github_pat_${pick(ALNUM, 22)}_${pick(ALNUM, 59)}`, (s) => `GH_TOKEN=${s} gh pr list`);
  add('github-token', `ghs_${pick(ALNUM, 36)}`, (s) => `Authorization: token ${s}`);
  add(
    'slack-token',
    `xoxb-${1000000000 + Math.floor(rnd() * 8e9)}-${1000000000 + Math.floor(rnd() * 8e9)}-${pick(ALNUM, 24)}`,
    (s) => `SLACK_BOT_TOKEN=${s}`,
  );
  add('stripe-key', `sk_live_${pick(ALNUM, 24)}`, (s) => `stripe.api_key = "${s}"`);
  add('stripe-key', `rk_live_${pick(ALNUM, 24)}`, (s) => `restricted key ${s} for reports`);
  const header = b64url(JSON.stringify({ alg: 'HS256', typ: 'JWT' }));
  const payload = b64url(JSON.stringify({ sub: pick(ALNUM, 12), iat: 1700000000 }));
  add('jwt', `${header}.${payload}.${pick(B64URL, 43)}`, (s) => `Cookie: session=${s}`);
  add('bearer-token', pick(B64URL, 40), (s) => `curl -H "Authorization: Bearer ${s}" https://api.example.com`);
  add('url-password', `${pick(ALNUM, 18)}`, (s) => `DATABASE_URL=postgres://app:${s}@db.internal:5432/app`);
  add('generic-secret', `${pick(ALNUM, 24)}`, (s) => `password=${s}`);
  add('generic-secret', `${pick(ALNUM, 32)}`, (s) => `{"api_key": "${s}"}`);
  const body = Array.from({ length: 8 }, () => pick(B64, 64)).join('\n');
  add(
    'private-key',
    `-----BEGIN RSA PRIVATE KEY-----\n${body}\n-----END RSA PRIVATE KEY-----`,
    (s) => `cat ~/.ssh/id_rsa\n${s}`,
    body.slice(70, 100),
  );
  const ossh = Array.from({ length: 6 }, () => pick(B64, 70)).join('\n');
  add(
    'private-key',
    `-----BEGIN OPENSSH PRIVATE KEY-----\n${ossh}\n-----END OPENSSH PRIVATE KEY-----`,
    (s) => s,
    ossh.slice(10, 40),
  );
  // Connection strings in every form a client takes, HTTP basic credentials.
  add(
    'url-password',
    pick(ALNUM, 18),
    (s) => `psql "postgresql://app@db.internal:5432/app?sslmode=require&password=${s}"`,
  );
  add('url-password', pick(ALNUM, 18), (s) => `DATABASE_URL=postgres://db.internal/app?sslpassword=${s}`);
  add('basic-auth', Buffer.from(`deploy:${pick(ALNUM, 20)}`).toString('base64'), (s) => `Authorization: Basic ${s}`);
  add('basic-auth', pick(ALNUM, 18), (s) => `curl -u deploy:${s} https://ci.example.com/api`);
  // Every issuer's key format, alone on a line (as a person pastes one) or in its connection string.
  for (const { kind, secret } of issuerSamples(seed + 1000)) {
    const line =
      kind === 'azure-storage-key'
        ? (s: string) =>
            `DefaultEndpointsProtocol=https;AccountName=acme;AccountKey=${s};EndpointSuffix=core.windows.net`
        : (s: string) => `export ${kind.toUpperCase().replace(/-/g, '_')}=${s}`;
    add(kind, secret, line);
  }
  // The generic rule's forms, each with a value of its own (a value starting with $ % < { keeps that character).
  for (const [form, example] of GENERIC_FORMS) {
    const first = /^[$%<{]/.test(example) ? example[0]! : '';
    const value = example.length > 256 ? pick(ALNUM, 300) : `${first}${pick(ALNUM, 14)}!${pick(ALNUM, 3)}`;
    // `!` would end a value in some forms (a flag's word); plain letters and digits there.
    const v = /^[A-Za-z0-9]+$/.test(example) && example.length <= 256 ? pick(ALNUM, 18) : value;
    add('generic-secret', v, (s) => form.replace('%s', s));
  }
  return out;
}

const HEX = '0123456789abcdef';
const UP_DIGITS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';
const LOWER_DIGITS = 'abcdefghijklmnopqrstuvwxyz0123456789';
const BECH32 = 'QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L';

/**
 * One well-formed fake key per issuer rule (src/redact/rules.ts), from `seed`, with a near miss for each: the same key
 * cut short of the issuer's length (or with its prefix changed), which must not be redacted as that kind.
 */
export function issuerSamples(seed: number): { kind: string; secret: string; nearMiss: string }[] {
  const rnd = prng(seed);
  const p = (alphabet: string, n: number) =>
    Array.from({ length: n }, () => alphabet[Math.floor(rnd() * alphabet.length)]!).join('');
  const out: { kind: string; secret: string; nearMiss: string }[] = [];
  const add = (kind: string, secret: string, nearMiss: string) => out.push({ kind, secret, nearMiss });
  const cut = (kind: string, prefix: string, body: string, keep: number) =>
    add(kind, prefix + body, `${prefix}${body.slice(0, keep)}`);
  cut('gitlab-token', 'glpat-', p(ALNUM, 20), 12);
  cut(
    'slack-webhook',
    'https://hooks.slack.com/services/',
    `T${p(UP_DIGITS, 8)}/B${p(UP_DIGITS, 8)}/${p(ALNUM, 24)}`,
    10,
  );
  cut(
    'discord-webhook',
    `https://discord.com/api/webhooks/${p('0123456789', 18)}/`,
    p(B64URL.replace(/[-_]/g, ''), 68),
    20,
  );
  cut('google-oauth', 'GOCSPX-', p(ALNUM, 28), 20);
  cut('aws-bedrock-key', 'ABSK', p(ALNUM, 128), 60);
  add('azure-storage-key', `${p(B64, 86)}==`, `AccountKey=${p(B64, 40)}==`);
  add('azure-client-secret', `${p(ALNUM, 3)}7Q~${p(ALNUM, 34)}`, `abc7Q~${p(ALNUM, 10)}`);
  cut('alibaba-access-key-id', 'LTAI', p(ALNUM, 20), 12);
  cut('npm-token', 'npm_', p(ALNUM, 36), 20);
  cut('pypi-token', 'pypi-AgEIcHlwaS5vcmc', p(B64URL, 70), 20);
  cut('rubygems-key', 'rubygems_', p(HEX, 48), 30);
  cut('clojars-token', 'CLOJARS_', p(LOWER_DIGITS, 60), 30);
  cut('docker-token', 'dckr_pat_', p(ALNUM, 27), 15);
  cut('huggingface-token', 'hf_', p(ALNUM, 34), 20);
  cut('groq-key', 'gsk_', p(ALNUM, 52), 30);
  cut('xai-key', 'xai-', p(ALNUM, 80), 40);
  cut('perplexity-key', 'pplx-', p(ALNUM, 48), 30);
  cut('replicate-token', 'r8_', p(ALNUM, 37), 20);
  add('langsmith-key', `lsv2_pt_${p(HEX, 32)}_${p(HEX, 10)}`, `lsv2_pt_${p(HEX, 32)}`);
  add('sendgrid-key', `SG.${p(B64URL, 22)}.${p(B64URL, 43)}`, `SG.${p(ALNUM, 22)}.${p(ALNUM, 20)}`);
  add('sendinblue-key', `xkeysib-${p(HEX, 64)}-${p(ALNUM, 16)}`, `xkeysib-${p(HEX, 64)}`);
  cut('twilio-key', 'SK', p(HEX, 32), 20);
  add('mailchimp-key', `${p(HEX, 32)}-us${1 + Math.floor(rnd() * 20)}`, `${p(HEX, 32)}-usa`);
  cut('shopify-token', 'shpat_', p(HEX, 32), 20);
  cut('square-token', 'sq0atp-', p(B64URL, 22), 12);
  cut('shippo-token', 'shippo_live_', p(HEX, 40), 20);
  cut('easypost-key', 'EZAK', p(ALNUM, 54), 30);
  cut('duffel-token', 'duffel_test_', p(ALNUM, 43), 20);
  cut('flutterwave-key', 'FLWSECK-', `${p('abcdef0123456789', 32)}-X`, 6);
  cut('digitalocean-token', 'dop_v1_', p(HEX, 64), 40);
  add('cloudflare-origin-ca-key', `v1.0-${p(HEX, 24)}-${p(HEX, 146)}`, `v1.0-${p(HEX, 24)}-${p(HEX, 40)}`);
  cut('flyio-token', 'fo1_', p(B64URL, 43), 20);
  cut('heroku-key', 'HRKU-AA', p(B64URL, 58), 30);
  cut('vercel-token', 'vcp_', p(ALNUM, 24), 10);
  cut('supabase-key', 'sbp_', p(HEX, 40), 20);
  cut('planetscale-token', 'pscale_tkn_', p(ALNUM, 43), 20);
  cut('databricks-token', 'dapi', p(HEX, 32), 20);
  cut('doppler-token', 'dp.pt.', p(ALNUM, 43), 20);
  cut('vault-token', 'hvs.', p(B64URL, 95), 40);
  add('terraform-token', `${p(ALNUM, 14)}.atlasv1.${p(ALNUM, 67)}`, `${p(ALNUM, 14)}.atlasv1.${p(ALNUM, 30)}`);
  cut('pulumi-token', 'pul-', p(HEX, 40), 20);
  add('postman-key', `PMAK-${p(HEX, 24)}-${p(HEX, 34)}`, `PMAK-${p(HEX, 24)}-${p(HEX, 20)}`);
  cut('prefect-key', 'pnu_', p(ALNUM, 36), 20);
  cut('readme-key', 'rdme_', p(LOWER_DIGITS, 70), 40);
  cut('linear-key', 'lin_api_', p(ALNUM, 40), 20);
  add('notion-token', `ntn_${p('0123456789', 11)}${p(ALNUM, 35)}`, `ntn_${p('0123456789', 11)}${p(ALNUM, 10)}`);
  cut('figma-token', 'figd_', p(B64URL, 40), 20);
  cut('sentry-token', 'sntryu_', p(HEX, 64), 40);
  add('grafana-token', `glsa_${p(ALNUM, 32)}_${p(HEX, 8)}`, `glsa_${p(ALNUM, 20)}_${p(HEX, 8)}`);
  cut('new-relic-key', 'NRAK-', p(UP_DIGITS, 27), 15);
  add('dynatrace-token', `dt0c01.${p(UP_DIGITS, 24)}.${p(ALNUM, 64)}`, `dt0c01.${p(UP_DIGITS, 24)}.${p(ALNUM, 30)}`);
  cut('atlassian-token', 'ATATT3', p(B64URL, 186), 60);
  cut('artifactory-key', 'AKCp', p(ALNUM, 69), 30);
  add(
    'onepassword-token',
    `A3-${p(UP_DIGITS, 6)}-${p(UP_DIGITS, 11)}-${p(UP_DIGITS, 5)}-${p(UP_DIGITS, 5)}-${p(UP_DIGITS, 5)}`,
    `A3-${p(UP_DIGITS, 6)}-${p(UP_DIGITS, 11)}-${p(UP_DIGITS, 5)}`,
  );
  cut('age-secret-key', 'AGE-SECRET-KEY-1', p(BECH32, 58), 30);
  add('telegram-bot-token', `${p('123456789', 9)}:AA${p(B64URL, 33)}`, `${p('123456789', 9)}:AB${p(B64URL, 33)}`);
  cut('facebook-token', 'EAAC', p(ALNUM, 120), 50);
  cut('openshift-token', 'sha256~', p(B64URL, 43), 20);
  cut('infracost-key', 'ico-', p(ALNUM, 32), 20);
  add('harness-key', `pat.${p(B64URL, 22)}.${p(ALNUM, 24)}.${p(ALNUM, 20)}`, `pat.${p(B64URL, 22)}.${p(ALNUM, 24)}`);
  cut('frameio-token', 'fio-u-', p(B64URL, 64), 30);
  cut('typeform-token', 'tfp_', p(B64URL, 59), 30);
  cut('scalingo-token', 'tk-us-', p(B64URL, 48), 20);
  cut('octopus-key', 'API-', p(UP_DIGITS, 26), 15);
  return out;
}

// ---------------------------------------------------------------------------------------------------------------------
// The generic rule's forms (src/redact/generic.test.ts, the planted-secret and attack tests)

const GS = 'Zq8vK2mX9pL4tR7w';
const GLONG = `${'Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z'.repeat(10)}Q`; // 321 characters

/** `%s` is where the secret is. */
export const GENERIC_FORMS: [string, string][] = [
  ['accessToken: "%s"', GS],
  ['const accessToken = "%s";', GS],
  ['SECRET_KEY=%s', GS],
  ['PGPASSWORD=%s psql -h db -U app', GS],
  ['pg_dump --password %s app', GS],
  ['psql --password=%s', GS],
  ['mysql -u root -p%s app', GS],
  ['sshpass -p %s ssh deploy@host', GS],
  ['{"api_key": "%s"}', GS],
  ['api_key: %s', GS],
  ['password: "%s"', GS],
  ['DB_PASSWORD=%s', GS],
  ['export AWS_SESSION_TOKEN=%s', GS],
  ["client_secret = '%s'", GS],
  ['self.api_key = "%s"', GS],
  ['apiKey := "%s"', GS],
  ["'password' => '%s',", GS],
  ['private_key = "%s"', GS],
  ["DJANGO_SECRET_KEY='%s'", GS],
  ['SECRET_KEY_BASE=%s', GS],
  ["password='%s'", '$ecr3tP4ss!x9'],
  ['password="%s"', '%Qz8fR2mK!w7'],
  ['password="%s"', '<Zq8v!K2mX9pL4tR7w'],
  ['password="%s"', '{Zq8vK2mX9pL4tR7w'],
  ['api_key="%s"', GLONG],
  ['PASSWORD=%s', GLONG],
  ['auth_token: %s', GS],
  ['refresh_token = "%s"', GS],
  ['GITHUB_TOKEN=%s', GS],
  ['passphrase: %s', GS],
  ['credentials = "%s"', GS],
  ['export MYSQL_PWD=%s', GS],
  ['docker run -e POSTGRES_PASSWORD=%s postgres', GS],
  ['"secret": "%s"', GS],
  ['encryption_key = "%s"', GS],
  ['curl -H "x-api-key: %s" https://api.example.com', GS],
  ["signingKey: '%s'", GS],
  ['\\"password\\": \\"%s\\"', GS],
  ['line one\\nTOKEN=%s\\nline three', GS],
  ['--api-key %s', GS],
];

/** Not secrets: types, placeholders, expansions, code, counts, paths, names. */
export const GENERIC_LOOKALIKES: string[] = [
  'password: string',
  'token: Optional[str] = None',
  'apiKey?: string;',
  'secret: SecretStr',
  'password = os.environ["DB_PASSWORD"]',
  'PASSWORD=${DB_PASSWORD}',
  'password=$(cat /run/secrets/db)',
  'token: "{{ .Values.token }}"',
  'api_key: "<your-api-key>"',
  'password: "changeme"',
  'SECRET_KEY=your-secret-key-here',
  "password: '********'",
  'token = await getToken()',
  'accessToken: accessToken,',
  'private_key: &PrivateKey',
  'psql --password $PGPASSWORD',
  'password="%s"',
  'password = %(password)s',
  'token: string | undefined',
  'max_tokens: 4096',
  'token_count=12345678',
  'pwd = os.getcwd()',
  'PWD=/home/user/project',
  'password_hash = bcrypt.hash(password)',
  'tokenizer = "o200k_base"',
  '--token-file ~/.config/token',
  'SECRET_KEY_FILE=/run/secrets/django_key',
  'secret_name = "prod-db-password"',
  'apiKey: process.env.OPENAI_API_KEY',
  'const token = req.headers.authorization',
  'password: Option<String>,',
  'token: &str,',
  'API_KEY=%API_KEY%',
  'mkdir -p /tmp/x && mysql -p app',
  'date -u +%Y-%m-%dT%H:%M:%SZ',
  'secret: ${{ secrets.DEPLOY_KEY }}',
  'pwd = `~${pwd.slice(home.length)}`',
  'password: [REDACTED:generic-secret]',
  'session_token_path=/var/run/3f2a9c1e-8b7d-4e21-9a0f-1c2d3e4f5a6b/token',
];
